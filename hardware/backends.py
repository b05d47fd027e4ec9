"""One switch that builds the table's devices for `pi`, `sim` (the digital twin) or `replay`.

Chosen by `backend=` here, else env STACKO_BACKEND, else the devices file (hardware/devices.json, or
the file env STACKO_DEVICES names). Only the `pi` branch imports picamera2/smbus2 hardware paths, so
the twin and replays run on any machine. Every device that cannot be opened is named with its bus or
pin and what to check; `strict=False` returns the devices that work plus `problems`.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hardware.clock import Clock, RealClock, SimClock
from hardware.errors import DeviceError, DeviceMissing

DEFAULT_DEVICES = Path(__file__).with_name("devices.json")
BACKENDS = ("pi", "sim", "replay")


def load_device_config(path: str | Path | None = None) -> dict[str, Any]:
    p = Path(path or os.environ.get("STACKO_DEVICES") or DEFAULT_DEVICES)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeviceError("device settings", str(p), "the file does not exist", "the STACKO_DEVICES path") from None
    except json.JSONDecodeError as exc:
        raise DeviceError("device settings", str(p), f"not valid JSON (line {exc.lineno}: {exc.msg})", "the file's syntax") from None
    if not isinstance(data, dict):
        raise DeviceError("device settings", str(p), "expected a JSON object", "the file's contents")
    base = json.loads(DEFAULT_DEVICES.read_text(encoding="utf-8")) if p != DEFAULT_DEVICES else {}
    for k, v in data.items():  # a table's file may set only what differs
        base[k] = {**base[k], **v} if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return base


def choose_backend(config: dict[str, Any], backend: str | None = None) -> str:
    name = backend or os.environ.get("STACKO_BACKEND") or config.get("backend") or "sim"
    if name not in BACKENDS:
        raise DeviceError("device settings", "backend", f"unknown backend {name!r}", f"use one of {', '.join(BACKENDS)}")
    return name


class EstimateVoice:
    """No sound at all: an utterance lasts as long as espeak-ng would take (fast twin runs)."""

    realtime = False

    def __init__(self, words_per_minute: int = 160):
        self.wpm = words_per_minute

    def speak(self, text: str) -> float:
        return 0.25 + len(text.split()) * 60.0 / self.wpm


class TwinClock:
    """The twin's clock for drivers: waiting (a reset delay, polling a ready bit) steps the physics, so
    the shared SimClock never runs ahead of what the twin has simulated."""

    def __init__(self, twin: Any):
        self.twin = twin

    def now(self) -> float:
        t = getattr(self.twin, "t", None)  # physics time, current even inside a step's callbacks
        return float(t) if t is not None else self.twin.clock.now()

    def sleep(self, dt: float) -> None:
        if dt > 0:
            self.twin.step(dt)


class ReplaySpeaker:
    """A recording's speech intervals, revealed as the clock reaches them; says nothing."""

    def __init__(self, intervals: list[tuple[float, float]], clock: Clock):
        self._all, self.clock = sorted(intervals), clock

    def say(self, text: str, urgent: bool = False) -> None:
        """A replay does not speak: the recorded speech intervals stand for it."""

    def intervals(self) -> list[tuple[float, float]]:
        now = self.clock.now()
        return [iv for iv in self._all if iv[0] <= now]

    @property
    def speaking(self) -> bool:
        now = self.clock.now()
        return any(a <= now <= b for a, b in self._all)

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class DeviceSet:
    backend: str
    clock: Clock
    camera: Any = None
    sensors: Any = None        # .read() -> (imu_t, accel, load_t, grams)
    imu: Any = None
    loadcell: Any = None
    buttons: Any = None
    speaker: Any = None
    leds: Any = None
    session: Any = None        # replay: the Session being replayed
    problems: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        for dev in (self.sensors, self.camera, self.buttons, self.speaker, self.leds):
            if dev is not None and hasattr(dev, "close"):
                try:
                    dev.close()
                except Exception:  # closing must not hide the real error
                    pass


