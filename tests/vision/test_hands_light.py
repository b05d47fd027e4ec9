"""The tray's light surface under a hand's shadow: a shadow only darkens, so the bare tray in
full light is never read as something brighter lying on it, however much of the tray the
shadow covers; a pale hand on a bare tray still stands out from it."""

from __future__ import annotations

import math

import numpy as np

from vision.hands import _changed_cells as cell_changes, colour_change
from vision.reader import default_config

TRAY_BGR = (200.0, 205.0, 210.0)
N = 60  # a 60 x 60 grid of 5 mm cells: the tray's 300 mm
XY = np.stack(np.meshgrid(np.arange(N) * 5.0, np.arange(N) * 5.0), axis=-1)
ALL = np.ones((N, N), bool)


def _tray(lit_below_row: int, shade: float = 0.6) -> np.ndarray:
    """The bare tray with the rows above `lit_below_row` in a hand's shadow (times `shade`)."""
    px = np.empty((N, N, 3), np.float32)
    px[:] = TRAY_BGR
    px[:lit_below_row] *= shade
    return px


def _bare(px: np.ndarray) -> np.ndarray:
    """The bare tray's colour behind every cell of px."""
    return np.broadcast_to(np.asarray(TRAY_BGR, np.float32), px.shape).copy()


def _hc(lit_share: float) -> dict:
    hc = default_config()["hands"]
    hc["lit_share"] = lit_share
    return hc


def _shift(px: np.ndarray, lit_share: float) -> np.ndarray:
    hc = _hc(lit_share)
    ref = _bare(px)
    _, shift = colour_change(px, ref, [ALL], XY, float(hc["fit_trim"]), lit_share=lit_share,
                             lit_above=math.log(float(hc["bright"])), lit_chroma=float(hc["lit_chroma"]))
    return shift


def test_a_shadow_over_most_of_the_tray_leaves_the_lit_rest_bare():
    px = _tray(lit_below_row=39)  # two thirds of the tray in shadow
    shift = _shift(px, lit_share=0.3)
    assert abs(float(np.median(shift[39:]))) < 0.02  # the lit tray: no change
    assert float(np.median(shift[:39])) < math.log(0.7)  # the shadow: darker, as shadows are


def test_without_the_lit_refit_the_lit_tray_read_brighter_than_bare():
    # what the refit mends: the fit started at the shadow, and the lit tray stood out as
    # brighter than the tray by more than `bright` allows (a second arm where there was none)
    shift = _shift(_tray(lit_below_row=39), lit_share=0.0)
    assert float(np.median(shift[39:])) > math.log(1.15)


def test_the_lit_tray_is_not_counted_as_a_change():
    px = _tray(lit_below_row=39)
    ref = _bare(px)
    changed, _, _ = cell_changes(_hc(0.3), px, ref, [ALL], XY)
    assert not changed[39:].any()
    changed_before, _, _ = cell_changes(_hc(0.0), px, ref, [ALL], XY)
    assert changed_before[39:].all()


def test_a_pale_hand_on_the_bare_tray_still_stands_out():
    px = _tray(lit_below_row=0)  # no shadow
    px[20:35, 20:32] = np.asarray(TRAY_BGR, np.float32) * 1.35  # a pale hand, brighter than the tray
    shift = _shift(px, lit_share=0.3)
    assert float(np.median(shift[20:35, 20:32])) > math.log(1.15)  # still brighter than bare
    assert abs(float(np.median(shift[40:]))) < 0.02  # the tray itself stays bare


def _gradient_tray(rise: float, noise: float = 0.05, seed: int = 3) -> np.ndarray:
    """The bare tray lit `rise` times brighter at its east edge than at its west (a lamp to the
    east), with a grainy sensor's noise (`noise`, relative)."""
    rng = np.random.default_rng(seed)
    px = np.empty((N, N, 3), np.float32)
    px[:] = TRAY_BGR
    px *= np.exp(np.log(rise) * (XY[..., 0:1] / XY[..., 0].max())).astype(np.float32)
    return px * (1 + rng.normal(0, noise, px.shape)).astype(np.float32)


