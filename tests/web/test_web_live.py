"""The match loop's recorder logs every event before the page shows it, with the tower picture."""

from __future__ import annotations

import random

from web_ui.hub import TableHub
from web_ui.live import TableRecorder


def test_recorder_logs_then_publishes_each_event_with_tower_and_players(store):
    from referee.randomplay import random_game
    from referee.script import ScriptRunner

    events = random_game(random.Random(6), players=3)[:12]
    hub = TableHub()
    viewer = hub.subscribe()
    rec = TableRecorder(store, hub)
    match_id = rec.start_match(events[0]["players"])
    round_no = rec.start_round()
    runner = ScriptRunner()
    for e in events:
        rec.record(e, runner.feed(dict(e)))
    assert [le.event for le in store.events(match_id, round_no)] == events
    messages = [viewer.get(0.1) for _ in events]
    assert all(m["report"]["players"] == events[0]["players"] for m in messages)
    assert all((m["report"]["match"], m["report"]["round"]) == (match_id, round_no) for m in messages)
    assert len(messages[0]["report"]["tower"]) == 15
    blocks = [sum(b is not None for lv in m["report"]["tower"] for b in lv) + (m["report"]["hand"] is not None)
              for m in messages]
    assert blocks == [45] * len(events)  # every block is in the tower or in a hand


def test_recorder_resumes_the_unfinished_round_after_a_restart(store):
    rec = TableRecorder(store, TableHub())
    m = rec.start_match(["Ana", "Ben"])
    rec.start_round()
    rec.record({"event": "touch", "player": "Ana"}, {"ok": True, "say": []})
    again = TableRecorder(store, TableHub())
    info = again.resume()
    assert info["id"] == m and info["events"] == [{"event": "touch", "player": "Ana"}]
    again.record({"event": "collapse"}, {"ok": True, "over": True, "say": []})
    assert [e.seq for e in store.events(m)] == [1, 2]
