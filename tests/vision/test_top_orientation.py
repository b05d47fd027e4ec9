"""Which way the top level lies when it holds only one or two blocks: the level below shows
through the empty slots, lying the other way, and must not win the orientation."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision import top_level as tl
from vision.kit import Tray
from vision.reader import SlotEvidence, default_config, reading_evidence

COLOURS = [(40, 40, 200), (40, 200, 220), (60, 170, 60), (200, 90, 40)]  # BGR red, yellow, green, blue


def _tray() -> Tray:
    return Tray("DICT_4X4_50", {0: np.zeros((4, 2)), 1: np.ones((4, 2))}, (150.0, 150.0), (75.0, 25.0, 15.0))


def _face_one_block_along_y_over_a_level_along_x(cfg: dict, slot: int) -> np.ndarray:
    """The rectified top face (rows run south, columns east) of a top holding one block lying
    along y in `slot`, over a full level of three blocks lying along x, each its own colour,
    with a dark gap between neighbours."""
    oc = cfg["orientation"]
    ppm, m = float(oc["px_per_mm"]), float(oc["margin_mm"])
    n = int(round((75 + 2 * m) * ppm))
    face = np.full((n, n, 3), 90, np.uint8)
    for s in range(3):  # the level below: stripes of rows
        r0, r1 = int(round((m + s * 25) * ppm)), int(round((m + (s + 1) * 25) * ppm))
        face[r0:r1, int(m * ppm):int((m + 75) * ppm)] = COLOURS[s]
        face[r1 - 1:r1 + 1, int(m * ppm):int((m + 75) * ppm)] = 30
    c0, c1 = int(round((m + slot * 25) * ppm)), int(round((m + (slot + 1) * 25) * ppm))
    face[int(m * ppm):int((m + 75) * ppm), c0:c1] = COLOURS[3]  # the top block: a column
    return face


@pytest.mark.parametrize("slot", [0, 1, 2])
def test_one_block_lying_along_y_has_the_only_unbroken_seam_though_the_level_below_shows_more(slot):
    """The level below's two seams along x show in two of the three thirds each; the top
    block's side along y runs unbroken through all three, so the face reads as y."""
    cfg = default_config()
    face = _face_one_block_along_y_over_a_level_along_x(cfg, slot)
    lab = tl.lab_of(face)
    gx = np.abs(cv2.Sobel(lab, cv2.CV_32F, 1, 0, ksize=3)).sum(axis=2)
    gy = np.abs(cv2.Sobel(lab, cv2.CV_32F, 0, 1, ksize=3)).sum(axis=2)
    x1, x2, y1, y2, diff = tl.seam_continuity(cfg["orientation"], 25.0, gx, gy)
    assert y1 > 3 * max(x1, 0.1), (x1, y1)
    assert diff < 0


def test_the_face_turned_a_quarter_reads_the_other_way():
    """The seam features of a face turned by 90 degrees swap between the orientations."""
    cfg = default_config()
    face = _face_one_block_along_y_over_a_level_along_x(cfg, 0)
    f = tl.orientation_features(cfg, _tray(), face)
    g = tl.orientation_features(cfg, _tray(), np.ascontiguousarray(np.rot90(face)))
    assert f[-1] < 0 < g[-1]
    np.testing.assert_allclose(f[-5:-3], g[-3:-1], rtol=0.2, atol=0.2)


def _evidence(p_occ, best) -> SlotEvidence:
    """Slot evidence whose best colour and glyph both have probability sqrt(best)."""
    b = np.sqrt(np.asarray(best, float))
    col = np.column_stack([b, (1 - b)[:, None].repeat(4, axis=1) / 4])
    gly = np.column_stack([b, (1 - b)[:, None].repeat(7, axis=1) / 7])
    return SlotEvidence(np.asarray(p_occ, float), col, gly)


def test_one_sure_block_and_two_sure_empty_slots_beat_three_blocks_seen_two_thirds():
    """The right orientation of a one-block top: one block read surely, two slots surely
    empty (the level below seen across). The wrong one reads the level below's blocks, two
    thirds of each in view, as blocks. The right reading must score higher."""
    right = _evidence([0.99, 0.02, 0.01], [0.97, 0.3, 0.3])
    wrong = _evidence([1.0, 0.85, 0.8], [0.9, 0.55, 0.6])
    w = float(default_config()["decision"]["orientation_empty_weight"])
    assert reading_evidence(right, w) > reading_evidence(wrong, w)


def test_three_empty_slots_are_no_reading_of_a_top():
    """A full top seen across: every slot cut in three by the seams reads as empty. A top
    level holds a block, so that reading is worth nothing, not three sure slots."""
    across = _evidence([0.01, 0.02, 0.01], [0.3, 0.3, 0.3])
    along = _evidence([0.98, 0.99, 0.97], [0.8, 0.9, 0.7])
    w = float(default_config()["decision"]["orientation_empty_weight"])
    assert reading_evidence(across, w) < 0.2
    assert reading_evidence(along, w) > 2.0
