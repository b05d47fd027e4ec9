"""Issue #6: when the referee only asks which of two identical blocks was pulled, and either answer
leads to the same call, the call is announced at once; the answer only settles the log."""

from referee.loop.fusion import Footprint, Fuser, SeatingPlan
from referee.loop.session import RefereeSession
from referee.loop.table_loop import TableLoop
from referee.observations import HandReading, SensorEvent, SensorEventKind, TopLevelReading
from tests.loop.test_table_loop import Camera, Clock, ScriptedDetectors, ScriptedReader, ScriptedSensors, run
from web_ui.store import MatchStore

TOP = ["red-skip", "green-reverse", "blue-draw2"]
TWO_BLUE_3S = [  # blue 3s at level 1 slot 0 and level 3 slot 0: either may be pulled
    ["blue-3", "blue-1", "green-1"],
    ["yellow-1", "red-2", "green-2"],
    ["blue-3", "yellow-3", "wild"],
    TOP,
]
ANA_PULLS_A_BLUE_3 = [(0.0, TOP, "y", []), (0.5, TOP, "y", ["east"]), (1.5, [None, "blue-3", None], "x", ["east"]),
                      (2.0, [None, "blue-3", None], "x", [])]
ANA_LIFT_AND_PLACE = [SensorEvent(SensorEventKind.LIFT, 0.8), SensorEvent(SensorEventKind.PLACE, 1.8)]


class Speaker:
    def __init__(self, clock):
        self.clock, self.said = clock, []

    def say(self, text, urgent=False):
        self.said.append((self.clock.now(), text))

    def lines(self):
        return [text for _, text in self.said]


def table(tower, script, events, tmp_path, reader=ScriptedReader, footprint=None):
    """A table whose players do not answer the referee's questions until the test does."""
    clock = Clock()
    speaker = Speaker(clock)
    store = MatchStore(tmp_path / "log.sqlite")
    session = RefereeSession(store, speaker=speaker, clock=clock)
    session.start_match(["Ana", "Ben", "Cy"])
    session.start_round(tower)
    loop = TableLoop(session, Fuser(SeatingPlan.evenly(3), footprint=footprint), reader(clock, script), Camera(clock),
                     ScriptedSensors(), ScriptedDetectors(clock, events), clock, frame_period_s=0.1,
                     spot_source=lambda q: (None, {}))  # the pull's frames do not show where it came out
    return clock, session, loop, speaker, store


def logged(session, store):
    return [(e.event["event"], e.event.get("player"), e.event.get("level"), e.event.get("slot"))
            for e in store.events(session.match_id) if e.event["event"] != "setup"]


def test_the_call_is_announced_at_once_when_the_two_places_of_a_blue_3_give_the_same_call(tmp_path):
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, ANA_PULLS_A_BLUE_3, ANA_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 3.0)
    question = session.question
    assert question is not None and question["options"] == ["1/0", "3/0"]
    assert question["text"] == "Which blue 3 did Ana pull: level 1, slot 0 or level 3, slot 0?"
    # Ben hears his call first, then the question about Ana's pull.
    lines = speaker.lines()
    assert lines[-2:] == ["Ben: pull a blue block or a 3.", question["text"]]
    call_t = speaker.said[-2][0]
    assert call_t - 1.8 <= 0.3  # within 300 ms of the weight coming back
    # Nothing is logged yet, and the state the page shows is the last settled one ...
    assert logged(session, store) == []
    assert session.round.turn == "Ana"
    # ... while the senses already judge the next play against Ben's call.
    assert session.play_round.turn == "Ben" and session.play_round.tower.at(5, 1).name == "blue-3"


def test_the_answer_logs_the_pull_without_announcing_the_call_again(tmp_path):
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, ANA_PULLS_A_BLUE_3, ANA_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 3.0)
    call_t = speaker.said[-2][0]
    clock.t = 6.0  # the table taps the answer a few seconds later
    before = len(speaker.said)
    session.answer(session.question["id"], "3/0", source="page")
    assert "Ben: pull a blue block or a 3." not in speaker.lines()[before:]
    assert logged(session, store) == [("pull", "Ana", 3, 0), ("place", None, 5, 1)]
    rnd = session.round
    assert rnd.turn == "Ben" and rnd.tower.at(3, 0) is None and rnd.tower.at(1, 0).name == "blue-3"
    assert session.play_round is rnd and session.question is None
    # The announcement counts from when it was said, not from the answer.
    assert [t for kind, t, _ in session.stats.timeline if kind == "place"] == [call_t]
    place = [e for e in store.events(session.match_id) if e.event["event"] == "place"][0]
    assert place.evidence["announced_before_the_answer"]["say"] == ["Ben: pull a blue block or a 3."]


