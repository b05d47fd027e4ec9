"""Helpers shared by the web tests (a module of its own: test folders are not packages)."""

from __future__ import annotations

import random

from web_ui.store import MatchStore


def logged_round(store: MatchStore, seed: int = 3, players: int = 3) -> tuple[str, int, list[dict], list[dict]]:
    """A whole random round played through the real engine and logged with its decisions."""
    from referee.randomplay import random_game
    from referee.script import ScriptRunner

    events = random_game(random.Random(seed), players=players)
    runner = ScriptRunner()
    outputs = [runner.feed(dict(e)) for e in events]
    match_id = store.new_match(events[0]["players"])
    round_no = store.new_round(match_id)
    for event, output in zip(events, outputs):
        store.append(match_id, round_no, event, output=output)
    final = outputs[-1]
    if final.get("over"):
        store.finish_round(match_id, round_no, final.get("winner"), final.get("loser"), "collapse")
    return match_id, round_no, events, outputs
