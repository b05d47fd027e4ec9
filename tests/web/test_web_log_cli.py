"""`stacko log list|show|replay|export` on a log written as the match loop writes it."""

from __future__ import annotations

import json
import subprocess
import sys

from web_ui.store import MatchStore

from web_test_helpers import logged_round


def stacko(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "referee.cli", *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_export_json_is_the_contract_and_replays_to_the_same_decisions(tmp_path):
    path = tmp_path / "log.sqlite"
    with MatchStore(path) as store:
        match_id, round_no, events, outputs = logged_round(store, seed=8)
    result = stacko("log", "export", "--log", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(l) for l in result.stdout.splitlines()]
    assert [set(l) for l in lines] == [{"match", "round", "seq", "event"}] * len(events)
    assert [l["seq"] for l in lines] == list(range(1, len(events) + 1))
    assert all(l["match"] == match_id and l["round"] == round_no for l in lines)
    assert [l["event"] for l in lines] == events
    piped = "".join(json.dumps(l["event"]) + "\n" for l in lines)
    decided = stacko("referee", "script", "-", stdin=piped)
    assert [json.loads(l) for l in decided.stdout.splitlines()] == outputs


def test_export_csv_has_a_row_per_event(tmp_path):
    path = tmp_path / "log.sqlite"
    with MatchStore(path) as store:
        _, _, events, _ = logged_round(store, seed=2)
    result = stacko("log", "export", "--log", str(path), "--format", "csv")
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == len(events) + 1


def test_replay_finds_no_difference_in_an_honest_log(tmp_path):
    path = tmp_path / "log.sqlite"
    with MatchStore(path) as store:
        logged_round(store, seed=8)
    result = stacko("log", "replay", "--log", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "" and "every decision the same" in result.stderr


def test_replay_reports_an_event_the_engine_now_decides_differently(tmp_path):
    from referee.randomplay import random_game
    import random
    from referee.script import ScriptRunner

    path = tmp_path / "log.sqlite"
    events = random_game(random.Random(8), players=3)[:6]
    runner = ScriptRunner()
    outputs = [runner.feed(dict(e)) for e in events]
    outputs[3] = dict(outputs[3], turn="Somebody Else")  # what an older referee decided
    with MatchStore(path) as store:
        m = store.new_match(events[0]["players"])
        r = store.new_round(m)
        for e, o in zip(events, outputs):
            store.append(m, r, e, output=o)
    result = stacko("log", "replay", "--log", str(path), "--match", m)
    assert result.returncode == 1
    [line] = [json.loads(l) for l in result.stdout.splitlines()]
    assert line["seq"] == 4 and line["event"] == events[3]
    assert line["differences"] == [{"field": "turn", "logged": "Somebody Else", "now": runner_turn(events[:4])}]


def runner_turn(events: list[dict]) -> str:
    from referee.script import ScriptRunner

    r = ScriptRunner()
    return [r.feed(dict(e)) for e in events][-1]["turn"]


def test_list_and_show_describe_the_match(tmp_path):
    path = tmp_path / "log.sqlite"
    with MatchStore(path) as store:
        match_id, _, events, _ = logged_round(store, seed=8)
    listed = stacko("log", "list", "--log", str(path))
    assert match_id in listed.stdout and "Ana" in listed.stdout
    shown = stacko("log", "show", "--log", str(path))
    assert shown.stdout.count("\n") == len(events) + 1


def test_a_missing_log_is_reported_in_words(tmp_path):
    result = stacko("log", "list", "--log", str(tmp_path / "none.sqlite"))
    assert result.returncode == 2 and "no match log" in result.stderr


def test_a_file_that_is_not_a_log_is_reported_in_words(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 200)
    for args in (("log", "export", "--format", "json"), ("serve", "--port", "0")):
        result = stacko(*args, "--log", str(junk))
        assert result.returncode == 2, args
        assert "not a readable match log" in result.stderr