def _changed_cells(px: np.ndarray, rounds: int) -> int:
    ref = _bare(px)
    hc = _hc(0.3)
    hc["fit_rounds"] = rounds
    changed, _, _ = cell_changes(hc, px, ref, [ALL], XY)
    return int(np.count_nonzero(changed))


def test_a_light_gradient_across_the_tray_is_fitted_from_end_to_end():
    # the flat start takes only the band of tray about as bright as its median; rounds that go
    # on until the bare cells taken no longer change fit the whole of it, so the tray lit 1.8
    # times brighter at one edge shows no more changed cells than the sensor's noise on an
    # evenly lit tray makes
    grain = _changed_cells(_gradient_tray(rise=1.0), rounds=6)
    assert _changed_cells(_gradient_tray(rise=1.8), rounds=6) <= 1.2 * grain + 5
    # two rounds (as before) left the far end of the gradient reading changed
    assert _changed_cells(_gradient_tray(rise=1.8), rounds=2) > 1.5 * grain + 20


def _thirds() -> np.ndarray:
    """The bare tray a third lit, a third in a hand's shadow and a third under a pale yellow
    hand, with a grainy sensor's noise: each channel's median then lies where no cell is."""
    rng = np.random.default_rng(5)
    px = _tray(lit_below_row=0)
    px[:20] *= 0.7                                                # the hand's shadow
    px[20:40] = np.asarray((140.0, 215.0, 235.0), np.float32)     # the hand: pale, yellow (BGR)
    return px * (1 + rng.normal(0, 0.02, px.shape)).astype(np.float32)


def _changed_thirds(from_expected: bool) -> np.ndarray:
    px = _thirds()
    hc = _hc(0.3)
    hc["fit_from_expected"] = from_expected
    changed, _, _ = cell_changes(hc, px, _bare(px), [ALL], XY)
    return changed


def test_a_pale_hand_over_a_third_of_the_tray_beside_its_shadow_is_seen():
    # the light fit starts from the tray as expected in this frame's light when more cells lie
    # there than at the channels' medians: the hand stands out, the bare tray does not
    changed = _changed_thirds(from_expected=True)
    assert changed[20:40].mean() > 0.9
    assert changed[40:].mean() < 0.05
    # from the medians (as before) the fit never started: the bare cells read as changed by the
    # hand's tint, and the noise floor taken from them hid the hand
    before = _changed_thirds(from_expected=False)
    assert before[20:40].mean() < 0.5


TABLE_BGR = (60.0, 90.0, 110.0)


def _tray_and_table(shade: float, lit_cols: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The tray (rows 10-59) and the table band beyond its north edge (rows 0-9): the band in an
    arm's shadow (times `shade`) but for its first `lit_cols` columns, in full light."""
    table = np.zeros((N, N), bool)
    table[:10] = True
    px = np.empty((N, N, 3), np.float32)
    px[:] = TRAY_BGR
    px[:10] = np.asarray(TABLE_BGR, np.float32) * shade
    px[:10, :lit_cols] = TABLE_BGR
    ref = _bare(px)
    ref[:10] = TABLE_BGR  # the table's colour as the frame's band shows it
    return px, ref, [~table, table]


def test_the_lit_table_beside_an_arms_shadow_is_no_arm():
    # a fifth of the band lit, the rest in shadow: too little lit for the light refit (a third),
    # so the band's light sits on the shadow and the lit part reads brighter by a fourth
    px, ref, regions = _tray_and_table(shade=0.8, lit_cols=12)
    hc = default_config()["hands"]
    changed, _, _ = cell_changes(hc, px, ref, regions, XY)
    assert not changed[:10].any()
    hc["table_bright"] = 0.0  # (brighter than the band's light by `bright`, as on the tray)
    before, _, _ = cell_changes(hc, px, ref, regions, XY)
    assert before[:10, :12].all()


def test_a_pale_arm_on_the_table_beside_its_lit_part_still_counts():
    px, ref, regions = _tray_and_table(shade=0.8, lit_cols=12)
    px[:10, 30:40] = np.asarray(TABLE_BGR, np.float32) * 2.0  # a pale arm crossing the band
    changed, _, _ = cell_changes(default_config()["hands"], px, ref, regions, XY)
    assert changed[:10, 30:40].all()
    assert not changed[:10, :12].any()
