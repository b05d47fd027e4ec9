"""The history page's tower picture, followed from the logged events, is the engine's own map."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from web_ui.replay import tower_steps


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), players=st.integers(2, 6))
def test_tower_followed_from_events_matches_the_engine_at_every_step(seed, players):
    from referee.events import IllegalEvent, parse_event
    from referee.match import Match
    from referee.randomplay import random_game
    from referee.script import ScriptRunner

    events = random_game(random.Random(seed), players=players, max_events=150)
    runner = ScriptRunner()
    outputs = [runner.feed(dict(e)) for e in events]
    steps = tower_steps(events, outputs)
    match = Match()
    for event, step in zip(events, steps):
        try:
            match = match.apply(parse_event(event))
        except IllegalEvent:
            pass
        rnd = match.current
        engine_levels = [[b.name if b else None for b in lv] for lv in rnd.tower.levels]
        assert step["tower"] == engine_levels
        assert step["hand"] == (rnd.hand.block.name if rnd.hand else None)


def test_collapse_evidence_is_plotted_or_listed():
    from web_ui.plots import evidence_facts, trace_svg

    t = [0.0, 0.1, 0.2]
    assert trace_svg({"sensor": {"traces": {"load_g": {"t": t, "v": [900, 400, 380]}}}}).count("<polyline") == 1
    assert trace_svg({"traces": [{"name": "tilt", "t": t, "v": [0, 5, 9]}, {"name": "bad", "t": t, "v": [1]}]}).count("<polyline") == 1
    assert trace_svg({"sensor": {"drop_g": 120.5}}) == ""
    assert ("sensor.drop_g", "120.5") in evidence_facts({"sensor": {"drop_g": 120.5, "traces": {}}, "t": 3.2})
