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


def test_a_mirrored_camera_is_told_to_turn_mirroring_off():
    """A camera set to flip its picture left to right shows no marker that reads: the player is
    told to turn the flip setting off, not to uncover a tray that lies in plain view."""
    tray, img, _ = _frame(1)
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    with pytest.raises(TrayNotFound, match="the picture is mirrored"):
        register(_cfg(), tray, np.ascontiguousarray(gray[:, ::-1]))
    with pytest.raises(TrayNotFound, match="mirrored"):  # upside down and mirrored: still mirrored
        register(_cfg(), tray, np.ascontiguousarray(gray[::-1, :]))
    assert len(register(_cfg(), tray, np.ascontiguousarray(gray[::-1, ::-1])).marker_ids) == 4  # turned round: read


@pytest.mark.parametrize("frame, words", [
    (np.full((480, 640), 6, np.uint8), "almost black"),
    (np.full((480, 640), 250, np.uint8), "washed out"),
    (np.full((24, 32), 128, np.uint8), "only 32x24 pixels"),
])
def test_a_picture_the_tray_cannot_be_seen_in_says_why(frame, words):
    """A covered lens, a camera blinded by a lamp and a thumbnail are not a covered tray."""
    with pytest.raises(TrayNotFound, match=words):
        register(_cfg(), default_tray(), frame)


def test_another_tray_sheet_is_named_by_the_markers_it_shows():
    """Markers seen but none with the ids tray.json names: the wrong sheet (or the wrong
    tray.json), said so with both sets of ids."""
    from dataclasses import replace

    tray, img, _ = _frame(1)
    other = replace(tray, markers={i + 10: q for i, q in tray.markers.items()})
    with pytest.raises(TrayNotFound, match=r"markers seen \(0, 1, 2, 3\) are not this tray's \(10, 11, 12, 13\)"):
        register(_cfg(), other, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))


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


def _dim_and_grainy(gray: np.ndarray, quad: np.ndarray, seed: int = 0) -> np.ndarray:
    """The frame with the place round one marker blurred, darkened and grainy: a marker far from
    the lamp, small in a noisy camera."""
    side = float(np.linalg.norm(quad[0] - quad[2])) / np.sqrt(2.0)
    x0, y0 = (quad.min(axis=0) - 0.7 * side).astype(int)
    x1, y1 = (quad.max(axis=0) + 0.7 * side).astype(int)
    out = gray.astype(np.float32)
    patch = cv2.GaussianBlur(out[y0:y1, x0:x1], (0, 0), 2.0) * 0.45
    out[y0:y1, x0:x1] = patch + np.random.default_rng(seed).normal(0, 20, patch.shape)
    return np.clip(out, 0, 255).astype(np.uint8)


def test_a_dim_grainy_marker_missed_in_the_whole_frame_is_found_where_the_others_place_it():
    """A hand over one marker, another dim and grainy: two markers on one side of the tray place
    the camera poorly, so the dim one is looked for where those two place it."""
    from dataclasses import replace
    from vision.tray import detect_markers
    tray, img, _ = _frame(1)
    cfg = _cfg()
    clean = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    _cover(img, tray, clean, (1,))
    dim = _dim_and_grainy(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), clean.to_image(tray.markers[0]))
    finder = make_detector(cfg)
    assert set(detect_markers(replace(finder, rescue=None), dim, tray.markers)) == {2, 3}  # the frame's own detectors miss it
    found = detect_markers(finder, dim, tray.markers)
    assert set(found) == {0, 2, 3}
    assert np.abs(found[0] - clean.to_image(tray.markers[0])).max() < 3.0
    assert register(cfg, tray, dim).marker_ids == (0, 2, 3)


def test_with_three_markers_found_the_fourth_is_not_looked_for_again(monkeypatch):
    import vision.tray as tray_module
    from vision.tray import detect_markers
    tray, img, _ = _frame(1)
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    cfg = _cfg()
    clean = register(cfg, tray, gray)
    dim = _dim_and_grainy(gray, clean.to_image(tray.markers[0]))
    monkeypatch.setattr(tray_module, "_rescued", lambda *a: pytest.fail("three markers place the camera well"))
    assert set(detect_markers(make_detector(cfg), dim, tray.markers)) == {1, 2, 3}


def test_a_marker_found_again_in_its_crop_has_the_corners_the_whole_frame_gives():
    from vision.tray import _rescued, detect_markers
    tray, img, _ = _frame(2)
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    finder = make_detector(_cfg())
    every = detect_markers(finder, gray, tray.markers)
    others = {i: c for i, c in every.items() if i != 2}
    again = _rescued(finder, gray, tray.markers, others)
    assert set(again) == {2}
    assert np.abs(again[2] - every[2]).max() < 0.6


def test_a_hand_over_a_marker_is_not_searched_again(monkeypatch):
    import vision.tray as tray_module
    from vision.tray import _rescued, detect_markers
    tray, img, _ = _frame(2)
    cfg = _cfg()
    full = register(cfg, tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    _cover(img, tray, full, (1,))
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    finder = make_detector(cfg)
    found = detect_markers(finder, gray, tray.markers)
    assert 1 not in found and len(found) == 3
    looked = []
    monkeypatch.setattr(tray_module, "_detect_all", lambda det, crop: looked.append(crop.shape) or [])
    assert _rescued(finder, gray, tray.markers, found) == {}
    assert looked == []  # a place of one skin colour holds no black and white marker


def _shaken(img: np.ndarray, length_px: int, angle_deg: float) -> np.ndarray:
    """The frame smeared length_px along a line at angle_deg, as a camera shaken while exposing."""
    k = np.zeros((length_px, length_px), np.float32)
    k[length_px // 2, :] = 1.0 / length_px
    M = cv2.getRotationMatrix2D((length_px / 2 - 0.5, length_px / 2 - 0.5), angle_deg, 1.0)
    k = cv2.warpAffine(k, M, (length_px, length_px))
    return cv2.filter2D(img, -1, k / k.sum())


def test_a_shaken_camera_still_reads_the_markers_by_the_middle_of_each_cell():
    # smeared, a marker's outline comes out a fraction of a cell too large; read from 8x8 pixels
    # a cell (OpenCV's default is 4x4) each cell's middle stays on the cell
    from copy import deepcopy

    from vision.tray import detect_markers

    tray = default_tray()
    four = deepcopy(default_config())
    four["aruco"]["pixels_per_cell"] = 4
    finders = {"default": make_detector(default_config()), "4x4": make_detector(four)}
    found = {k: 0 for k in finders}
    registered = {k: 0 for k in finders}
    for seed in range(12):
        img, _ = render_sample(np.random.default_rng(seed), tray,
                               SynthOptions(hand_probs=(1, 0, 0), hide_marker_prob=0.0, blur_max=0.0, noise_max=2.0),
                               focal=600.0)
        gray = cv2.cvtColor(_shaken(img, 9, 30 * seed % 180), cv2.COLOR_RGB2GRAY)
        for k, finder in finders.items():
            n = len(detect_markers(finder, gray, tray.markers))
            found[k] += n
            registered[k] += n >= 2
    assert registered["default"] == 12  # every frame placed by two markers or more
    assert found["default"] > found["4x4"] + 10 and registered["4x4"] < 12
