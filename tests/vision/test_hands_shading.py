"""Hands the tray's colour and shadows that change its colour: told apart by how they are lit.

A pale hand over a pale tray shows no colour change; its round fingers still show as stripes of
light and shade, some brighter than the flat tray (the side facing the lamp). The stripes of the
fingers' own shadows only darken it. A tall tower's shadow under a warm lamp changes the tray's
colour more than a shadow is allowed to, but it is even all over, as no hand is."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vision.hands import _changed_cells, _even_shadows, _ruffled_pieces, arm_entries, counted_arms
from vision.reader import default_config
from test_hands_rim import SOUTH_ARM, TRAY, _table_grid  # the same tray, rim and table

N, LO, HI = 40, 10, 30  # a 40 x 40 cell tray, the patch in rows and columns 10..29


def _tray_with(brightness: np.ndarray, tint: float) -> tuple[np.ndarray, np.ndarray]:
    """Pale wood (BGR) with a patch whose cells are `brightness` times the tray's, red raised and
    blue lowered by `tint` (log): what the hand grid's cells see, and the bare tray behind them."""
    ref = np.broadcast_to(np.array([150.0, 190.0, 215.0], np.float32), (N, N, 3)).copy()
    px = ref.copy()
    patch = px[LO:HI, LO:HI]
    patch *= brightness[..., None]
    patch[..., 2] *= np.exp(tint)
    patch[..., 0] *= np.exp(-tint)
    return px, ref


def _cells(px, ref, **hands):
    hc = {**default_config()["hands"], "chroma": 0.05, **hands}  # chroma as calibration sets it on the twin
    ii, jj = np.indices((N, N))
    xy = np.stack([jj * 5.0, -ii * 5.0], axis=-1).astype(float)
    regions = [np.ones((N, N), bool)]
    changed, shady, shift = _changed_cells(hc, px, ref, regions, xy)
    return hc, (changed, _ruffled_pieces(hc, changed, shift, regions), shady)  # (changed, ruffled, shady)


