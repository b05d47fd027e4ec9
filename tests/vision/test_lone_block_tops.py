"""A top level of one block: the lone block is the top, not the level below that shows round it.

The face search can line up the full level below (one level short), the occupancy model can put
a lone block's slot under half although its colour and glyph are read surely, and the face
pattern can be sure of the level below's orientation. Each time the reading must still come
back to the lone block, or say it is unsure."""

from __future__ import annotations

import numpy as np
import pytest

import vision.reader as reader
from vision.reader import COLOR_CLASSES, GLYPHS, SlotEvidence, load_pipeline, reads_a_block, weakly_read


def _evidence(occ, colour_sure, glyph_sure) -> SlotEvidence:
    """Three slots: occupancy, and how surely each slot's colour (red) and glyph (1) are read."""
    col = np.full((3, len(COLOR_CLASSES)), 0.0)
    gly = np.full((3, len(GLYPHS)), 0.0)
    for s in range(3):
        col[s] = (1 - colour_sure[s]) / (len(COLOR_CLASSES) - 1)
        col[s, 0] = colour_sure[s]
        gly[s] = (1 - glyph_sure[s]) / (len(GLYPHS) - 1)
        gly[s, 0] = glyph_sure[s]
    return SlotEvidence(np.array(occ, float), col, gly)


NO_BLOCK = _evidence([0.02, 0.03, 0.01], [0.9, 0.9, 0.9], [0.35, 0.35, 0.35])
LONE_BLOCK = _evidence([0.95, 0.02, 0.01], [0.99, 0.9, 0.9], [0.98, 0.35, 0.35])


def test_a_lone_block_with_its_glyph_and_colour_sure_is_a_block_when_looking_for_one(pipe):
    # synthetic 939/0048: the occupancy model put the lone yellow-1 at 0.18, its glyph at 0.99
    ev = _evidence([0.0, 0.18, 0.0], [0.45, 1.0, 0.9], [0.45, 0.99, 0.45])
    assert not reads_a_block(pipe, ev)
    assert reads_a_block(pipe, ev, with_glyph=True)


def test_a_slot_with_no_glyph_seen_is_no_block_however_its_occupancy_is_weighed(pipe):
    ev = _evidence([0.0, 0.18, 0.0], [0.45, 1.0, 0.9], [0.45, 0.35, 0.45])
    assert not reads_a_block(pipe, ev, with_glyph=True)


def test_a_block_read_with_a_glyph_under_sure_is_weakly_read(pipe):
    assert weakly_read(pipe, _evidence([1.0, 0.2, 0.99], [0.86, 0.5, 0.99], [0.77, 0.6, 0.52]))  # 0.66 and 0.51
    assert not weakly_read(pipe, _evidence([1.0, 0.2, 0.99], [0.99, 0.5, 0.99], [0.97, 0.6, 0.95]))
    assert not weakly_read(pipe, _evidence([1.0, 0.2, 0.99], [0.9, 0.5, 0.99], [0.9, 0.6, 0.95]))  # 0.81: read well enough


def test_a_reading_of_no_block_is_not_weakly_read(pipe):
    # hands over the top: reading the other orientation under them only picks the wrong one
    assert not weakly_read(pipe, NO_BLOCK)


def _evidence_by_height(monkeypatch, table):
    def fake(p, ctx, img, z, orient, first=0):
        return table.get((round(z), orient), NO_BLOCK)
    monkeypatch.setattr(reader, "slot_evidence", fake)


def test_the_lone_block_is_read_one_level_above_a_face_found_on_the_level_below(pipe, monkeypatch):
    # synthetic 1139/0066: the face found at 95 mm is the full level below; the lone green-skip
    # lies across it at 110 mm and reads there only
    _evidence_by_height(monkeypatch, {(110, "x"): LONE_BLOCK})
    orient, _, slots, z = reader._lone_block_across(pipe, None, None, 95.0, "y")
    assert (orient, z) == ("x", 110.0)
    assert str(slots[0].block) == "red-1" and slots[1].block is None and slots[2].block is None


def test_the_lone_block_at_the_height_found_is_read_there(pipe, monkeypatch):
    _evidence_by_height(monkeypatch, {(95, "x"): LONE_BLOCK, (110, "x"): LONE_BLOCK})
    assert reader._lone_block_across(pipe, None, None, 95.0, "y")[3] == 95.0


def test_nothing_read_across_at_either_height_keeps_the_first_reading(pipe, monkeypatch):
    _evidence_by_height(monkeypatch, {(95, "y"): LONE_BLOCK})
    assert reader._lone_block_across(pipe, None, None, 95.0, "y") is None


