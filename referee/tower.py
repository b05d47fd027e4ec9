"""The tower map: which block stands where, and which blocks may be pulled.

Immutable, like every part of the engine's state: pulling or placing returns a new map, so any
earlier state handed out (to the page, the log, a test) stays as it was.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Sequence

from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET, Block, BlockError, BlockSet

SLOTS = (0, 1, 2)
MIDDLE = 1
LEVEL_HEIGHT_MM = 15.0

Level = tuple[Block | None, Block | None, Block | None]


@dataclass(frozen=True)
class PullOption:
    """A block that may be pulled: where it is and what it is."""

    level: int
    slot: int
    block: Block


def level_standing(level: Sequence[Block | None]) -> bool:
    """A level stands on its middle block, or on both side blocks."""
    return level[MIDDLE] is not None or (level[0] is not None and level[2] is not None)


@dataclass(frozen=True)
class Tower:
    """Levels bottom first (level 1 is `levels[0]`); `complete[i]` says level i+1 has held 3 blocks.

    Levels above the top (the highest level holding a block) are never kept, so `len(levels)` is
    the top level.
    """

    levels: tuple[Level, ...]
    complete: tuple[bool, ...]

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def build(cls, rows: Sequence[Sequence[Block | None]]) -> "Tower":
        levels = tuple(tuple(r) for r in rows)
        complete = tuple(all(b is not None for b in lv) for lv in levels)
        return cls(levels, complete)._trimmed()

    def _trimmed(self) -> "Tower":
        levels, complete = list(self.levels), list(self.complete)
        while levels and all(b is None for b in levels[-1]):
            levels.pop()
            complete.pop()
        return Tower(tuple(levels), tuple(complete))

    # -- geometry -----------------------------------------------------------------------------
    @property
    def top_level(self) -> int:
        """The highest level holding any block (0 for an empty tray)."""
        return len(self.levels)

    @property
    def top_complete(self) -> bool:
        return bool(self.complete) and self.complete[-1]

    @property
    def highest_completed_level(self) -> int:
        """The top level when it is complete, otherwise the level just under it."""
        return self.top_level if self.top_complete else self.top_level - 1

    @staticmethod
    def orientation(level: int) -> str:
        """Odd levels lie along the tray's x axis, even levels along y (levels alternate by 90 degrees)."""
        return "x" if level % 2 == 1 else "y"

    def exists(self, level: int, slot: int) -> bool:
        return 1 <= level <= self.top_level and slot in SLOTS

    def at(self, level: int, slot: int) -> Block | None:
        return self.levels[level - 1][slot]

    def level(self, level: int) -> Level:
        return self.levels[level - 1]

    def blocks(self) -> list[Block]:
        return [b for lv in self.levels for b in lv if b is not None]

    def positions(self) -> Iterable[tuple[int, int, Block]]:
        for i, lv in enumerate(self.levels, start=1):
            for s, b in enumerate(lv):
                if b is not None:
                    yield i, s, b

    # -- rules of position --------------------------------------------------------------------
    def pull_allowed_by_position(self, level: int) -> bool:
        """Only levels strictly below the highest completed level may be pulled from."""
        return level < self.highest_completed_level

    def is_available(self, level: int, slot: int) -> bool:
        """May be pulled by position, and its removal leaves its level standing."""
        if not self.exists(level, slot) or self.at(level, slot) is None:
            return False
        if not self.pull_allowed_by_position(level):
            return False
        after = list(self.level(level))
        after[slot] = None
        return level_standing(after)

    def available(self) -> list[PullOption]:
        return [PullOption(lv, s, b) for lv, s, b in self.positions() if self.is_available(lv, s)]

    def place_level(self) -> int:
        """Where a block goes without a foul: the top level while incomplete, else a new level above."""
        if self.top_level == 0 or self.top_complete:
            return self.top_level + 1
        return self.top_level

    def free_slots(self, level: int) -> list[int]:
        if level > self.top_level:
            return list(SLOTS)
        return [s for s in SLOTS if self.at(level, s) is None]

    # -- changes ------------------------------------------------------------------------------
    def without(self, level: int, slot: int) -> "Tower":
        levels = list(self.levels)
        row = list(levels[level - 1])
        row[slot] = None
        levels[level - 1] = tuple(row)
        return Tower(tuple(levels), self.complete)._trimmed()

    def with_block(self, level: int, slot: int, block: Block) -> "Tower":
        levels, complete = list(self.levels), list(self.complete)
        if level == self.top_level + 1:
            levels.append((None, None, None))
            complete.append(False)
        row = list(levels[level - 1])
        row[slot] = block
        levels[level - 1] = tuple(row)
        if all(b is not None for b in row):
            complete[level - 1] = True
        return Tower(tuple(levels), tuple(complete))

    def names(self) -> list[list[str | None]]:
        return [[b.name if b else None for b in lv] for lv in self.levels]


def tower_from_names(rows: object, block_set: BlockSet) -> Tower:
    """Read the `tower` field of a setup: levels bottom first, each 3 block names.

    Only the top level may have empty slots (`null`), for a set whose size is not a multiple of 3.
    """
    if not isinstance(rows, list) or not rows:
        raise BlockError("'tower' must be a list of levels, bottom first, each a list of 3 block names")
    parsed: list[list[Block | None]] = []
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, list) or len(row) != 3:
            raise BlockError(f"level {i} of the tower must be a list of 3 block names")
        level: list[Block | None] = []
        for name in row:
            if name is None:
                if i != len(rows):
                    raise BlockError(f"level {i} has an empty slot, but only the top level may be partly built")
                level.append(None)
            else:
                try:
                    level.append(Block.parse(name))
                except BlockError as exc:
                    raise BlockError(f"level {i}: {exc}") from None
        if not level_standing(level):
            raise BlockError(f"level {i} could not stand: it needs its middle block or both side blocks")
        parsed.append(level)
    block_set.check_contains(b.name for lv in parsed for b in lv if b is not None)
    tower = Tower.build(parsed)
    if len(tower.levels) != len(parsed):
        raise BlockError("the top level of the tower is empty")
    return tower


def random_tower(rng: random.Random, block_set: BlockSet | None = None) -> list[list[str | None]]:
    """The builder stacks all blocks at random, 3 to a level, bottom first."""
    blocks = list((block_set or BLOCK_SETS[DEFAULT_BLOCK_SET]).blocks)
    rng.shuffle(blocks)
    rows: list[list[str | None]] = []
    for i in range(0, len(blocks), 3):
        row: list[str | None] = [b.name for b in blocks[i : i + 3]]
        if len(row) == 1:
            row = [None, row[0], None]  # a lone block goes in the middle, where it stands
        elif len(row) == 2:
            row = [row[0], None, row[1]] if rng.random() < 0.5 else [row[0], row[1], None]  # both stand
        rows.append(row)
    return rows
