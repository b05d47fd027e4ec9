"""The referee at the table: logs first, says it, names colors on time, resumes after a crash."""

import json
import os
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
