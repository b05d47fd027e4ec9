"""Fusion reads like the table: hands reach in, the weight goes, a block lands on top."""

from referee.blocks import Block
from referee.engine import new_round
from referee.events import parse_event
from referee.loop.fusion import (OTHER_BLOCK, Footprint, FusedEvent, Fuser, FusionConfig, Question, SeatingPlan,
                                 placed_slot)
from referee.observations import HandReading, SensorEvent, SensorEventKind, SlotReading, TopLevelReading

TOWER = [
    ["red-1", "blue-1", "green-1"],
    ["red-2", "blue-2", "green-2"],
    ["red-3", "yellow-3", "blue-draw2"],
    ["red-skip", "green-reverse", "wild"],
]  # level 4 is the top ("y" orientation)


def rnd3():
    return new_round(["Ana", "Ben", "Cy"], TOWER)


def top(names, orientation, t, hands=(), conf=0.95):
    slots = tuple(SlotReading(Block.parse(n) if n else None, conf if n else 0.9) for n in names)
    return TopLevelReading(orientation, slots, tuple(hands), t=t)


ENTRY = {"east": 0.0, "north": 120.0, "west": 180.0, "south": 240.0}


def hand(side, arm_seen=True):
    """A hand whose fingertip is on `side`; with `arm_seen` the camera also saw its arm's entry."""
    return HandReading(side, (0.0, 0.0), 0.9, entry_deg=ENTRY[side] if arm_seen else None)


def other_arm(side):
    """The same player's second hand: its arm enters 35 degrees from the first."""
    return HandReading(side, (0.0, 0.0), 0.9, entry_deg=(ENTRY[side] - 35.0) % 360)


def lift_and_weight_back(fuser, rnd, lift_t, place_t=None):
    """The load cell: a block's weight leaves the tray, then comes back as it is laid on top."""
    fuser.on_sensor(SensorEvent(SensorEventKind.LIFT, lift_t), rnd)
    fuser.on_sensor(SensorEvent(SensorEventKind.PLACE, place_t if place_t is not None else lift_t + 0.6), rnd)


def feed(fuser, rnd, frames):
    out = []
    for f in frames:
        out += fuser.on_frame(f, rnd)
    return out


SEATS = SeatingPlan.evenly(3)  # Ana east (0 deg), Ben 120 deg, Cy 240 deg


def test_a_block_landing_on_top_after_a_lift_is_a_pull_and_a_place_by_the_seat_that_reached_in():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    out = feed(f, rnd, [top(before, "y", 0.0, [hand("east")]), top(before, "y", 0.1, [hand("east")])])
    out += f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.2), rnd)
    out += f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.0), rnd)
    after = [None, "red-2", None]
    out += feed(f, rnd, [top(after, "x", 1.1), top(after, "x", 1.2)])
    events = [o.event for o in out if isinstance(o, FusedEvent)]
    assert events == [
        {"event": "pull", "level": 2, "slot": 0, "player": "Ana", "block": "red-2"},
        {"event": "place", "level": 5, "slot": 1},
    ]
    assert out[-1].released_at == 1.0


def test_two_of_the_pullers_hands_over_the_tower_call_two_hands_after_the_pull():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    two = [hand("east"), other_arm("east")]
    feed(f, rnd, [top(before, "y", t / 10, two) for t in range(3)])
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    kinds = [o.event["event"] for o in out]
    assert kinds == ["pull", "two_hands", "place"]


def test_hands_that_come_and_go_without_a_change_on_top_are_no_pull():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    out = feed(f, rnd, [top(before, "y", 0.0, [hand("west")]), top(before, "y", 0.1), top(before, "y", 0.2)])
    assert out == [] and f.pull is None


def test_a_misread_block_is_corrected_by_the_map():
    rnd = rnd3()
    f = Fuser(SEATS)
    slots = (SlotReading(None, 0.9), SlotReading(Block.parse("yellow-4"), 0.5, (("yellow-3", 0.4),)), SlotReading(None, 0.9))
    reading = lambda t: TopLevelReading("x", slots, (), t=t)
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [reading(1.0), reading(1.1)])
    assert out[0].event["block"] == "yellow-3"
    assert "map holds none" in out[0].evidence["note"]


