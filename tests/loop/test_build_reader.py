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


# -- a level laid over before the camera read it ----------------------------------------------------

BLOCK_G = 17.0


def _laid(level_one, level_two):
    """Frames of a build whose level 1 is read, then level 2 covered by level 3 before it was read."""
    one = _frame(*[(n, 0.99) for n in level_one], level=1)
    three = _frame(*[(n, 0.99) for n in level_two], level=3)  # the top seen in level 3's orientation
    return one, three


def test_a_level_covered_before_the_camera_read_it_is_left_for_the_builder_when_the_tray_weighs_more():
    """The builder laid level 2 with hands over the tower all along, then level 3's first block:
    the tray weighs four blocks more than with level 1, and the camera sees level 3's orientation."""
    build = _reader()
    one, three = _laid(["green-3", "red-1", "red-3"], ["blue-2", None, None])
    empty = 500.0
    assert build.on_frame(one, empty) is None  # (the tray before the build: its weight is the floor)
    read = build.on_frame(one, empty + 3 * BLOCK_G)
    build.accept(read)
    assert build.on_frame(three, empty + 7 * BLOCK_G) is None
    covered = build.on_frame(three, empty + 7 * BLOCK_G)
    assert covered is not None and covered.level == 2 and covered.covered
    assert build.doubtful_slots(covered) == [0, 1, 2]  # every block of it is the builder's to name
    build.accept(covered)
    assert build.next_level == 3


def test_a_pause_after_a_level_is_no_covered_level_though_the_camera_sees_the_level_above():
    """While the builder pauses after level 1, the reader's view a level up can show level 1's
    blocks in level 3's orientation (twin seed 110); the tray weighs no more: nothing is taken."""
    build = _reader()
    one, three = _laid(["green-3", "red-1", "red-3"], ["green-3", "red-1", "red-3"])
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    for g in (3, 4, 5):  # the next level being laid: up to two of its blocks
        assert build.on_frame(three, 500.0 + g * BLOCK_G) is None
        assert build.on_frame(three, 500.0 + g * BLOCK_G) is None
    assert build.next_level == 2


def test_without_a_load_cell_a_covered_level_is_waited_for_as_before():
    build = _reader()
    one, three = _laid(["green-3", "red-1", "red-3"], ["blue-2", None, None])
    build.on_frame(one)
    build.accept(build.on_frame(one))
    for _ in range(5):
        assert build.on_frame(three) is None


def test_a_covered_level_is_weighed_from_the_level_below_and_three_blocks():
    """After a covered level, the next is weighed from where it should have been: level 3 laid
    whole and read is taken as usual, and only a fourth level's blocks would make it covered."""
    build = _reader()
    one, three = _laid(["green-3", "red-1", "red-3"], ["blue-2", "blue-1", "blue-3"])
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    build.on_frame(three, 500.0 + 9 * BLOCK_G)
    build.accept(build.on_frame(three, 500.0 + 9 * BLOCK_G))
    assert build.next_level == 3
    read3 = _frame(("blue-2", 0.99), ("blue-1", 0.99), ("blue-3", 0.99), level=3)
    build.on_frame(read3, 500.0 + 9 * BLOCK_G)
    read = build.on_frame(read3, 500.0 + 9 * BLOCK_G)
    assert read is not None and not read.covered and read.names == ["blue-2", "blue-1", "blue-3"]


def test_a_hand_on_the_tower_is_no_weight_of_blocks():
    """A hand resting on the tower presses the tray down; frames with hands are not weighed."""
    build = _reader()
    one, three = _laid(["green-3", "red-1", "red-3"], ["green-3", "red-1", "red-3"])
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    hand = HandReading("south", (140.0, 60.0), 0.9)
    pressed = TopLevelReading(three.orientation, three.slots, (hand,))
    for _ in range(3):
        assert build.on_frame(pressed, 500.0 + 9 * BLOCK_G) is None
    assert build.next_level == 2


def test_two_levels_laid_unseen_are_both_left_for_the_builder_not_read_from_the_level_above_them():
    """Levels 2 and 3 laid with hands over the tower, level 4 on them: the camera's view in level
    2's orientation shows level 4's blocks. The tray weighs nine blocks more than with level 1, so
    level 2 is covered whatever the camera reads, then level 3 (level 4 seen above it), and level
    4 is read."""
    build = _reader()
    one = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99), level=1)
    four = _frame(("blue-2", 0.99), ("blue-1", 0.99), ("blue-3", 0.99), level=4)
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    tower_of_four = 500.0 + 12 * BLOCK_G
    for level in (2, 3):
        assert build.on_frame(four, tower_of_four) is None
        read = build.on_frame(four, tower_of_four)
        assert read is not None and read.level == level and read.covered
        build.accept(read)
    build.on_frame(four, tower_of_four)
    read = build.on_frame(four, tower_of_four)
    assert read is not None and read.level == 4 and not read.covered and read.names == ["blue-2", "blue-1", "blue-3"]


def test_with_a_load_cell_a_level_is_taken_only_once_the_tray_has_settled():
    """The camera reads the top as soon as the hands leave; the weight that would show a level
    laid unseen settles a few tenths of a second later, so the level waits for it."""
    build = _reader()
    laying = _frame(("green-3", 0.99), (None, 0.97), (None, 0.97), level=1)
    one = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99), level=1)
    assert build.on_frame(laying, 500.0) is None  # the load cell answers
    for _ in range(3):
        assert build.on_frame(one, None) is None  # the tray still swings
    assert build.on_frame(one, 551.0) is not None  # settled: the steady reading is taken


def test_a_load_cell_that_stops_answering_does_not_stall_the_build():
    build = _reader()
    laying = _frame(("green-3", 0.99), (None, 0.97), (None, 0.97), level=1)
    one = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99), level=1)
    build.on_frame(laying, 500.0)  # the load cell answered, then stops
    taken = [build.on_frame(one, None) for _ in range(build.config.scale_frames + 1)]
    assert all(t is None for t in taken[:-1])
    assert taken[-1] is not None and taken[-1].names == ["green-3", "red-1", "red-3"]
