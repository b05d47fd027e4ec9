"""The bench's census of misses: each wrong slot in view and each wrong hand count gets its kind."""

from vision.evaluate import summarize
from vision.miss_kinds import (
    COLOUR, COUNT_OFF, FALSE_TWO, GLYPH, MISSED, MISSED_TWO, NO_BLOCK, ORIENTATION, PHANTOM, SLOT_OFF,
    hand_misses, miss_line, slot_miss_kind, slot_misses,
)


def row(read, truth, orientation="x", truth_orientation="x", hands=0, truth_hands=0, hidden=(0.0, 0.0, 0.0),
        levels=10):
    return {
        "image": "0001.png", "orientation": orientation, "slots": list(read), "hands": hands,
        "truth": {"orientation": truth_orientation, "slots": list(truth), "hands": truth_hands},
        "slot_ok": [a == b for a, b in zip(read, truth)], "orientation_ok": orientation == truth_orientation,
        "hands_ok": hands == truth_hands, "two_ok": (hands >= 2) == (truth_hands >= 2), "uncertain": True,
        "hidden": list(hidden), "levels": levels,
    }


TOP = ["yellow-4", "yellow-draw2", "red-1"]


def test_a_reading_with_no_block_is_its_own_kind_whatever_each_slot_was():
    r = row([None, None, None], TOP)
    assert [slot_miss_kind(r, i) for i in range(3)] == [NO_BLOCK] * 3


def test_a_top_read_across_is_a_wrong_orientation_not_three_wrong_blocks():
    r = row(["blue-1", None, None], TOP, orientation="y")
    assert slot_miss_kind(r, 0) == ORIENTATION


def test_the_blocks_read_one_slot_over_are_one_slot_off_either_way():
    assert slot_miss_kind(row([None, "yellow-4", "yellow-draw2"], TOP), 0) == SLOT_OFF
    assert slot_miss_kind(row(["yellow-draw2", "red-1", None], TOP), 2) == SLOT_OFF


def test_an_empty_read_is_a_block_missed_and_a_block_read_in_an_empty_slot_is_a_phantom():
    assert slot_miss_kind(row([None, "yellow-draw2", "red-1"], TOP), 0) == MISSED
    assert slot_miss_kind(row(["yellow-4", "green-2", "red-1"], ["yellow-4", None, "red-1"]), 1) == PHANTOM


def test_another_colour_is_a_colour_miss_and_the_right_colour_with_another_symbol_a_glyph_miss():
    assert slot_miss_kind(row(["green-4", "yellow-draw2", "red-1"], TOP), 0) == COLOUR
    assert slot_miss_kind(row(["yellow-1", "yellow-draw2", "red-1"], TOP), 0) == GLYPH
    assert slot_miss_kind(row(["wild", "yellow-draw2", "red-1"], TOP), 0) == COLOUR


def test_only_slots_hands_hide_at_most_a_tenth_of_are_counted_and_tall_towers_apart():
    rows = [
        row([None, "yellow-draw2", "red-1"], TOP, hidden=(0.5, 0.0, 0.0)),   # under a hand: not judged
        row([None, "yellow-draw2", "red-1"], TOP, levels=16),                 # a match-height tower
        row(["yellow-1", "yellow-draw2", "red-1"], TOP, levels=8),
        {**row([None, "yellow-draw2", "red-1"], TOP), "hidden": None},        # hidden fractions unknown
    ]
    got = slot_misses(rows, least_levels=15)
    assert got == {"all": {MISSED: 1, GLYPH: 1}, "tall": {MISSED: 1}}


def test_hand_misses_tell_a_false_uno_from_a_missed_one_and_from_a_count_off():
    rows = [
        row(TOP, TOP, hands=2, truth_hands=1),
        row(TOP, TOP, hands=1, truth_hands=2),
        row(TOP, TOP, hands=0, truth_hands=2),
        row(TOP, TOP, hands=1, truth_hands=0),
        row(TOP, TOP, hands=2, truth_hands=2),
    ]
    assert hand_misses(rows) == {FALSE_TWO: 1, MISSED_TWO: 2, COUNT_OFF: 1}


def test_the_bench_line_puts_the_largest_kind_first_with_its_tall_share():
    assert miss_line({GLYPH: 2, MISSED: 5}, {MISSED: 3}) == "block missed 5 (tall 3), glyph 2 (tall 0)"
    assert miss_line({}) == "none"


def test_the_summary_of_a_kit_carries_the_census():
    s = summarize([row([None, "yellow-draw2", "red-1"], TOP, hands=1, truth_hands=2), {"image": "x", "error": "no tray"}])
    assert s["slot_misses"]["all"] == {MISSED: 1}
    assert s["hand_misses"] == {MISSED_TWO: 1}