def test_a_place_that_would_be_a_level_foul_is_still_asked_before_anything_is_announced(tmp_path):
    """A red 2 at level 1 (legal) and one at level 2, just under the incomplete top (a foul by position);
    the fingertips pushed along level 2's direction: the table is asked, and no call is made first."""
    tower = [["red-2", "blue-1", "green-1"], ["yellow-1", "red-2", "green-2"], ["red-3", "yellow-3", None]]
    top = ["red-3", "yellow-3", None]

    class TipsAlongY(ScriptedReader):
        def read(self, image, t, seq, z_hint_mm=None, top_names=None):
            r = super().read(image, t, seq, z_hint_mm, top_names)
            return TopLevelReading(r.orientation, r.slots, tuple(HandReading("north", (150.0 + i, 190.0), 0.9, entry_deg=0.0)
                                                                 for i, _ in enumerate(r.hands)), t=t)

    script = [(0.0, top, "x", []), (0.5, top, "x", ["north"]), (1.5, ["red-3", "yellow-3", "red-2"], "x", ["north"]),
              (2.0, ["red-3", "yellow-3", "red-2"], "x", [])]
    clock, session, loop, speaker, store = table(tower, script, ANA_LIFT_AND_PLACE, tmp_path, reader=TipsAlongY,
                                                 footprint=Footprint((150.0, 150.0), 37.5))
    said_before = len(speaker.said)
    while session.question is None and clock.t < 3.0:  # up to the moment the question is put
        loop.poll()
        clock.t = round(clock.t + 0.05, 3)
    question = session.question
    assert question is not None and sorted(question["options"]) == ["1/0", "2/1"]
    assert speaker.lines()[said_before:] == [question["text"]]  # only the question: no call yet
    assert session.early is None and session.play_round is session.round
    run(clock, loop, 5.0)  # the table takes its time: the referee waits, it does not decide alone meanwhile
    assert session.question == question and logged(session, store) == []
    assert speaker.lines()[said_before:] == [question["text"]]
    session.answer(question["id"], "2/1", source="page")
    assert logged(session, store)[0] == ("pull", "Ana", 2, 1)
    assert session.round.waiting_for == "penalty_color"  # the foul from level 2 was called with the answer


BEN_PULLS = [(3.0, [None, "blue-3", None], "x", ["east"])]
BEN_LIFT_AND_PLACE = [SensorEvent(SensorEventKind.LIFT, 3.3), SensorEvent(SensorEventKind.PLACE, 4.3)]


def test_the_next_player_may_pull_before_the_answer_and_both_turns_are_logged_in_order(tmp_path):
    """Ben heard his call and pulls the yellow 3 while Ana's question is still open."""
    script = ANA_PULLS_A_BLUE_3 + BEN_PULLS + [(4.0, ["yellow-3", "blue-3", None], "x", ["east"]),
                                               (4.5, ["yellow-3", "blue-3", None], "x", [])]
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, script, ANA_LIFT_AND_PLACE + BEN_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 5.5)
    assert logged(session, store) == []  # Ben's play is held until Ana's answer
    assert session.play_round.turn == "Cy" and session.play_round.tower.at(5, 0).name == "yellow-3"
    session.answer(session.question["id"], "1/0", source="page")
    assert logged(session, store) == [("pull", "Ana", 1, 0), ("place", None, 5, 1),
                                      ("pull", "Ben", 3, 1), ("place", None, 5, 0)]
    assert session.round.turn == "Cy" and not session.round.news.fouls
    assert speaker.lines()[-1] == "Cy: pull a yellow block or a 3."


