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




def test_a_hand_resting_on_the_tray_is_no_level_while_the_camera_sees_the_level_below_again():
    """The builder pauses after level 1 with a hand resting on the tray away from the tower: the
    tray weighs four, then seven blocks more, but the view a level up is level 1 itself seen from
    too high (its own blocks in their slots). No level is claimed, and nothing is asked."""
    build = _reader()
    one, again = _laid(["green-3", "red-1", "red-3"], ["green-3", "red-1", "red-3"])
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    for hand in (4, 7, 10):  # a light hand, then heavier: the weight of a level, and of two
        for _ in range(4):
            assert build.on_frame(again, 500.0 + (3 + hand) * BLOCK_G) is None
    assert build.next_level == 2


def test_a_hand_resting_on_the_empty_tray_before_the_build_is_no_level():
    """Before level 1 a hand rests on the tray: it weighs seven blocks, but the camera sees the
    empty tray (level 1's slots surely empty). No level is claimed; level 1 is read when laid."""
    build = _reader()
    bare = _frame((None, 0.98), (None, 0.97), (None, 0.99), level=1)
    assert build.on_frame(bare, 500.0) is None  # (the empty tray: its weight is the floor)
    for _ in range(4):
        assert build.on_frame(bare, 500.0 + 7 * BLOCK_G) is None
    one = _frame(("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99), level=1)
    build.on_frame(one, 500.0 + 3 * BLOCK_G)
    read = build.on_frame(one, 500.0 + 3 * BLOCK_G)
    assert read is not None and read.level == 1 and not read.covered


def test_one_name_misread_in_the_level_below_seen_again_leaves_the_weight_to_decide():
    """A view of level 1 from too high with one block misread is not taken for level 1: the tray
    weighing a level more then claims level 2, for the builder to confirm, as it did before."""
    build = _reader()
    one, misread = _laid(["green-3", "red-1", "red-3"], ["green-3", "red-1", "yellow-3"])
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    build.on_frame(misread, 500.0 + 7 * BLOCK_G)
    claimed = build.on_frame(misread, 500.0 + 7 * BLOCK_G)
    assert claimed is not None and claimed.level == 2 and claimed.covered


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


# -- the same without a load cell: the camera alone --------------------------------------------------

LEVEL_ONE = ["green-3", "red-1", "red-3"]


def _level_one_read(build):
    one = _frame(*[(n, 0.99) for n in LEVEL_ONE], level=1)
    build.on_frame(one)
    build.accept(build.on_frame(one))


def _seen_at(level, *names, conf=0.99):
    """The top seen in `level`'s orientation, naming `names` (None: a slot read surely empty)."""
    return _frame(*[(n, conf if n else 0.97) for n in names], level=level)


def test_without_a_load_cell_a_level_laid_unseen_is_claimed_once_the_level_above_reads_steadily():
    """Level 2 laid while hands hid the tower, level 3 on it: once the hands leave, the camera
    sees level 3's orientation naming blocks level 1 does not hold. Three steady frames claim
    level 2 covered, for the builder to confirm; then level 3 is read as usual."""
    build = _reader()
    _level_one_read(build)
    three = _seen_at(3, "blue-2", "blue-1", "blue-3")
    assert build.on_frame(three) is None
    assert build.on_frame(three) is None
    covered = build.on_frame(three)
    assert covered is not None and covered.level == 2 and covered.covered and covered.by_camera
    assert build.doubtful_slots(covered) == [0, 1, 2]
    build.accept(covered)
    for slot, name in enumerate(["yellow-1", "yellow-2", "yellow-3"]):  # the builder names them
        build.correct(2, slot, name)
    assert build.on_frame(three) is None
    read = build.on_frame(three)
    assert read is not None and read.level == 3 and not read.covered and read.names == ["blue-2", "blue-1", "blue-3"]


def test_without_a_load_cell_the_level_below_seen_from_too_high_is_no_level_laid_unseen():
    """While the builder pauses after level 1, the view one level up (level 3's orientation)
    shows level 1 itself, named and sure (on the twin, in every pause): it names level 1's own
    blocks, so nothing is claimed however long the pause. One name misread (twin seed 116: a
    sure yellow draw-two for the red one) or a slot read empty changes nothing."""
    build = _reader()
    _level_one_read(build)
    for view in (_seen_at(3, *LEVEL_ONE), _seen_at(3, "yellow-3", "red-1", "red-3"), _seen_at(3, None, "red-1", "red-3")):
        for _ in range(10):
            assert build.on_frame(view) is None
    assert build.next_level == 2


def test_without_a_load_cell_a_name_read_unsurely_is_no_sign_of_a_new_level():
    build = _reader()
    _level_one_read(build)
    misread = _frame(("blue-2", 0.3), ("red-1", 0.99), ("yellow-4", 0.35), level=3)
    for _ in range(10):
        assert build.on_frame(misread) is None


def test_without_a_load_cell_one_new_block_on_the_level_above_is_not_enough_two_are():
    """A true level above can share a name with the level below in a slot (duplicate blocks),
    and the level below from too high can show one misread: one differing name claims nothing."""
    build = _reader()
    _level_one_read(build)
    one_new = _seen_at(3, "blue-2", None, None)
    for _ in range(5):
        assert build.on_frame(one_new) is None
    two_new = _seen_at(3, "blue-2", "red-1", "blue-3")  # (its middle block another red 1)
    assert build.on_frame(two_new) is None and build.on_frame(two_new) is None
    assert build.on_frame(two_new).covered


def test_without_a_load_cell_the_claim_waits_for_the_view_to_hold_and_the_hands_to_stay_away():
    build = _reader()
    _level_one_read(build)
    three = _seen_at(3, "blue-2", "blue-1", "blue-3")
    hand = HandReading("south", (140.0, 60.0), 0.9)
    assert build.on_frame(three) is None and build.on_frame(three) is None
    assert build.on_frame(TopLevelReading(three.orientation, three.slots, (hand,))) is None
    assert build.on_frame(three) is None and build.on_frame(three) is None  # counted afresh
    assert build.on_frame(_seen_at(3, "blue-2", "blue-4", "blue-3")) is None  # another name: afresh
    assert build.on_frame(three) is None and build.on_frame(three) is None
    assert build.on_frame(three).covered


def _claimed_and_denied(build, view):
    for _ in range(build.config.covered_seen_frames - 1):
        build.on_frame(view)
    assert build.on_frame(view).covered
    build.deny_covered()


def test_a_claim_the_builder_denied_is_not_made_again_while_the_view_stays_the_same():
    """The builder says level 2 is not laid: the same view (or one naming a block less, or one
    name other) is not claimed again; a view naming other blocks may be, and so may the same
    view once hands have come over the tower (they may have laid what was denied)."""
    build = _reader()
    _level_one_read(build)
    view = _seen_at(3, "blue-2", "blue-1", "blue-3")
    _claimed_and_denied(build, view)
    for same in (view, _seen_at(3, "blue-2", None, "blue-3"), _seen_at(3, "blue-2", "blue-1", "green-3")):
        for _ in range(10):
            assert build.on_frame(same) is None
    other = _seen_at(3, "yellow-2", "yellow-1", "blue-3")
    assert build.on_frame(other) is None and build.on_frame(other) is None
    assert build.on_frame(other).covered
    build.deny_covered()
    build.on_frame(TopLevelReading(view.orientation, view.slots, (HandReading("south", (140.0, 60.0), 0.9),)))
    assert build.on_frame(view) is None and build.on_frame(view) is None
    assert build.on_frame(view).covered


def test_a_denied_claim_leaves_the_level_to_be_read_when_it_is_laid():
    build = _reader()
    _level_one_read(build)
    _claimed_and_denied(build, _seen_at(3, "blue-2", "blue-1", "blue-3"))
    two = _seen_at(2, "yellow-1", "yellow-2", "yellow-3")
    assert build.on_frame(two) is None
    read = build.on_frame(two)
    assert read is not None and read.level == 2 and not read.covered


def test_without_a_load_cell_the_first_level_laid_unseen_is_claimed_from_level_two():
    """Before the first level the view one level up shows the empty tray (no block named on
    the twin, 20 seeds): level 2's blocks over an unseen level 1 are new, and claim it."""
    build = _reader()
    empty = _seen_at(2, None, None, None)
    for _ in range(5):
        assert build.on_frame(empty) is None
    two = _seen_at(2, "blue-2", "blue-1", "blue-3")
    assert build.on_frame(two) is None and build.on_frame(two) is None
    covered = build.on_frame(two)
    assert covered is not None and covered.level == 1 and covered.covered


def test_the_level_above_a_level_laid_unseen_waits_until_the_builder_has_named_its_blocks():
    """Level 2 was claimed covered and confirmed; in the pause after it, before the builder
    names its blocks, the view one level up shows level 2 from too high, its names not yet in
    the map: no level 3 is claimed from it. Once named, that view is level 2's own."""
    build = _reader()
    _level_one_read(build)
    three = _seen_at(3, "blue-2", "blue-1", "blue-3")
    for _ in range(build.config.covered_seen_frames):
        covered = build.on_frame(three)
    build.accept(covered)
    two_from_too_high = _seen_at(4, "yellow-1", "yellow-2", "yellow-3")
    for _ in range(5):
        assert build.on_frame(two_from_too_high) is None
    for slot, name in enumerate(["yellow-1", "yellow-2", "yellow-3"]):
        build.correct(2, slot, name)
    for _ in range(5):
        assert build.on_frame(two_from_too_high) is None
    assert build.next_level == 3


def test_with_a_load_cell_answering_the_camera_alone_claims_nothing():
    """The tray settled at level 1's weight and a block: the weight says level 2 is not laid,
    whatever the camera sees one level up."""
    build = _reader()
    one = _frame(*[(n, 0.99) for n in LEVEL_ONE], level=1)
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    three = _seen_at(3, "blue-2", "blue-1", "blue-3")
    for _ in range(10):
        assert build.on_frame(three, 500.0 + 4 * BLOCK_G) is None


def test_a_load_cell_that_stops_answering_leaves_the_claim_to_the_camera():
    build = _reader()
    one = _frame(*[(n, 0.99) for n in LEVEL_ONE], level=1)
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    three = _seen_at(3, "blue-2", "blue-1", "blue-3")
    claims = [build.on_frame(three, None) for _ in range(build.config.scale_frames + build.config.covered_seen_frames)]
    assert all(c is None for c in claims[:-1]) and claims[-1].covered and claims[-1].by_camera


def test_a_load_cell_known_lost_leaves_the_claim_to_the_camera_at_once():
    """The build is told the load cell has stopped answering (no sample for ten reads): the
    camera claims the level laid unseen on the view's own frames, not after waiting
    `scale_frames` frames for a weight that will not come (a builder lays a level in that time)."""
    build = _reader()
    one = _frame(*[(n, 0.99) for n in LEVEL_ONE], level=1)
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 500.0 + 3 * BLOCK_G))
    build.load_cell_lost()
    three = _seen_at(3, "blue-2", "blue-1", "blue-3")
    claims = [build.on_frame(three, None) for _ in range(build.config.covered_seen_frames)]
    assert all(c is None for c in claims[:-1]) and claims[-1].covered and claims[-1].by_camera


