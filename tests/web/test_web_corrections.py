"""The table answers the referee's questions and corrects its calls from the page; the log loses nothing."""

from __future__ import annotations

import json
import sqlite3

import pytest

from web_ui.app import create_app
from web_ui.follow import LogFollower
from web_ui.hub import TableHub
from web_ui.replay import replay_round, round_steps
from web_ui.store import MIGRATIONS, SCHEMA_VERSION, MatchStore, StoreError

from referee.loop.session import RefereeSession

PIN = "1357"
TOWER = [
    ["red-1", "blue-1", "green-1"],
    ["red-2", "blue-2", "green-2"],
    ["red-3", "yellow-3", "wild"],
    ["red-skip", "green-reverse", "blue-draw2"],
]
QUESTION = ("q-7", "Which red 1 was pulled: level 1, slot 0 or level 4, slot 2?", ["1/0", "4/2"],
            ["level 1, slot 0", "level 4, slot 2"])


@pytest.fixture
def referee(store):
    """A referee at the table (session, page, log) with the round set up."""
    hub = TableHub()
    session = RefereeSession(store, hub)
    session.start_match(["Ana", "Ben", "Cy"])
    session.start_round(TOWER)
    return session


@pytest.fixture
def client(referee, store):
    c = create_app(referee.hub, store, PIN, testing=True).test_client()
    token = c.get("/api/session").get_json()["csrf_token"]
    assert c.post("/api/unlock", json={"pin": PIN}, headers={"X-CSRFToken": token}).status_code == 200
    c.environ_base["HTTP_X_CSRFTOKEN"] = token
    return c


def test_a_question_answered_from_the_page_reaches_the_loop_once_and_its_events_are_logged(referee, client, store):
    answers = []

    def on_answer(qid: str, option: str) -> list[dict]:
        answers.append((qid, option))
        level, slot = map(int, option.split("/"))
        return [{"event": "pull", "level": level, "slot": slot, "player": "Ana", "block": "red-1"}]

    referee.on_answer = on_answer
    referee.ask(*QUESTION)
    shown = client.get("/api/table").get_json()["question"]
    assert shown == {"id": "q-7", "text": QUESTION[1], "options": ["1/0", "4/2"], "labels": QUESTION[3]}

    first = client.post("/api/actions", json={"action": "answer", "question": "q-7", "option": "1/0"})
    assert first.status_code == 202
    double_tap = client.post("/api/actions", json={"action": "answer", "question": "q-7", "option": "4/2"})
    assert double_tap.status_code == 400 and "already answered" in double_tap.get_json()["error"]
    referee.poll_page()
    assert answers == [("q-7", "1/0")]
    pull = store.events(referee.match_id)[-1]
    assert pull.event["event"] == "pull" and (pull.event["level"], pull.event["slot"]) == (1, 0)
    assert pull.evidence["answer"]["option"] == "1/0" and pull.evidence["source"] == "page"
    assert client.get("/api/table").get_json()["question"] is None
    assert referee.round.hand is not None


def test_a_stale_answer_is_refused_in_words(referee, client):
    referee.on_answer = lambda qid, option: pytest.fail("a stale answer reached the loop")
    resp = client.post("/api/actions", json={"action": "answer", "question": "q-7", "option": "1/0"})
    assert resp.status_code == 400 and "no open question" in resp.get_json()["error"]
    referee.ask(*QUESTION)
    referee.clear_question()
    referee.ask("q-8", "Is the block placed on top the green Skip?", ["yes", "no"])
    resp = client.post("/api/actions", json={"action": "answer", "question": "q-7", "option": "1/0"})
    assert resp.status_code == 400 and "no longer open" in resp.get_json()["error"]
    resp = client.post("/api/actions", json={"action": "answer", "question": "q-8", "option": "perhaps"})
    assert resp.status_code == 400 and "pick one of yes, no" in resp.get_json()["error"]
    assert referee.poll_page() == []


def test_a_spectator_cannot_answer(referee, store):
    referee.ask(*QUESTION)
    phone = create_app(referee.hub, store, PIN, testing=True).test_client()
    token = phone.get("/api/session").get_json()["csrf_token"]
    resp = phone.post("/api/actions", json={"action": "answer", "question": "q-7", "option": "1/0"},
                      headers={"X-CSRFToken": token})
    assert resp.status_code == 403 and referee.hub.actions() == []


def play(session, events):
    for e in events:
        assert session.submit(e)["ok"], e