def test_a_reading_the_map_cannot_settle_is_asked_not_guessed():
    rnd = rnd3()
    f = Fuser(SEATS, FusionConfig(ask_below=0.3))
    slots = (SlotReading(None, 0.9), SlotReading(Block.parse("yellow-3"), 0.1), SlotReading(None, 0.9))
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [TopLevelReading("x", slots, (), t=1.0), TopLevelReading("x", slots, (), t=1.1)])
    assert len(out) == 1 and isinstance(out[0], Question)


def test_when_the_block_placed_is_none_of_those_offered_the_table_says_so_and_picks_it_from_the_rest():
    rnd = rnd3()
    f = Fuser(SEATS, FusionConfig(ask_below=0.3))
    slots = (SlotReading(None, 0.9), SlotReading(Block.parse("yellow-3"), 0.1, (("red-3", 0.05),)), SlotReading(None, 0.9))
    lift_and_weight_back(f, rnd, 0.2)
    (asked,) = feed(f, rnd, [TopLevelReading("x", slots, (), t=1.0), TopLevelReading("x", slots, (), t=1.1)])
    assert asked.options == ("yellow-3", "red-3", OTHER_BLOCK)
    (rest,) = f.answer(asked, OTHER_BLOCK, rnd)
    assert rest.kind == "which_block" and "red-1" in rest.options
    assert "yellow-3" not in rest.options and OTHER_BLOCK not in rest.options
    out = f.answer(rest, "red-1", rnd)
    assert [o.event for o in out] == [{"event": "pull", "level": 1, "slot": 0, "player": "Ana", "block": "red-1"},
                                      {"event": "place", "level": 5, "slot": 1}]


def test_a_collapse_is_blamed_through_the_hand_on_the_tower():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    feed(f, rnd, [top(before, "y", 0.0, [hand("north")])])  # the arm comes from Ben's seat (120 deg)
    out = f.on_sensor(SensorEvent(SensorEventKind.COLLAPSE, 0.3, 0.9, {"drop_g": 300.0}), rnd)
    assert [o.event for o in out if isinstance(o, FusedEvent)] == [{"event": "touch", "player": "Ben"}, {"event": "collapse"}]
    # Ben's hand in Ana's turn: the table is asked to confirm who was touching it
    assert [o.kind for o in out if isinstance(o, Question)] == ["who_touched"]


def test_placed_slot_compares_the_camera_top_with_the_map():
    tower = rnd3().tower
    assert placed_slot(tower, top(["red-skip", "green-reverse", "wild"], "y", 0)) is None
    assert placed_slot(tower, top([None, None, "red-1"], "x", 0)) == (5, 2)


def test_one_block_is_laid_at_a_time_so_a_faint_second_new_block_is_a_misreading():
    """Seed 106: a phantom "yellow 4" read at 0.2 beside the block just laid kept the place unsaid."""
    tower = rnd3().tower
    phantom = (SlotReading(Block.parse("yellow-4"), 0.2), SlotReading(Block.parse("red-2"), 0.95), SlotReading(None, 0.9))
    reading = TopLevelReading("x", phantom, (), t=0)
    assert placed_slot(tower, reading) is None
    assert placed_slot(tower, reading, faint_below=0.25) == (5, 1)
    two_sure = (SlotReading(Block.parse("yellow-4"), 0.9), SlotReading(Block.parse("red-2"), 0.95), SlotReading(None, 0.9))
    assert placed_slot(tower, TopLevelReading("x", two_sure, (), t=0), faint_below=0.25) is None


def test_a_place_the_camera_cannot_make_out_is_asked_about_once_the_weight_has_long_been_back():
    rnd = rnd3()
    f = Fuser(SEATS, FusionConfig(place_timeout_s=2.0))
    blurred = (SlotReading(Block.parse("red-4"), 0.3), SlotReading(Block.parse("green-4"), 0.3), SlotReading(None, 0.9))
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    lift_and_weight_back(f, rnd, 0.3, 1.0)
    out = feed(f, rnd, [TopLevelReading("x", blurred, (), t=1.1 + i / 5, uncertain=True) for i in range(12)])
    assert len(out) == 1 and out[0].kind == "where_placed" and out[0].context["player"] == "Ana"


def test_fusion_settings_are_validated():
    import pytest
    from referee.loop.fusion import FusionConfigError

    with pytest.raises(FusionConfigError):
        FusionConfig.from_dict({"settle_frames": "two"})
    with pytest.raises(FusionConfigError):
        FusionConfig.from_dict({"warp": 1})
    assert FusionConfig.from_dict({"settle_frames": 3}).settle_frames == 3