# -- two levels laid unseen, the camera alone ---------------------------------------------------------

def _height_search(says_two_up: bool, asked: list | None = None):
    """A stand-in for MapGuidedReader.two_levels_up on the frame: whether the top stands two
    levels above the awaited one (`asked` collects the levels it was asked about)."""
    def two_up(level):
        if asked is not None:
            asked.append(level)
        return says_two_up
    return two_up


def test_without_a_load_cell_two_levels_laid_unseen_are_claimed_when_the_top_stands_two_levels_up():
    """Levels 2 and 3 laid while hands hid the tower, level 4 on them: in level 2's orientation
    the camera reads level 4 from two levels too low, named and sure, as it would level 2. The
    height search puts the top two levels up: level 2 is claimed, and once confirmed, level 3
    from the same top seen at its own height (before the builder names level 2's blocks); then
    level 4 is read."""
    build = _reader()
    _level_one_read(build)
    four = ("blue-2", "blue-1", "blue-3")
    asked = []
    assert build.on_frame(_seen_at(2, *four), two_up=_height_search(True, asked)) is None
    two = build.on_frame(_seen_at(2, *four), two_up=_height_search(True, asked))
    assert two is not None and two.level == 2 and two.covered and two.by_camera and asked == [2]
    build.accept(two)
    for _ in range(build.config.covered_seen_frames):
        three = build.on_frame(_seen_at(4, *four))
    assert three is not None and three.level == 3 and three.covered
    build.accept(three)
    build.on_frame(_seen_at(4, *four), two_up=_height_search(False))
    read = build.on_frame(_seen_at(4, *four), two_up=_height_search(False))
    assert read is not None and read.level == 4 and not read.covered and read.names == list(four)


