"""A pale arm that goes on over a pale tray unseen: its hand lies beyond the tray's rim.

Seen only on the table, such an arm's innermost cell is on the table, short of the rim it goes
on across (`past_rim`); its hand is further in than that by the rim's width at least. So it
counts as a lone hand as far out as `past_rim_reach_mm` (the reach of a hand seen on the tray
and the rim's width): a tall tower's hands, pale over a pale tray, were missed at 71-80 mm. Not
as a second hand beside one seen over the tower: how far in its hand goes is not seen."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vision.hands import HandMask, arm_entries, counted_arms
from vision.reader import default_config

from test_hands_rim import SOUTH_ARM, TRAY, _table_grid
from test_hands_rim_colour import PALE_SKIN, WEST_ON_TABLE, WEST_TO_RIM, _painted


def _seen_at(m: HandMask, f: float) -> HandMask:
    """The hand plane where every cell seen lies at f times the distance from the tower's axis
    of the tray cell behind it (the higher the hands over a tall tower, the smaller f)."""
    c = np.asarray(TRAY.tower_center, float)
    return replace(m, xy=c + f * (m.xy - c))


def _arms(m: HandMask, **hands):
    cfg = default_config()
    cfg["hands"].update(hands)
    arms = arm_entries(cfg, TRAY, m)
    return arms, counted_arms(cfg["hands"], arms)


def _pale_arm_to_rim(f: float, also=()) -> HandMask:
    return _seen_at(_painted(_table_grid(list(also), [WEST_TO_RIM, *also]),
                             [(WEST_TO_RIM, PALE_SKIN), *[(b, PALE_SKIN) for b in also]]), f)


def test_a_pale_arm_going_on_over_the_tray_counts_a_rims_width_beyond_the_trays_reach():
    arms, counted = _arms(_pale_arm_to_rim(0.75))
    assert len(arms) == 1 and arms[0].past_rim and not arms[0].on_tray
    assert 70.0 < arms[0].reach_mm < 92.0  # beyond a hand seen on the tray, within the rim's width of it
    assert len(counted) == 1


def test_without_the_rule_that_arm_was_missed():
    assert _arms(_pale_arm_to_rim(0.75), past_rim_reach_mm=0.0)[1] == []


def test_further_out_it_is_no_hand_over_the_tower():
    arms, counted = _arms(_pale_arm_to_rim(1.0))
    assert len(arms) == 1 and arms[0].past_rim and arms[0].reach_mm > 92.0
    assert counted == []


def test_a_hand_resting_on_the_table_short_of_the_rim_still_is_no_hand():
    m = _seen_at(_painted(_table_grid([], [WEST_ON_TABLE]), [(WEST_ON_TABLE, PALE_SKIN)]), 0.75)
    assert _arms(m)[1] == []


def test_it_is_no_second_hand_beside_one_seen_over_the_tower():
    arms, counted = _arms(_pale_arm_to_rim(0.75, also=[SOUTH_ARM]))
    assert len(arms) == 2
    assert len(counted) == 1 and counted[0].on_tray
