"""Cameras: picamera2 configuration against a fake Picamera2, replay, rendered camera."""

import numpy as np
import pytest

from hardware.camera import CameraSettings, PiCamera, RenderedCamera, ReplayCamera
from hardware.clock import SimClock
from hardware.errors import DeviceMissing
from hardware.recorder import SessionWriter


class FakeRequest:
    def __init__(self, cam):
        self.cam = cam

    def make_array(self, name):
        if name == "main":
            w, h = self.cam.config["main"]["size"]
            img = np.zeros((h, w, 3), np.uint8)
            img[..., 0] = 200  # blue channel first, as picamera2's RGB888 is laid out
            return img
        w, h = self.cam.config["lores"]["size"]
        return np.full((h * 3 // 2, w), 77, np.uint8)

    def get_metadata(self):
        return {"SensorTimestamp": 123_000_000_000, "ExposureTime": 9000}

    def release(self):
        self.cam.released += 1


class FakePicamera2:
    def __init__(self):
        self.config = None
        self.started = False
        self.controls = {}
        self.released = 0

    def create_video_configuration(self, main, lores=None, controls=None, buffer_count=4):
        return {"main": main, "lores": lores, "controls": controls}

    def configure(self, config):
        self.config = config

    def start(self):
        self.started = True

    def set_controls(self, c):
        self.controls.update(c)

    def capture_metadata(self):
        return {"ExposureTime": 8000, "AnalogueGain": 2.0, "ColourGains": (1.8, 1.5)}

    def capture_request(self):
        return FakeRequest(self)

    def stop(self):
        self.started = False

    def close(self):
        pass


def test_picamera_configures_640x480_bgr_and_lores_and_reads_frames():
    clock = SimClock(5.0)
    fake = FakePicamera2()
    cam = PiCamera(clock, CameraSettings(), picamera2_factory=lambda: fake)
    assert fake.config["main"] == {"size": (640, 480), "format": "RGB888"}
    assert fake.config["lores"]["size"] == (320, 240) and fake.started
    f = cam.read()
    assert f.image.shape == (480, 640, 3) and f.image[0, 0, 0] == 200 and f.t == 5.0 and f.seq == 1
    assert f.lores.shape == (240, 320) and fake.released == 1
    cam.close()
    assert not fake.started


def test_exposure_and_white_balance_lock_after_calibration_and_come_back_locked():
    fake = FakePicamera2()
    cam = PiCamera(SimClock(), picamera2_factory=lambda: fake)
    s = cam.lock_exposure()
    assert fake.controls == {"AeEnable": False, "AwbEnable": False, "ExposureTime": 8000, "AnalogueGain": 2.0, "ColourGains": (1.8, 1.5)}
    fake2 = FakePicamera2()
    PiCamera(SimClock(), s, picamera2_factory=lambda: fake2)
    assert fake2.controls["AeEnable"] is False and fake2.controls["ExposureTime"] == 8000


def test_without_picamera2_the_message_says_what_to_install():
    try:
        import picamera2  # noqa: F401
        pytest.skip("picamera2 present")
    except ImportError:
        pass
    with pytest.raises(DeviceMissing, match="python3-picamera2"):
        PiCamera(SimClock())


def test_replay_camera_serves_recorded_frames_by_clock_time(tmp_path):
    with SessionWriter(tmp_path / "s", "sim", 1000, 320) as w:
        for i in range(3):
            w.frame(0.1 * i, np.full((48, 64, 3), 60 * i, np.uint8))
    clock = SimClock()
    cam = ReplayCamera(tmp_path / "s", clock)
    assert cam.read().seq == 1
    clock.set(0.15)
    f = cam.read()
    assert f.seq == 2 and f.t == pytest.approx(0.1) and abs(int(f.image.mean()) - 60) <= 2
    clock.set(1.0)
    assert cam.read().seq == 3 and cam.finished


def test_rendered_camera_asks_the_twin_for_the_clock_time():
    clock = SimClock(2.5)
    seen = []
    cam = RenderedCamera(lambda t: seen.append(t) or np.zeros((10, 10, 3), np.uint8), clock)
    assert cam.read().t == 2.5 and seen == [2.5]


def test_replay_camera_plays_a_video_file_by_clock_time(tmp_path):
    import cv2

    path = tmp_path / "table.avi"
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (64, 48))
    if not out.isOpened():
        pytest.skip("this OpenCV build cannot write MJPG video")
    for i in range(5):
        out.write(np.full((48, 64, 3), 50 * i, np.uint8))
    out.release()
    clock = SimClock()
    cam = ReplayCamera(path, clock)
    assert cam.read().seq == 1
    clock.set(0.25)
    f = cam.read()
    assert f.seq == 3 and f.t == pytest.approx(0.2) and abs(int(f.image.mean()) - 100) <= 4