def test_the_top_vanishing_after_an_impact_is_a_collapse():
    rnd = rnd3()
    f = Fuser(SEATS)
    f.on_sensor(SensorEvent(SensorEventKind.KNOCK, 1.0), rnd)
    empty = [None, None, None]
    out = feed(f, rnd, [top(empty, "y", 1.1 + i / 10) for i in range(3)])
    assert [o.event["event"] for o in out if isinstance(o, FusedEvent)] == ["collapse"]
    assert feed(f, rnd, [top(empty, "y", 2.0)]) == []  # said once


def test_a_collapse_with_no_hand_seen_asks_the_table_who_was_touching_the_tower():
    rnd = rnd3()
    f = Fuser(SEATS)
    out = f.on_sensor(SensorEvent(SensorEventKind.COLLAPSE, 3.0, 0.9, {"drop_g": 250.0}), rnd)
    assert [o.event for o in out if isinstance(o, FusedEvent)] == [{"event": "collapse"}]
    (question,) = [o for o in out if isinstance(o, Question)]
    assert question.kind == "who_touched" and question.options == ("Ana", "Ben", "Cy", "nobody")


def test_a_hand_hiding_the_tops_only_block_is_no_collapse():
    """Seed 107: the top held one block; the next player's hand over it made the top read empty."""
    rnd = new_round(["Ana", "Ben", "Cy"], TOWER + [[None, "red-1", None]])
    f = Fuser(SEATS)
    out = feed(f, rnd, [top([None, None, None], "x", 1.0 + i / 15, [hand("north")]) for i in range(12)])
    assert not any(isinstance(o, FusedEvent) and o.event["event"] == "collapse" for o in out)
    assert not f.collapsed
    f.on_sensor(SensorEvent(SensorEventKind.KNOCK, 2.0), rnd)  # ... but after a thud, it is gone
    out = feed(f, rnd, [top([None, None, None], "x", 2.1 + i / 15, [hand("north")]) for i in range(3)])
    assert [o.event["event"] for o in out if isinstance(o, FusedEvent)][-1] == "collapse"


def test_a_top_hidden_for_a_moment_without_an_impact_is_no_collapse():
    rnd = rnd3()
    f = Fuser(SEATS)
    empty = [None, None, None]
    out = feed(f, rnd, [top(empty, "y", 1.1 + i / 10) for i in range(4)])
    out += feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 1.6)])
    assert out == []


def test_a_fingertip_on_some_side_is_no_evidence_of_whose_hand_it_is():
    rnd = rnd3()  # Ana is to pull
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    feed(f, rnd, [top(before, "y", 0.0, [hand("south", arm_seen=False)])])
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    assert out[0].event["player"] == "Ana"


def test_an_arm_from_another_seat_is_an_out_of_turn_pull():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    feed(f, rnd, [top(before, "y", 0.0, [hand("south")])])
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    assert out[0].event["player"] == "Cy"


DUPLICATES = [
    ["red-2", "blue-1", "green-1"],   # level 1, along x
    ["yellow-1", "red-2", "green-2"],  # level 2, along y
    ["red-3", "yellow-3", "blue-draw2"],
    ["red-skip", "green-reverse", "wild"],
]


def test_a_block_the_map_holds_twice_is_asked_about_whichever_side_the_hand_was_on():
    rnd = new_round(["Ana", "Ben", "Cy"], DUPLICATES)
    landed = [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)]
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("north", arm_seen=False)])])
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, landed)
    assert isinstance(out[0], Question) and out[0].options == ("1/0", "2/1")


def test_the_place_is_called_as_the_hand_lets_go_not_when_it_has_withdrawn():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    feed(f, rnd, [top(before, "y", 0.0, [hand("east")])])
    lift_and_weight_back(f, rnd, 0.2)
    still_holding = [top([None, "red-2", None], "x", 1.0 + i / 15, [hand("east")]) for i in range(2)]
    out = feed(f, rnd, still_holding)
    assert [o.event["event"] for o in out] == ["pull", "place"]