def _two_coloured_at(monkeypatch, bad: SlotEvidence, slot: int = 0):
    """The two-colour check flags `slot` of the evidence `bad` only."""
    monkeypatch.setattr(reader, "two_coloured_slots", lambda p, ev, slots: [slot] if ev is bad else [])


def test_a_lone_block_of_two_colours_at_the_height_found_is_read_one_level_up(pipe, monkeypatch):
    # synthetic 29/0043, a tall top seen from aside a level short: read across there, the lone
    # blue 1's slot takes in the level below round it; one level up it reads whole
    at_face = _evidence([0.95, 0.02, 0.01], [0.99, 0.9, 0.9], [0.98, 0.35, 0.35])
    _evidence_by_height(monkeypatch, {(252, "y"): at_face, (267, "y"): LONE_BLOCK})
    _two_coloured_at(monkeypatch, at_face)
    orient, ev, slots, z = reader._lone_block_across(pipe, None, None, 252.0, "x")
    assert (orient, z, ev) == ("y", 267.0, LONE_BLOCK)
    assert str(slots[0].block) == "red-1"


def test_a_lone_block_of_two_colours_at_both_heights_is_not_read_across(pipe, monkeypatch):
    _evidence_by_height(monkeypatch, {(252, "y"): LONE_BLOCK, (267, "y"): LONE_BLOCK})
    _two_coloured_at(monkeypatch, LONE_BLOCK)
    assert reader._lone_block_across(pipe, None, None, 252.0, "x") is None


# A reading that raised no doubt but whose orientation stays unsure: a lone block one level up
# is read only there, and only a sure reading of it is kept.

def test_an_unsure_orientation_is_read_one_level_up_only(pipe, monkeypatch):
    # synthetic 31/0074: the level below's three blocks read whole at 250 mm, the orientation at
    # 0.59; the lone red 4 lies across their ends at 265 mm
    asked = []
    real = {(265, "y"): LONE_BLOCK}
    monkeypatch.setattr(reader, "slot_evidence",
                        lambda p, ctx, img, z, o, first=0: asked.append((round(z), o)) or real.get((round(z), o), LONE_BLOCK))
    orient, _, slots, z = reader._lone_block_across(pipe, None, None, 250.0, "x", up_only=True)
    assert (orient, z) == ("y", 265.0) and str(slots[0].block) == "red-1"
    assert asked == [(265, "y")]  # never across at the height found


def test_an_unsure_reading_one_level_up_is_not_kept(pipe, monkeypatch):
    # synthetic family-1/0057: the lone yellow 1 read right at 51 mm; one level up the same
    # block, out of its place, read as a yellow Draw Two with an empty slot at 0.62
    doubtful = _evidence([0.95, 0.02, 0.5], [0.99, 0.9, 0.9], [0.98, 0.35, 0.35])
    _evidence_by_height(monkeypatch, {(66, "x"): doubtful})
    assert min(s.confidence for s in reader.slot_readings(pipe, doubtful)) < pipe.cfg["decision"]["uncertain_below"]
    assert reader._lone_block_across(pipe, None, None, 51.0, "y", up_only=True) is None


@pytest.mark.parametrize("o_conf, switched_on, looked_up", [(0.55, True, True), (0.55, False, False), (0.9, True, False)])
def test_a_frame_whose_orientation_stays_unsure_looks_one_level_up(calibration, small_kit, monkeypatch,
                                                                   o_conf, switched_on, looked_up):
    import cv2

    pipe = load_pipeline(calibration)
    pipe.cfg["decision"]["unsure_orientation_read_up"] = switched_on
    img = cv2.imread(str(small_kit / "images" / "0015.png"))
    real_top = reader.read_top
    monkeypatch.setattr(reader, "read_top", lambda *a, **k: (lambda r: r and (r[0], r[1], o_conf))(real_top(*a, **k)))
    for check in ("two_coloured_slots", "contested_empties"):
        monkeypatch.setattr(reader, check, lambda *a, **k: [])
    monkeypatch.setattr(reader, "crossed_middle", lambda *a, **k: False)
    calls = []
    monkeypatch.setattr(reader, "_lone_block_across", lambda *a, **k: calls.append(k["up_only"]) and None)
    reader.read_frame(pipe, img)
    assert calls == ([True] if looked_up else [])


