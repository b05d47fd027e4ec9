"""Calibration keeps the default hand settings unless the kit's own photos show a clear gain: a
setting won by a photo of sixty read kits it never saw worse."""

from __future__ import annotations

import itertools

from vision.calibrate import pick_hand_settings
from vision.reader import default_config

GRID = {"chroma": [0.05, 0.08, 0.12], "two_arm_width_mm": [110, 140, 180], "plane_above_top_mm": [20, 35, 50]}
DEFAULTS = {"chroma": 0.08, "two_arm_width_mm": 140, "plane_above_top_mm": 35}


def _counts(default: int, **better: int) -> dict:
    right = {st: default - 1 for st in itertools.product(*GRID.values())}
    right[(0.08, 140, 35)] = default
    for key, n in better.items():
        right[tuple(float(v) if "." in v else int(v) for v in key.split("_"))] = n
    return right


def test_one_photo_more_far_from_the_defaults_does_not_move_them():
    right = _counts(51, **{"0.08_180_35": 52})  # the fresh kit 919's pick
    assert pick_hand_settings(right, DEFAULTS, GRID, 2.0) == (0.08, 140, 35)


def test_a_clear_gain_moves_them():
    right = _counts(50, **{"0.05_110_35": 53})
    assert pick_hand_settings(right, DEFAULTS, GRID, 2.0) == (0.05, 110, 35)


def test_one_photo_more_one_step_away_moves_them():
    right = _counts(43, **{"0.05_140_35": 44})  # the twin kit's chroma
    assert pick_hand_settings(right, DEFAULTS, GRID, 2.0) == (0.05, 140, 35)


def test_without_a_margin_the_best_count_wins_and_ties_go_to_the_nearest():
    right = _counts(51, **{"0.08_180_35": 52})
    assert pick_hand_settings(right, DEFAULTS, GRID, 0.0) == (0.08, 180, 35)
    tie = _counts(51, **{"0.05_110_20": 51, "0.05_140_35": 51})
    assert pick_hand_settings(tie, DEFAULTS, GRID, 0.0) == (0.08, 140, 35)


def test_the_shipped_margin_is_two_photos_a_grid_span():
    assert default_config()["calibration"]["hand_grid_margin"] == 2.0
