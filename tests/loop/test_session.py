"""The referee at the table: logs first, says it, names colors on time, resumes after a crash."""

import json
import signal
import subprocess
import sys
import textwrap

from web_ui.hub import TableHub
from web_ui.store import MatchStore

from referee.loop.session import RefereeSession

TOWER = [
    ["red-1", "blue-1", "green-1"],
    ["red-2", "blue-2", "green-2"],
    ["red-3", "yellow-3", "wild"],
    ["red-skip", "green-reverse", "blue-draw2"],
]


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t


class FakeSpeaker:
    def __init__(self):
        self.lines = []

    def say(self, text, urgent=False):
        self.lines.append((text, urgent))


def table(tmp_path, clock=None):
    store = MatchStore(tmp_path / "log.sqlite")
    speaker = FakeSpeaker()
    session = RefereeSession(store, TableHub(), speaker, clock or FakeClock())
    session.start_match(["Ana", "Ben", "Cy"])
    session.start_round(TOWER)
    return session, store, speaker


def test_every_accepted_event_is_logged_with_the_referees_decision(tmp_path):
    session, store, _ = table(tmp_path)
    session.submit({"event": "pull", "level": 1, "slot": 0})
    session.submit({"event": "place", "level": 5, "slot": 1})
    logged = store.events(session.match_id)
    assert [e.event["event"] for e in logged] == ["setup", "pull", "place"]
    assert logged[-1].output["turn"] == "Ben"


def test_a_refused_event_is_said_but_not_logged(tmp_path):
    session, store, speaker = table(tmp_path)
    out = session.submit({"event": "place", "level": 5, "slot": 1})
    assert out["ok"] is False
    assert len(store.events(session.match_id)) == 1
    assert session.hub.latest()["say"][0].startswith("Please check")


def test_fouls_and_the_end_are_spoken_first(tmp_path):
    session, _, speaker = table(tmp_path)
    session.submit({"event": "pull", "level": 1, "slot": 0})
    session.submit({"event": "place", "level": 5, "slot": 0})
    session.submit({"event": "pull", "level": 2, "slot": 1})  # Ben: blue-2 on a red/1 call
    assert any(urgent for text, urgent in speaker.lines if text.startswith("Foul"))


def test_the_referee_names_the_wilds_color_when_nobody_does_in_time(tmp_path):
    clock = FakeClock()
    session, _, _ = table(tmp_path, clock)
    session.submit({"event": "pull", "level": 3, "slot": 2})
    session.submit({"event": "place", "level": 5, "slot": 0})
    assert session.round.waiting_for == "wild_color"
    clock.t = 10.0
    assert session.tick() is None
    clock.t = 31.0
    out = session.tick()
    assert out["ok"] and out["turn"] == "Ben" and out["call"]["colors"]


def test_a_color_button_answers_whichever_color_is_awaited(tmp_path):
    session, _, _ = table(tmp_path)
    session.submit({"event": "pull", "level": 3, "slot": 2})
    session.submit({"event": "place", "level": 5, "slot": 0})
    out = session.name_color("blue")
    assert out["call"]["colors"] == ["blue"]


def test_a_pull_made_before_the_wilds_color_is_named_waits_and_is_judged_by_that_color(tmp_path):
    """The game waits for the color (RULES.md 4); a player who pulls anyway is not lost from the log."""
    session, store, _ = table(tmp_path)
    session.submit({"event": "pull", "level": 3, "slot": 2})  # Ana's Wild
    session.submit({"event": "place", "level": 5, "slot": 0})
    out = session.submit({"event": "pull", "level": 2, "slot": 1, "player": "Ben"})  # blue 2, before Ana names blue
    assert out["ok"] and out["held"] and session.round.hand is None
    session.submit({"event": "place", "level": 5, "slot": 1})
    assert session.play_round.tower.names()[4][:2] == ["wild", "blue-2"]  # the senses compare with this
    assert [e.event["event"] for e in store.events(session.match_id)][-1] == "place"  # nothing judged yet
    session.name_color("blue")
    assert session.held == [] and session.round.turn == "Cy" and session.round.tower.names()[4][1] == "blue-2"
    assert [e.event["event"] for e in store.events(session.match_id)][-3:] == ["wild_color", "pull", "place"]