def _stripes(levels) -> np.ndarray:
    return np.tile(np.array(levels, np.float32), (HI - LO, (HI - LO) // len(levels) + 1))[:, : HI - LO]


def test_pale_fingers_are_seen_by_their_light_and_shade():
    # across each finger: lit on the side facing the lamp, then turning away into its own shade
    changed, ruffled, _ = _cells(*_tray_with(_stripes([1.15, 0.9, 0.6, 0.8]), 0.0))[1]
    inside = ruffled[LO + 2:HI - 2, LO + 2:HI - 2]
    assert inside.mean() > 0.5
    assert not ruffled[:LO - 3].any() and not ruffled[HI + 3:].any()  # the bare tray round them is not
    # the same fingers without a ruffle threshold are not seen at all (no colour change)
    _, (changed, ruffled, _) = _cells(*_tray_with(_stripes([1.15, 0.9, 0.6, 0.8]), 0.0), ruffled_std=0.0)
    assert not ruffled.any() and changed[LO + 2:HI - 2, LO + 2:HI - 2].mean() < 0.2


def test_the_stripes_of_the_fingers_shadows_are_no_fingers():
    """The shadows only darken the tray between bare stripes: nothing in them outshines the tray."""
    _, (_, ruffled, _) = _cells(*_tray_with(_stripes([1.0, 0.8, 0.6, 0.8]), 0.0))
    assert not ruffled.any()


def test_a_tall_towers_even_shadow_under_a_warm_lamp_is_no_hand():
    """Darker by a third and redder than a shadow may be (the lamp's warm light is gone), evenly."""
    hc, (changed, _, shady) = _cells(*_tray_with(np.full((HI - LO, HI - LO), 0.65, np.float32), 0.18))
    assert changed[LO + 1:HI - 1, LO + 1:HI - 1].all()  # its colour change alone makes it a blob
    assert not (changed & ~_even_shadows(hc, changed, shady)).any()


def test_a_hand_in_shade_is_kept():
    """A hand as dim, but shaded (round fingers) or of skin's stronger colour, stays a blob."""
    shaded = np.tile(np.array([0.45, 0.75, 0.6], np.float32), (HI - LO, 7))[:, : HI - LO]
    for brightness, tint in ((shaded, 0.18), (np.full((HI - LO, HI - LO), 0.65, np.float32), 0.4)):
        hc, (changed, _, shady) = _cells(*_tray_with(brightness, tint))
        assert changed[LO + 1:HI - 1, LO + 1:HI - 1].mean() > 0.9
        assert not _even_shadows(hc, changed, shady).any()


# a pale arm from the south seen only on the table (the tray's colour over the tray)
TABLE_ARM = (-30.0, 30.0, -200.0, -40.0)
# its fingers by the tower's south side, seen by their shading alone
FINGERS = (-30.0, 30.0, -95.0, -50.0)


def _with_fingers(m, box):
    x0, x1, y0, y1 = box
    cx, cy = TRAY.tower_center
    x, y = m.xy[..., 0] - cx, m.xy[..., 1] - cy
    return replace(m, ruffled=(x >= x0) & (x < x1) & (y >= y0) & (y < y1) & m.known & ~m.fg & ~m.table)


def _counted(m):
    cfg = default_config()
    return counted_arms(cfg["hands"], arm_entries(cfg, TRAY, m))


def test_an_arm_seen_only_on_the_table_is_brought_in_by_its_shaded_fingers():
    bare = _table_grid([], [TABLE_ARM])
    assert _counted(bare) == []  # the rim is too far from the footprint for a hand seen on the table only
    got = _counted(_with_fingers(bare, FINGERS))
    assert len(got) == 1 and got[0].by_pieces


def test_shaded_fingers_alone_are_no_arm():
    """Fingers seen by their shading bring in no arm of their own, even reaching the edge."""
    assert _counted(_with_fingers(_table_grid([], []), (-30.0, 30.0, -200.0, -50.0))) == []


def test_a_whole_pale_hand_held_aside_of_its_arms_line_joins_the_arm():
    """A whole hand's shaded fingers spread wider than the corridor round its arm's line: its
    middle lies by the line, though its outer finger lies 70 mm off it, so it joins the arm."""
    bare = _table_grid([], [TABLE_ARM])
    got = _counted(_with_fingers(bare, (-20.0, 70.0, -100.0, -50.0)))
    assert len(got) == 1 and got[0].by_pieces


def test_a_piece_whose_middle_lies_off_the_arms_line_does_not_join_it():
    bare = _table_grid([], [TABLE_ARM])
    assert _counted(_with_fingers(bare, (45.0, 110.0, -100.0, -50.0))) == []


# a second entry beside the pale arm, from the east: `width` mm across, reaching `inner` mm east
# of the tower's centre (40: by the tower, its footprint 37.5 mm either side)
def _east_entry(width: float, inner: float = 40.0):
    return (inner, 200.0, -width / 2, width / 2)


def test_a_narrow_entry_beside_an_arm_that_ends_short_of_the_tower_is_no_second_hand():
    """A finger, a sleeve's edge or a shadow's sliver coming in on its own beside an arm, ending
    45 mm from the tower (such slivers ended 38-61 mm out on the nine sets)."""
    sliver = _east_entry(20.0, inner=82.5)
    assert len(_counted(_table_grid([SOUTH_ARM, sliver], [SOUTH_ARM, sliver]))) == 1
    forearm = _east_entry(60.0, inner=82.5)
    assert len(_counted(_table_grid([SOUTH_ARM, forearm], [SOUTH_ARM, forearm]))) == 2


def test_a_narrow_entry_beside_an_arm_that_reaches_the_tower_is_a_second_hand():
    """A wrist whose forearm is lost against the table, its hand by the tower: two hands."""
    wrist = _east_entry(20.0)
    assert len(_counted(_table_grid([SOUTH_ARM, wrist], [SOUTH_ARM, wrist]))) == 2


def test_a_narrow_entry_alone_still_counts():
    """Alone, it may be an arm cut short by the image's border."""
    assert len(_counted(_table_grid([_east_entry(20.0)], [_east_entry(20.0)]))) == 1
