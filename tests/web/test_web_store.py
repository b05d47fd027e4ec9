"""The match log keeps every committed event, in order, through crashes and schema upgrades."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from web_ui.store import MIGRATIONS, SCHEMA_VERSION, MatchStore, StoreError

from web_test_helpers import logged_round


def test_log_is_sqlite_in_wal_mode_at_the_current_schema(store):
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version == SCHEMA_VERSION


def test_events_come_back_in_order_with_evidence_and_decision(store):
    m = store.new_match(["Ana", "Ben"], {"auto_uno": False})
    r = store.new_round(m)
    assert store.append(m, r, {"event": "setup", "players": ["Ana", "Ben"], "tower": []}) == 1
    assert store.append(m, r, {"event": "collapse"}, evidence={"traces": {}}, output={"ok": True, "loser": "Ana"}) == 2
    events = store.events(m, r)
    assert [e.seq for e in events] == [1, 2]
    assert events[1].evidence == {"traces": {}} and events[1].output["loser"] == "Ana"
    assert store.match(m)["options"] == {"auto_uno": False}


def test_the_event_log_is_append_only(store):
    m = store.new_match(["Ana", "Ben"])
    r = store.new_round(m)
    store.append(m, r, {"event": "collapse"})
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store._db.execute("UPDATE events SET event = '{}'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store._db.execute("DELETE FROM events")


def test_bad_events_and_unknown_rounds_are_refused_in_words(store):
    m = store.new_match(["Ana", "Ben"])
    with pytest.raises(StoreError, match="no round 1"):
        store.append(m, 1, {"event": "collapse"})
    r = store.new_round(m)
    with pytest.raises(StoreError, match='"event" name'):
        store.append(m, r, {"level": 3})
    with pytest.raises(StoreError, match="2 to 10 players"):
        store.new_match(["Solo"])
    with pytest.raises(StoreError, match="no match"):
        store.events("nope")


def test_an_old_log_is_migrated_without_losing_events(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + "\nPRAGMA user_version=1;")
    db.execute("INSERT INTO matches(id, created) VALUES ('m1', 1.0)")
    db.execute("INSERT INTO rounds(match_id, round_no, started) VALUES ('m1', 1, 1.0)")
    db.execute("""INSERT INTO events(match_id, round_no, seq, t, event) VALUES ('m1', 1, 1, 1.0, '{"event": "collapse"}')""")
    db.commit()
    db.close()
    with MatchStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        [event] = store.events("m1")
        assert event.event == {"event": "collapse"} and event.output is None
        assert store.append("m1", 1, {"event": "touch", "player": "Ana"}, output={"ok": True}) == 2


def test_a_log_from_a_newer_referee_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    sqlite3.connect(path).execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}").connection.close()
    with pytest.raises(StoreError, match="newer referee"):
        MatchStore(path)


def test_a_file_that_is_not_a_log_is_refused(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a readable match log"):
        MatchStore(path)


def test_unfinished_match_gives_the_open_round_to_resume(store):
    m = store.new_match(["Ana", "Ben"])
    r = store.new_round(m)
    store.append(m, r, {"event": "setup", "players": ["Ana", "Ben"], "tower": []})
    store.append(m, r, {"event": "pull", "level": 1, "slot": 0})
    info = store.unfinished_match()
    assert info["id"] == m and info["open_round"] == r
    assert [e["event"] for e in info["events"]] == ["setup", "pull"]
    store.finish_round(m, r, "Ana", "Ben", "collapse")
    store.finish_match(m)
    assert store.unfinished_match() is None


def test_standings_count_wins_losses_and_logged_fouls(store):
    match_id, _, _, outputs = logged_round(store, seed=5)
    fouls = {}
    for o in outputs:
        for f in o.get("fouls", []):
            fouls[f["player"]] = fouls.get(f["player"], 0) + 1
    table = {s["player"]: s for s in store.standings()}
    final = outputs[-1]
    for name, s in table.items():
        assert s["fouls"] == fouls.get(name, 0)
        assert s["wins"] == (1 if final.get("winner") == name else 0)
        assert s["losses"] == (1 if final.get("loser") == name else 0)


CHILD = textwrap.dedent("""
    import sys
    from web_ui.store import MatchStore
    store = MatchStore(sys.argv[1])
    m = store.new_match(["Ana", "Ben"])
    r = store.new_round(m)
    print(m, flush=True)
    for i, _ in enumerate(sys.stdin, start=1):  # one event per line the test sends: it knows what is in flight
        seq = store.append(m, r, {"event": "touch", "player": "Ana", "n": i})
        print(seq, flush=True)
""")


def test_sigkill_mid_match_loses_no_committed_event(tmp_path):
    """Killed while an event is being written: every event it acknowledged is in the log, in
    order, and at most the one in flight besides. (The child writes an event when told to, so a
    loaded machine cannot let it run ahead of the acknowledgements read.)"""
    path = tmp_path / "killed.sqlite"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    match_id = child.stdout.readline().strip()
    acknowledged = []
    for _ in range(40):
        child.stdin.write("go\n")
        child.stdin.flush()
        acknowledged.append(int(child.stdout.readline()))
    child.stdin.write("go\n")  # one more in flight, killed at once
    child.stdin.flush()
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    with MatchStore(path) as store:
        logged = [e.seq for e in store.events(match_id)]
    assert logged[: len(acknowledged)] == acknowledged
    assert logged == list(range(1, len(logged) + 1))
    assert [e for e in logged if e > acknowledged[-1]] == logged[len(acknowledged):]  # at most the one in flight
    assert len(logged) - len(acknowledged) <= 1
