"""A hand reaching for the top often lies over the lone block's glyph. Read the right way, its
slot then reads empty for want of a glyph, the level below is read instead, and every slot is
wrong. A lone block at an end of the top, of one sure block colour, whose glyph's white field
still shows round the fingertip, is that block: named by its colour, and reported unsure."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from vision.reader import (COLOR_CLASSES, GLYPHS, SlotEvidence, glyph_field_share,
                           lone_block_glyph_hidden, read_frame)
from referee.observations import SlotReading
from vision.top_level import slot_corners

LONE_RED_ONE = "0015.png"  # small kit: a lone red-1 in slot 0 along y, the level below across it
RED = COLOR_CLASSES.index("red")
RED_LAB, WHITE_LAB, SKIN_LAB = (120, 185, 165), (235, 128, 128), (95, 150, 160)


def _names(slots) -> list:
    return [None if s.block is None else str(s.block) for s in slots]


@pytest.fixture
def fingertip_on_glyph(pipe, small_kit):
    """The kit's lone red 1 with a fingertip (a skin-coloured disc 8 px across its radius) over
    the middle of its glyph."""
    labels = json.loads((small_kit / "labels.json").read_text())
    assert labels[LONE_RED_ONE]["slots"] == ["red-1", None, None] and labels[LONE_RED_ONE]["orientation"] == "y"
    img = cv2.imread(str(small_kit / "images" / LONE_RED_ONE))
    seen = read_frame(pipe, img)
    assert _names(seen.reading.slots) == ["red-1", None, None] and not seen.reading.uncertain
    u, v = seen.registration.to_image(slot_corners(pipe.tray, "y", 0).mean(axis=0, keepdims=True), seen.z_top)[0]
    cv2.circle(img, (int(round(u)), int(round(v))), 8, (120, 150, 200), -1, cv2.LINE_AA)
    return img


def test_a_lone_block_whose_glyph_a_fingertip_hides_is_read_by_its_colour_and_unsure(pipe, fingertip_on_glyph):
    reading = read_frame(pipe, fingertip_on_glyph).reading
    assert reading.orientation == "y"
    assert reading.slots[0].block is not None and reading.slots[0].block.color == "red"
    assert _names(reading.slots)[1:] == [None, None]
    assert reading.uncertain and "slot 0 named by its colour" in reading.note


def test_without_the_rule_the_level_below_is_read_as_the_top(pipe, fingertip_on_glyph):
    pipe.cfg["decision"]["hidden_glyph_field"] = 0.0
    reading = read_frame(pipe, fingertip_on_glyph).reading
    assert reading.orientation == "x"  # the level below, two of its blocks named
    assert reading.uncertain


def _patch(body, middle=None) -> np.ndarray:
    """A 25 x 75 px Lab colour patch (long side across) of one colour, its middle third another."""
    lab = np.empty((25, 75, 3), np.uint8)
    lab[:] = body
    if middle is not None:
        lab[6:19, 30:45] = middle
    return lab


def _across(labs, occ=(0.02, 0.05, 0.97)) -> SlotEvidence:
    """A reading across: slot 2 a sure red block whose glyph is not seen, slots 0 and 1 empty."""
    col = np.full((3, len(COLOR_CLASSES)), 0.01)
    col[:, RED] = 0.96
    gly = np.full((3, len(GLYPHS)), 0.1)
    return SlotEvidence(np.array(occ), col, gly, labs=np.stack(labs))


def test_a_glyph_field_lies_at_a_blocks_middle():
    assert glyph_field_share(_patch(RED_LAB, WHITE_LAB)) > 0.3
    assert glyph_field_share(_patch(RED_LAB)) == 0.0


def test_an_arm_over_the_ends_of_the_level_below_shows_no_white_and_is_no_block(pipe):
    arm = _across([_patch(RED_LAB)] * 2 + [_patch(SKIN_LAB)])
    assert lone_block_glyph_hidden(pipe, arm) is None


def test_a_red_slot_with_its_white_field_is_a_red_block_named_unsure(pipe):
    slots = lone_block_glyph_hidden(pipe, _across([_patch(RED_LAB)] * 2 + [_patch(RED_LAB, WHITE_LAB)]))
    assert slots is not None and slots[0].block is None and slots[1].block is None
    assert slots[2].block.color == "red" and slots[2].confidence < pipe.cfg["decision"]["uncertain_below"]


def test_the_middle_slot_or_two_likely_blocks_are_no_lone_block_at_an_end(pipe):
    labs = [_patch(RED_LAB, WHITE_LAB)] * 3
    assert lone_block_glyph_hidden(pipe, _across(labs, occ=(0.02, 0.97, 0.05))) is None
    assert lone_block_glyph_hidden(pipe, _across(labs, occ=(0.6, 0.05, 0.97))) is None


def test_a_lone_block_read_across_may_show_two_colours_where_the_first_reading_did(pipe, small_kit):
    """A hand over one end of the lone block reads as another colour there: read across, the
    lone block shows two colours, as the level below's blocks read the first way do. That alone
    does not throw out the reading across; a first reading of whole blocks does."""
    import vision.reader as reader
    from vision.reader import slot_evidence, slot_readings

    img = cv2.imread(str(small_kit / "images" / "0020.png"))  # red-2, blue-1, yellow-1 along x
    res = read_frame(pipe, img)
    ctx = reader.frame_context(pipe, img)
    ctx = reader.FrameContext(res.registration, ctx.tray_bgr, ctx.gains, {})
    ev = slot_evidence(pipe, ctx, img, res.z_top, "x")
    whole = slot_readings(pipe, ev)
    red, blue, yellow = ev.labs
    half = red.shape[1] // 2
    mixed = np.concatenate([red[:, :half], blue[:, half:]], axis=1)
    first_ev = SlotEvidence(ev.p_occ, ev.p_col, ev.p_gly, np.stack([red, mixed, yellow]))
    assert reader.two_coloured_slots(pipe, first_ev, whole) == [1]
    two_first = bool(reader.two_coloured_slots(pipe, first_ev, whole))
    whole_first = bool(reader.two_coloured_slots(pipe, ev, whole))
    lone = (whole[0], SlotReading(None, 0.9), SlotReading(None, 0.9))
    assert reader._two_colours_both_ways(pipe, lone, two_first)
    assert not reader._two_colours_both_ways(pipe, lone, whole_first)  # the first reading was of whole blocks
    assert not reader._two_colours_both_ways(pipe, whole, two_first)  # three blocks across: no lone block
    pipe.cfg["decision"]["across_lone_two_colours"] = False
    assert not reader._two_colours_both_ways(pipe, lone, two_first)
