"""Calibration keeps the default hand settings unless the kit's own photos show a gain that is no
accident: of the photos where a setting and the defaults differ, it must count right enough more
than it counts wrong (McNemar's test), for a photo or two more of sixty read kits it never saw
worse."""

from __future__ import annotations

import itertools

from vision.calibrate import pick_hand_settings
from vision.reader import default_config

GRID = {"chroma": [0.05, 0.08, 0.12], "two_arm_width_mm": [110, 140, 180], "plane_above_top_mm": [20, 35, 50]}
DEFAULTS = {"chroma": 0.05, "two_arm_width_mm": 140, "plane_above_top_mm": 35}
PHOTOS = 60


def _right(**changed: tuple[int, int]) -> dict:
    """Every setting counts the same photos right as the defaults (the first 50 of 60), except
    those named: `"0.08_180_35": (b, c)` counts b photos right that the defaults miss, and misses
    c that they count right."""
    base = [i < 50 for i in range(PHOTOS)]
    right = {st: list(base) for st in itertools.product(*GRID.values())}
    for key, (b, c) in changed.items():
        mine = list(base)
        for i in range(b):
            mine[50 + i] = True
        for i in range(c):
            mine[i] = False
        right[tuple(float(v) if "." in v else int(v) for v in key.split("_"))] = mine
    return right


def test_one_photo_more_does_not_move_the_defaults():
    assert pick_hand_settings(_right(**{"0.08_180_35": (1, 0)}), DEFAULTS, GRID, 2.5) == (0.05, 140, 35)


def test_a_gain_made_of_many_changes_both_ways_does_not_move_them():
    # 8 photos more right, 3 fewer: +5, but 2.5 x sqrt(11) is 8.3
    assert pick_hand_settings(_right(**{"0.08_110_35": (8, 3)}), DEFAULTS, GRID, 2.5) == (0.05, 140, 35)


def test_a_clear_gain_moves_them():
    # 9 photos more right, none fewer: 9 against 2.5 x 3
    assert pick_hand_settings(_right(**{"0.08_110_35": (9, 0)}), DEFAULTS, GRID, 2.5) == (0.08, 110, 35)


def test_the_largest_clear_gain_wins_and_ties_go_to_the_nearest():
    right = _right(**{"0.08_110_35": (9, 0), "0.12_180_50": (10, 0)})
    assert pick_hand_settings(right, DEFAULTS, GRID, 2.5) == (0.12, 180, 50)
    tie = _right(**{"0.12_110_20": (9, 0), "0.08_140_35": (9, 0)})
    assert pick_hand_settings(tie, DEFAULTS, GRID, 2.5) == (0.08, 140, 35)


def test_without_a_test_any_gain_moves_them():
    assert pick_hand_settings(_right(**{"0.08_180_35": (1, 0)}), DEFAULTS, GRID, 0.0) == (0.08, 180, 35)


def test_defaults_off_the_grid_are_kept():
    off = {**DEFAULTS, "chroma": 0.07}
    assert pick_hand_settings(_right(**{"0.08_110_35": (9, 0)}), off, GRID, 2.5) == (0.07, 140.0, 35.0)


def test_the_shipped_defaults_lie_on_the_grid_and_the_test_is_z_two_and_a_half():
    cfg = default_config()
    grid = cfg["calibration"]["hand_grid"]
    assert all(cfg["hands"][k] in grid[k] for k in grid)
    assert cfg["calibration"]["hand_grid_z"] == 2.5


def test_the_defaults_kept_are_named_as_the_grid_names_them():
    picked = pick_hand_settings(_right(), {**DEFAULTS, "two_arm_width_mm": 140.0}, GRID, 2.5)
    assert picked == (0.05, 140, 35) and isinstance(picked[1], int)
