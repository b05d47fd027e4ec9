"""A class the kit shows on one or two blocks (the Wild) is still taught from many varied crops."""

from __future__ import annotations

from types import SimpleNamespace

import cv2
import numpy as np

from vision import calibrate
from vision.calibrate import glyph_training_set, rare_copies
from vision.reader import default_config


def _fake_crop(cfg, tray, reg, img, z, orient, slot, jitter=None, offset=None):
    """The slot's 'glyph' (the image itself) moved as the jitter moves the cut."""
    gc = cfg["glyph"]
    J = np.eye(3) if jitter is None else jitter
    big = cv2.warpPerspective(img, J, (img.shape[1], img.shape[0]), borderMode=cv2.BORDER_REPLICATE)
    return cv2.resize(big, (int(gc["width"]), int(gc["height"])), interpolation=cv2.INTER_AREA)


def _glyph_image(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.full((60, 120, 3), 230, np.uint8)
    for _ in range(4):
        x, y = rng.integers(10, 110), rng.integers(10, 50)
        cv2.line(img, (int(x), int(y)), (int(rng.integers(10, 110)), int(rng.integers(10, 50))), (30, 30, 200), 4)
    return img


def _samples():
    """Ten blocks of glyph "1" (ten photos) and one Wild."""
    out = [(SimpleNamespace(reg=None, img=_glyph_image(k), tray_bgr=np.full(3, 200.0)), 0.0, "x", 0, "1") for k in range(10)]
    out.append((SimpleNamespace(reg=None, img=_glyph_image(99), tray_bgr=np.full(3, 200.0)), 0.0, "x", 1, "wild"))
    return out


def test_a_glyph_seen_once_gets_as_many_varied_crops_as_one_seen_rare_class_blocks_times(monkeypatch):
    monkeypatch.setattr(calibrate.tl, "glyph_crop", _fake_crop)
    cfg = default_config()
    rare = int(cfg["calibration"]["rare_class_blocks"])
    assert rare >= 4  # the rule is on by default
    per_block = 2 * (int(cfg["calibration"]["glyph_augment"]) + 1)  # crops (as laid and turned) per block shown once
    X, Y = glyph_training_set(cfg, None, _samples(), np.random.default_rng(0), np.random.default_rng(1))
    wild = np.array([x for x, y in zip(X, Y) if y == "wild"])
    assert len(wild) >= rare * per_block
    assert len(np.unique(wild.round(5), axis=0)) == len(wild)  # every copy moved or degraded: none repeats another
    # the common class is taught exactly as without the rule (its crops drawn from their own stream)
    off = dict(cfg, calibration=dict(cfg["calibration"], rare_class_blocks=0))
    X0, Y0 = glyph_training_set(off, None, _samples(), np.random.default_rng(0), np.random.default_rng(1))
    assert Y0.count("wild") == per_block and Y0.count("1") == Y.count("1") == 10 * per_block
    assert np.array_equal(np.array([x for x, y in zip(X0, Y0) if y == "1"]), np.array([x for x, y in zip(X, Y) if y == "1"]))


def test_rare_copies_make_up_a_class_to_rare_class_blocks_and_leave_common_classes_alone():
    cfg = default_config()
    cfg["calibration"]["rare_class_blocks"] = 6
    assert [rare_copies(cfg, n) for n in (1, 2, 3, 4, 6, 25)] == [6, 3, 2, 2, 1, 1]
    assert rare_copies(cfg, 3, clear=1) == 4  # the clear block stands for the two under hands' photos too
    cfg["calibration"]["rare_class_blocks"] = 0
    assert rare_copies(cfg, 1) == 1


def test_a_rare_block_in_a_photo_with_hands_is_not_copied(monkeypatch):
    """A hand may lie over it: copies would teach the hand as the class."""
    monkeypatch.setattr(calibrate.tl, "glyph_crop", _fake_crop)
    cfg = default_config()
    per_block = 2 * (int(cfg["calibration"]["glyph_augment"]) + 1)
    samples = _samples()
    X, Y = glyph_training_set(cfg, None, samples, np.random.default_rng(0), np.random.default_rng(1),
                              clear=[True] * 10 + [False])
    assert Y.count("wild") == per_block