def test_a_doubtful_block_under_a_hand_waits_for_the_hand_to_go():
    rnd = rnd3()
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    lift_and_weight_back(f, rnd, 0.2)
    half_hidden = [top([None, "red-2", None], "x", 1.0 + i / 15, [hand("east")], conf=0.5) for i in range(3)]
    assert feed(f, rnd, half_hidden) == []
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.3)])
    assert [o.event["event"] for o in out] == ["pull", "place"]


def test_while_the_block_comes_out_nothing_on_top_is_judged_and_uncertain_frames_still_count_hands():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    unsure = TopLevelReading("y", top(before, "y", 0).slots, (hand("east"), other_arm("east")), t=0.1, uncertain=True)
    feed(f, rnd, [unsure, TopLevelReading("y", unsure.slots, unsure.hands, t=0.2, uncertain=True),
                  TopLevelReading("y", unsure.slots, unsure.hands, t=0.3, uncertain=True)])
    lift_and_weight_back(f, rnd, 0.35)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    assert [o.event["event"] for o in out] == ["pull", "two_hands", "place"]


def test_the_table_answers_which_of_two_identical_blocks_was_pulled():
    rnd = new_round(["Ana", "Ben", "Cy"], DUPLICATES)
    f = Fuser(SEATS)
    lift_and_weight_back(f, rnd, 0.2)
    (question,) = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    assert question.kind == "which_spot"
    out = f.answer(question, "2/1", rnd)
    assert [o.event for o in out] == [{"event": "pull", "level": 2, "slot": 1, "player": "Ana", "block": "red-2"},
                                      {"event": "place", "level": 5, "slot": 1}]
    assert out[0].evidence["answered"] == "2/1"


def test_an_unseen_place_is_answered_in_two_steps_where_then_which_block():
    rnd = rnd3()
    f = Fuser(SEATS)
    q = Question("where?", ("5/0", "5/1", "5/2"), {"player": "Ana", "two_hand_frames": 0}, kind="where_placed")
    (which,) = f.answer(q, "5/1", rnd)
    assert which.kind == "which_block" and "red-2" in which.options
    out = f.answer(which, "red-2", rnd)
    assert [o.event["event"] for o in out] == ["pull", "place"]
    assert out[1].event == {"event": "place", "level": 5, "slot": 1}


def test_an_answer_that_is_not_a_choice_is_refused():
    import pytest

    q = Question("where?", ("5/0",), {}, kind="where_placed")
    with pytest.raises(ValueError, match="not one of the choices"):
        Fuser(SEATS).answer(q, "9/9", rnd3())


def test_a_doubtful_reading_that_would_be_a_foul_is_put_to_the_table_before_blaming_anyone():
    rnd = rnd3()
    rnd = rnd.apply(parse_event({"event": "pull", "level": 3, "slot": 0, "player": "Ana", "block": "red-3"}))
    rnd = rnd.apply(parse_event({"event": "place", "level": 5, "slot": 0}))
    # Ben must pull a red block or a 3; the camera half-reads a green 1, maybe a red 1
    doubtful = SlotReading(Block.parse("green-1"), 0.6, (("red-1", 0.3),))
    reading = lambda t: TopLevelReading("x", (SlotReading(Block.parse("red-3"), 0.95), doubtful, SlotReading(None, 0.9)), (), t=t)
    f = Fuser(SEATS)
    lift_and_weight_back(f, rnd, 2.0)
    (question,) = feed(f, rnd, [reading(3.0), reading(3.1)])
    assert question.options == ("green-1", "red-1")
    out = f.answer(question, "red-1", rnd)
    assert out[0].event["block"] == "red-1" and out[0].event["player"] == "Ben"
    sure = SlotReading(Block.parse("green-1"), 0.95, (("red-1", 0.03),))
    f = Fuser(SEATS)
    lift_and_weight_back(f, rnd, 2.0)
    out = feed(f, rnd, [TopLevelReading("x", (SlotReading(Block.parse("red-3"), 0.95), sure, SlotReading(None, 0.9)), (), t=t) for t in (3.0, 3.1)])
    assert out[0].event["block"] == "green-1"  # read surely: the foul is called


def test_an_arm_between_two_seats_is_no_evidence_of_either():
    two = SeatingPlan.evenly(2)  # Ana at 0 degrees, Ben at 180
    between = HandReading("north", (0.0, 0.0), 0.9, entry_deg=90.0)
    assert two.seat_of(between) is None
    assert two.seat_of(HandReading("east", (0.0, 0.0), 0.9, entry_deg=20.0)) == 0
    assert SEATS.seat_of(HandReading("north", (0.0, 0.0), 0.9, entry_deg=60.0)) is None  # halfway between Ana and Ben


