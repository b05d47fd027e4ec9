"""Painted Wilds (calibration of a kit with no clear Wild) and the sure-block occupancy rule."""

import cv2
import numpy as np

from vision import painted
from vision.reader import occupancy_with_glyph


def _block(ppm: float = 5.0) -> np.ndarray:
    """A red block's fine patch: red body, white oval field, a red bar of ink inside it."""
    h, w = int(25 * ppm), int(75 * ppm)
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = (40, 40, 200)
    cv2.ellipse(img, (w // 2, h // 2), (int(28 * ppm), int(9 * ppm)), -15, 0, 360, (235, 235, 235), -1)
    cv2.rectangle(img, (w // 2 - 15, h // 2 - 30), (w // 2 + 15, h // 2 + 30), (40, 40, 200), -1)
    return img


def test_block_parts_and_paint():
    patch = _block()
    parts = painted.block_parts(patch, 5.0)
    assert parts is not None
    body, field, ink = parts
    assert ink.sum() > 0.02 * ink.size and field.sum() > 0.15 * field.size
    quad = np.array([[40, 40, 200], [40, 220, 220], [60, 180, 40], [200, 90, 30]], np.float32)
    out = painted.paint_wild(patch, parts, quad, 0.12, 4)
    assert out[body].mean() < 40  # the body black
    assert out[ink].mean() > 200  # the ink white
    assert len({tuple(v) for v in out[field][::50]}) >= 4  # the field in four colours and its rim


def test_no_field_no_paint():
    assert painted.block_parts(np.full((125, 375, 3), (40, 40, 200), np.uint8), 5.0) is None


def test_occupancy_with_glyph():
    dc = {"glyph_block_odds": 30.0, "glyph_sure_above": 0.9}
    p_occ = np.array([0.3, 0.3])
    p_col = np.array([[0.99, 0, 0, 0, 0.01], [0.99, 0, 0, 0, 0.01]])
    p_gly = np.zeros((2, 8))
    p_gly[0, 1], p_gly[1] = 0.98, 1 / 8  # slot 0 read surely, slot 1 at the prior
    out = occupancy_with_glyph(dc, p_occ, p_col, p_gly)
    assert out[0] > 0.9 and out[1] == 0.3
    assert np.array_equal(occupancy_with_glyph({"glyph_block_odds": 1.0}, p_occ, p_col, p_gly), p_occ)
