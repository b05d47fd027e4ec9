"""Hands whose arms the table hides, and wide arms beside other arms: counted as the play has them.

A dark arm on a dark table shows only where it is over the tray; its hand may overlap another
player's, so its blob reaches the edge through that player's arm. It still comes in where it
crosses the tray's rim, and it is a second hand over the tower (the "Uno!" signal)."""

from __future__ import annotations

import numpy as np

from vision.hands import ArmEntry, HandMask, arm_entries, counted_arms, splits_in_two
from vision.reader import default_config
from vision.synthkit import default_tray

TRAY = default_tray()
SHEET, RIM = 130.0, 150.0  # mm from the tower's centre: the tray sheet, then its rim, then the table


def _table_grid(on_tray, on_table, table_seen=True):
    """A hand grid round the tower seen from straight above (5 mm cells): the tray sheet to
    SHEET mm from the centre, its unseen rim to RIM mm, the table beyond to the grid's edge.
    `on_tray` / `on_table`: (x0, x1, y0, y1) boxes (mm from the centre) of arm cells seen against
    the tray / the table (a table-coloured arm has none there)."""
    g, half = 5.0, 200.0
    cx, cy = TRAY.tower_center
    n = int(2 * half / g)
    ii, jj = np.indices((n, n))
    xy = np.stack([cx - half + g / 2 + g * jj, cy + half - g / 2 - g * ii], axis=-1).astype(float)
    cheb = np.abs(xy - (cx, cy)).max(axis=-1)
    outside = np.zeros((n, n), bool)
    outside[[0, -1], :] = outside[:, [0, -1]] = True
    tower = cheb < TRAY.footprint_half + 6.0
    sheet = (cheb < SHEET) & ~tower
    rim = (cheb >= SHEET) & (cheb < RIM)
    table = (cheb >= RIM) & ~outside & table_seen
    known = sheet | table

    def boxes(bs):
        out = np.zeros((n, n), bool)
        for x0, x1, y0, y1 in bs:
            out |= (xy[..., 0] >= cx + x0) & (xy[..., 0] < cx + x1) & (xy[..., 1] >= cy + y0) & (xy[..., 1] < cy + y1)
        return out

    fg = (boxes(on_tray) & sheet) | (boxes(on_table) & table)
    return HandMask(fg, known, tower, outside, table, xy, 0.0, g, rim)


# a pale arm from the south, seen on the table and the tray, its hand on the tower's south side
SOUTH_ARM = (-30.0, 30.0, -200.0, -40.0)
# a dark arm from the east, seen only over the tray, its hand on the tower's east side
EAST_HAND = (40.0, 131.0, -30.0, 30.0)
# where the two hands overlap, by the tower's south-east corner
OVERLAP = (25.0, 70.0, -75.0, -25.0)


def _counted(m):
    cfg = default_config()
    return counted_arms(cfg["hands"], arm_entries(cfg, TRAY, m))


def test_an_arm_the_colour_of_the_table_over_another_hand_is_a_second_hand():
    m = _table_grid([SOUTH_ARM, EAST_HAND, OVERLAP], [SOUTH_ARM])
    arms = _counted(m)
    assert len(arms) == 2
    east = [a for a in arms if a.at_rim]
    assert len(east) == 1 and east[0].direction[0] > 0.9  # it comes from the east seat


def test_an_arm_seen_on_the_table_where_it_crosses_the_rim_is_one_arm():
    # the south arm alone: it crosses the rim too, but its table part is seen beyond
    assert len(_counted(_table_grid([SOUTH_ARM], [SOUTH_ARM]))) == 1
    # a hand on the table reaching over the rim from the east is that arm, not another one
    east_arm = (40.0, 200.0, -30.0, 30.0)
    got = _counted(_table_grid([SOUTH_ARM, east_arm, OVERLAP], [SOUTH_ARM, east_arm]))
    assert len(got) == 2 and not any(a.at_rim for a in got)


def test_fingers_reaching_the_rim_beside_their_own_arm_are_not_another_arm():
    # the south hand's fingers spread to the rim a little east of where its arm comes in
    fingers = (30.0, 90.0, -131.0, -100.0)
    arms = _counted(_table_grid([SOUTH_ARM, fingers], [SOUTH_ARM]))
    assert len(arms) == 1 and not arms[0].at_rim