def test_a_pull_of_the_other_blue_3_before_the_answer_is_logged_from_the_place_the_answer_left(tmp_path):
    """While the question is open the senses read the map as if Ana pulled the level 1 blue 3, so
    Ben's blue 3 looks like the level 3 one; Ana's answer says she pulled that one: Ben's is level 1's."""
    script = ANA_PULLS_A_BLUE_3 + BEN_PULLS + [(4.0, ["blue-3", "blue-3", None], "x", ["east"]),
                                               (4.5, ["blue-3", "blue-3", None], "x", [])]
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, script, ANA_LIFT_AND_PLACE + BEN_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 5.5)
    session.answer(session.question["id"], "3/0", source="page")
    assert logged(session, store) == [("pull", "Ana", 3, 0), ("place", None, 5, 1),
                                      ("pull", "Ben", 1, 0), ("place", None, 5, 0)]
    assert session.round.tower.at(1, 0) is None and session.round.tower.at(3, 0) is None


def test_undo_after_an_early_call_takes_it_back_and_logs_nothing(tmp_path):
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, ANA_PULLS_A_BLUE_3, ANA_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 3.0)
    report = session.undo_last(source="page")
    assert report["ok"] and "undone" in report
    assert session.question is None and session.early is None
    assert session.play_round is session.round and session.round.turn == "Ana"
    assert logged(session, store) == []
    assert speaker.lines()[-2:] == ["The referee takes back its last call: that turn is not logged.",
                                    "Ana: pull any block."]


def test_the_log_exported_after_an_early_call_replays_to_the_referees_decisions(tmp_path):
    """Only the settled events are logged (none provisional): `stacko log export` piped into
    `stacko referee script -` makes the decisions the referee made, turn by turn."""
    import json
    import subprocess
    import sys

    script = ANA_PULLS_A_BLUE_3 + BEN_PULLS + [(4.0, ["blue-3", "blue-3", None], "x", ["east"]),
                                               (4.5, ["blue-3", "blue-3", None], "x", [])]
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, script, ANA_LIFT_AND_PLACE + BEN_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 5.5)
    session.answer(session.question["id"], "3/0", source="page")
    outputs = [e.output for e in store.events(session.match_id)]
    store.close()

    def stacko(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "referee.cli", *args], input=stdin, capture_output=True,
                              text=True, timeout=60)

    exported = stacko("log", "export", "--log", str(tmp_path / "log.sqlite"), "--format", "json")
    assert exported.returncode == 0, exported.stderr
    events = [json.loads(line)["event"] for line in exported.stdout.splitlines()]
    assert [e["event"] for e in events] == ["setup", "pull", "place", "pull", "place"]
    decided = stacko("referee", "script", "-", stdin="".join(json.dumps(e) + "\n" for e in events))
    assert [json.loads(line) for line in decided.stdout.splitlines()] == outputs


def test_the_page_shows_the_call_at_once_and_the_last_settled_state_until_the_answer(tmp_path):
    from web_ui.hub import TableHub

    clock, session, loop, speaker, store = table(TWO_BLUE_3S, ANA_PULLS_A_BLUE_3, ANA_LIFT_AND_PLACE, tmp_path)
    session.hub = hub = TableHub()
    run(clock, loop, 3.0)
    said = [m["say"] for m in hub._history]
    assert ["Ben: pull a blue block or a 3."] in said
    latest = hub.latest()
    assert latest["report"]["turn"] == "Ana" and latest["report"]["question"]["id"] == session.question["id"]
    session.answer(session.question["id"], "1/0", source="page")
    assert hub.latest()["report"]["turn"] == "Ben" and hub.latest()["report"]["question"] is None


def test_a_turn_told_outright_instead_of_an_answer_is_logged_before_the_play_held_since(tmp_path):
    """No button fits (say the map was wrong): a player tells Ana's turn; Ben's held pull of the other
    blue 3 then follows it, from the place Ana's turn left."""
    script = ANA_PULLS_A_BLUE_3 + BEN_PULLS + [(4.0, ["blue-3", "blue-3", None], "x", ["east"]),
                                               (4.5, ["blue-3", "blue-3", None], "x", [])]
    clock, session, loop, speaker, store = table(TWO_BLUE_3S, script, ANA_LIFT_AND_PLACE + BEN_LIFT_AND_PLACE, tmp_path)
    run(clock, loop, 5.5)
    loop.told_outright(session.question["id"], [{"event": "pull", "level": 3, "slot": 0, "player": "Ana", "block": "blue-3"},
                                                {"event": "place", "level": 5, "slot": 1}])
    assert logged(session, store) == [("pull", "Ana", 3, 0), ("place", None, 5, 1),
                                      ("pull", "Ben", 1, 0), ("place", None, 5, 0)]
    assert session.question is None and session.early is None
