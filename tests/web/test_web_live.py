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


def test_a_server_following_the_log_shows_what_another_process_logs(tmp_path):
    from referee.randomplay import random_game
    from referee.script import ScriptRunner
    from web_ui.follow import LogFollower
    from web_ui.store import MatchStore

    path = tmp_path / "log.sqlite"
    writer, reader = MatchStore(path), MatchStore(path)  # two connections, as two processes would have
    events = random_game(random.Random(9), players=2)[:8]
    runner = ScriptRunner()
    m = writer.new_match(events[0]["players"])
    r = writer.new_round(m)
    hub = TableHub()
    follower = LogFollower(reader, hub)
    assert follower.poll() == 0 and hub.latest() is None
    outputs = []
    for e in events:
        outputs.append(runner.feed(dict(e)))
        writer.append(m, r, e)  # logged without a decision: the follower asks the engine
    assert follower.poll() == len(events)
    last_ok = [o for o in outputs if o["ok"]][-1]
    latest = hub.latest()["report"]
    assert latest["turn"] == last_ok["turn"] and latest["call"] == last_ok["call"]
    assert (latest["match"], latest["round"], latest["players"]) == (m, r, events[0]["players"])
    assert follower.poll() == 0


def test_a_follower_starts_at_the_newest_round(tmp_path):
    from web_ui.follow import LogFollower
    from web_ui.store import MatchStore

    store = MatchStore(tmp_path / "log.sqlite")
    m = store.new_match(["Ana", "Ben"])
    for n in range(2):
        r = store.new_round(m)
        store.append(m, r, {"event": "touch", "player": "Ana"}, output={"ok": True, "turn": f"round {r}", "say": []})
    hub = TableHub()
    LogFollower(store, hub).poll()
    v = hub.subscribe()
    assert [v.get(0.1)["report"]["turn"]] == ["round 2"] and v.get(0.01) is None
