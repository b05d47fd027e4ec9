"""What crosses the tray's rim is told by its colour.

An arm seen only where it is over the tray, nothing of it on the table beyond, must be the
table's colour (else the table would show it too); a hand's fingers or its shadow reaching the
rim are not, and bring no second arm in. The other way round, an arm seen only on the table
that meets the rim an arm's width wide and goes on unseen over the tray must be the tray's
colour (a pale hand over a pale tray): its hand is over the tray, at hand height, and counts
as far out as a hand seen on the tray does. A shadow on the table is darker than the tray, and
a hand resting on the table stops short of the rim: neither is a hand over the tower."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vision.hands import HandMask, arm_entries, counted_arms
from vision.reader import default_config

from test_hands_rim import EAST_HAND, OVERLAP, SOUTH_ARM, TRAY, _table_grid

TRAY_BGR = np.array([200.0, 215.0, 230.0], np.float32)   # pale wood
TABLE_BGR = np.array([40.0, 60.0, 90.0], np.float32)     # dark brown table
PALE_SKIN = np.array([170.0, 200.0, 240.0], np.float32)  # within a few hundredths of the tray's colour


def _painted(m: HandMask, paint: list[tuple[tuple[float, float, float, float], np.ndarray]]) -> HandMask:
    """The grid with colours: bare tray and table, then each (box in mm from the centre on the
    tray plane, BGR) over its arm cells."""
    cx, cy = TRAY.tower_center
    px = np.empty(m.xy.shape[:2] + (3,), np.float32)
    px[:] = TRAY_BGR
    px[m.table] = TABLE_BGR
    for (x0, x1, y0, y1), bgr in paint:
        x, y = m.xy[..., 0] - cx, m.xy[..., 1] - cy
        px[(x >= x0) & (x < x1) & (y >= y0) & (y < y1) & m.fg] = bgr
    return replace(m, px=px, table_bgr=TABLE_BGR, tray_bgr=TRAY_BGR)


def _counted(m: HandMask):
    cfg = default_config()
    return counted_arms(cfg["hands"], arm_entries(cfg, TRAY, m))


def test_a_table_coloured_arm_at_the_rim_is_still_a_second_hand():
    m = _painted(_table_grid([SOUTH_ARM, EAST_HAND, OVERLAP], [SOUTH_ARM]),
                 [(SOUTH_ARM, PALE_SKIN), (OVERLAP, PALE_SKIN), (EAST_HAND, TABLE_BGR * 1.1)])
    arms = _counted(m)
    assert len(arms) == 2 and sum(a.at_rim for a in arms) == 1


def test_a_hands_shadow_reaching_the_rim_is_no_second_arm():
    # the same cells over the tray, but the tray in the south hand's shadow: dimmed, not the table's brown
    m = _painted(_table_grid([SOUTH_ARM, EAST_HAND, OVERLAP], [SOUTH_ARM]),
                 [(SOUTH_ARM, PALE_SKIN), (OVERLAP, PALE_SKIN), (EAST_HAND, TRAY_BGR * 0.55)])
    arms = _counted(m)
    assert len(arms) == 1 and not arms[0].at_rim


def test_a_hand_of_another_colour_reaching_the_rim_is_no_second_arm():
    # pale skin would show on the dark table: these are the south hand's own fingers
    m = _painted(_table_grid([SOUTH_ARM, EAST_HAND, OVERLAP], [SOUTH_ARM]),
                 [(SOUTH_ARM, PALE_SKIN), (OVERLAP, PALE_SKIN), (EAST_HAND, PALE_SKIN)])
    assert len(_counted(m)) == 1


def _half_way_up(m: HandMask) -> HandMask:
    """The hand plane 40 % of the way up to a camera straight over the tower: every cell seen there
    lies at 0.6 times the distance from the tower's axis of the tray cell behind it (a tall
    tower, hands over it)."""
    c = np.asarray(TRAY.tower_center, float)
    return replace(m, xy=c + 0.6 * (m.xy - c))


# a pale arm from the west seen only on the table (the tray hides nothing of its colour):
# up to the rim, or stopping 20 mm short of it (a hand resting on the table)
WEST_TO_RIM = (-200.0, -150.0, -50.0, 50.0)
WEST_ON_TABLE = (-200.0, -170.0, -50.0, 50.0)


def test_a_pale_arm_that_goes_on_over_a_pale_tray_is_a_hand_over_the_tower():
    m = _half_way_up(_painted(_table_grid([], [WEST_TO_RIM]), [(WEST_TO_RIM, PALE_SKIN)]))
    arms = arm_entries(default_config(), TRAY, m)
    assert len(arms) == 1 and not arms[0].on_tray and arms[0].past_rim
    assert 30.0 < arms[0].reach_mm < 70.0  # beyond the table's reach, within the tray's
    assert len(_counted(m)) == 1


def test_a_shadow_on_the_table_up_to_the_rim_is_no_hand():
    m = _half_way_up(_painted(_table_grid([], [WEST_TO_RIM]), [(WEST_TO_RIM, TABLE_BGR * 0.6)]))
    assert _counted(m) == []


def test_a_hand_resting_on_the_table_short_of_the_rim_is_no_hand():
    m = _half_way_up(_painted(_table_grid([], [WEST_ON_TABLE]), [(WEST_ON_TABLE, PALE_SKIN)]))
    assert _counted(m) == []


def test_without_the_rule_the_pale_arm_was_missed():
    cfg = default_config()
    cfg["hands"]["past_rim_width_mm"] = 0.0
    m = _half_way_up(_painted(_table_grid([], [WEST_TO_RIM]), [(WEST_TO_RIM, PALE_SKIN)]))
    assert counted_arms(cfg["hands"], arm_entries(cfg, TRAY, m)) == []
