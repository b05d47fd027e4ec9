"""The tray is found from its ArUco markers, even with one marker covered by a hand."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.geometry import intrinsics, look_at
from vision.synthkit import SynthOptions, default_tray, render_sample
from vision.tray import TrayNotFound, make_detector, register
from vision.reader import default_config


def _frame(seed: int):
    rng = np.random.default_rng(seed)
    tray = default_tray()
    img, meta = render_sample(rng, tray, SynthOptions(hand_probs=(1, 0, 0), hide_marker_prob=0.0), focal=600.0)
    return tray, cv2.cvtColor(img, cv2.COLOR_RGB2BGR), meta


def _cfg():
    cfg = default_config()
    cfg["camera"]["focal_px"] = 600.0
    return cfg


def _cover(img, tray, reg, ids):
    """Hands (flat discs of skin) over the markers `ids`, where registration reg sees them."""
    for i in ids:
        corners = reg.to_image(tray.markers[i])
        c = corners.mean(axis=0)
        cv2.circle(img, (int(c[0]), int(c[1])), int(np.linalg.norm(corners[0] - corners[2])), (120, 170, 220), -1)


def test_camera_position_is_recovered_from_the_markers():
    tray, img, meta = _frame(1)
    reg = register(_cfg(), tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    assert len(reg.marker_ids) == 4
    assert np.linalg.norm(reg.camera.center - np.array(meta["extra"]["eye"])) < 10.0


def test_one_hidden_marker_still_registers_the_tray():
    tray, img, meta = _frame(2)
    cfg = _cfg()
    full = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    _cover(img, tray, full, (0,))  # a hand over marker 0
    reg = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    assert 0 not in reg.marker_ids and len(reg.marker_ids) == 3
    assert np.linalg.norm(reg.camera.center - full.camera.center) < 15.0
    centre = np.array([tray.tower_center])
    assert np.linalg.norm(reg.to_image(centre, 150.0) - full.to_image(centre, 150.0)) < 2.0


def test_a_frame_without_the_tray_says_so_in_words():
    tray = default_tray()
    blank = np.full((480, 640), 128, np.uint8)
    with pytest.raises(TrayNotFound, match="markers"):
        register(_cfg(), tray, blank)


def test_focal_length_is_learnt_from_many_views(small_kit):
    import json

    from vision.kit import load_kit
    from vision.tray import calibrate_focal, correspondences, detect_markers

    kit = load_kit(small_kit)
    det = make_detector(_cfg())
    views = []
    for name in kit.labels:
        g = cv2.imread(str(kit.image_path(name)), cv2.IMREAD_GRAYSCALE)
        obj, pix, ids = correspondences(kit.tray, detect_markers(det, g))
        if len(ids) >= 2:
            views.append((obj, pix))
    f, _ = calibrate_focal(kit.tray, views, 640, 480, 500.0)
    truth = json.loads((small_kit / "truth.json").read_text())
    f_true = next(iter(truth.values()))["f"]
    assert abs(f - f_true) / f_true < 0.05


@pytest.mark.parametrize("seed, blur", [(1, 3.0), (5, 2.5), (6, 2.5)])
def test_two_markers_under_hands_and_a_blurred_camera_still_register_the_tray(seed, blur):
    """The fast detector's one threshold window misses one of the two blurred markers left; the
    cell-centre decoding or the thorough detector finds it."""
    tray, img, _ = _frame(seed)
    cfg = _cfg()
    full = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    _cover(img, tray, full, (0, 1))
    gray = cv2.GaussianBlur(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), (0, 0), blur)
    reg = register(cfg, tray, gray)
    assert reg.marker_ids == (2, 3)
    # On the tray's plane the two markers place the tray to a pixel or two; above it, two blurred
    # markers along one edge leave the camera's tilt loose, which the top-face search corrects.
    centre = np.array([tray.tower_center])
    assert np.linalg.norm(reg.to_image(centre) - full.to_image(centre)) < 3.0


def test_one_marker_in_view_places_the_tray_when_the_focal_length_is_known():
    """Two hands over the tray can leave one corner of the sheet in view: with the calibrated
    focal length its marker's four corners still place the camera."""
    tray, img, _ = _frame(3)
    cfg = _cfg()
    full = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    _cover(img, tray, full, (0, 1, 2))
    reg = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    assert reg.marker_ids == (3,)
    centre = np.array([tray.tower_center])
    assert np.linalg.norm(reg.to_image(centre) - full.to_image(centre)) < 5.0


def test_calibration_does_not_learn_from_a_photo_with_one_marker_in_view():
    from vision.calibrate import register_for_learning

    tray, img, _ = _frame(3)
    cfg = _cfg()
    full = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    _cover(img, tray, full, (0, 1, 2))
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    assert register(cfg, tray, gray).marker_ids == (3,)  # read: yes
    with pytest.raises(TrayNotFound, match="only 1 of the tray's 4 markers"):
        register_for_learning(cfg, tray, gray, make_detector(cfg))  # learnt from: no