def test_held_play_is_taken_back_first_by_an_undo(tmp_path):
    session, _, _ = table(tmp_path)
    session.submit({"event": "pull", "level": 3, "slot": 2})
    session.submit({"event": "place", "level": 5, "slot": 0})
    session.submit({"event": "pull", "level": 2, "slot": 1, "player": "Ben"})
    out = session.undo_last()
    assert out["ok"] and session.held == [] and session.round.waiting_for == "wild_color"


def test_page_requests_reach_the_engine(tmp_path):
    session, _, _ = table(tmp_path)
    session.submit({"event": "pull", "level": 1, "slot": 0})
    session.hub.submit({"action": "uno", "caller": "Cy", "offender": "Ana"})
    out = session.poll_page()
    assert out[0]["fouls"] == [{"player": "Ana", "rule": "two-hands"}]


def test_after_a_kill_the_match_resumes_where_it_stopped(tmp_path):
    log = tmp_path / "log.sqlite"
    script = textwrap.dedent(f"""
        import os, signal
        from web_ui.store import MatchStore
        from referee.loop.session import RefereeSession
        s = RefereeSession(MatchStore({str(log)!r}))
        s.start_match(["Ana", "Ben", "Cy"])
        s.start_round({TOWER!r})
        s.submit({{"event": "pull", "level": 1, "slot": 0}})
        s.submit({{"event": "place", "level": 5, "slot": 1}})
        s.submit({{"event": "pull", "level": 2, "slot": 0}})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    lines = []
    session = RefereeSession(MatchStore(log), echo=lines.append)
    assert session.resume() is True
    assert session.round.hand is not None and session.round.turn == "Ben"
    assert any("Resuming" in l for l in lines)
    out = session.submit({"event": "place", "level": 5, "slot": 0})
    assert out["ok"] and out["turn"] == "Cy"


def test_the_exported_log_replays_to_the_same_decisions(tmp_path):
    session, store, _ = table(tmp_path)
    for e in [{"event": "pull", "level": 1, "slot": 0}, {"event": "place", "level": 5, "slot": 1},
              {"event": "two_hands", "player": "Ben"}, {"event": "collapse"}]:
        session.submit(e)
    proc = subprocess.run([sys.executable, "-m", "referee.cli", "log", "export", "--log", str(store.path), "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    events = [json.loads(l)["event"] for l in proc.stdout.splitlines()]
    replay = subprocess.run([sys.executable, "-m", "referee.cli", "referee", "script", "-"],
                            input="\n".join(json.dumps(e) for e in events), capture_output=True, text=True, timeout=60)
    last = json.loads(replay.stdout.splitlines()[-1])
    assert (last["winner"], last["loser"]) == (session.round.outcome.winner, session.round.outcome.loser)


# -- questions to the table, and corrections ---------------------------------------------------------
def test_a_question_stays_on_the_table_until_the_table_answers_it(tmp_path):
    session, store, speaker = table(tmp_path)
    session.submit({"event": "pull", "level": 1, "slot": 0})
    calls = []
    session.on_answer = lambda qid, option: calls.append((qid, option)) or [
        ({"event": "place", "level": int(option.split("/")[0]), "slot": int(option.split("/")[1])}, {"frame": 812})]
    session.ask("q1", "Where was the red 1 placed: level 5, slot 0 or slot 1?", ["5/0", "5/1"],
                ["level 5, slot 0", "level 5, slot 1"])
    assert session.hub.latest()["report"]["question"]["options"] == ["5/0", "5/1"]
    assert speaker.lines[-1] == ("Where was the red 1 placed: level 5, slot 0 or slot 1?", True)
    # a browser that reloads the page now still gets the question
    backlog = session.hub.subscribe()
    seen = []
    while (m := backlog.get(timeout=0.01)) is not None:
        seen.append(m)
    assert seen[-1]["report"]["question"]["id"] == "q1"

    session.hub.submit({"action": "answer", "question": "q1", "option": "5/1"})
    [report] = session.poll_page()
    assert calls == [("q1", "5/1")]
    assert report["ok"] and report["turn"] == "Ben" and session.question is None
    assert session.hub.latest()["report"]["question"] is None
    place = store.events(session.match_id)[-1]
    assert place.event == {"event": "place", "level": 5, "slot": 1}
    assert place.evidence["frame"] == 812 and place.evidence["source"] == "page"
    assert place.evidence["answer"] == {"question": "q1", "text": "Where was the red 1 placed: level 5, slot 0 or slot 1?",
                                        "option": "5/1", "label": "level 5, slot 1"}
    [answer] = store.answers(session.match_id)
    assert answer["option"] == "5/1" and answer["events"] == [{"event": "place", "level": 5, "slot": 1}]


def test_an_answer_to_a_withdrawn_question_changes_nothing(tmp_path):
    session, store, _ = table(tmp_path)
    calls = []
    session.on_answer = lambda qid, option: calls.append(qid) or [{"event": "collapse"}]
    session.ask("q1", "Did the tower fall?", ["yes", "no"])
    session.clear_question("q1")
    assert session.hub.latest()["report"]["question"] is None
    out = session.answer("q1", "yes")
    assert out["ok"] is False and "no open question" in out["error"]
    session.ask("q2", "Did the tower fall?", ["yes", "no"])
    assert session.answer("q1", "yes")["ok"] is False  # an old question's answer
    assert session.answer("q2", "maybe")["ok"] is False  # not an option
    assert calls == [] and not session.round.over and len(store.events(session.match_id)) == 1


def test_answer_buttons_say_their_option_in_words():
    session = RefereeSession(None, TableHub())
    question = session.ask("q1", "Which block was placed?", ["red-3", "green-skip", "4/0"])
    assert question["labels"] == ["red 3", "green Skip", "level 4, slot 0"]


def play(session, events):
    for e in events:
        assert session.submit(e)["ok"], e


def test_undo_takes_back_the_last_call_and_the_log_keeps_it(tmp_path):
    session, store, speaker = table(tmp_path)
    play(session, [{"event": "pull", "level": 1, "slot": 0}, {"event": "place", "level": 5, "slot": 1},
                   {"event": "pull", "level": 2, "slot": 1}])  # Ben pulls blue-2 on a red/1 call: a foul
    assert session.match.standing("Ben").fouls == 1
    out = session.undo_last()
    assert out["ok"] and out["undone"] == {"event": "pull", "level": 2, "slot": 1}
    assert out["turn"] == "Ben" and session.round.hand is None and session.match.standing("Ben").fouls == 0
    assert ("The referee takes back Ben's pull from level 2, slot 1.", False) in speaker.lines
    assert [e.seq for e in store.events(session.match_id)] == [1, 2, 3]
    everything = store.events(session.match_id, include_voided=True)
    assert [e.seq for e in everything] == [1, 2, 3, 4] and everything[-1].voided
    assert everything[-1].void["detail"]["event"] == {"event": "pull", "level": 2, "slot": 1}
    assert store.standings(session.match_id)[0]["fouls"] == 0  # the voided foul no longer counts
    # play goes on from the corrected state; the new event gets the next seq
    assert session.submit({"event": "pull", "level": 1, "slot": 1})["ok"]
    assert [e.seq for e in store.events(session.match_id)] == [1, 2, 3, 5]


def test_undo_of_a_collapse_reopens_the_round(tmp_path):
    session, store, _ = table(tmp_path)
    play(session, [{"event": "pull", "level": 1, "slot": 0}, {"event": "collapse"}])
    assert store.rounds(session.match_id)[0]["loser"] == "Ana"
    out = session.undo_last(reason="a knock on the table, not a collapse")
    assert out["ok"] and not session.round.over and session.round.hand is not None
    [rnd] = store.rounds(session.match_id)
    assert rnd["finished"] is None and rnd["loser"] is None and rnd["voided"] == 1
    void = store.events(session.match_id, include_voided=True)[-1].void
    assert void["reason"] == "a knock on the table, not a collapse" and void["detail"]["outcome"]["loser"] == "Ana"
    play(session, [{"event": "place", "level": 5, "slot": 0}, {"event": "pull", "level": 1, "slot": 1},
                   {"event": "collapse"}])
    assert store.rounds(session.match_id)[0]["loser"] == "Ben"


def test_the_setup_and_earlier_rounds_are_never_undone(tmp_path):
    session, store, _ = table(tmp_path)
    out = session.undo_last()
    assert out["ok"] is False and "nothing to take back" in out["error"]
    play(session, [{"event": "collapse"}])
    session.start_round(TOWER)
    out = session.undo_last()
    assert out["ok"] is False and "finished round" in out["error"]
    assert session.round_no == 2 and not session.round.over
    assert all(not e.voided for e in store.events(session.match_id, include_voided=True))


def test_an_event_entered_by_hand_is_judged_by_the_engine(tmp_path):
    session, store, _ = table(tmp_path)
    session.hub.submit({"action": "event", "event": {"event": "place", "level": 5, "slot": 0}})
    [refused] = session.poll_page()
    assert refused["ok"] is False and session.hub.latest()["say"][0].startswith("Please check")
    assert session.hub.latest()["report"]["legal_pulls"]  # the page offers what may be pulled
    session.hub.submit({"action": "event", "event": {"event": "pull", "level": 1, "slot": 0, "player": "Ana"}})
    [ok] = session.poll_page()
    assert ok["ok"] and store.events(session.match_id)[-1].evidence == {"source": "page", "by_hand": True}


def test_the_export_after_an_undo_replays_to_the_corrected_result(tmp_path):
    session, store, _ = table(tmp_path)
    play(session, [{"event": "pull", "level": 1, "slot": 0}, {"event": "place", "level": 5, "slot": 1},
                   {"event": "collapse"}])  # a knock on the table, not a collapse: taken back
    session.undo_last()
    play(session, [{"event": "pull", "level": 1, "slot": 1}, {"event": "place", "level": 5, "slot": 0},
                   {"event": "pull", "level": 2, "slot": 0}, {"event": "collapse"}])  # Cy's pull brings it down
    assert session.round.outcome.loser == "Cy"
    proc = subprocess.run([sys.executable, "-m", "referee.cli", "log", "export", "--log", str(store.path), "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    lines = [json.loads(l) for l in proc.stdout.splitlines()]
    assert [l["seq"] for l in lines] == [1, 2, 3, 5, 6, 7, 8]  # seq 4, the voided collapse, is left out
    replay = subprocess.run([sys.executable, "-m", "referee.cli", "referee", "script", "-"],
                            input="\n".join(json.dumps(l["event"]) for l in lines), capture_output=True, text=True, timeout=60)
    last = json.loads(replay.stdout.splitlines()[-1])
    assert (last["winner"], last["loser"]) == (session.round.outcome.winner, "Cy")
    check = subprocess.run([sys.executable, "-m", "referee.cli", "log", "replay", "--log", str(store.path)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "1 voided" in check.stderr


def test_resume_after_an_undo_replays_without_the_voided_event(tmp_path):
    session, store, _ = table(tmp_path)
    play(session, [{"event": "pull", "level": 1, "slot": 0}, {"event": "place", "level": 5, "slot": 1},
                   {"event": "pull", "level": 2, "slot": 1}])
    session.undo_last()
    expected = session.round.report()
    again = RefereeSession(MatchStore(store.path))  # the referee restarted (crash or power cut)
    assert again.resume() is True
    assert {k: again.round.report()[k] for k in ("turn", "call", "fouls")} == {k: expected[k] for k in ("turn", "call", "fouls")}
    assert again.round.hand is None and again.match.standing("Ben").fouls == 0
    assert again.undo_last()["undone"] == {"event": "place", "level": 5, "slot": 1}  # undo goes on after a resume
    assert again.round.hand is not None


def test_an_answer_the_loop_cannot_use_is_said_and_kept(tmp_path):
    session, store, _ = table(tmp_path)

    def stale(qid, option):
        raise ValueError("the referee no longer waits for that answer")

    session.on_answer = stale
    session.ask("q1", "Did the tower fall?", ["yes", "no"])
    session.hub.submit({"action": "answer", "question": "q1", "option": "yes"})
    [out] = session.poll_page()
    assert out["ok"] is False and "could not use the answer" in out["error"]
    assert session.question is None and session.hub.question is None  # withdrawn: the loop asks again if it must
    assert [a["option"] for a in store.answers()] == ["yes"] and len(store.events(session.match_id)) == 1
    session.on_answer = lambda qid, option: []
    session.ask("q2", "Did the tower fall?", ["yes", "no"])
    session.hub.submit({"action": "answer", "question": "q2", "option": "no"})
    [out] = session.poll_page()
    assert out["ok"] and session.question is None
