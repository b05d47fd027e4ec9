"""A round that plays itself on the twin: simulated players act, the rules engine hears the truth.

This is ground-truth play (the referee is told exactly what happened, no camera or sensors in
between): it drives recordings for the detector benchmark and checks the twin end to end. The
live match loop (`referee/loop/`) replaces the truth with perception.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from hardware.sim.players import SimPlayer, SkillProfile
from hardware.sim.twin import Twin
from referee.engine import new_round
from referee.events import IllegalEvent, parse_event

NAMES = ("Ana", "Ben", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo")


@dataclass
class RoundResult:
    events: list[dict] = field(default_factory=list)  # referee events (CONTRACT section 1 input)
    reports: list[dict] = field(default_factory=list)  # the engine's answer to each
    pulls: int = 0
    winner: str | None = None
    loser: str | None = None
    collapsed_at: float | None = None
    ended_by: str = ""


def play_round(
    twin: Twin,
    skills: list[SkillProfile],
    seed: int,
    max_pulls: int = 200,
    push_at_end: bool = False,
    on_step: Callable[[Twin], None] | None = None,
    max_tries: int | None = None,  # blocks a player may give up on when the level above follows (None: SkillProfile.tries)
) -> RoundResult:
    """Play until the round is over, the tower falls, or `max_pulls` (then optionally shove it)."""
    rng = random.Random(seed)
    names = list(NAMES[: len(skills)])
    players = [SimPlayer(n, i, s, random.Random(rng.randrange(1 << 30))) for i, (n, s) in enumerate(zip(names, skills))]
    by_name = {p.name: p for p in players}
    result = RoundResult()
    setup = {"event": "setup", "players": names, "tower": twin.tower_map()}
    rnd = new_round(names, setup["tower"])
    result.events.append(setup)
    result.reports.append(rnd.report())

    def apply(ev: dict) -> None:
        nonlocal rnd
        result.events.append(ev)
        try:
            rnd = rnd.apply(parse_event(ev))
            result.reports.append(rnd.report())
        except IllegalEvent as exc:
            result.reports.append({"ok": False, "error": str(exc)})

    def collapsed() -> bool:
        if twin.collapsed and not rnd.over:
            apply({"event": "collapse"})
            result.collapsed_at = twin.collapse_time
            return True
        return twin.collapsed

    while not rnd.over:
        if collapsed():
            break
        who = rnd.turn
        if who is None:
            break
        player = by_name[who]
        if rnd.waiting_for == "wild_color":
            apply({"event": "wild_color", "color": player.choose_color(rnd).value, "player": who})
            continue
        if rnd.waiting_for == "penalty_color":
            apply({"event": "penalty_color", "color": player.choose_color(rnd, numbers_only=True).value, "player": who})
            continue
        if rnd.hand is None:
            if result.pulls >= max_pulls:
                result.ended_by = "max_pulls"
                break
            for other in players:  # bystanders fidget
                if other is player:
                    continue
                if other.rng.random() < other.skill.touch_rate:
                    twin.touch(other.seat, strength=other.rng.uniform(0.2, 0.8), on_step=on_step)
                    apply({"event": "touch", "player": other.name})
                    if collapsed():
                        break
                if other.rng.random() < other.skill.knock_rate:
                    twin.knock(other.seat, strength=other.rng.uniform(0.4, 1.5), on_step=on_step)
            if collapsed():
                break
            tried: set[tuple[int, int]] = set()
            while True:  # a player who feels the tower follow the block stops and tries another
                choice = player.choose_pull(rnd, feel=twin.block_load, avoid=tried)
                if choice is None and tried:  # every block was tried: back to one of them, for good
                    choice = player.choose_pull(rnd, feel=twin.block_load)
                if choice is None:
                    break
                n_truth = len(twin.truth)
                limit = player.skill.tries if max_tries is None else max_tries
                may_give_up = len(tried) < limit and (choice.level, choice.slot) not in tried
                twin.pull(player.seat, choice.level, choice.slot, two_hands=choice.two_hands, style=player.skill.style,
                          on_step=on_step, give_up=may_give_up)
                if not twin.gave_up:
                    break
                tried.add((choice.level, choice.slot))
                apply({"event": "touch", "player": who})
                if collapsed():
                    break
            if choice is None:
                result.ended_by = "no_block"
                break
            if twin.collapsed and twin.in_hand is None:
                collapsed()
                break
            result.pulls += 1
            if any(e["type"] == "two_hands" for e in twin.truth[n_truth:]):
                apply({"event": "two_hands", "player": who})
            if twin.in_hand is None:  # the tower fell before the block came out
                collapsed()
                break
            apply({"event": "pull", "level": choice.level, "slot": choice.slot, "player": who})
            if collapsed():
                break
        else:
            level, slot = player.choose_place(rnd)
            if twin.in_hand is None:
                break
            twin.place(level, slot, seat=player.seat, on_step=on_step)
            apply({"event": "place", "level": level, "slot": slot, "player": who})
    if not twin.collapsed and push_at_end:
        if twin.in_hand is not None:
            level, slot = by_name[rnd.turn].choose_place(rnd) if rnd.turn and rnd.hand else (twin.top_level() + 1, 1)
            twin.place(level, slot, on_step=on_step)
        twin.push(force=rng.uniform(14.0, 25.0), seat=rng.randrange(len(players)), on_step=on_step)
        twin.step(1.0, on_step)
        collapsed()
        result.ended_by = result.ended_by or "push"
    if rnd.over:
        result.winner = rnd.outcome.winner
        result.loser = rnd.outcome.loser
        result.ended_by = result.ended_by or ("collapse" if twin.collapsed else "over")
    result.collapsed_at = twin.collapse_time
    return result