def test_the_hand_letting_go_is_not_the_next_players_hand_nor_their_second_hand():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    feed(f, rnd, [top(before, "y", 0.0, [hand("east")])])  # Ana reaches in
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.0 + i / 15, [hand("east")]) for i in range(2)])
    for o in out:
        rnd = rnd.apply(parse_event(o.event))
    assert rnd.turn == "Ben"
    # Ana's hand lingers while Ben's comes in; then Ana's leaves; Ben pulls
    feed(f, rnd, [top([None, "red-2", None], "x", 1.2 + i / 15, [hand("east"), hand("north")]) for i in range(4)])
    feed(f, rnd, [top([None, "red-2", None], "x", 1.5), top([None, "red-2", None], "x", 1.6, [hand("north")])])
    lift_and_weight_back(f, rnd, 1.8)
    out = feed(f, rnd, [top([None, "red-2", "blue-1"], "x", 2.5 + i / 15) for i in range(2)])
    assert [o.event["event"] for o in out] == ["pull", "place"]
    assert out[0].event["player"] == "Ben"


def test_the_next_player_reaching_in_with_two_hands_right_after_a_place_gets_the_penalty():
    """Seed 103: Ben's two hands came in 0.3 s after Cy's place was called, while the referee still
    ignored hands as Cy's, withdrawing. Arms entering far from Cy's are not Cy's."""
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    feed(f, rnd, [top(before, "y", 0.0, [hand("east")])])  # Ana reaches in
    lift_and_weight_back(f, rnd, 0.2)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.0 + i / 15) for i in range(2)])
    for o in out:
        rnd = rnd.apply(parse_event(o.event))
    assert rnd.turn == "Ben"
    ben_two = [hand("north"), HandReading("north", (0.0, 0.0), 0.9, entry_deg=170.0)]
    feed(f, rnd, [top([None, "red-2", None], "x", 1.2 + i / 15, ben_two) for i in range(4)])
    lift_and_weight_back(f, rnd, 1.5)
    out = feed(f, rnd, [top([None, "red-2", "blue-1"], "x", 2.5 + i / 15) for i in range(2)])
    assert [o.event["event"] for o in out] == ["pull", "two_hands", "place"]
    assert out[1].event["player"] == "Ben"


