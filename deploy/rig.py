"""The parts of one table as `stacko doctor` and `stacko calibrate` use them, on the Pi or on the twin.

`PiRig` opens the real I2C bus, camera, GPIO buttons and sound card; `TwinRig` gives the same parts from
the twin: the hardware engineer's emulated chips on an emulated bus (read by the real drivers), the twin's
overhead renders, gpiozero's mock pins and espeak-ng writing WAV files. `without` removes parts from the
twin so tests can check what the referee says when one is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from calibration.steps import Action, HX711Counts, LoadCellHandle, NAU7802Counts
from hardware.clock import Clock, RealClock
from hardware.errors import DeviceMissing


class Camera(Protocol):
    def read(self) -> np.ndarray:
        """One BGR frame."""


class Buttons(Protocol):
    def names(self) -> Sequence[str]: ...
    def held(self) -> list[str]:
        """Buttons that read as pressed right now (stuck, or someone leaning on them)."""
    def wait_press(self, name: str, timeout_s: float) -> bool: ...


class Speaker(Protocol):
    def outputs(self) -> list[str]:
        """Sound outputs found (empty: no speaker)."""
    def say(self, text: str) -> Path | None:
        """Speak `text`; returns the WAV file when the output is a file (the twin), else None."""


# ---------------------------------------------------------------- shared pieces


class ButtonPanel:
    """The hardware engineer's `Buttons` (real pins on the Pi, mock pins on the twin) as the doctor uses them:
    which are held down, and waiting for one press. `press(name, down)` lets the twin's person press."""

    def __init__(self, buttons, clock: Clock, press: Callable[[str, bool], None] | None = None):
        self.buttons, self.clock, self._press = buttons, clock, press

    def names(self) -> list[str]:
        return list(self.buttons.buttons)

    def held(self) -> list[str]:
        return self.buttons.held()

    def wait_press(self, name: str, timeout_s: float) -> bool:
        self.buttons.read()  # forget earlier presses
        if self._press:
            self._press(name, True)
        try:
            end = self.clock.now() + timeout_s
            while self.clock.now() < end:
                if any(p.button == name for p in self.buttons.read()):
                    return True
                self.clock.sleep(0.01)
            return False
        finally:
            if self._press:
                self._press(name, False)

    def close(self) -> None:
        self.buttons.close()


class VoiceSpeaker:
    """The hardware engineer's voices (espeak-ng to the sound card, or to WAV files on the twin) plus the
    list of sound outputs, as the doctor uses them."""

    def __init__(self, outputs: Callable[[], list[str]], make_voice: Callable[[], Any]):
        self._outputs, self._make_voice = outputs, make_voice

    def outputs(self) -> list[str]:
        return self._outputs()

    def say(self, text: str) -> Path | None:
        voice = self._make_voice()  # DeviceMissing when espeak-ng is not installed
        voice.speak(text)
        files = getattr(voice, "files", None)
        return files[-1] if files else None


def alsa_outputs() -> list[str]:
    """Playback cards as `aplay -l` lists them."""
    if shutil.which("aplay") is None:
        return []
    result = subprocess.run(["aplay", "-l"], capture_output=True, text=True, timeout=10)
    return re.findall(r"^card \d+: .*$", result.stdout, flags=re.M)


# ---------------------------------------------------------------- the Pi


class PiRig:
    """The real parts, as the table's device settings (hardware/devices.json, $STACKO_DEVICES) describe them."""

    backend = "pi"

    def __init__(self) -> None:
        from hardware.backends import load_device_config

        self.clock = RealClock()
        self.cfg = load_device_config()
        self._bus = None
        self._camera: _FrameImages | None = None

    def _i2c(self):
        if self._bus is None:
            from hardware.i2c import open_bus

            self._bus = open_bus(int(self.cfg.get("i2c_bus", 1)))
        return self._bus

    def _device(self, section: str, name: str):
        from hardware.i2c import I2CDevice

        n = int(self.cfg.get("i2c_bus", 1))
        return I2CDevice(self._i2c(), int(self.cfg[section]["address"]), name, self.clock, f"I2C bus {n}")

    def imu(self):
        from hardware.backends import _imu_config
        from hardware.chips.mpu6050 import MPU6050

        return MPU6050(self._device("imu", "IMU (MPU-6050)"), self.clock, _imu_config(self.cfg))

    def loadcell(self) -> LoadCellHandle:
        c = self.cfg["loadcell"]
        if c["chip"] == "hx711":
            from hardware.chips.hx711 import HX711

            h = c["hx711"]
            hx = HX711(int(h["dout_pin"]), int(h["sck_pin"]), self.clock, int(h.get("gain", 128)))
            return LoadCellHandle("hx711", hx.power_up, hx.power_down, HX711Counts(hx))
        from hardware.backends import _nau_config
        from hardware.chips.nau7802 import NAU7802

        adc = NAU7802(self._device("loadcell", "load-cell ADC (NAU7802)"), self.clock, _nau_config(self.cfg))
        return LoadCellHandle("nau7802", adc.start, adc.stop, NAU7802Counts(adc, self.clock))

    def camera(self) -> Camera:
        """Opened once and kept: the camera can only be opened by one user at a time."""
        if self._camera is None:
            from hardware.camera import CameraSettings, PiCamera, UsbCamera

            c = self.cfg["camera"]
            settings = CameraSettings(tuple(c["size"]), tuple(c["lores"]) if c.get("lores") else None, float(c["fps"]))
            cam = UsbCamera(self.clock, c.get("usb_index", 0), settings) if c["kind"] == "usb" else PiCamera(self.clock, settings)
            self._camera = _FrameImages(cam)
        return self._camera

    def buttons(self) -> Buttons:
        from hardware.buttons import ButtonConfig, Buttons

        return ButtonPanel(Buttons(ButtonConfig.from_dict(self.cfg["buttons"]), self.clock), self.clock)

    def speaker(self) -> Speaker:
        from hardware.speaker import EspeakVoice

        c = self.cfg["speaker"]
        return VoiceSpeaker(alsa_outputs, lambda: EspeakVoice(c["voice"], int(c["words_per_minute"]), c.get("alsa_device")))

    def act(self, action: Action) -> None:
        """On the Pi a person does it; nothing to simulate."""

    def close(self) -> None:
        if self._camera is not None:
            self._camera.close()
        if self._bus is not None:
            self._bus.close()


