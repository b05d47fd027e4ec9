"""A fall the table reports (the referee's senses missed it) is blamed as one they felt: RULES.md 8,
the player touching the tower loses. Found on the twin (seed 118, careless players): Cy's block
slid off the top as he let go; the players reported the fall and the referee, which had not yet
called Cy's turn, blamed Ben, who had placed the block before."""

from referee.loop.fusion import NOBODY, Fuser, SeatingPlan
from referee.observations import ButtonPress, HandReading, SensorEvent, SensorEventKind
from tests.loop.test_table_loop import TOP, make_loop, run
from web_ui.hub import TableHub

# Ana pulls the Wild from the top level and lays it across a new level; she names green
ANAS_TURN = [(0.0, TOP, "y", []), (0.5, TOP, "y", ["east"]), (1.5, [None, "wild", None], "x", ["east"]),
             (2.0, [None, "wild", None], "x", [])]
ANAS_EVENTS = [SensorEvent(SensorEventKind.LIFT, 0.8), SensorEvent(SensorEventKind.PLACE, 1.8)]


def after_anas_turn(script=(), events=()):
    clock, session, loop, buttons = make_loop(ANAS_TURN + list(script), ANAS_EVENTS + list(events))
    session.hub = TableHub()
    run(clock, loop, 3.0)
    buttons.presses.append(ButtonPress("green", clock.t))
    run(clock, loop, 3.2)
    assert session.round.turn == "Ben"
    return clock, session, loop


def report_the_fall(session):
    session.hub.submit({"action": "event", "event": {"event": "collapse"}}, source="page")


def test_a_fall_the_table_reports_during_a_pull_is_the_pullers():
    """Ben has lifted a block (the load cell felt it) when the table says the tower fell: Ben loses,
    Ana, who completed the last turn, wins; no one is asked."""
    clock, session, loop = after_anas_turn(script=[(3.5, [None, "wild", None], "x", ["north"])],
                                           events=[SensorEvent(SensorEventKind.LIFT, 3.8)])
    run(clock, loop, 4.2)
    assert loop.fuser.pull is not None  # Ben's pull under way
    report_the_fall(session)
    run(clock, loop, 4.4)
    outcome = session.round.outcome
    assert session.over and (outcome.loser, outcome.winner) == ("Ben", "Ana")
    assert session.question is None
    touch = next(f for f in loop.stats.fused if f.event["event"] == "touch")
    assert touch.event["player"] == "Ben" and touch.evidence["why"] == "a pull under way as it fell"
    collapse = next(f for f in loop.stats.fused if f.event["event"] == "collapse")
    assert collapse.evidence["source"] == "page" and collapse.evidence["by_hand"]


def test_a_fall_reported_with_no_pull_under_way_asks_who_was_touching():
    """Nothing under way: the call goes to Ana, who placed last (RULES.md 8), and the table is asked,
    as the referee may have missed a whole turn. The answer moves the loss to Ben."""
    clock, session, loop = after_anas_turn()
    report_the_fall(session)
    run(clock, loop, 3.4)
    assert session.over and session.round.outcome.loser == "Ana"
    question = session.question
    assert question is not None and question["options"] == ["Ana", "Ben", "Cy", NOBODY]
    session.answer(question["id"], "Ben", source="page")
    assert session.over and session.round.outcome.loser == "Ben"


def test_hands_reaching_in_when_the_fall_is_reported_blame_no_one():
    """By the time a player reports the fall, hands reach for the fallen blocks: they are not whose
    hand was on the tower as it fell (a fall the sensors felt is blamed through the hands then)."""
    fuser = Fuser(SeatingPlan.evenly(3))
    clock, session, loop, _ = make_loop(ANAS_TURN, [], fuser=fuser)
    session.start_round([["red-1", "blue-1", "green-1"]] * 3 + [TOP])
    rnd = session.play_round
    fuser.recent.append(_reading_with_a_hand_from(120.0, t=5.0))
    reported = fuser.collapse_reported(5.0, rnd, {"source": "page"})
    assert [getattr(o, "event", {}).get("event") for o in reported[:1]] == ["collapse"]
    assert reported[-1].kind == "who_touched"
    felt = Fuser(SeatingPlan.evenly(3))
    felt.recent.append(_reading_with_a_hand_from(120.0, t=5.0))
    blamed = felt.on_sensor(SensorEvent(SensorEventKind.COLLAPSE, 5.0, 0.9), rnd)
    assert blamed[0].event == {"event": "touch", "player": "Ben"}


def _reading_with_a_hand_from(entry_deg, t):
    from referee.observations import TopLevelReading, SlotReading
    from referee.blocks import Block

    slots = tuple(SlotReading(Block.parse(n), 0.95) for n in TOP)
    return TopLevelReading("y", slots, (HandReading("north", (0, 0), 0.9, entry_deg=entry_deg),), t=t)


def test_the_twins_loser_is_the_player_last_at_the_tower_before_it_fell():
    """What the bench holds the referee's call against (RULES.md 8), from the twin's own record."""
    from referee.loop.demo import truth_loser

    names = ["Ana", "Ben", "Cy"]
    bens_turn = [{"t": 31.0, "type": "pull", "seat": 1}, {"t": 32.8, "type": "place", "seat": 1}]
    cys_turn = [{"t": 34.2, "type": "pull", "seat": 2}, {"t": 35.9, "type": "place", "seat": 2}]
    fell = [{"t": 36.0, "type": "collapse"}]
    # seed 118: Cy's block slid off the top as he let go
    assert truth_loser(bens_turn + cys_turn + fell, [(30.2, 1), (33.4, 2)], names) == "Cy"
    # it fell after Ben's place, before Cy began: Ben's
    assert truth_loser(bens_turn + [{"t": 33.0, "type": "collapse"}], [(30.2, 1), (33.4, 2)], names) == "Ben"
    # Cy's turn had begun (his hand on the way) but he had not touched a block yet: Cy's
    assert truth_loser(bens_turn + [{"t": 33.5, "type": "collapse"}], [(30.2, 1), (33.4, 2)], names) == "Cy"
    assert truth_loser(bens_turn + cys_turn, [(30.2, 1), (33.4, 2)], names) is None
