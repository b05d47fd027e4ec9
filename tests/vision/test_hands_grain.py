"""On a grainy frame each cell of the hand grid is the mean of the pixels round it, not one
sample of four: a dark hand on a dark table then shows as the arm it is, not as a few specks the
grain hides. A clean frame is read cell by cell as before."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from test_hands import LEVELS, TRAY, _scene  # a 6-level tower seen from straight above, hands painted in
from vision import top_level as tl
from vision.hands import hand_mask
from vision.reader import default_config
from vision.synthkit import SKIN_RGB
from vision.tray import frame_grain, register

DARK_SKIN = SKIN_RGB[-3]  # (110, 70, 40): on the scenes' dark brown table


def _mask(img: np.ndarray, cell_mean_px: int):
    cfg = default_config()
    cfg["camera"]["focal_px"] = 600.0  # what calibration learns from the kit's views
    cfg["hands"]["cell_mean_px"] = cell_mean_px
    reg = register(cfg, TRAY, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    tray_bgr = tl.tray_color(cfg, TRAY, reg, img)
    return hand_mask(cfg, TRAY, reg, img, tray_bgr, LEVELS * TRAY.block_mm[2], None, tl.color_gains(cfg, tray_bgr))


def _grainy(img: np.ndarray, sigma: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(img + rng.normal(0.0, sigma, img.shape), 0, 255).astype(np.uint8)


def _largest_blob_on_the_table(m) -> int:
    n, _, stats, _ = cv2.connectedComponentsWithStats((m.fg & m.table).astype(np.uint8), connectivity=8)
    return int(stats[1:, cv2.CC_STAT_AREA].max()) if n > 1 else 0


@pytest.fixture(scope="module")
def hand_on_the_table():
    cx, cy = TRAY.tower_center
    return _scene([((cx + 170.0, cy - 10.0), 0.0, DARK_SKIN)], seed=1)  # from the east seat, resting short of the tray


@pytest.mark.parametrize("sigma", [8.0, 16.0, 24.0])
def test_a_dark_hand_on_a_dark_table_in_a_grainy_frame_shows_as_an_arm(hand_on_the_table, sigma):
    img = _grainy(hand_on_the_table, sigma)
    assert frame_grain(cv2.cvtColor(img[::32], cv2.COLOR_BGR2GRAY)) >= default_config()["hands"]["mean_above_grain"]
    assert _largest_blob_on_the_table(_mask(img, 5)) >= 12  # an arm's piece, some 300 mm2 and more


@pytest.mark.parametrize("sigma", [16.0, 24.0])
def test_one_sample_a_cell_lets_strong_grain_hide_the_arm(hand_on_the_table, sigma):
    # (at sigma 8 the noise floor alone lets one sample a cell show the arm since `noise_k` 2.0)
    assert _largest_blob_on_the_table(_mask(_grainy(hand_on_the_table, sigma), 1)) <= 3  # a few specks at most


def test_a_clean_frame_is_read_cell_by_cell(hand_on_the_table):
    img = hand_on_the_table
    assert frame_grain(cv2.cvtColor(img[::32], cv2.COLOR_BGR2GRAY)) < default_config()["hands"]["mean_above_grain"]
    np.testing.assert_array_equal(_mask(img, 5).px, _mask(img, 1).px)
