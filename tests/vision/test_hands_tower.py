"""The tower seen beyond its drawn silhouette is no hand: a tall tower whose top height is read too
low (or a camera pose a little off) shows its painted sides outside the cells masked for it, and
those sides reach the tray's edge like an arm. Blocks are painted red, yellow, green and blue;
skin of every tone is orange between red and yellow, so a hand is still a hand."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision import top_level as tl
from vision.geometry import intrinsics, look_at
from vision.hands import find_hands
from vision.reader import default_config
from vision.synthkit import BLOCK_RGB, SKIN_RGB, _hand_shapes, _paint_hand, box_faces, default_tray, draw_faces
from vision.tray import register

from test_hands import tray_photo  # the same table and tray sheet

TRAY = default_tray()
BLOCK_H = TRAY.block_mm[2]
LEVELS = 17


def _scene(hands=(), seed=0):
    """A 17-level tower seen from a camera beside the tray's south-west corner (its sides lean out
    to the north-east in the image); hands are (tip xy, seat degrees, skin RGB)."""
    rng = np.random.default_rng(seed)
    cx, cy = TRAY.tower_center
    cam = look_at(intrinsics(600.0, 640, 480), np.array([cx - 90, cy - 110, 520.0]), np.array([cx, cy, 0.0]), 0.0)
    img = tray_photo(cam)
    light = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    faces = []
    L, W, H = TRAY.block_mm
    colours = ("red", "yellow", "green", "blue")
    for lev in range(1, LEVELS + 1):
        for s in range(3):
            off = (s - 1) * W
            ctr, yaw = ((cx, cy + off, (lev - 0.5) * H), 0.0) if lev % 2 else ((cx + off, cy, (lev - 0.5) * H), 90.0)
            faces += box_faces(ctr, (L - 0.6, W - 0.6, H - 0.3), yaw, BLOCK_RGB[colours[(lev + s) % 4]], light)
    draw_faces(img, cam, faces)
    for tip, seat, skin in hands:
        shapes = _hand_shapes(cam, rng, TRAY, np.asarray(tip, float), seat, LEVELS * H + 30, skin)
        _paint_hand(img, cam, rng, shapes, light)
    return cv2.cvtColor(img, cv2.COLOR_RGB2BGR)


def _hands(img, z_top, **hands_cfg):
    cfg = default_config()
    cfg["camera"]["focal_px"] = 600.0
    cfg["hands"].update(hands_cfg)
    reg = register(cfg, TRAY, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    tray_bgr = tl.tray_color(cfg, TRAY, reg, img)
    return find_hands(cfg, TRAY, reg, img, tray_bgr, z_top, None, tl.color_gains(cfg, tray_bgr))


def test_a_tall_towers_sides_read_too_low_are_no_hand():
    img = _scene()
    assert _hands(img, 6 * BLOCK_H) == ()


def test_the_sides_were_an_arm_before_the_paint_was_told_from_skin():
    # the same scene with the block-paint test off: the sides reach the edge as an arm would
    assert len(_hands(_scene(), 6 * BLOCK_H, block_sat=0.0)) >= 1


@pytest.mark.parametrize("skin", [SKIN_RGB[0], SKIN_RGB[4], SKIN_RGB[-1]], ids=["light", "medium", "dark"])
def test_a_hand_over_the_tall_tower_is_still_a_hand(skin):
    cx, cy = TRAY.tower_center
    hands = _hands(_scene([((cx + 5, cy - 5), 250.0, skin)]), LEVELS * BLOCK_H)
    assert len(hands) == 1
