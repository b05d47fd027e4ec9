"""The MPU-6050 driver against the register-level emulation, byte for byte, including bus faults."""

import errno

import numpy as np
import pytest

from hardware.chips import mpu6050_regs as R
from hardware.chips.mpu6050 import MPU6050, MPU6050Config
from hardware.clock import SimClock
from hardware.emulated.bus import EmulatedBus
from hardware.emulated.mpu6050 import EmulatedMPU6050
from hardware.errors import DeviceError, DeviceMissing
from hardware.i2c import I2CDevice
from hardware.sources import FunctionImu


def make(config=MPU6050Config(), fn=None, noise=False):
    clock = SimClock()
    fn = fn or (lambda t: ((0.5, -1.0, 9.81), (10.0, 0.0, -20.0)))
    chip = EmulatedMPU6050(FunctionImu(fn), clock, accel_noise_g=0.006 if noise else 0, gyro_noise_dps=0.1 if noise else 0)
    bus = EmulatedBus({0x68: chip})
    drv = MPU6050(I2CDevice(bus, 0x68, "accelerometer (MPU-6050)", clock), clock, config)
    return clock, chip, bus, drv


def test_start_writes_the_documented_register_sequence():
    clock, chip, bus, drv = make(MPU6050Config(accel_range_g=4, gyro_range_dps=500, sample_rate_hz=1000, dlpf_cfg=3))
    drv.start()
    writes = [(reg, data[0]) for op, _, reg, data in bus.log if op == "w"]
    assert writes[:6] == [(R.PWR_MGMT_1, 0x80), (R.PWR_MGMT_1, 0x01), (R.CONFIG, 3), (R.SMPLRT_DIV, 0),
                          (R.GYRO_CONFIG, 1 << 3), (R.ACCEL_CONFIG, 1 << 3)]
    assert chip.regs[R.FIFO_EN] == 0x78 and chip.regs[R.USER_CTRL] == R.USER_FIFO_EN
    assert not chip.asleep and chip.sample_rate == 1000


def test_fifo_burst_reads_scale_to_si_units_at_1khz():
    clock, chip, bus, drv = make()
    drv.start()
    drv.read_fifo()
    clock.advance(0.020)
    batch = drv.read_fifo()
    assert len(batch.t) == 20
    # quantization at +-4 g is 1/8192 g; at +-500 dps 1/65.5 dps
    assert np.allclose(batch.accel, [0.5, -1.0, 9.81], atol=9.81 / 8192)
    assert np.allclose(batch.gyro, [10.0, 0.0, -20.0], atol=1 / 65.5)
    assert np.allclose(np.diff(batch.t), 0.001)
    # burst reads are whole frames of 12 bytes from the FIFO port, at most 32 bytes each
    bursts = [len(d) for op, _, reg, d in bus.log if op == "rb" and reg == R.FIFO_R_W]
    assert bursts and all(n % 12 == 0 and n <= 32 for n in bursts)


def test_raw_bytes_are_big_endian_twos_complement():
    clock, chip, bus, drv = make(MPU6050Config(accel_range_g=2), fn=lambda t: ((-9.80665, 0, 0), (0, 0, 0)))
    drv.start()
    clock.advance(0.002)
    drv.read_fifo()
    frame = [d for op, _, reg, d in bus.log if op == "rb" and reg == R.FIFO_R_W][0]
    assert frame[0:2] == (0xC0, 0x00)  # -1 g at +-2 g = -16384 = 0xC000


def test_slower_sample_rate_and_dlpf_smooth_a_step():
    step = lambda t: ((0, 0, 9.81 if t < 0.5 else 19.62), (0, 0, 0))
    clock, chip, bus, drv = make(MPU6050Config(sample_rate_hz=200, dlpf_cfg=5), fn=step)
    drv.start()
    drv.read_fifo()
    clock.set(0.45)
    drv.read_fifo()
    clock.set(0.55)
    b = drv.read_fifo()
    assert chip.sample_rate == 200 and abs(len(b.t) - 20) <= 1
    z = b.accel[:, 2]
    just_after = z[np.argmax(b.t > 0.51)]
    assert z[0] < 10.5 and 10.5 < just_after < 19.0  # the 10 Hz filter is still rising just after the step


def test_fifo_overflow_is_detected_and_reset():
    clock, chip, bus, drv = make()
    drv.start()
    clock.advance(0.5)  # 500 frames > 1024 bytes
    b = drv.read_fifo()
    assert b.overflowed and drv.overflows == 1 and len(chip.fifo) == 0
    clock.advance(0.01)
    assert abs(len(drv.read_fifo().t) - 10) <= 1


def test_wrong_chip_is_named():
    clock, chip, bus, drv = make()
    chip.regs[R.WHO_AM_I] = 0x70
    with pytest.raises(DeviceMissing, match="MPU-6500"):
        drv.start()


def test_a_nack_is_retried_then_succeeds():
    clock, chip, bus, drv = make()
    drv.start()
    bus.nack(0x68, times=2)
    clock.advance(0.005)
    assert len(drv.read_fifo().t) >= 5
    assert drv.dev.retries == 2


def test_a_stuck_bus_gives_a_clear_error_after_bounded_retries():
    clock, chip, bus, drv = make()
    drv.start()
    bus.stick()
    t0 = clock.now()
    with pytest.raises(DeviceError) as info:
        drv.read_fifo()
    msg = str(info.value)
    assert "MPU-6050" in msg and "0x68" in msg and "timed out" in msg and "SDA" in msg
    assert clock.now() - t0 < 0.2  # bounded back-off
    assert info.value.__cause__.errno == errno.ETIMEDOUT
    bus.release()
    drv.read_fifo()


def test_a_vanished_chip_reports_nack_naming_the_device():
    clock, chip, bus, drv = make()
    drv.start()
    bus.vanish(0x68)
    with pytest.raises(DeviceError, match=r"accelerometer.*0x68.*NACK"):
        drv.read_fifo()


def test_noise_is_present_but_small():
    clock, chip, bus, drv = make(noise=True)
    drv.start()
    drv.read_fifo()
    clock.advance(0.08)
    b = drv.read_fifo()
    sd = b.accel[:, 2].std()
    assert 0.001 < sd < 0.2