def test_a_block_pulled_from_the_top_and_laid_back_in_its_place_is_still_a_pull_and_a_place():
    rnd = rnd3()
    f = Fuser(SEATS)
    full = ["red-skip", "green-reverse", "wild"]
    gone = [None, "green-reverse", "wild"]
    feed(f, rnd, [top(full, "y", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    feed(f, rnd, [top(gone, "y", 0.4 + i / 15, [hand("east")]) for i in range(3)] + [top(gone, "y", 0.7), top(gone, "y", 0.8)])
    f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.2), rnd)
    out = feed(f, rnd, [top(full, "y", 1.3), top(full, "y", 1.4)])
    assert [o.event for o in out] == [{"event": "pull", "level": 4, "slot": 0, "player": "Ana", "block": "red-skip"},
                                      {"event": "place", "level": 4, "slot": 0}]


def test_one_wide_arm_seen_as_two_hands_is_no_uno():
    rnd = rnd3()
    f = Fuser(SEATS)
    before = ["red-skip", "green-reverse", "wild"]
    wide = [hand("east"), hand("east")]  # both "hands" enter at 0 degrees: one arm split in two
    feed(f, rnd, [top(before, "y", t / 10, wide) for t in range(4)])
    lift_and_weight_back(f, rnd, 0.3)
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    assert [o.event["event"] for o in out] == ["pull", "place"]


def test_a_block_seen_leaving_the_top_level_came_from_there_not_from_a_legal_twin_lower_down():
    tower = [["red-2", "blue-1", "green-1"], ["yellow-1", "blue-2", "green-2"],
             ["red-3", "yellow-3", "blue-draw2"], ["red-2", "green-reverse", "wild"]]
    rnd = new_round(["Ana", "Ben", "Cy"], tower)
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-2", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    lift_and_weight_back(f, rnd, 0.3)
    feed(f, rnd, [top([None, "green-reverse", "wild"], "y", 0.5 + i / 15) for i in range(3)])  # the top's red 2 is gone
    out = feed(f, rnd, [top(["red-2", None, None], "x", 1.3), top(["red-2", None, None], "x", 1.4)])
    assert out[0].event == {"event": "pull", "level": 4, "slot": 0, "player": "Ana", "block": "red-2"}
    assert "leaving the top level" in out[0].evidence["note"]


def test_a_block_moved_within_the_incomplete_top_level_is_a_foul_pull_from_there():
    """Seed 109: a careless player took a block from the incomplete top level and laid it in that
    level's free slot. The camera saw its slot emptied, then the block in the other slot."""
    tower = TOWER + [["green-1", "green-skip", None]]  # level 5 ("x") is the incomplete top
    rnd = new_round(["Ana", "Ben", "Cy"], tower)
    f = Fuser(SEATS)
    feed(f, rnd, [top(["green-1", "green-skip", None], "x", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    feed(f, rnd, [top([None, "green-skip", None], "x", 0.5 + i / 15) for i in range(3)])  # its slot seen empty
    f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.2), rnd)
    moved = [None, "green-skip", "green-1"]
    out = feed(f, rnd, [top(moved, "x", 1.3), top(moved, "x", 1.4)])
    assert [o.event for o in out] == [{"event": "pull", "level": 5, "slot": 0, "player": "Ana", "block": "green-1"},
                                      {"event": "place", "level": 5, "slot": 2}]


def test_a_new_block_that_stays_doubtful_on_a_still_top_is_put_to_the_table():
    rnd = rnd3()
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    lift_and_weight_back(f, rnd, 0.3)
    doubtful = SlotReading(Block.parse("red-3"), 0.6, (("red-2", 0.3),))
    still = [TopLevelReading("x", (SlotReading(None, 0.9), doubtful, SlotReading(None, 0.9)), (), t=1.0 + i / 15, uncertain=True)
             for i in range(4)]
    out = feed(f, rnd, still)
    assert len(out) == 1 and isinstance(out[0], Question) and out[0].options == ("red-3", "red-2")
    events = f.answer(out[0], "red-2", rnd)
    assert [e.event["event"] for e in events] == ["pull", "place"] and events[0].event["block"] == "red-2"


def test_a_block_still_carried_over_the_top_is_no_place_until_its_weight_is_back():
    rnd = rnd3()
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    carried = [top([None, "red-2", None], "x", 1.0 + i / 15, [hand("east")]) for i in range(4)]
    assert feed(f, rnd, carried) == []
    out = f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.3), rnd)  # the top held still: called with the weight
    assert [o.event["event"] for o in out] == ["pull", "place"] and out[-1].released_at == 1.3


def test_the_weight_coming_back_calls_the_place_only_on_a_top_that_held_still():
    rnd = rnd3()
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    feed(f, rnd, [top([None, "red-2", None], "x", 1.0, [hand("east")])])  # one frame: not yet still
    assert f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.1), rnd) == []
    out = feed(f, rnd, [top([None, "red-2", None], "x", 1.15, [hand("east")])])
    assert [o.event["event"] for o in out] == ["pull", "place"]


def test_a_block_read_half_sure_of_its_slot_but_sure_of_its_glyph_is_called_once_its_weight_is_back():
    """Seed 102: the red Skip read 0.6 on every frame, its runner-ups at nothing: the reader doubted
    whether the slot was filled, not which block it was; the weight back says it is filled."""
    rnd = rnd3()
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    lift_and_weight_back(f, rnd, 0.3, place_t=0.9)
    glyph_sure = SlotReading(Block.parse("red-2"), 0.6, (("red-2", 0.6), ("red-4", 0.004), ("red-1", 0.002)))
    frames = [TopLevelReading("x", (SlotReading(None, 0.9), glyph_sure, SlotReading(None, 0.9)), (hand("east"),),
                              t=1.0 + i / 15, uncertain=True) for i in range(2)]
    out = feed(f, rnd, frames)
    assert [o.event for o in out] == [{"event": "pull", "level": 2, "slot": 0, "player": "Ana", "block": "red-2"},
                                      {"event": "place", "level": 5, "slot": 1}]


