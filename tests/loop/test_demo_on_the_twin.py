"""`stacko demo` end to end on the twin: a short match through the real drivers, detectors, vision
and fusion, logged so that its export replays to the same decisions."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("hardware.sim")  # picks the offscreen GL before MuJoCo loads


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from referee.loop.demo import DemoOptions, run_demo

    log = tmp_path_factory.mktemp("demo") / "match.sqlite"
    opts = DemoOptions(players=2, seed=11, fast=True, serve=False, quiet=True, log=str(log), max_turns=2)
    return run_demo(opts), log


def test_the_demo_referees_the_twins_turns_and_logs_them(demo):
    result, log = demo
    assert result.match and len(result.checks) >= 1
    from web_ui.store import MatchStore

    events = [e.event for e in MatchStore(log).events(result.match)]
    assert events[0]["event"] == "setup" and len(events[0]["tower"]) == 15
    pulls = [e for e in events if e["event"] == "pull"]
    assert len(pulls) >= len(result.checks)  # every turn the twin played is in the log


def test_the_exported_log_replays_through_the_script_command_to_the_same_state(demo):
    result, log = demo
    export = subprocess.run([sys.executable, "-m", "referee.cli", "log", "export", "--log", str(log),
                             "--match", result.match, "--format", "json"], capture_output=True, text=True, timeout=120)
    assert export.returncode == 0
    events = [json.loads(l)["event"] for l in export.stdout.splitlines()]
    replay = subprocess.run([sys.executable, "-m", "referee.cli", "referee", "script", "-"],
                            input="\n".join(json.dumps(e) for e in events), capture_output=True, text=True, timeout=120)
    outputs = [json.loads(l) for l in replay.stdout.splitlines()]
    assert all(o["ok"] for o in outputs)
    from web_ui.store import MatchStore

    logged = [e.output for e in MatchStore(log).events(result.match)]
    assert [o["turn"] for o in outputs] == [o["turn"] for o in logged]
    assert (outputs[-1]["winner"], outputs[-1]["loser"]) == (result.winner, result.loser)