def test_a_level_the_height_search_puts_at_its_own_height_is_taken():
    build = _reader()
    _level_one_read(build)
    asked = []
    two = _seen_at(2, "yellow-1", "yellow-2", "yellow-3")
    assert build.on_frame(two, two_up=_height_search(False, asked)) is None
    read = build.on_frame(two, two_up=_height_search(False, asked))
    assert read is not None and read.level == 2 and not read.covered
    assert asked == [2]  # asked once, as the level was about to be taken


def test_a_two_levels_up_claim_the_builder_denies_leaves_the_level_to_be_read():
    """The height search misled: level 2 was laid in view. The builder says no, and the same
    reading is then taken as level 2 without asking again."""
    build = _reader()
    _level_one_read(build)
    two = _seen_at(2, "yellow-1", "yellow-2", "yellow-3")
    build.on_frame(two, two_up=_height_search(True))
    assert build.on_frame(two, two_up=_height_search(True)).covered
    build.deny_covered()
    build.on_frame(two, two_up=_height_search(True))
    read = build.on_frame(two, two_up=_height_search(True))
    assert read is not None and read.level == 2 and not read.covered


def test_with_a_load_cell_the_height_search_is_not_asked():
    build = _reader()
    one = _frame(*[(n, 0.99) for n in LEVEL_ONE], level=1)

    def never(level):
        raise AssertionError("the weight vouches: no height search")

    build.on_frame(one, 500.0, two_up=never)
    assert build.on_frame(one, 551.0, two_up=never) is not None