def test_undo_from_the_page_voids_the_call_everywhere(referee, client, store):
    play(referee, [{"event": "pull", "level": 1, "slot": 0}, {"event": "place", "level": 5, "slot": 1},
                   {"event": "collapse"}])
    assert client.post("/api/actions", json={"action": "undo"}).status_code == 202
    [out] = referee.poll_page()
    assert out["undone"] == {"event": "collapse"} and not referee.round.over
    state = client.get("/api/table").get_json()
    assert state["over"] is False and state["turn"] == "Ben" and "takes back the collapse" in state["say"][0]
    # the export (CONTRACT section 3) and the log's own replay leave the voided collapse out
    exported = [json.loads(line) for line in client.get(f"/api/export?match={referee.match_id}").data.decode().splitlines()]
    assert [e["event"]["event"] for e in exported] == ["setup", "pull", "place"]
    assert replay_round(store, referee.match_id, 1) == []
    # the history shows it, marked void, with the tower as it stood before
    steps = round_steps(store, referee.match_id, 1)
    assert [s["void"] is not None for s in steps] == [False, False, False, True]
    assert steps[-1]["tower"] == steps[-2]["tower"]
    page = client.get(f"/history/{referee.match_id}/1").data.decode()
    assert '"void": {' in page or '"void":{' in page
    [rnd] = client.get(f"/api/matches/{referee.match_id}").get_json()["match"]["rounds"]
    assert (rnd["events"], rnd["voided"], rnd["finished"]) == (3, 1, None)


def test_an_event_by_hand_from_the_page_is_judged_by_the_engine(referee, client, store):
    bad = client.post("/api/actions", json={"action": "event", "event": {"event": "setup", "players": [], "tower": []}})
    assert bad.status_code == 400 and "can enter these events" in bad.get_json()["error"]
    bad = client.post("/api/actions", json={"action": "event", "event": {"event": "pull", "level": "four", "slot": 0}})
    assert bad.status_code == 400 and "whole number" in bad.get_json()["error"]
    legal = client.get("/api/table").get_json()["legal_pulls"]
    assert {"level": 1, "slot": 0, "block": "red-1"} in legal
    assert client.post("/api/actions", json={"action": "event", "event": {"event": "place", "level": 5, "slot": 0}}).status_code == 202
    [refused] = referee.poll_page()
    assert refused["ok"] is False
    state = client.get("/api/table").get_json()
    assert "nobody is holding a block" in state["error"] and state["say"][0].startswith("Please check")  # said, shown
    assert client.post("/api/actions", json={"action": "event", "event": {"event": "pull", "level": 1, "slot": 0}}).status_code == 202
    [accepted] = referee.poll_page()
    assert accepted["ok"] and store.events(referee.match_id)[-1].evidence["by_hand"] is True


def test_stacko_serve_following_the_log_shows_an_undo(referee, store):
    hub = TableHub()
    follower = LogFollower(store, hub)
    play(referee, [{"event": "pull", "level": 1, "slot": 0}, {"event": "place", "level": 5, "slot": 1}])
    follower.poll()
    assert hub.latest()["report"]["turn"] == "Ben" and len(hub.latest()["report"]["tower"]) == 5
    referee.undo_last()
    follower.poll()
    report = hub.latest()["report"]
    assert report["turn"] == "Ana" and len(report["tower"]) == 4 and report["hand"] == "red-1"


def test_a_log_of_schema_2_gains_voids_without_losing_events(tmp_path):
    path = tmp_path / "v2.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + MIGRATIONS[1] + "\nPRAGMA user_version=2;")
    db.execute("INSERT INTO matches(id, created) VALUES ('m1', 1.0)")
    db.execute("INSERT INTO rounds(match_id, round_no, started) VALUES ('m1', 1, 1.0)")
    for seq, ev in enumerate(['{"event": "pull", "level": 1, "slot": 0}', '{"event": "collapse"}'], 1):
        db.execute("INSERT INTO events(match_id, round_no, seq, t, event) VALUES ('m1', 1, ?, 1.0, ?)", (seq, ev))
    db.commit()
    db.close()
    with MatchStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 3
        store.void("m1", 1, 2, "a knock", "page")
        assert [e.event["event"] for e in store.events("m1")] == ["pull"]
        with pytest.raises(StoreError, match="already taken back"):
            store.void("m1", 1, 2)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store._db.execute("DELETE FROM voids")
        assert len(store.events("m1", include_voided=True)) == 2
