"""Reading the tower as the builder lays it: each level taken once it reads steadily, blocks the
camera is unsure of left for the builder to name, never a level taken before it is laid."""

from __future__ import annotations

from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET, Block
from referee.loop.build import BuildReader
from referee.observations import HandReading, SlotReading, TopLevelReading
from referee.tower import Tower


def _frame(*slots, orientation=None, level=1, hands=()):
    """A reading of the top: each slot a block name with its confidence, or (None, confidence)."""
    read = tuple(SlotReading(Block.parse(n) if n else None, c) for n, c in slots)
    return TopLevelReading(orientation or Tower.orientation(level), read, hands)


def _reader():
    return BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET])


def test_a_level_read_the_same_on_two_frames_is_taken():
    build = _reader()
    level = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    assert build.on_frame(level) is None
    read = build.on_frame(level)
    assert read is not None and read.level == 1 and read.names == ["green-3", "red-1", "red-3"]
    assert build.doubtful_slots(read) == []


def test_a_hand_over_the_tower_or_the_wrong_orientation_waits():
    build = _reader()
    level = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    hand = HandReading("south", (140.0, 60.0), 0.9)
    other = "y" if Tower.orientation(1) == "x" else "x"
    across = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99), orientation=other)
    assert build.on_frame(level) is None
    assert build.on_frame(_frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99), hands=(hand,))) is None
    assert build.on_frame(level) is None  # the steady count started again
    assert build.on_frame(across) is None
    assert build.on_frame(level) is None
    assert build.on_frame(level) is not None


def test_a_level_with_a_slot_surely_empty_is_still_being_laid():
    build = _reader()
    two = _frame(("green-3", 0.99), (None, 0.97), ("red-3", 0.99))
    for _ in range(5):
        assert build.on_frame(two) is None


def test_a_block_the_camera_cannot_name_is_left_for_the_builder_not_waited_for():
    """Twin seed 110: the Wild in the middle of level 1 read empty at confidence 0.0 on every
    frame; the level was never taken and the builder had to name all three blocks."""
    build = _reader()
    level = _frame(("green-3", 0.99), (None, 0.0), ("red-3", 0.99))
    assert build.on_frame(level) is None
    read = build.on_frame(level)
    assert read is not None and read.names == ["green-3", None, "red-3"]
    assert build.doubtful_slots(read) == [1]
    build.accept(read)
    build.correct(1, 1, "wild")
    assert build.rows() == [["green-3", "wild", "red-3"]] and build.next_level == 2


def test_a_reading_with_no_block_named_is_no_level():
    build = _reader()
    blank = _frame((None, 0.2), (None, 0.1), (None, 0.3))
    for _ in range(5):
        assert build.on_frame(blank) is None


def test_a_block_read_more_often_than_the_box_holds_is_named_for_checking():
    build = _reader()
    have = BLOCK_SETS[DEFAULT_BLOCK_SET].counts()["red-3"]
    for k in range(1, have + 2):
        level = _frame(("red-3", 0.99), ("green-1", 0.99), ("blue-2", 0.99), level=k)
        build.on_frame(level)
        build.accept(build.on_frame(level))
    assert (1, 0) in build.over_counted() and (have + 1, 0) in build.over_counted()
