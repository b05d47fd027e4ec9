"""The NAU7802 driver against the register-level emulation: power-up, calibration, conversions, tare/scale."""

import pytest

from hardware.chips import nau7802_regs as R
from hardware.chips.nau7802 import NAU7802, LoadScale, NAU7802Config
from hardware.clock import SimClock
from hardware.emulated.bus import EmulatedBus
from hardware.emulated.nau7802 import EmulatedNAU7802
from hardware.errors import DeviceError
from hardware.i2c import I2CDevice
from hardware.sources import FunctionLoad


def make(load=500.0, noise=0.0, config=NAU7802Config()):
    clock = SimClock()
    state = {"g": load}
    chip = EmulatedNAU7802(FunctionLoad(lambda t: state["g"]), clock, noise_g=noise)
    bus = EmulatedBus({0x2A: chip})
    drv = NAU7802(I2CDevice(bus, 0x2A, "load cell (NAU7802)", clock), clock, config)
    return clock, chip, bus, drv, state


def next_reading(clock, drv, dt=0.0005):
    for _ in range(10000):
        v = drv.poll()
        if v is not None:
            return v
        clock.advance(dt)
    raise AssertionError("no conversion")


def test_power_up_sequence_and_configuration():
    clock, chip, bus, drv, _ = make()
    drv.start()
    writes = [(reg, d[0]) for op, _, reg, d in bus.log if op == "w"]
    assert writes[0] == (R.PU_CTRL, R.RR) and writes[1] == (R.PU_CTRL, R.PUD)
    assert (R.CTRL1, (4 << 3) | 7) in writes            # 3.3 V LDO, gain 128
    assert (R.CTRL2, 7 << 4) in writes                  # 320 SPS
    pu = chip.regs[R.PU_CTRL]
    assert pu & R.PUR and pu & R.PUA and pu & R.AVDDS and pu & R.CS
    assert chip.regs[R.PGA_PWR] & R.PGA_CAP_EN
    assert not chip.regs[R.CTRL2] & R.CALS              # calibration finished


def test_internal_calibration_removes_the_chip_offset():
    clock, chip, bus, drv, state = make(load=0.0)
    drv.start()
    raw = next_reading(clock, drv)
    bridge = chip.bridge_offset * 1e-3 * 2 * 128 * (1 << 23)
    assert raw == pytest.approx(bridge, abs=1)           # internal offset gone
    assert R.to_signed24(*chip.regs[R.OCAL1_B2:R.OCAL1_B2 + 3]) == chip.internal_offset_counts


def test_conversions_arrive_at_320_per_second_and_cr_clears_on_read():
    clock, chip, bus, drv, _ = make()
    drv.start()
    next_reading(clock, drv)
    count = 0
    t0 = clock.now()
    while clock.now() - t0 < 1.0:
        if drv.poll() is not None:
            count += 1
        clock.advance(0.0005)
    assert 318 <= count <= 322
    assert not drv.data_ready()


def test_negative_readings_are_sign_extended():
    clock, chip, bus, drv, _ = make(load=-2000.0)
    drv.start()
    assert next_reading(clock, drv) < 0


def test_tare_and_scale_give_grams():
    clock, chip, bus, drv, state = make(load=350.0, noise=0.15)
    drv.start()
    scale = LoadScale(counts_per_gram=400.0)  # deliberately wrong until calibrated
    scale.tare([next_reading(clock, drv) for _ in range(32)])
    state["g"] = 350.0 + 200.0
    scale.calibrate([next_reading(clock, drv) for _ in range(32)], known_grams=200.0)
    assert scale.counts_per_gram == pytest.approx(chip.counts_per_gram(), rel=0.005)
    state["g"] = 350.0 + 17.0  # one block on the tared tray
    reading = sum(scale.grams(next_reading(clock, drv)) for _ in range(16)) / 16
    assert reading == pytest.approx(17.0, abs=0.2)


def test_calibration_error_is_reported():
    clock, chip, bus, drv, _ = make()
    drv.start()
    chip.regs[R.PU_CTRL] &= ~R.PUA  # the analog side lost power
    with pytest.raises(DeviceError, match="CAL_ERR"):
        drv.calibrate_internal()


def test_chip_that_never_powers_up_names_what_to_check():
    clock, chip, bus, drv, _ = make()
    import hardware.emulated.nau7802 as emu
    emu_pu = emu.POWER_UP_S
    emu.POWER_UP_S = 10.0
    try:
        with pytest.raises(DeviceError, match=r"0x2A.*PUR.*supply"):
            drv.start()
    finally:
        emu.POWER_UP_S = emu_pu


def test_missing_chip_names_bus_and_address():
    clock = SimClock()
    drv = NAU7802(I2CDevice(EmulatedBus({}), 0x2A, "load cell (NAU7802)", clock), clock)
    with pytest.raises(DeviceError, match=r"load cell \(NAU7802\) \(I2C bus 1, address 0x2A\).*NACK.*wiring"):
        drv.start()