class _FrameImages:
    """Adapts the hardware camera (`read() -> Frame`) to images."""

    def __init__(self, cam):
        self.cam = cam

    def read(self) -> np.ndarray:
        frame = self.cam.read()
        return getattr(frame, "image", frame)

    def close(self) -> None:
        close = getattr(self.cam, "close", None)
        if close:
            close()


# ---------------------------------------------------------------- the twin


class _TwinCamera:
    """Overhead renders of the twin's tray (with the four markers) and whatever tower was last posed."""

    def __init__(self, seed: int):
        from hardware.sim.kit import KitStudio
        from hardware.sim.render import Look

        self.seed = seed
        self.studio = KitStudio(seed=seed)
        self.look = Look.nominal()

    def pose(self, levels: list[list[str | None]], hands: int, shot: int) -> None:
        """Build `levels` with `hands` hands over the tower, in a light of its own for this shot."""
        import random

        from hardware.sim.kit import KitConfig, Scene, random_scene
        from hardware.sim.render import Look

        rng = random.Random(self.seed * 100_003 + shot)
        weights = tuple(1.0 if n == hands else 0.0 for n in (0, 1, 2))
        cfg = KitConfig(min_levels=len(levels), max_levels=len(levels), hands=weights, over_tower_rate=1.0)  # type: ignore[arg-type]
        scene = random_scene(rng, cfg, self.studio.config)
        self.studio.pose(Scene([list(lv) for lv in levels], scene.hands), rng, cfg)
        self.look = Look.random(rng, 0.7)

    def read(self) -> np.ndarray:
        return self.studio.photo(self.look)

    def close(self) -> None:
        self.studio.close()


@dataclass
class TwinRig:
    """The twin's table; `without` names parts that are 'not plugged in'."""

    seed: int = 0
    without: tuple[str, ...] = ()

    backend = "sim"

    def __post_init__(self) -> None:
        from calibration.twin_table import TwinTable

        self.table = TwinTable(self.seed, self.without)
        self.clock = self.table.clock
        self._tmp = tempfile.TemporaryDirectory(prefix="stacko-twin-")
        self._camera: _TwinCamera | None = None

    def imu(self):
        from hardware.chips.mpu6050 import MPU6050

        return MPU6050(self.table.imu_device(), self.clock)

    def loadcell(self) -> LoadCellHandle:
        from hardware.chips.nau7802 import NAU7802

        adc = NAU7802(self.table.loadcell_device(), self.clock)
        return LoadCellHandle("nau7802", adc.start, adc.stop, NAU7802Counts(adc, self.clock))

    def camera(self) -> _TwinCamera:
        if not self.table.has("camera"):
            raise DeviceMissing("camera", "the camera cable", "no camera was found",
                                "that the ribbon cable is seated (contacts the right way round) at both ends, "
                                "then reboot; `rpicam-hello --list-cameras` must list it")
        if self._camera is None:
            self._camera = _TwinCamera(self.seed)
        return self._camera

    def buttons(self) -> Buttons:
        from gpiozero.pins.mock import MockFactory

        from hardware.buttons import ButtonConfig, Buttons

        factory = MockFactory()
        config = ButtonConfig() if self.table.has("buttons") else ButtonConfig(buttons={})
        panel = Buttons(config, self.clock, pin_factory=factory)

        def press(name: str, down: bool) -> None:
            pin = factory.pin(config.buttons[name])
            pin.drive_low() if down else pin.drive_high()

        return ButtonPanel(panel, self.clock, press)

    def speaker(self) -> Speaker:
        from hardware.speaker import WavVoice

        outputs = (lambda: []) if not self.table.has("speaker") else (lambda: ["twin: WAV file output"])
        return VoiceSpeaker(outputs, lambda: WavVoice(self._tmp.name))

    def act(self, action: Action) -> None:
        if action.key in ("build_level", "hands_over", "show_top") and action.data:
            cam = self.camera()
            cam.pose(action.data["levels"], int(action.data.get("hands", 0)), int(action.data.get("shot", 0)))  # type: ignore[attr-defined]
        self.table.perform(action)

    def close(self) -> None:
        if self._camera is not None:
            self._camera.close()
        self._tmp.cleanup()


def make_rig(backend: str, seed: int = 0, without: Sequence[str] = ()):
    if backend == "pi":
        if without:
            raise ValueError("--without only works with --backend sim")
        return PiRig()
    if backend == "sim":
        return TwinRig(seed, tuple(without))
    raise ValueError(f"unknown backend {backend!r}: use pi or sim")