def test_a_reading_one_level_up_with_a_contested_empty_slot_is_not_kept(pipe, monkeypatch):
    contested = _evidence([0.95, 0.01, 0.02], [0.99, 1.0, 0.6], [0.98, 1.0, 0.35])  # slot 1: colour and glyph sure
    _evidence_by_height(monkeypatch, {(66, "x"): contested})
    assert reader.contested_empties(pipe, contested, reader.slot_readings(pipe, contested)) == [1]
    assert reader._lone_block_across(pipe, None, None, 51.0, "y", up_only=True) is None


def test_a_face_pattern_sure_of_the_level_below_is_checked_when_its_blocks_read_weakly(pipe, monkeypatch):
    # synthetic 929/0039, a tall top seen from aside: the face pattern gave the level below's
    # orientation 0.85, whose blocks then read at 0.66 and 0.52; the top's own read at 0.96
    level_below = _evidence([1.0, 0.22, 0.99], [0.86, 0.48, 0.99], [0.77, 0.59, 0.52])
    top = _evidence([1.0, 0.69, 1.0], [0.99, 0.37, 0.99], [0.97, 0.43, 0.95])
    _evidence_by_height(monkeypatch, {(288, "x"): level_below, (288, "y"): top})
    ctx = reader.FrameContext(registration=None, tray_bgr=None, gains=None)
    ctx.memo[("face", 288.0)] = ((pipe, None, None), np.array([0.85, 0.15]))  # the face pattern's say
    orient, ev, _ = reader.read_top(pipe, ctx, None, 288.0)
    assert orient == "y" and ev is top


def test_a_face_pattern_sure_of_blocks_read_surely_is_not_second_guessed(pipe, monkeypatch):
    sure_x = _evidence([1.0, 0.05, 0.99], [0.99, 0.48, 0.99], [0.97, 0.4, 0.96])
    _evidence_by_height(monkeypatch, {(288, "x"): sure_x, (288, "y"): LONE_BLOCK})
    ctx = reader.FrameContext(registration=None, tray_bgr=None, gains=None)
    ctx.memo[("face", 288.0)] = ((pipe, None, None), np.array([0.85, 0.15]))
    seen = []
    real = reader.slot_evidence
    monkeypatch.setattr(reader, "slot_evidence", lambda p, c, i, z, o, first=0: seen.append(o) or real(p, c, i, z, o, first))
    assert reader.read_top(pipe, ctx, None, 288.0)[0] == "x"
    assert seen == ["x"]  # the other orientation was never read


