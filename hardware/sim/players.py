"""Simulated players: a skill profile, and choices made by listening to the referee.

A player reads what the referee says (`rnd.turn`, `rnd.call`, `rnd.legal_pulls()`,
`rnd.available()`, `rnd.place_options()`) and decides which block to pull, whether a second hand
creeps in, and where to place. The skill profile sets how often they break a rule on purpose-free
mistakes (wrong block, forbidden level, two hands) and how carefully they push (the physics
decides whether the tower survives it). No MuJoCo here: `selfplay` runs the choices on a twin.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from hardware.sim.twin import PullStyle
from referee.blocks import Color, Kind


@dataclass(frozen=True)
class SkillProfile:
    """Rates are per turn (0..1); `care` 1 pushes slowly and straight, 0 fast and wobbly."""

    care: float = 0.8
    two_hand_rate: float = 0.03
    wrong_block_rate: float = 0.03
    forbidden_level_rate: float = 0.02
    touch_rate: float = 0.04  # bumps the tower while another player is at it
    knock_rate: float = 0.03  # knocks on the table (impatience)
    tries: int = 0  # blocks a player may leave when the level above starts to follow (selfplay's max_tries)

    @classmethod
    def careful(cls) -> "SkillProfile":
        return cls(care=0.95, two_hand_rate=0.01, wrong_block_rate=0.01, forbidden_level_rate=0.005, touch_rate=0.02, knock_rate=0.01,
                   tries=2)

    @classmethod
    def average(cls) -> "SkillProfile":
        return cls(tries=1)

    @classmethod
    def careless(cls) -> "SkillProfile":
        return cls(care=0.35, two_hand_rate=0.1, wrong_block_rate=0.08, forbidden_level_rate=0.05, touch_rate=0.1, knock_rate=0.06)

    @classmethod
    def named(cls, name: str) -> "SkillProfile":
        presets = {"careful": cls.careful, "average": cls.average, "careless": cls.careless}
        if name not in presets:
            raise ValueError(f"unknown skill {name!r} (known: {', '.join(presets)})")
        return presets[name]()

    @property
    def style(self) -> PullStyle:
        return PullStyle(care=self.care)


@dataclass(frozen=True)
class PullChoice:
    level: int
    slot: int
    block: str
    two_hands: bool
    intent: str  # "legal", "wrong-block" or "forbidden-level": what the player did, not what the referee says


class SimPlayer:
    """One seat at the table."""

    def __init__(self, name: str, seat: int, skill: SkillProfile, rng: random.Random):
        self.name, self.seat, self.skill, self.rng = name, seat, skill, rng
        self.feel: Callable[[int, int], float] | None = None

    def _safety(self, rnd, level: int, slot: int) -> float:
        """Higher is safer: a full level's middle block, low-middle levels, not just under the top
        (a level with little weight on it slides along with the block pushed under it)."""
        row = rnd.tower.level(level)
        full = all(b is not None for b in row)
        score = 1.0 if (full and slot == 1) else (0.6 if full else 0.1)
        top = rnd.tower.top_level
        score -= 0.3 * (level <= 2) + 0.6 * (level >= top - 2) + 0.3 * (level == top - 3)
        return score

    def _tightness(self, rnd, level: int, slot: int) -> float:
        """How tight a block feels next to the others of its level (a player taps them all): its
        `feel` over the largest of its neighbours' (1: as tight as the tightest, ~0.4: loose)."""
        if self.feel is None:
            return 1.0
        row = rnd.tower.level(level)
        mine = self.feel(level, slot)
        others = [self.feel(level, s) for s, b in enumerate(row) if b is not None and s != slot]
        ref = max(others + [mine])
        return mine / ref if ref > 1e-6 else 1.0

    def _pick(self, rnd, options: list, careful: bool = True):
        if not options:
            return None
        care = self.skill.care if careful else 0.0
        scored = []
        for i, o in enumerate(options):
            score = care * self._safety(rnd, o[0], o[1]) + self.rng.random()
            if self.feel is not None and care > 0:
                score -= 3.0 * care**2 * self._tightness(rnd, o[0], o[1])  # a tight block is left alone
            scored.append((score, i))
        return options[max(scored)[1]]

    def choose_pull(self, rnd, feel: Callable[[int, int], float] | None = None,
                    avoid: set[tuple[int, int]] | frozenset = frozenset()) -> PullChoice | None:
        """The block this player pulls now (None if nothing can be pulled at all).

        `feel(level, slot)` is how tight a block is (the twin's load on it, in newtons): like a real
        player tapping blocks, a careful one prefers loose blocks among those the call allows.
        `avoid`: blocks already tried this turn (the player gave up on them)."""
        self.feel = feel
        tower = rnd.tower
        legal = [(o.level, o.slot, o.block.name) for o in rnd.legal_pulls() if (o.level, o.slot) not in avoid]
        available = [(o.level, o.slot, o.block.name) for o in rnd.available() if (o.level, o.slot) not in avoid]
        two = self.rng.random() < self.skill.two_hand_rate
        roll = self.rng.random()
        if roll < self.skill.forbidden_level_rate:
            hcl = tower.highest_completed_level
            forbidden = [(lv, s, b.name) for lv, s, b in tower.positions() if lv >= hcl]
            pick = self._pick(rnd, forbidden, careful=False)
            if pick:
                return PullChoice(*pick, two_hands=two, intent="forbidden-level")
        elif roll < self.skill.forbidden_level_rate + self.skill.wrong_block_rate:
            wrong = [o for o in available if o not in legal]
            pick = self._pick(rnd, wrong)
            if pick:
                return PullChoice(*pick, two_hands=two, intent="wrong-block")
        pick = self._pick(rnd, legal) or self._pick(rnd, available)
        if pick is None:
            return None
        return PullChoice(*pick, two_hands=two, intent="legal" if pick in legal else "wrong-block")

    def choose_place(self, rnd) -> tuple[int, int]:
        """Where the block in hand goes: a careful player fills the middle of a new level first."""
        options = rnd.place_options()
        if not options:
            tower = rnd.tower
            level = tower.place_level()
            return level, 1
        middle = [o for o in options if o[1] == 1]
        if middle and self.rng.random() < self.skill.care:
            return middle[0]
        return self.rng.choice(options)

    def choose_color(self, rnd, numbers_only: bool = False) -> Color:
        """Name the color with the most available blocks (what a sensible player does)."""
        counts: Counter = Counter()
        for o in rnd.available():
            if o.block.color is not None and (not numbers_only or o.block.kind is Kind.NUMBER):
                counts[o.block.color] += 1
        if not counts:
            return self.rng.choice(list(Color))
        best = max(counts.values())
        return self.rng.choice(sorted((c for c, n in counts.items() if n == best), key=lambda c: c.value))
