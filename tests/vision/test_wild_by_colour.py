"""The Wild is the set's one black block: a sure black block whose many-coloured oval the glyph
model cannot name is still the Wild, but only where no hand is over the tower (dark fingers and
their shadow read black too), and the reading stays unsure."""

from __future__ import annotations

import numpy as np

from vision.reader import COLOR_CLASSES, GLYPHS, SlotEvidence, slot_readings, wild_by_its_colour

WILD = COLOR_CLASSES.index("wild")


def _black_block_in_slot_1(glyph_wild: float = 0.19) -> SlotEvidence:
    """Slot 0 a sure red 1, slot 1 a sure black block whose glyph is read as nothing in
    particular (held-out family 42: Reverse 0.31, Wild 0.19), slot 2 empty."""
    occ = np.array([0.99, 0.996, 0.02])
    col = np.full((3, len(COLOR_CLASSES)), 0.01)
    col[0, 0] = col[1, WILD] = col[2, 1] = 0.96
    gly = np.full((3, len(GLYPHS)), 0.05)
    gly[0, 0] = 0.65
    gly[1, GLYPHS.index("reverse")], gly[1, GLYPHS.index("wild")] = 0.31, glyph_wild
    return SlotEvidence(occ, col, gly)


def test_a_sure_black_block_with_no_glyph_named_is_read_as_the_wild_and_unsure(pipe):
    ev = _black_block_in_slot_1()
    first = slot_readings(pipe, ev)
    assert first[1].block is None  # no glyph seen: read empty
    slots = wild_by_its_colour(pipe, ev, first, hands=())
    assert str(slots[1].block) == "wild"
    assert slots[1].confidence < pipe.cfg["decision"]["uncertain_below"]
    assert slots[0] == first[0] and slots[2] == first[2]


def test_with_a_hand_over_the_tower_a_black_slot_stays_empty(pipe):
    ev = _black_block_in_slot_1()
    first = slot_readings(pipe, ev)
    assert wild_by_its_colour(pipe, ev, first, hands=("a hand",)) == first


def test_there_is_one_wild_so_a_second_black_slot_is_not_another(pipe):
    from dataclasses import replace

    from referee.blocks import Block

    ev = _black_block_in_slot_1()
    first = list(slot_readings(pipe, ev))
    first[0] = replace(first[0], block=Block.parse("wild"))
    assert wild_by_its_colour(pipe, ev, first, hands=()) == tuple(first)


def test_a_black_slot_the_occupancy_model_doubts_stays_empty(pipe):
    ev = _black_block_in_slot_1()
    ev.p_occ[1] = 0.6
    first = slot_readings(pipe, ev)
    assert wild_by_its_colour(pipe, ev, first, hands=())[1].block is None


def test_switched_off_nothing_changes(pipe):
    pipe.cfg["decision"]["wild_colour_sure"] = 0.0
    ev = _black_block_in_slot_1()
    first = slot_readings(pipe, ev)
    assert wild_by_its_colour(pipe, ev, first, hands=()) == first
