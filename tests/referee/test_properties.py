"""Thousands of random games, legal and illegal: the invariants that must always hold."""

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.events import IllegalEvent, parse_event
from referee.engine import PullStep
from referee.randomplay import Mischief, next_event, random_setup
from referee.script import ScriptRunner

OPTION_SETS = [None, {"foul_penalty": "warn"}, {"match_symbols": True}, {"auto_uno": False}]


def blocks_in_play(rnd):
    names = [b.name for b in rnd.tower.blocks()]
    if rnd.hand is not None:
        names.append(rnd.hand.block.name)
    return Counter(names)


def check_invariants(rnd, start_blocks):
    # The blocks are conserved: in the tower or in a hand, never lost, never doubled.
    assert blocks_in_play(rnd) == start_blocks
    # The map stays physical: no empty level under the top, no level above the top kept.
    for level in rnd.tower.levels[:-1]:
        assert any(b is not None for b in level)
    # A call can always be answered, or it is a free pull.
    if isinstance(rnd.head, PullStep) and rnd.hand is None:
        assert rnd.call.free or rnd.legal_pulls()
    if rnd.over:
        assert rnd.turn is None and rnd.outcome.winner != rnd.outcome.loser


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(2, 10), options=st.sampled_from(OPTION_SETS),
       foul=st.sampled_from([0.0, 0.1, 0.4]), nonsense=st.sampled_from([0.0, 0.1, 0.3]))
def test_random_games_keep_every_invariant(seed, players, options, foul, nonsense):
    rng = random.Random(seed)
    mischief = Mischief(foul=foul, nonsense=nonsense, collapse=0.005)
    runner = ScriptRunner()
    events = [random_setup(rng, players, options)]
    outputs = [runner.feed(events[0])]
    assert outputs[0]["ok"]
    start = blocks_in_play(runner.match.current)
    while not runner.match.current.over and len(events) < 600:
        before = runner.match
        before_report = before.current.report()
        event = next_event(before.current, rng, mischief)
        events.append(event)
        out = runner.feed(event)  # never raises
        outputs.append(out)
        if not out["ok"]:
            assert runner.match is before  # a refused event changes nothing
            assert out["error"]
        assert before.current.report() == before_report  # handed-out states never change
        check_invariants(runner.match.current, start)
    # Replaying the log gives the same decisions, line for line.
    replay = ScriptRunner()
    assert [replay.feed(e) for e in events] == outputs


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_table_that_follows_every_call_never_commits_a_foul(seed):
    rng = random.Random(seed)
    runner = ScriptRunner()
    runner.feed(random_setup(rng, 3))
    while not runner.match.current.over:
        rnd = runner.match.current
        event = next_event(rnd, rng, Mischief(foul=0.0, nonsense=0.0, collapse=0.0))
        out = runner.feed(event)
        assert out["ok"] and out["fouls"] == [], (event, out)
    assert runner.match.current.outcome.reason == "no-block-left"


def test_random_garbage_never_raises():
    rng = random.Random(5)
    runner = ScriptRunner()
    junk = [None, 3, "x", [], {"event": None}, {"event": "setup"}, {"event": "setup", "players": "Ana"},
            {"event": "setup", "players": ["A", "B"], "tower": "tall"}, {"event": "pull", "level": True, "slot": 0},
            {"event": "place", "level": 1.5, "slot": 0}, {"event": "uno", "caller": 1, "offender": 2}]
    for data in junk:
        assert runner.feed(data)["ok"] is False
    for _ in range(200):
        data = {"event": rng.choice(["pull", "place", "wild_color", "uno", "setup"]),
                "level": rng.choice([None, -1, 0, 1, 2, 50, "2"]), "slot": rng.choice([None, 0, 1, 2, 3]),
                "color": rng.choice([None, "red", "mauve"]), "players": rng.choice([None, ["A"], ["A", "B"]]),
                "tower": rng.choice([None, [], [["red-1"]]])}
        assert "ok" in runner.feed(data)
