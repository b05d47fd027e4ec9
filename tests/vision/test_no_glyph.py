"""A crop with no glyph on it (a block's end, the level below seen crosswise, the bare tray) reads
as no glyph, whatever the kit. Without a class for it the glyph model falls to its prior there,
and on one calibration that prior was a sure 4: bare tray read as a yellow 4."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import pytest

from vision import top_level as tl
from vision.reader import GLYPHS, NO_GLYPH, glyph_probs, load_pipeline


@dataclass
class FixedModel:
    """A stand-in glyph model that gives each feature row the probabilities it is given."""

    classes: tuple[str, ...]
    rows: np.ndarray

    def proba(self, X: np.ndarray) -> np.ndarray:
        return self.rows[: len(X)]


def _row(classes, **p) -> np.ndarray:
    rest = (1.0 - sum(p.values())) / (len(classes) - len(p))
    return np.array([p.get(c, rest) for c in classes])


def test_a_model_that_never_learnt_no_glyph_gives_the_eight_renormalised():
    model = FixedModel(GLYPHS, np.stack([_row(GLYPHS, **{"4": 0.62}), _row(GLYPHS, **{"4": 0.62})]))
    g = glyph_probs(model, np.zeros((2, 3)))
    assert g.shape == (1, 8)
    assert np.isclose(g.sum(), 1.0)
    assert g[0, GLYPHS.index("4")] > 0.6  # the prior's sure 4 stands: nothing says there is no glyph


def test_no_glyph_keeps_its_share_out_of_the_eight():
    classes = GLYPHS + (NO_GLYPH,)
    laid = _row(classes, **{"4": 0.05, NO_GLYPH: 0.9})
    turned = _row(classes, **{"4": 0.04, NO_GLYPH: 0.92})
    g = glyph_probs(FixedModel(classes, np.stack([laid, turned])), np.zeros((2, 3)))
    assert g.max() < 0.1 and g.sum() < 0.15


def test_a_glyph_read_one_way_round_is_kept_however_the_other_turn_reads():
    # the block lies one way round: as laid it is a sure 2; turned, it looks like no glyph
    classes = GLYPHS + (NO_GLYPH,)
    laid = _row(classes, **{"2": 0.95, NO_GLYPH: 0.01})
    turned = _row(classes, **{"2": 0.05, NO_GLYPH: 0.8})
    g = glyph_probs(FixedModel(classes, np.stack([laid, turned])), np.zeros((2, 3)))
    assert GLYPHS[int(g.argmax())] == "2" and g.max() > 0.8


def test_calibration_learns_no_glyph_and_the_bare_tray_reads_as_none(calibration, small_kit):
    import cv2

    pipe = load_pipeline(calibration)
    assert NO_GLYPH in pipe.models["glyph"].classes
    report = json.loads((calibration / "report.json").read_text())
    assert report["models"]["glyph"]["classes"][NO_GLYPH] > 0
    from vision.reader import read_frame

    img = cv2.imread(str(small_kit / "images" / "0015.png"))
    res = read_frame(pipe, img)
    reg, z = res.registration, res.z_top
    bare = tl.glyph_crop(pipe.cfg, pipe.tray, reg, img, 0.0, "x", -2, offset=(0.0, 0.0))  # tray beside the tower
    lone = tl.glyph_crop(pipe.cfg, pipe.tray, reg, img, z, "y", 0)  # the lone red 1
    g = glyph_probs(pipe.models["glyph"], np.array([*tl.glyph_features_turned(pipe.cfg, bare),
                                                   *tl.glyph_features_turned(pipe.cfg, lone)]))
    assert g[0].max() < 0.5
    assert GLYPHS[int(g[1].argmax())] == "1" and g[1].max() > 0.5


def _evidence(p_occ, none_share):
    """Slot evidence whose glyph model gives each slot `none_share` to NO_GLYPH (the eight glyphs
    share the rest evenly)."""
    from vision.reader import SlotEvidence

    p_gly = np.zeros((3, len(GLYPHS)))
    for s, share in enumerate(none_share):
        p_gly[s] = (1.0 - share) / len(GLYPHS)
    return SlotEvidence(np.asarray(p_occ, float), np.full((3, 5), 0.2), p_gly)


def test_an_empty_slot_read_as_no_glyph_at_all_is_surely_empty(calibration):
    """Through an empty slot the level below shows crosswise, which the occupancy model calls a
    block: the slot read empty only for want of a glyph, at one minus that. With nothing over the
    top, a crop the glyph model reads as "no glyph" at 0.7 or more is the level below: the slot is
    surely empty, and the reading is no longer reported unsure for it."""
    from referee.blocks import Block
    from referee.observations import HandReading, SlotReading
    from vision.reader import _uncertainty, empties_seen_through

    pipe = load_pipeline(calibration)
    assert pipe.cfg["decision"]["no_glyph_empty_above"] == 0.7
    slots = (SlotReading(Block.parse("red-2"), 0.95), SlotReading(None, 0.08), SlotReading(None, 0.3))
    ev = _evidence([0.97, 0.92, 0.7], [0.02, 0.85, 0.5])
    assert _uncertainty(pipe, slots, 0.9)[0]
    got = empties_seen_through(pipe, ev, slots)
    assert got[0] == slots[0]                          # a block is left as read
    assert got[1].block is None and got[1].confidence == pytest.approx(0.85)
    assert got[2] == slots[2]                          # half "no glyph" is no proof: still unsure
    assert _uncertainty(pipe, got, 0.9)[0]
    assert not _uncertainty(pipe, got[:2] + (SlotReading(None, 0.9),), 0.9)[0]
    # a hand over the tower hides glyphs too: then the slots stay as read
    hand = HandReading(side="south", tip_mm=(140.0, 60.0), confidence=0.9)
    assert empties_seen_through(pipe, ev, slots, (hand,)) == slots
    # set to 1 it is off
    off = replace(pipe, cfg={**pipe.cfg, "decision": {**pipe.cfg["decision"], "no_glyph_empty_above": 1.0}})
    assert empties_seen_through(off, ev, slots) == slots
