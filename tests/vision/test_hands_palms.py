"""Two hands whose arms come in together: told apart by their palms side by side.

Two players reaching from neighbouring seats (or one player's two hands) can cross the tray's
edge as one blob no wider than one broad arm. Their slim forearms and fingers aside, what is
left of the blob where it is an arm's width or more is two palms, side by side across the arm's
line. One arm and its own hand leave one core, or two one behind the other along the line."""

from __future__ import annotations

from tests.vision.test_hands import TRAY, _grid_with  # the all-tray 5 mm grid seen from straight above
from vision.hands import arm_entries, counted_arms, two_palms
from vision.reader import default_config


def _hands(boxes):
    """How many hands find_hands would read from the grid's one counted arm."""
    cfg = default_config()
    hc = cfg["hands"]
    arms = counted_arms(hc, arm_entries(cfg, TRAY, _grid_with(boxes)))
    assert len(arms) == 1 and arms[0].width_mm < float(hc["two_arm_width_mm"])
    return 2 if two_palms(arms[0], len(arms)) else 1


def test_two_forearms_coming_in_together_with_their_palms_side_by_side_are_two_hands():
    # forearms 40 mm wide from the south edge, 10 mm apart: one entry 90 mm wide; adult palms,
    # 80 mm across (a core of 40 x 27 mm once eroded by palm_core_mm, 20 mm). Palms of 60 mm
    # (a child's) leave cores under palm_min_mm2: the erosion was 15 mm until the fresh kits of
    # 2026-11-25 showed the deeper one calling fewer single arms two (docs/vision.md)
    forearms = [(-45.0, -5.0, -200.0, -110.0), (5.0, 45.0, -200.0, -110.0)]
    palms = [(-85.0, -5.0, -110.0, -43.0), (5.0, 85.0, -110.0, -43.0)]
    assert _hands(forearms + palms) == 2


def test_one_arm_with_its_hand_is_one_hand():
    arm = (-30.0, 30.0, -200.0, -120.0)
    palm = (-45.0, 45.0, -120.0, -43.0)
    assert _hands([arm, palm]) == 1
    # cut apart at a slim wrist: the arm's core lies behind the palm's, along the arm
    wrist = (-12.0, 12.0, -125.0, -110.0)
    assert _hands([(-30.0, 30.0, -200.0, -125.0), wrist, (-45.0, 45.0, -110.0, -43.0)]) == 1


def test_fingers_spread_ahead_of_a_palm_are_not_another_palm():
    arm = (-30.0, 30.0, -200.0, -130.0)
    palm = (-40.0, 40.0, -130.0, -80.0)
    fingers = [(x, x + 15.0, -80.0, -43.0) for x in (-40.0, -17.0, 6.0, 27.0)]
    assert _hands([arm, palm] + fingers) == 1
