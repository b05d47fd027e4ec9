"""Small pure pieces of the reader: block posteriors, hand runs round the ring."""

from __future__ import annotations

import numpy as np

from vision.hands import _runs
from vision.reader import COLOR_CLASSES, GLYPHS, block_posterior


def test_the_wild_needs_both_the_wild_colour_and_the_wild_glyph():
    p_color = np.array([0.05, 0.05, 0.05, 0.05, 0.8])
    p_glyph = np.array([0.9, 0.02, 0.02, 0.02, 0.01, 0.01, 0.01, 0.01])
    post = dict(block_posterior(p_color, p_glyph))
    assert abs(sum(post.values()) - 1) < 1e-9
    assert len(post) == 29
    assert max(post, key=post.get) == "red-1"  # a clear "1" overrules a black-looking colour


def test_colour_and_glyph_combine_into_one_block():
    p_color = np.eye(len(COLOR_CLASSES))[COLOR_CLASSES.index("blue")] * 0.9 + 0.02
    p_glyph = np.eye(len(GLYPHS))[GLYPHS.index("skip")] * 0.9 + 0.0125
    best = block_posterior(p_color, p_glyph)[0]
    assert best[0] == "blue-skip" and best[1] > 0.8


def test_two_arms_are_two_runs_and_a_run_across_the_ring_start_is_one():
    arc = np.arange(100) * 2.0
    fg = np.zeros(100, bool)
    fg[10:25] = True
    fg[60:80] = True
    assert len(_runs(fg, arc, 6.0, 200.0)) == 2
    wrap = np.zeros(100, bool)
    wrap[:8] = True
    wrap[95:] = True
    runs = _runs(wrap, arc, 6.0, 200.0)
    assert len(runs) == 1 and runs[0][1] - runs[0][0] > 20


def _evidence(p_occ: list[float], glyph_p: list[float]):
    """Three slots read as blue with the given occupancy and the given probability of a "3"."""
    from vision.reader import SlotEvidence

    p_col = np.tile(np.eye(len(COLOR_CLASSES))[COLOR_CLASSES.index("blue")] * 0.96 + 0.008, (3, 1))
    p_gly = []
    for g in glyph_p:
        row = np.full(len(GLYPHS), (1 - g) / (len(GLYPHS) - 1))
        row[GLYPHS.index("3")] = g
        p_gly.append(row)
    return SlotEvidence(np.array(p_occ), p_col, np.array(p_gly))


def _pipeline(models: dict):
    from vision.reader import Pipeline, default_config
    from vision.synthkit import default_tray

    return Pipeline(default_config(), default_tray(), models, None)


def _pipeline_with_glyph_model():
    return _pipeline({"glyph": object()})  # slot_readings only asks whether there is one


def test_a_block_without_a_glyph_seen_reads_empty_and_doubtful():
    """Through an empty outer slot the level below shows crosswise: colour, seams, no glyph."""
    from vision.reader import slot_readings

    p = _pipeline_with_glyph_model()
    slots = slot_readings(p, _evidence([0.9, 0.9, 0.9], [0.98, 0.35, 0.98]))
    assert [str(s.block) if s.block else None for s in slots] == ["blue-3", None, "blue-3"]
    assert slots[1].confidence < float(p.cfg["decision"]["uncertain_below"])
    assert slots[1].candidates[0][0] == "blue-3"  # the doubtful block stays a candidate


def test_however_sure_the_occupancy_model_is_a_block_needs_its_glyph_seen():
    """The level below seen crosswise through an empty slot reads "block" at 0.99 and more."""
    from vision.reader import slot_readings

    slots = slot_readings(_pipeline_with_glyph_model(), _evidence([0.999, 0.2, 0.999], [0.35, 0.35, 0.97]))
    assert [str(s.block) if s.block else None for s in slots] == [None, None, "blue-3"]
    assert slots[0].confidence < 0.01  # as doubtful as a reading gets


def test_without_a_glyph_model_every_slot_counts_as_seen():
    from vision.reader import slot_readings

    p = _pipeline({})
    slots = slot_readings(p, _evidence([0.9, 0.9, 0.9], [0.35, 0.35, 0.35]))
    assert all(s.block is not None for s in slots)


def test_a_slot_read_at_two_thirds_is_doubtful_only_under_a_hand():
    """Under a hand over the tower part of the top may be hidden, and the reader cannot see which
    slots: a slot read at 0.65 makes the reading unsure there (and the note says which), while in
    clear view it stays sure."""
    from types import SimpleNamespace

    from referee.blocks import Block
    from referee.observations import HandReading, SlotReading
    from vision.reader import _uncertainty, default_config

    p = SimpleNamespace(cfg=default_config())
    slots = (SlotReading(Block.parse("red-1"), 0.95), SlotReading(Block.parse("blue-2"), 0.65), SlotReading(None, 0.9))
    assert _uncertainty(p, slots, 0.99) == (False, "")
    unsure, note = _uncertainty(p, slots, 0.99, (HandReading("east", (0.0, 0.0), 0.9),))
    assert unsure and note == "low confidence: slot 1 at 0.65"


def test_a_block_whose_colour_and_glyph_read_as_no_block_there_is_is_not_sure():
    """Synthetic 28/0021: a purplish blue 2 read wild at 0.74 and yellow at 0.25, its glyph a
    sure 2. No wild carries a 2, so normalised the yellow 2 came out at 0.96; the two models put
    a quarter of their probability on blocks that exist, and the reading is no surer than that."""
    from vision.reader import SlotEvidence, _uncertainty, slot_readings

    p = _pipeline_with_glyph_model()
    p_col = np.array([[0.0, 0.25, 0.0, 0.01, 0.74]] * 3)
    p_gly = np.array([[0.0, 0.99, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]] * 3)
    slots = slot_readings(p, SlotEvidence(np.array([1.0, 1.0, 1.0]), p_col, p_gly))
    assert str(slots[1].block) == "yellow-2"  # still the best block there is
    assert slots[1].confidence < float(p.cfg["decision"]["uncertain_below"])
    assert _uncertainty(p, slots, 0.99)[0]
    p.cfg["decision"]["colour_glyph_agree_below"] = 0.0  # the rule off: normalised, a sure block
    assert slot_readings(p, SlotEvidence(np.array([1.0, 1.0, 1.0]), p_col, p_gly))[1].confidence > 0.9


def test_colour_and_glyph_that_agree_keep_their_confidence():
    from vision.reader import slot_readings

    slots = slot_readings(_pipeline_with_glyph_model(), _evidence([0.99, 0.99, 0.99], [0.98, 0.98, 0.98]))
    assert all(s.confidence > 0.9 for s in slots)