def test_a_half_sure_glyph_is_not_called_while_the_block_may_still_be_carried():
    rnd = rnd3()
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    glyph_sure = SlotReading(Block.parse("red-2"), 0.6, (("red-2", 0.6), ("red-4", 0.004), ("red-1", 0.002)))
    frames = [TopLevelReading("x", (SlotReading(None, 0.9), glyph_sure, SlotReading(None, 0.9)), (hand("east"),),
                              t=1.0 + i / 15, uncertain=True) for i in range(4)]
    assert feed(f, rnd, frames) == []


TOP_TWIN = [["red-2", "blue-1", "green-1"], ["yellow-1", "blue-2", "green-2"],
            ["red-3", "yellow-3", "blue-draw2"], ["red-2", "green-reverse", "wild"]]  # a red 2 low down and on top


def test_a_block_pulled_from_the_top_level_under_the_pullers_hand_is_seen_gone_on_a_long_run_of_frames():
    """Seed 125: the hand stayed over the tower the whole turn; the top's middle block read empty on
    16 frames in a row. The referee had taken the legal twin lower down (a foul let through)."""
    rnd = new_round(["Ana", "Ben", "Cy"], TOP_TWIN)
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-2", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    feed(f, rnd, [top([None, "green-reverse", "wild"], "y", 0.4 + i / 15, [hand("east")]) for i in range(10)])
    f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.2), rnd)
    out = feed(f, rnd, [top(["red-2", None, None], "x", 1.3), top(["red-2", None, None], "x", 1.4)])
    assert out[0].event == {"event": "pull", "level": 4, "slot": 0, "player": "Ana", "block": "red-2"}


def test_a_hand_hiding_a_top_block_for_a_few_frames_is_not_that_block_gone():
    """A hand over the top read a block's slot as empty for up to 5 frames in a row on the recorded
    matches: the red 2 is the one from lower down."""
    rnd = new_round(["Ana", "Ben", "Cy"], TOP_TWIN)
    f = Fuser(SEATS)
    feed(f, rnd, [top(["red-2", "green-reverse", "wild"], "y", 0.0, [hand("east")])])
    f.on_sensor(SensorEvent(SensorEventKind.LIFT, 0.3), rnd)
    hidden = [top([None, "green-reverse", "wild"], "y", 0.4 + i / 15, [hand("east")]) for i in range(6)]
    shown = [top(["red-2", "green-reverse", "wild"], "y", 0.8 + i / 15, [hand("east")]) for i in range(2)]
    feed(f, rnd, hidden + shown + hidden)
    f.on_sensor(SensorEvent(SensorEventKind.PLACE, 1.8), rnd)
    out = feed(f, rnd, [top(["red-2", None, None], "x", 1.9), top(["red-2", None, None], "x", 2.0)])
    assert out[0].event == {"event": "pull", "level": 1, "slot": 0, "player": "Ana", "block": "red-2"}


FOOTPRINT = Footprint((150.0, 150.0), 37.5)  # the tower's centre and half side on the tray, mm


def fingertip(x, y):
    return HandReading("east", (x, y), 0.9, entry_deg=0.0)


def _which_red_2_after_fingertips_at(tips):
    """Ana's fingertips seen at `tips` over the tower, then a red 2 (the map holds two) on top: the
    question which of them she pulled."""
    rnd = new_round(["Ana", "Ben", "Cy"], DUPLICATES)
    f = Fuser(SEATS, footprint=FOOTPRINT)
    feed(f, rnd, [top(["red-skip", "green-reverse", "wild"], "y", i / 15, [fingertip(*xy)]) for i, xy in enumerate(tips)])
    lift_and_weight_back(f, rnd, 0.3)
    (question,) = feed(f, rnd, [top([None, "red-2", None], "x", 1.1), top([None, "red-2", None], "x", 1.2)])
    return question


def test_fingertips_at_the_end_faces_of_one_directions_blocks_tell_the_level_pushed_out_of():
    """A block is pushed out at an end face: from an "x" level the tips stay beyond the tower's sides
    along x and within its width along y (whichever end the player pushes)."""
    question = _which_red_2_after_fingertips_at([(110.0, 140.0), (108.0, 145.0), (191.0, 152.0), (112.0, 138.0)])
    assert question.kind == "which_spot" and question.context["pushed_along"] == "x"


def test_fingertips_at_a_corner_of_the_tower_tell_nothing():
    question = _which_red_2_after_fingertips_at([(188.0, 190.0), (110.0, 140.0), (190.0, 186.0), (112.0, 112.0)])
    assert question.context["pushed_along"] is None
