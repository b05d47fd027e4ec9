"""A camera whose lens bends lines: calibration learns the bend from the markers, and the reader
straightens every frame before it reads, so the tray lines up and the top reads as with a pinhole."""

from __future__ import annotations

import json
from dataclasses import replace

import cv2
import numpy as np
import pytest

from tests.vision.conftest import QUICK
from vision.geometry import intrinsics, look_at
from vision.lens import Lens, fit_lens, lens_from_config
from vision.synthkit import SynthOptions, default_tray, render_sample, write_kit
from vision.reader import default_config
from vision.tray import correspondences, detect_markers, make_detector, register

BARREL = (-0.22, 0.05)  # about what a wide camera module shows
TRAY = default_tray()


def _views(radial, n: int = 12, seed: int = 0, f: float = 620.0):
    """The tray's marker corners as a camera with this lens sees them from n poses."""
    rng = np.random.default_rng(seed)
    K = intrinsics(f, 640, 480)
    obj = np.concatenate([np.asarray(c, float) for c in TRAY.markers.values()])
    views = []
    for _ in range(n):
        eye = np.array([140 + rng.normal(0, 40), 140 + rng.normal(0, 40), rng.uniform(470, 600)])
        cam = look_at(K, eye, np.array([140.0, 140.0, 0.0]), rng.uniform(0, 360))
        px, _ = cv2.projectPoints(np.column_stack([obj, np.zeros(len(obj))]), cam.rvec, cam.tvec, K,
                                  np.array([radial[0], radial[1], 0, 0, 0], float))
        views.append((obj, px.reshape(-1, 2) + rng.normal(0, 0.2, (len(obj), 2))))
    return views


def test_calibration_learns_a_barrel_lens_from_the_markers_corners():
    fit = fit_lens(_views(BARREL), 640, 480, 576.0)
    assert fit is not None
    assert fit.radial[0] == pytest.approx(BARREL[0], abs=0.05)
    assert fit.focal_px == pytest.approx(620.0, rel=0.03)
    assert fit.keeps_distortion(0.3, 0.7)


def test_a_lens_that_does_not_bend_lines_is_left_a_pinhole():
    fit = fit_lens(_views((0.0, 0.0)), 640, 480, 576.0)
    assert fit is not None and not fit.keeps_distortion(0.3, 0.7)
    assert fit.pinhole_focal_px == pytest.approx(620.0, rel=0.02)


def test_too_few_views_fit_no_lens():
    assert fit_lens(_views(BARREL, n=2), 640, 480, 576.0) is None


def test_straightened_points_bend_back_to_where_the_camera_saw_them():
    lens = Lens(620.0, BARREL, 640, 480)
    px = np.array([[5.0, 5.0], [320.0, 240.0], [600.0, 40.0], [100.0, 470.0]])
    assert np.allclose(lens.bent_points(lens.ideal_points(px)), px, atol=0.05)
    # barrel: the frame's corners are further out than the camera shows them
    assert np.linalg.norm(lens.ideal_points(px[:1]) - [319.5, 239.5]) > np.linalg.norm(px[0] - [319.5, 239.5])


def test_a_straightened_frame_lines_the_tray_up_as_a_pinhole_camera():
    opt = SynthOptions(hand_probs=(1, 0, 0), hide_marker_prob=0.0, lens_radial=BARREL)
    img, _ = render_sample(np.random.default_rng(11), TRAY, opt, focal=620.0)
    img = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    base = default_config()
    cfg = {**base, "camera": {"focal_px": 620.0, "width": 640},
           "tray": {**base["tray"], "min_markers": 2, "max_reprojection_px": 50.0}}  # (to measure the bent fit)
    det = make_detector(base)
    bent = register(cfg, TRAY, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), det)
    lens = Lens(620.0, BARREL, 640, 480)
    straight = register(cfg, TRAY, cv2.cvtColor(lens.straighten(img), cv2.COLOR_BGR2GRAY), det)
    assert straight.reprojection_px < 1.0 < bent.reprojection_px
    assert lens.straighten(img).shape == img.shape