def _wide(x: float) -> ArmEntry:
    return ArmEntry((x, -200.0), (0.0, -1.0), 170.0, 10.0, True, True, (x, -40.0), 270.0)


def test_two_hands_side_by_side_from_one_wide_arm_only_when_no_other_arm_is_over_the_tower():
    hc = default_config()["hands"]
    assert splits_in_two(hc, _wide(0.0), counted=1)
    # beside another counted arm the width is an arm with its shadow or sleeve, not a third hand
    assert not splits_in_two(hc, _wide(0.0), counted=2)
    narrow = ArmEntry((0.0, -200.0), (0.0, -1.0), 80.0, 10.0, True, True, (0.0, -40.0), 270.0)
    assert not splits_in_two(hc, narrow, counted=1)


def _image_border(m: HandMask, south_of: float, notch: tuple[float, float, float, float]) -> HandMask:
    """The grid with the image's border south of `south_of` mm from the centre (no table seen
    there), and reaching in at `notch` (x0, x1, y0, y1 mm from the centre): a border that cuts
    the grid at a slant comes within a cell or two of what lies inside somewhere."""
    cx, cy = TRAY.tower_center
    x, y = m.xy[..., 0] - cx, m.xy[..., 1] - cy
    x0, x1, y0, y1 = notch
    outside = m.outside | (y < south_of) | ((x >= x0) & (x < x1) & (y >= y0) & (y < y1))
    return HandMask(m.fg & ~outside, m.known & ~outside, m.tower, outside, m.table & ~outside, m.xy, m.z,
                    m.cell_mm, m.rim & ~outside)


# an arm from the south seen over the tray only, from its rim to its hand by the tower
SOUTH_HAND = (-30.0, 30.0, -131.0, -60.0)


def test_an_arm_crossing_the_rim_where_the_image_border_cuts_the_table_off_comes_in_there():
    # the image's border reaches into the rim beside the arm's corner: the arm touches "the edge"
    # by a cell or two, less than any arm's width, and still comes in over the rim
    m = _image_border(_table_grid([SOUTH_HAND], []), -RIM, (-45.0, -35.0, -140.0, -130.0))
    arms = _counted(m)
    assert len(arms) == 1 and arms[0].direction[1] < -0.9  # it comes in from the south
    # with the border clear of the sheet it came in over the rim all along
    assert len(_counted(_image_border(_table_grid([SOUTH_HAND], []), -RIM, (0.0, 0.0, 0.0, 0.0)))) == 1


def test_a_blob_on_the_table_touching_the_border_by_a_cell_does_not_come_in_over_the_rim():
    # something on the table beside the rim (a tall tower's side seen from aside) that touches the
    # image's border by a cell is no arm coming in over the tray's rim
    m = _image_border(_table_grid([], [(150.0, 175.0, -100.0, 50.0)]), -1000.0, (180.0, 185.0, 55.0, 60.0))
    assert arm_entries(default_config(), TRAY, m) == []


def _counted_with(m, **hands):
    cfg = default_config()
    cfg["hands"].update(hands)
    return counted_arms(cfg["hands"], arm_entries(cfg, TRAY, m))


def test_two_hands_side_by_side_whose_palms_lie_on_the_rim_are_two_hands():
    # one player's two hands from the south, palms on the unseen rim, fingers on the tray a
    # hand's width each and 25 mm apart: the rim bridges them into one blob, yet each hand's
    # fingers are a blob of their own reaching the tower
    left, right = (-80.0, -30.0, -131.0, -60.0), (-5.0, 45.0, -131.0, -60.0)
    m = _table_grid([left, right], [])
    assert len(_counted(m)) == 2
    assert len(_counted_with(m, apart_across_rim_mm=0.0)) == 1  # (joined across the rim, as before)


def test_one_hand_whose_fingers_part_a_little_on_the_tray_is_one_hand():
    # the same hand's fingers in two groups a cell apart: one hand
    m = _table_grid([(-60.0, -10.0, -131.0, -60.0), (-5.0, 45.0, -131.0, -60.0)], [])
    assert len(_counted(m)) == 1
