"""The tray's load cell and accelerometer feel what happens on it, through realistic noise."""

import numpy as np
import pytest

from hardware.sim.twin import Twin


@pytest.fixture(scope="module")
def twin():
    with Twin(seed=21) as t:
        yield t


def test_at_rest_the_load_cell_weighs_tray_and_tower_and_the_accelerometer_feels_gravity(twin):
    twin.step(0.5)
    ts = np.arange(int(twin.t * 320) - 100, int(twin.t * 320)) / 320
    grams = twin.load.series(ts)
    assert grams.mean() == pytest.approx(600 + 45 * 17, abs=5)
    assert 0.05 < grams.std() < 15  # noisy (sensor noise plus the ~50 Hz mount hum), never the noiseless trace
    ti = np.arange(int(twin.t * 1000) - 300, int(twin.t * 1000)) / 1000
    accel, gyro = twin.imu.series(ti)
    assert accel[:, 2].mean() == pytest.approx(9.81, abs=0.5)
    assert accel.std(axis=0).min() > 0.005
    assert np.abs(gyro.mean(axis=0)).max() < 6  # bias only


def test_a_block_in_hand_is_missing_from_the_load(twin):
    twin.step(0.3)
    ts = np.arange(int(twin.t * 320) - 60, int(twin.t * 320)) / 320
    before = twin.load.series(ts).mean()
    twin.pull(1, 6, 1)
    twin.step(0.3)
    ts = np.arange(int(twin.t * 320) - 60, int(twin.t * 320)) / 320
    during = twin.load.series(ts).mean()
    assert before - during == pytest.approx(17, abs=6)
    twin.place(16, 1, seat=1)


def test_a_knock_shakes_the_tray_but_leaves_the_weight(twin):
    twin.step(0.5)
    t0 = twin.t
    quiet = twin.trace.accel[-200:, 2].std()
    ev = twin.knock(seat=2, strength=1.0)
    assert ev["type"] == "knock"
    window = (twin.trace.t > ev["t"]) & (twin.trace.t < ev["t"] + 0.1)
    assert np.abs(twin.trace.accel[window, 2] - 9.81).max() > 10 * max(quiet, 0.01)
    twin.step(0.5)
    ts = np.arange(int(twin.t * 320) - 60, int(twin.t * 320)) / 320
    assert twin.load.series(ts).mean() == pytest.approx(600 + 45 * 17, abs=6)
    assert not twin.collapsed and t0 < ev["t"]


def test_sensors_cannot_read_the_future(twin):
    with pytest.raises(ValueError, match="only run to"):
        twin.load.load_grams(twin.t + 1.0)


def test_the_real_drivers_read_the_twin_through_the_chip_emulations(twin):
    from hardware.chips.mpu6050 import MPU6050
    from hardware.i2c import I2CDevice

    bus = twin.emulated_bus()
    imu = MPU6050(I2CDevice(bus, 0x68, "MPU-6050", twin.clock), twin.clock)
    imu.check_identity()
    imu.start()
    accel = []
    for _ in range(4):  # the 1 kB FIFO holds ~85 ms at 1 kHz: read it like the real loop does
        twin.step(0.05)
        batch = imu.read_fifo()
        assert not batch.overflowed
        accel.append(batch.accel)
    accel = np.concatenate(accel)
    assert len(accel) > 150
    assert accel[:, 2].mean() == pytest.approx(9.81, abs=0.6)