def test_a_frame_of_another_shape_cannot_be_straightened_but_another_resolution_can():
    lens = Lens(620.0, BARREL, 640, 480)
    assert lens.straighten(np.zeros((960, 1280, 3), np.uint8)).shape == (960, 1280, 3)
    with pytest.raises(ValueError, match="calibrated at 640x480"):
        lens.straighten(np.zeros((720, 1280, 3), np.uint8))


@pytest.mark.parametrize("radial", [[0.1], ["a", 0.2], [float("nan"), 0.0]])
def test_a_broken_lens_in_the_calibration_says_so(radial):
    with pytest.raises(ValueError, match="radial distortion"):
        lens_from_config({"focal_px": 600.0, "width": 640, "height": 480, "radial": radial})


def test_no_lens_or_a_flat_one_leaves_frames_as_they_come():
    assert lens_from_config({"focal_px": 600.0}) is None
    assert lens_from_config({"focal_px": 600.0, "width": 640, "height": 480, "radial": [0.0, 0.0]}) is None


@pytest.fixture(scope="module")
def barrel_calibration(tmp_path_factory):
    from vision.calibrate import calibrate_kit

    root = tmp_path_factory.mktemp("lens")
    kit = write_kit(root / "kit", 20, seed=7, opt=SynthOptions(hide_marker_prob=0.0, lens_radial=BARREL), focal=620.0)
    out = root / "cal"
    calibrate_kit(kit, out, log=lambda m: None, overrides=QUICK)
    return kit, out


def test_calibrating_a_kit_shot_through_a_barrel_lens_keeps_the_lens(barrel_calibration):
    _, cal = barrel_calibration
    cam = json.loads((cal / "config.json").read_text())["camera"]
    report = json.loads((cal / "report.json").read_text())
    assert report["lens"]["kept"] and report["lens"]["rms_px"] < report["lens"]["pinhole_rms_px"] - 0.3
    assert cam["radial"][0] == pytest.approx(BARREL[0], abs=0.06)
    assert (cam["width"], cam["height"]) == (640, 480)


def test_a_pinhole_kit_keeps_no_lens(calibration):
    assert "radial" not in json.loads((calibration / "config.json").read_text())["camera"]
    assert json.loads((calibration / "report.json").read_text())["lens"]["kept"] is False


def test_the_reader_straightens_what_the_lens_bent(barrel_calibration):
    from vision.reader import load_pipeline, read_frame

    kit, cal = barrel_calibration
    p = load_pipeline(cal)
    assert p.lens is not None
    labels = json.loads((kit / "labels.json").read_text())
    right = total = 0
    for name, lab in list(labels.items())[:8]:
        img = cv2.imread(str(kit / "images" / name))
        res = read_frame(p, img)
        assert res.image is not None and not np.array_equal(res.image, img)  # what was read is the straightened frame
        assert res.registration.reprojection_px < 1.5
        right += sum(a == b for a, b in zip(res.reading.names, lab["slots"]))
        total += 3
    assert right >= 0.9 * total


def test_a_calibration_whose_lens_makes_no_sense_is_refused(barrel_calibration, tmp_path):
    import shutil

    from vision.reader import CalibrationMissing, load_pipeline

    _, cal = barrel_calibration
    broken = tmp_path / "cal"
    shutil.copytree(cal, broken)
    cfg = json.loads((broken / "config.json").read_text())
    cfg["camera"]["radial"] = [0.1, "much"]
    (broken / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CalibrationMissing, match="radial distortion"):
        load_pipeline(broken)


def test_a_kit_drawn_through_a_lens_still_shows_every_marker():
    opt = replace(SynthOptions(hide_marker_prob=0.0), lens_radial=BARREL)
    det = make_detector(default_config())
    for seed in range(3):
        img, _ = render_sample(np.random.default_rng(seed), TRAY, opt, focal=620.0)
        gray = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_RGB2BGR), cv2.COLOR_BGR2GRAY)
        _, _, ids = correspondences(TRAY, detect_markers(det, gray, TRAY.markers))
        assert len(ids) >= 3
