"""Random games, legal and illegal, for property tests and the engine benchmark.

A player here is a random policy over the events a table can produce: mostly legal pulls, some
fouls (wrong block, forbidden level, early level, out of turn, two hands), colors named, claims,
touches and, now and then, a collapse. Every event goes through the real engine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from referee.blocks import COLORS
from referee.engine import Round
from referee.events import IllegalEvent, parse_event
from referee.match import Match
from referee.tower import random_tower

NAMES = ("Ana", "Ben", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo")


@dataclass(frozen=True)
class Mischief:
    """How often the random table breaks the rules (per opportunity)."""

    foul: float = 0.1
    nonsense: float = 0.05  # events the referee must reject
    collapse: float = 0.01


def random_setup(rng: random.Random, players: int | None = None, options: dict | None = None) -> dict[str, Any]:
    n = players or rng.randint(2, 6)
    event: dict[str, Any] = {"event": "setup", "players": list(NAMES[:n]), "tower": random_tower(rng)}
    if options:
        event["options"] = options
    return event


def next_event(rnd: Round, rng: random.Random, mischief: Mischief = Mischief()) -> dict[str, Any]:
    """One plausible (or deliberately wrong) event for the table in state `rnd`."""
    players = rnd.players
    if rng.random() < mischief.collapse:
        return {"event": "collapse"}
    if rng.random() < mischief.nonsense:
        return _nonsense(rnd, rng)
    if rnd.waiting_for == "wild_color":
        return {"event": "wild_color", "color": rng.choice(COLORS).value}
    if rnd.waiting_for == "penalty_color":
        return {"event": "penalty_color", "color": rng.choice(COLORS).value}
    if rnd.hand is not None:
        options = rnd.place_options()
        if rng.random() < mischief.foul and rnd.tower.top_level and not rnd.tower.top_complete:
            return {"event": "place", "level": rnd.tower.top_level + 1, "slot": rng.randrange(3)}
        level, slot = rng.choice(options)
        return {"event": "place", "level": level, "slot": slot}
    roll = rng.random()
    if roll < mischief.foul / 4:
        return {"event": "two_hands", "player": rnd.turn}
    if roll < mischief.foul / 3:
        others = [p for p in players if p != rnd.turn]
        return {"event": "uno", "caller": rng.choice(others), "offender": rng.choice(players)}
    if roll < mischief.foul / 2:
        return {"event": "touch", "player": rng.choice(players)}
    legal = rnd.legal_pulls()
    if legal and rng.random() > mischief.foul:
        o = rng.choice(legal)
        return {"event": "pull", "level": o.level, "slot": o.slot}
    if not legal and rng.random() < 0.3:
        return {"event": "claim_no_match", "player": rnd.turn}
    candidates = list(rnd.tower.positions())
    level, slot, _ = rng.choice(candidates)
    event = {"event": "pull", "level": level, "slot": slot}
    if rng.random() < 0.2:
        event["player"] = rng.choice(players)
    return event


def _nonsense(rnd: Round, rng: random.Random) -> dict[str, Any]:
    choices = [
        {"event": "pull", "level": rnd.tower.top_level + 2, "slot": 0},
        {"event": "pull", "level": 1, "slot": 5},
        {"event": "place", "level": 1, "slot": 0},
        {"event": "place", "level": rnd.tower.top_level + 3, "slot": 1},
        {"event": "wild_color", "color": "purple"},
        {"event": "penalty_color", "color": "red", "player": "Nobody"},
        {"event": "dance"},
        {"event": "pull"},
        {"event": "uno", "caller": rnd.players[0], "offender": rnd.players[0]},
        {"event": "pull", "level": 1, "slot": 0, "block": "purple-9"},
        {"event": "touch", "player": 7},
    ]
    return rng.choice(choices)


def random_game(
    rng: random.Random,
    players: int | None = None,
    options: dict | None = None,
    mischief: Mischief = Mischief(),
    max_events: int = 2000,
) -> list[dict[str, Any]]:
    """The event dicts of one random round, from setup to its end (or `max_events`)."""
    setup = random_setup(rng, players, options)
    events = [setup]
    match = Match().apply(parse_event(setup))
    while not match.current.over and len(events) < max_events:
        event = next_event(match.current, rng, mischief)
        events.append(event)
        try:
            match = match.apply(parse_event(event))
        except IllegalEvent:
            continue  # a refused event changes nothing: the table goes on
    return events