def _try(problems: dict[str, str], name: str, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except DeviceError as exc:
        problems[name] = str(exc)
        return None


def build_devices(backend: str | None = None, *, config: dict[str, Any] | None = None, twin: Any = None,
                  session: str | Path | None = None, wav_dir: str | Path | None = None, quiet_voice: bool = False,
                  strict: bool = True, on_problem: Callable[[str, str | None], None] | None = None) -> DeviceSet:
    cfg = config if config is not None else load_device_config()
    name = choose_backend(cfg, backend)
    if name == "pi":
        devices = _build_pi(cfg, on_problem)
    elif name == "sim":
        if twin is None:
            raise DeviceMissing("digital twin", "sim backend", "no twin was given", "build a hardware.sim.twin.Twin and pass it")
        devices = _build_sim(cfg, twin, wav_dir, quiet_voice, on_problem)
    else:
        if session is None:
            raise DeviceMissing("recording", "replay backend", "no session folder was given", "pass the session folder to replay")
        devices = _build_replay(cfg, Path(session))
    if strict and devices.problems:
        devices.close()
        lines = "; ".join(devices.problems.values())
        raise DeviceMissing("table devices", name, f"{len(devices.problems)} device(s) not working: {lines}", "the wiring notes in docs/hardware.md")
    return devices


def _imu_config(cfg):
    from hardware.chips.mpu6050 import MPU6050Config

    c = cfg["imu"]
    return MPU6050Config(int(c["accel_range_g"]), int(c["gyro_range_dps"]), float(c["sample_rate_hz"]), int(c["dlpf_cfg"]))


def _nau_config(cfg):
    from hardware.chips.nau7802 import NAU7802Config

    c = cfg["loadcell"]
    return NAU7802Config(int(c["gain"]), int(c["rate_sps"]), float(c["ldo_volts"]))


def _scale(cfg):
    from hardware.chips.nau7802 import LoadScale

    c = cfg["loadcell"]
    return LoadScale(float(c.get("offset_counts", 0)), float(c.get("counts_per_gram", 429.5)))


def _i2c_devices(bus, cfg, clock, bus_label, problems, on_problem):
    from hardware.chips.mpu6050 import MPU6050
    from hardware.chips.nau7802 import NAU7802
    from hardware.devices import ImuDevice, LoadCellDevice
    from hardware.i2c import I2CDevice

    imu_dev = I2CDevice(bus, int(cfg["imu"]["address"]), "accelerometer (MPU-6050)", clock, bus_label)
    imu = ImuDevice(MPU6050(imu_dev, clock, _imu_config(cfg)), clock, on_problem=on_problem)
    if _try(problems, "imu", lambda: imu.start() or True) is None:
        imu = None
    load = None
    if cfg["loadcell"]["chip"] == "nau7802":
        ld = I2CDevice(bus, int(cfg["loadcell"]["address"]), "load cell (NAU7802)", clock, bus_label)
        load = LoadCellDevice(NAU7802(ld, clock, _nau_config(cfg)), _scale(cfg), clock, on_problem=on_problem)
        if _try(problems, "loadcell", lambda: load.start() or True) is None:
            load = None
    return imu, load


def _build_pi(cfg, on_problem) -> DeviceSet:
    from hardware.buttons import ButtonConfig, Buttons, TurnLeds
    from hardware.camera import CameraSettings, PiCamera, UsbCamera
    from hardware.devices import LoadCellDevice, SensorStream
    from hardware.i2c import open_bus
    from hardware.speaker import EspeakVoice, Speaker

    clock = RealClock()
    problems: dict[str, str] = {}
    imu = load = None
    bus = _try(problems, "i2c", lambda: open_bus(int(cfg.get("i2c_bus", 1))))
    if bus is not None:
        imu, load = _i2c_devices(bus, cfg, clock, f"I2C bus {cfg.get('i2c_bus', 1)}", problems, on_problem)
    if cfg["loadcell"]["chip"] == "hx711":
        from hardware.chips.hx711 import HX711

        h = cfg["loadcell"]["hx711"]
        drv = _try(problems, "loadcell", lambda: HX711(int(h["dout_pin"]), int(h["sck_pin"]), clock, int(h.get("gain", 128))))
        load = LoadCellDevice(drv, _scale(cfg), clock, on_problem=on_problem) if drv else None
    c = cfg["camera"]
    settings = CameraSettings(tuple(c["size"]), tuple(c["lores"]) if c.get("lores") else None, float(c["fps"]))
    if c["kind"] == "usb":
        camera = _try(problems, "camera", lambda: UsbCamera(clock, c.get("usb_index", 0), settings))
    else:
        camera = _try(problems, "camera", lambda: PiCamera(clock, settings))
    bcfg = ButtonConfig.from_dict(cfg["buttons"])
    buttons = _try(problems, "buttons", lambda: Buttons(bcfg, clock))
    leds = _try(problems, "leds", lambda: TurnLeds(bcfg.leds)) if bcfg.leds else None
    s = cfg["speaker"]
    voice = _try(problems, "speaker", lambda: EspeakVoice(s["voice"], int(s["words_per_minute"]), s.get("alsa_device")))
    speaker = Speaker(voice, clock, muted=bool(s.get("muted"))) if voice else None
    sensors = SensorStream(imu, load)
    sensors.start_thread()
    return DeviceSet("pi", clock, camera, sensors, imu, load, buttons, speaker, leds, problems=problems)


def _build_sim(cfg, twin, wav_dir, quiet_voice, on_problem) -> DeviceSet:
    from hardware.buttons import VirtualButtons
    from hardware.camera import RenderedCamera
    from hardware.devices import SensorStream
    from hardware.speaker import Speaker, WavVoice

    clock = twin.clock
    problems: dict[str, str] = {}
    tclock = TwinClock(twin)
    imu, load = _i2c_devices(_twin_bus(twin, tclock), cfg, tclock, "twin I2C bus", problems, on_problem)
    if load is not None:
        _try(problems, "loadcell", lambda: load.tare())
    camera = RenderedCamera(lambda t: twin.render("top"), clock)
    s = cfg["speaker"]
    if quiet_voice:
        voice = EstimateVoice(int(s["words_per_minute"]))
    else:
        folder = Path(wav_dir) if wav_dir else Path(tempfile.mkdtemp(prefix="stacko-speech-"))
        voice = _try(problems, "speaker", lambda: WavVoice(folder, s["voice"], int(s["words_per_minute"]))) or EstimateVoice()
    speaker = Speaker(voice, clock, muted=bool(s.get("muted")))
    return DeviceSet("sim", clock, camera, SensorStream(imu, load), imu, load, VirtualButtons(clock), speaker, problems=problems)


def _twin_bus(twin: Any, clock: Clock):
    """The twin's tray sensors behind the emulated chips, on the physics-time clock (so a load-cell
    poll from `Twin.step(on_step=...)` sees time advance every 2 ms step)."""
    try:
        from hardware.sim.sensors import SensorNoise, TwinImu, TwinLoadCell
    except ImportError:
        return twin.emulated_bus()
    from hardware.emulated.bus import EmulatedBus
    from hardware.emulated.mpu6050 import EmulatedMPU6050
    from hardware.emulated.nau7802 import EmulatedNAU7802

    seed = int(getattr(twin, "seed", 0))
    quiet = SensorNoise.behind_chip()
    return EmulatedBus({0x68: EmulatedMPU6050(TwinImu(twin.trace, quiet, seed), clock, seed=seed),
                        0x2A: EmulatedNAU7802(TwinLoadCell(twin.trace, quiet, seed), clock, seed=seed)})


def _build_replay(cfg, folder: Path) -> DeviceSet:
    from hardware.buttons import VirtualButtons
    from hardware.camera import ReplayCamera
    from hardware.devices import ReplaySensors
    from hardware.recorder import Session

    session = Session(folder)
    clock = SimClock()
    sensors = ReplaySensors(session, clock)
    clock.set(sensors.start_t)
    problems: dict[str, str] = {}
    camera = None
    if (folder / "frames" / "frames.csv").is_file():
        camera = _try(problems, "camera", lambda: ReplayCamera(folder, clock))
    return DeviceSet("replay", clock, camera, sensors, None, None, VirtualButtons(clock, session.buttons()),
                     ReplaySpeaker(session.speech(), clock), session=session, problems=problems)