def _seen_across(monkeypatch, seen: list[bool]):
    """A glyph seen (or not) at the other orientation's slots 0 and 2."""
    asked = []
    def fake(p, ctx, img, z, orient, slot):
        asked.append((orient, slot))
        return seen[slot // 2]
    monkeypatch.setattr(reader, "inked_glyph_seen", fake)
    return asked


def _reading(*names):
    from referee.blocks import Block
    return tuple(reader.SlotReading(None if n is None else Block.parse(n), 0.9, ()) for n in names)


def test_a_glyph_at_an_end_of_the_middle_block_means_a_block_lies_across_it(pipe, monkeypatch):
    # synthetic 1139/0005: a lone yellow skip across a level of yellow blocks
    asked = _seen_across(monkeypatch, [False, True])
    assert reader.crossed_middle(pipe, None, None, 73.0, "y", _reading("yellow-2", "yellow-reverse", "yellow-skip"))
    assert asked == [("x", 0), ("x", 2)]  # the other orientation's end slots: the middle block's ends


def test_a_middle_block_with_plain_ends_is_not_crossed(pipe, monkeypatch):
    _seen_across(monkeypatch, [False, False])
    assert not reader.crossed_middle(pipe, None, None, 73.0, "y", _reading("yellow-2", "yellow-reverse", "yellow-skip"))


def test_an_empty_middle_slot_is_not_looked_at(pipe, monkeypatch):
    # the level below shows through it, its glyphs where the other orientation's slots lie
    asked = _seen_across(monkeypatch, [True, True])
    assert not reader.crossed_middle(pipe, None, None, 73.0, "y", _reading("yellow-2", None, "yellow-skip"))
    assert asked == []


def test_a_lone_block_read_the_wrong_way_is_seen_across_its_middle_block(calibration, small_kit, monkeypatch):
    import cv2

    from vision.reader import read_frame, slot_evidence

    pipe = load_pipeline(calibration)
    img = cv2.imread(str(small_kit / "images" / "0015.png"))  # a lone red-1 along y, in slot 0
    def wrong(p, ctx, img, z, need_block=False):
        return "x", slot_evidence(p, ctx, img, z, "x"), 0.9
    monkeypatch.setattr(reader, "read_top", wrong)
    pipe.cfg["decision"]["two_colours_sure"] = 0.0  # the colour check off: the glyph alone tells
    reading = read_frame(pipe, img).reading
    assert reading.orientation == "y"
    assert [None if s.block is None else str(s.block) for s in reading.slots] == ["red-1", None, None]
    assert reading.uncertain


# An empty reading that cannot be trusted is reported unsure, not given as sure.

def test_an_empty_slot_whose_colour_and_glyph_are_read_surely_is_contested(pipe):
    # synthetic 929/0069: a blue Reverse at occupancy 0.01, its colour and glyph at 1.0
    ev = _evidence([0.9, 0.01, 0.02], [0.99, 1.0, 0.6], [0.98, 1.0, 0.35])
    assert reader.contested_empties(pipe, ev, _reading("red-1", None, None)) == [1]


def test_an_empty_slot_whose_glyph_is_read_well_beside_a_sure_colour_is_contested(pipe):
    # synthetic 5103/0051: a red 1 at occupancy 0.29, its colour at 1.00 and glyph at 0.83
    ev = _evidence([0.29, 0.98, 0.03], [1.0, 1.0, 0.6], [0.83, 0.96, 0.06])
    assert reader.contested_empties(pipe, ev, _reading(None, "green-4", None)) == [0]


def test_an_empty_slot_with_no_glyph_is_not_contested(pipe):
    ev = _evidence([0.9, 0.01, 0.02], [0.99, 1.0, 0.6], [0.98, 0.4, 0.35])
    assert reader.contested_empties(pipe, ev, _reading("red-1", None, None)) == []


def test_empty_slots_the_camera_sees_whole_are_not_out_of_view(lone_read):
    pipe, img, res = lone_read
    r = res.reading
    assert reader.empties_out_of_view(pipe, res.registration, res.z_top, r.orientation, 0, img.shape, r.slots) == []
    assert "outside the camera's view" not in r.note


def test_empty_slots_beyond_the_frame_are_out_of_view_and_blocks_are_not_flagged(lone_read):
    pipe, img, res = lone_read
    r = res.reading
    # a frame a tenth as wide: the tower's top lies beyond its right edge
    narrow = (img.shape[0], img.shape[1] // 10, 3)
    assert reader.empties_out_of_view(pipe, res.registration, res.z_top, r.orientation, 0, narrow, r.slots) == [1, 2]


def test_a_glyph_is_looked_for_only_where_its_ink_is_found(lone_read):
    from vision import top_level as tl

    pipe, img, res = lone_read
    ctx = reader.FrameContext(res.registration, *(getattr(reader.frame_context(pipe, img), k) for k in ("tray_bgr", "gains")))
    z = res.z_top
    assert tl.glyph_ink_offset(pipe.cfg, pipe.tray, res.registration, img, z, "y", 0) is not None  # the lone red 1
    assert reader.inked_glyph_seen(pipe, ctx, img, z, "y", 0)



def test_where_no_ink_is_found_no_glyph_is_seen_and_the_model_is_not_run(lone_read, monkeypatch):
    from vision import top_level as tl

    pipe, img, res = lone_read
    ctx = reader.FrameContext(res.registration, *(getattr(reader.frame_context(pipe, img), k) for k in ("tray_bgr", "gains")))
    monkeypatch.setattr(tl, "glyph_ink_offset", lambda *a, **k: None)
    monkeypatch.setattr(tl, "glyph_crop", lambda *a, **k: pytest.fail("a crop cut where no ink was found"))
    assert not reader.inked_glyph_seen(pipe, ctx, img, res.z_top, "y", 0)


@pytest.mark.parametrize("along", [9.0, -9.0])
def test_ink_found_only_at_the_search_limit_along_the_block_is_no_crossing_glyph(lone_read, monkeypatch, along):
    # synthetic 47/0062: the seam between the yellow Reverse and the green 1, 12.5 mm from the
    # crossing slot's centre, was found as ink at the search's limit (9 mm) and read as a glyph
    from vision import top_level as tl

    pipe, img, res = lone_read
    ctx = reader.FrameContext(res.registration, *(getattr(reader.frame_context(pipe, img), k) for k in ("tray_bgr", "gains")))
    monkeypatch.setattr(tl, "glyph_ink_offset", lambda *a, **k: (along, 2.0))
    monkeypatch.setattr(tl, "glyph_crop", lambda *a, **k: pytest.fail("a crop cut round ink at the search's limit"))
    assert not reader.inked_glyph_seen(pipe, ctx, img, res.z_top, "y", 0)


def test_ink_found_within_the_search_area_is_read_for_a_glyph(lone_read, monkeypatch):
    pipe, img, res = lone_read
    ctx = reader.FrameContext(res.registration, *(getattr(reader.frame_context(pipe, img), k) for k in ("tray_bgr", "gains")))
    asked = []
    monkeypatch.setattr(reader, "_ink", lambda *a, **k: (8.4, 9.5))  # synthetic 29/0043: the lone blue 1 a little off
    monkeypatch.setattr(reader, "glyphs_seen_at", lambda *a, **k: asked.append(a[-1]) or [True])
    assert reader.inked_glyph_seen(pipe, ctx, img, res.z_top, "y", 0)
    assert asked == [(0,)]


# Read across, the top must still be one lone block: three blocks there are the level below
# seen through the top, and of two lone readings of different colours, the one whose ends
# differ is the level below's middle block with the lone block over one end.

THREE_BLOCKS = _evidence([0.95, 0.95, 0.95], [0.99, 0.99, 0.99], [0.98, 0.98, 0.98])


def _patches(*ends) -> np.ndarray:
    """Lab colour patches (3, 25, 75) of slots whose two ends are the given (a, b) pairs."""
    labs = np.full((3, 25, 75, 3), 128, np.uint8)
    for s, (left, right) in enumerate(ends):
        labs[s, :, :38, 1:] = left
        labs[s, :, 38:, 1:] = right
    return labs


def _with_patches(ev: SlotEvidence, labs: np.ndarray) -> SlotEvidence:
    return SlotEvidence(ev.p_occ, ev.p_col, ev.p_gly, labs)


def _lone_block(slot: int, colour: int) -> SlotEvidence:
    occ, col_sure, gly_sure = [0.02] * 3, [0.9] * 3, [0.35] * 3
    occ[slot], col_sure[slot], gly_sure[slot] = 0.95, 0.99, 0.98
    ev = _evidence(occ, col_sure, gly_sure)
    ev.p_col[slot] = np.roll(ev.p_col[slot], colour)
    return ev


RED, BLUE = (170, 150), (140, 80)


def test_three_blocks_read_across_a_lone_block_are_the_level_below(pipe, monkeypatch):
    # twin 74/0019: the lone green 3 at the end of the top read right; across, the level
    # below's yellow 3, green Reverse and green 4 each showed whole, a little of the green 3 at an end
    _evidence_by_height(monkeypatch, {(95, "y"): THREE_BLOCKS, (110, "y"): THREE_BLOCKS})
    first = reader.slot_readings(pipe, LONE_BLOCK)
    assert reader._lone_block_across(pipe, None, None, 95.0, "x", first=first, first_ev=LONE_BLOCK) is None


def test_the_lone_block_read_across_from_the_level_below_is_kept(pipe, monkeypatch):
    _evidence_by_height(monkeypatch, {(95, "y"): LONE_BLOCK})
    first = reader.slot_readings(pipe, THREE_BLOCKS)
    orient, _, slots, _ = reader._lone_block_across(pipe, None, None, 95.0, "x", first=first, first_ev=THREE_BLOCKS)
    assert orient == "y" and [str(s.block) if s.block else None for s in slots] == ["red-1", None, None]


def test_of_two_lone_blocks_of_other_colours_the_one_whose_ends_differ_is_the_level_below(pipe, monkeypatch):
    # twin 74/0020: the lone red 2 at an end, its ends one colour; read across, the level
    # below's blue Reverse in the middle, its far end under the red 2
    lone_red = _with_patches(_lone_block(0, 0), _patches((RED, RED), (RED, RED), (RED, RED)))
    below_blue = _with_patches(_lone_block(1, 2), _patches((BLUE, BLUE), (BLUE, RED), (BLUE, BLUE)))
    _evidence_by_height(monkeypatch, {(37, "x"): below_blue, (52, "x"): below_blue})
    first = reader.slot_readings(pipe, lone_red)
    assert reader._lone_block_across(pipe, None, None, 37.0, "y", first=first, first_ev=lone_red) is None
    # twin 79/0064, the other way round: the first reading was the level below's middle block
    _evidence_by_height(monkeypatch, {(37, "y"): lone_red})
    first = reader.slot_readings(pipe, below_blue)
    orient, ev, _, _ = reader._lone_block_across(pipe, None, None, 37.0, "x", first=first, first_ev=below_blue)
    assert (orient, ev) == ("y", lone_red)
