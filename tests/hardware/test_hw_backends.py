"""The backend switch: sim devices on the twin read through the real drivers, replay, errors, faults."""

import json

import numpy as np
import pytest

from hardware.backends import build_devices, choose_backend, load_device_config
from hardware.chips.mpu6050 import MPU6050
from hardware.chips.nau7802 import NAU7802, LoadScale
from hardware.clock import SimClock
from hardware.devices import ImuDevice, LoadCellDevice, SensorStream
from hardware.emulated.bus import EmulatedBus
from hardware.emulated.mpu6050 import EmulatedMPU6050
from hardware.emulated.nau7802 import EmulatedNAU7802
from hardware.errors import DeviceError, DeviceMissing
from hardware.i2c import I2CDevice
from hardware.sources import FunctionLoad, StillImu
from hw_synthetic import make_session


def test_backend_comes_from_argument_then_environment_then_file(monkeypatch):
    cfg = load_device_config()
    monkeypatch.delenv("STACKO_BACKEND", raising=False)
    assert choose_backend(cfg) == cfg["backend"]
    monkeypatch.setenv("STACKO_BACKEND", "replay")
    assert choose_backend(cfg) == "replay"
    assert choose_backend(cfg, "pi") == "pi"
    monkeypatch.setenv("STACKO_BACKEND", "mars")
    with pytest.raises(DeviceError, match="unknown backend 'mars'"):
        choose_backend(cfg)


def test_a_table_file_overrides_only_what_it_sets(tmp_path, monkeypatch):
    f = tmp_path / "devices.json"
    f.write_text(json.dumps({"loadcell": {"chip": "hx711"}}))
    monkeypatch.setenv("STACKO_DEVICES", str(f))
    cfg = load_device_config()
    assert cfg["loadcell"]["chip"] == "hx711" and cfg["loadcell"]["hx711"]["dout_pin"] == 23
    f.write_text("{oops")
    with pytest.raises(DeviceError, match="not valid JSON"):
        load_device_config()


def test_replay_backend_serves_the_recording_by_clock(tmp_path):
    make_session(tmp_path / "s", seed=3, pulls=1, touches=0, knocks=0, speech=1, collapse=False)
    dev = build_devices("replay", session=tmp_path / "s")
    t0 = dev.clock.now()
    dev.clock.set(t0 + 1.0)
    it, acc, lt, g = dev.sensors.read()
    assert 990 <= len(it) <= 1001 and 315 <= len(lt) <= 322
    assert dev.speaker.intervals() == []
    dev.clock.set(100.0)
    assert len(dev.speaker.intervals()) == 1 and dev.sensors.read()[0].size > 0


def test_missing_twin_or_session_is_a_clear_message():
    with pytest.raises(DeviceMissing, match="no twin"):
        build_devices("sim")
    with pytest.raises(DeviceMissing, match="no session folder"):
        build_devices("replay")


def _rig():
    clock = SimClock()
    bus = EmulatedBus({0x68: EmulatedMPU6050(StillImu(), clock), 0x2A: EmulatedNAU7802(FunctionLoad(800.0), clock)})
    imu = ImuDevice(MPU6050(I2CDevice(bus, 0x68, "accelerometer (MPU-6050)", clock), clock), clock, retry_s=1.0)
    load = LoadCellDevice(NAU7802(I2CDevice(bus, 0x2A, "load cell (NAU7802)", clock), clock), LoadScale(), clock)
    imu.start()
    load.start()
    return clock, bus, imu, load


def test_a_chip_vanishing_mid_match_is_reported_not_fatal_and_recovers():
    clock, bus, imu, load = _rig()
    said = []
    imu.health.on_problem = lambda name, problem: said.append((name, problem))
    stream = SensorStream(imu, load)
    assert stream.read_full()[0].overflowed  # the FIFO filled while the load cell started: reset
    for _ in range(20):
        clock.advance(0.003)
        stream.poll_load()
    t, acc, lt, g = stream.read()
    assert len(t) > 0 and len(lt) >= 18
    bus.vanish(0x68)
    clock.advance(0.01)
    t, acc, lt, g = stream.read()   # no exception: the load cell still works
    assert len(t) == 0 and "0x68" in stream.problems["accelerometer"]
    assert said[0][0] == "accelerometer" and "NACK" in said[0][1]
    bus.reappear(0x68)
    clock.advance(1.5)
    stream.read()  # retried after retry_s: the driver starts the chip again
    clock.advance(0.01)
    t, *_ = stream.read()
    assert len(t) > 0 and stream.problems == {} and said[-1] == ("accelerometer", None)


def test_sim_backend_reads_the_twin_through_the_real_drivers():
    Twin = pytest.importorskip("hardware.sim.twin").Twin  # hardware.sim picks the offscreen GL before mujoco loads

    with Twin(seed=1) as twin:
        dev = build_devices("sim", twin=twin, quiet_voice=True)
        assert dev.problems == {}
        got_i, got_l = [], []
        for _ in range(10):
            twin.step(0.02, on_step=lambda tw: dev.sensors.poll_load())
            it, acc, lt, g = dev.sensors.read()
            got_i.append(acc)
            got_l.append(g)
        acc, g = np.concatenate(got_i), np.concatenate(got_l)
        assert 180 <= len(acc) <= 201 and 60 <= len(g) <= 66  # 1 kHz IMU, 320 SPS load cell
        assert abs(np.median(acc[:, 2]) - 9.81) < 0.5   # gravity, through FIFO bytes
        assert abs(np.median(g)) < 8.0                  # tared on the standing tower (still ringing a little)
        dev.speaker.say("Ana: pull a red block")
        assert dev.speaker.speaking
        frame = dev.camera.read()
        assert frame.image.ndim == 3 and frame.t == pytest.approx(twin.clock.now())
        dev.close()


@pytest.mark.filterwarnings("ignore::gpiozero.exc.PinFactoryFallback")
def test_pi_backend_off_a_pi_names_every_missing_part(monkeypatch):
    from pathlib import Path

    model = Path("/proc/device-tree/model")
    if model.exists() and "Raspberry" in model.read_text(errors="replace"):
        pytest.skip("on a real Pi the parts may be there")
    import gpiozero

    monkeypatch.setattr(gpiozero.Device, "pin_factory", None)
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    dev = build_devices("pi", strict=False)
    try:
        problems = dev.problems
    finally:
        dev.close()
    if "i2c" in problems:
        assert "raspi-config" in problems["i2c"]
    assert "camera" in problems and "python3-picamera2" in problems["camera"]
    assert "buttons" in problems and "GPIO" in problems["buttons"]
    with pytest.raises(DeviceMissing, match="not working"):
        build_devices("pi")
