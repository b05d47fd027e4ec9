"""Cameras: `read() -> Frame(image BGR uint8 (H, W, 3), t, seq)` whatever the source.

- `PiCamera`: picamera2 (Raspberry Pi OS, libcamera). Imported only inside it; tests pass a fake
  `Picamera2`. A 640x480 main stream for reading blocks, an optional low-res stream for hand motion,
  exposure and white balance locked after calibration so lighting drift does not shift colours.
- `UsbCamera`: OpenCV VideoCapture (a USB webcam).
- `ReplayCamera`: a recorded session's frames (or a folder of images, or a video file), served by the clock.
- `RenderedCamera`: the twin's renderer, `render(t) -> image`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from hardware.clock import Clock, RealClock
from hardware.errors import DeviceError, DeviceMissing


@dataclass(frozen=True)
class Frame:
    image: np.ndarray  # BGR, uint8, (H, W, 3)
    t: float
    seq: int
    lores: np.ndarray | None = None  # the low-res stream (grey), when configured


class Camera(Protocol):
    def read(self) -> Frame: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class CameraSettings:
    size: tuple[int, int] = (640, 480)
    lores: tuple[int, int] | None = (320, 240)
    fps: float = 30.0
    # Locked after calibration (None: automatic). ExposureTime in microseconds, ColourGains (red, blue).
    exposure_us: int | None = None
    analogue_gain: float | None = None
    colour_gains: tuple[float, float] | None = None

    @property
    def locked(self) -> bool:
        return self.exposure_us is not None and self.colour_gains is not None


class PiCamera:
    """picamera2 backend. `picamera2_factory` is for tests (a fake Picamera2 class)."""

    def __init__(self, clock: Clock | None = None, settings: CameraSettings = CameraSettings(),
                 picamera2_factory: Callable[[], Any] | None = None, camera_num: int = 0):
        self.clock = clock or RealClock()
        self.settings = settings
        if picamera2_factory is None:
            try:
                from picamera2 import Picamera2  # Raspberry Pi OS: apt install python3-picamera2
            except ImportError as exc:
                raise DeviceMissing("camera", "picamera2", "the picamera2 library is not available",
                                    "on Raspberry Pi OS: sudo apt install python3-picamera2, and create the venv with "
                                    "--system-site-packages; elsewhere use the usb or sim camera") from exc
            picamera2_factory = lambda: Picamera2(camera_num)  # noqa: E731
        try:
            self.cam = picamera2_factory()
        except (RuntimeError, IndexError) as exc:
            raise DeviceMissing("camera", f"camera port {camera_num}", f"no camera answered ({exc})",
                                "that the ribbon cable is seated (contacts the right way round) at both ends, then reboot; "
                                "`rpicam-hello --list-cameras` must list it") from exc
        self._seq = 0
        self.configure(settings)

    def configure(self, s: CameraSettings) -> None:
        # picamera2's "RGB888" is stored B, G, R in memory: exactly OpenCV's BGR.
        main = {"size": tuple(s.size), "format": "RGB888"}
        kwargs: dict[str, Any] = {"main": main, "controls": {"FrameRate": float(s.fps)}, "buffer_count": 4}
        if s.lores:
            kwargs["lores"] = {"size": tuple(s.lores), "format": "YUV420"}
        config = self.cam.create_video_configuration(**kwargs)
        self.cam.configure(config)
        self.cam.start()
        if s.locked:
            self.cam.set_controls(self._lock_controls(s.exposure_us, s.analogue_gain or 1.0, s.colour_gains))
        self.settings = s

    @staticmethod
    def _lock_controls(exposure_us: int, gain: float, colour_gains: tuple[float, float]) -> dict[str, Any]:
        return {"AeEnable": False, "AwbEnable": False, "ExposureTime": int(exposure_us),
                "AnalogueGain": float(gain), "ColourGains": (float(colour_gains[0]), float(colour_gains[1]))}

    def lock_exposure(self) -> CameraSettings:
        """Freeze what auto-exposure and auto-white-balance settled on (call once the light is right);
        returns settings to store in the calibration so the next start uses the same."""
        md = self.cam.capture_metadata()
        try:
            exp, gain, cg = int(md["ExposureTime"]), float(md["AnalogueGain"]), tuple(md["ColourGains"])
        except KeyError as exc:
            raise DeviceError("camera", "picamera2", f"the camera did not report {exc}", "that the camera is a Raspberry Pi camera module") from exc
        self.cam.set_controls(self._lock_controls(exp, gain, cg))
        from dataclasses import replace

        self.settings = replace(self.settings, exposure_us=exp, analogue_gain=gain, colour_gains=(cg[0], cg[1]))
        return self.settings

    def read(self) -> Frame:
        request = self.cam.capture_request()
        try:
            image = request.make_array("main")
            lores = None
            if self.settings.lores:
                yuv = request.make_array("lores")
                lores = np.ascontiguousarray(yuv[: self.settings.lores[1], : self.settings.lores[0]])  # the Y plane
            md = request.get_metadata()
        finally:
            request.release()
        self._seq += 1
        t = self.clock.now()
        if isinstance(self.clock, RealClock) and "SensorTimestamp" in md:
            t = md["SensorTimestamp"] / 1e9  # CLOCK_MONOTONIC ns, the same base as RealClock
        if image.ndim == 3 and image.shape[2] == 4:
            image = image[:, :, :3]
        return Frame(np.ascontiguousarray(image), t, self._seq, lores)

    def close(self) -> None:
        try:
            self.cam.stop()
        finally:
            self.cam.close()


class UsbCamera:
    """A USB webcam through OpenCV."""

    def __init__(self, clock: Clock, index: int | str = 0, settings: CameraSettings = CameraSettings()):
        import cv2

        self.clock = clock
        self.cap = cv2.VideoCapture(index)
        if not self.cap.isOpened():
            raise DeviceMissing("camera", f"video device {index}", "the USB camera could not be opened",
                                "that it is plugged in and listed by `v4l2-ctl --list-devices`")
        self.cap.set(cv2.CAP_PROP_FRAME_WIDTH, settings.size[0])
        self.cap.set(cv2.CAP_PROP_FRAME_HEIGHT, settings.size[1])
        self.cap.set(cv2.CAP_PROP_FPS, settings.fps)
        self.index = index
        self._seq = 0

    def read(self) -> Frame:
        ok, image = self.cap.read()
        if not ok or image is None:
            raise DeviceError("camera", f"video device {self.index}", "the camera returned no frame",
                              "the USB cable, and that no other program uses the camera")
        self._seq += 1
        return Frame(image, self.clock.now(), self._seq)

    def close(self) -> None:
        self.cap.release()


class ReplayCamera:
    """Frames of a recording, in step with the clock: `read()` gives the latest frame at or before now.

    `source` is a session folder (frames/frames.csv), a folder of images (named in time order, spaced
    1/fps apart), or a video file."""

    def __init__(self, source: str | Path, clock: Clock, fps: float = 30.0):
        import cv2

        self.clock = clock
        src = Path(source)
        self._cap = None
        self._entries: list[tuple[int, float, Path]] = []
        if (src / "frames" / "frames.csv").is_file():
            with open(src / "frames" / "frames.csv", encoding="utf-8", newline="") as f:
                self._entries = [(int(r["seq"]), float(r["t"]), src / "frames" / r["file"]) for r in csv.DictReader(f)]
        elif src.is_dir():
            files = sorted(p for p in src.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png", ".bmp"))
            self._entries = [(i + 1, i / fps, p) for i, p in enumerate(files)]
        elif src.is_file():
            self._cap = cv2.VideoCapture(str(src))
            if not self._cap.isOpened():
                raise DeviceMissing("camera", str(src), "the video file cannot be opened", "that it is a video OpenCV can read")
            self._fps = self._cap.get(cv2.CAP_PROP_FPS) or fps
            self._vseq, self._vframe = 0, None
        else:
            raise DeviceMissing("camera", str(src), "there is no recording here", "the path of the session folder, image folder or video")
        if self._cap is None and not self._entries:
            raise DeviceMissing("camera", str(src), "the recording has no frames", "that frames were recorded")
        self._i = -1
        self._cache: tuple[int, Frame] | None = None

    def read(self) -> Frame:
        import cv2

        now = self.clock.now()
        if self._cap is not None:
            while self._vframe is None or (self._vseq / self._fps) <= now:
                ok, img = self._cap.read()
                if not ok:
                    if self._vframe is None:
                        raise DeviceError("camera", "video file", "no frame could be decoded", "the video file")
                    break
                self._vseq += 1
                self._vframe = Frame(img, (self._vseq - 1) / self._fps, self._vseq)
            return self._vframe
        while self._i + 1 < len(self._entries) and self._entries[self._i + 1][1] <= now:
            self._i += 1
        i = max(self._i, 0)
        if self._cache and self._cache[0] == i:
            return self._cache[1]
        seq, t, path = self._entries[i]
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise DeviceError("camera", str(path), "the recorded frame cannot be read", "that the session folder is complete")
        frame = Frame(image, t, seq)
        self._cache = (i, frame)
        return frame

    @property
    def finished(self) -> bool:
        return self._cap is None and self._i + 1 >= len(self._entries)

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()


class RenderedCamera:
    """The twin's camera: `render(t)` draws the table at clock time t."""

    def __init__(self, render: Callable[[float], np.ndarray], clock: Clock):
        self.render, self.clock = render, clock
        self._seq = 0

    def read(self) -> Frame:
        t = self.clock.now()
        image = self.render(t)
        if image is None or image.ndim != 3 or image.shape[2] != 3:
            raise DeviceError("camera", "twin renderer", "the renderer returned no colour image", "the twin's renderer")
        self._seq += 1
        return Frame(np.ascontiguousarray(image, dtype=np.uint8), t, self._seq)

    def close(self) -> None:
        """Nothing to release: the twin owns its renderer."""
