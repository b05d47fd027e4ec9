"""Reading the tower as the builder stacks it, level by level, into the referee's map.

Each level is read when it is the top: three blocks, the orientation the level must have, the
same reading over a few frames. A block read with low confidence, or one the block set cannot
hold (a third red 3), is asked about on the page rather than guessed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from referee.blocks import BlockSet
from referee.observations import TopLevelReading
from referee.tower import Tower


@dataclass(frozen=True)
class BuildConfig:
    stable_frames: int = 2
    min_confidence: float = 0.5


@dataclass
class LevelRead:
    level: int
    names: list[str | None]
    confidences: list[float]
    asked: list[int] = field(default_factory=list)  # slots the table had to confirm


class BuildReader:
    def __init__(self, block_set: BlockSet, config: BuildConfig = BuildConfig()):
        self.block_set = block_set
        self.config = config
        self.levels: list[LevelRead] = []
        self._last: tuple | None = None
        self._stable = 0

    @property
    def next_level(self) -> int:
        return len(self.levels) + 1

    def rows(self) -> list[list[str | None]]:
        return [lv.names for lv in self.levels]

    def on_frame(self, reading: TopLevelReading) -> LevelRead | None:
        """Feed one frame; returns the level once it has been read steadily (else None).

        Every level of the build holds three blocks, so a slot read surely empty is one not laid
        yet. A slot read empty without confidence is a block the camera cannot name (the twin's
        Wild in the middle of level 1, seed 110, read so on every frame): the level is taken with
        that slot doubtful, for the builder to name, instead of waiting for a reading that never
        comes while the builder lays the levels above. A reading with no block named at all is
        not taken as a level: the level below seen from a level too high could read so (on the
        twin none of 210 such views, 21 seeds, did: each had a slot read surely empty)."""
        level = self.next_level
        if reading.hands or reading.orientation != Tower.orientation(level):
            self._stable = 0
            return None
        names = tuple(reading.names)
        if (any(n is None and s.confidence >= self.config.min_confidence for n, s in zip(names, reading.slots))
                or all(n is None for n in names)):
            self._stable = 0
            return None
        self._stable = self._stable + 1 if names == self._last else 1
        self._last = names
        if self._stable < self.config.stable_frames:
            return None
        self._stable, self._last = 0, None
        return LevelRead(level, list(names), [s.confidence for s in reading.slots])

    def doubtful_slots(self, read: LevelRead) -> list[int]:
        """Slots read with too little confidence to take without asking."""
        return [s for s, conf in enumerate(read.confidences) if conf < self.config.min_confidence]

    def accept(self, read: LevelRead) -> None:
        self.levels.append(read)

    def over_counted(self) -> list[tuple[int, int]]:
        """(level, slot) of every block whose name the map holds more often than the set: one of
        them is misread, and only the builder can say which."""
        have = self.block_set.counts()
        used = Counter(n for lv in self.levels for n in lv.names if n)
        too_many = {n for n, k in used.items() if k > have.get(n, 0)}
        return [(lv.level, s) for lv in self.levels for s, n in enumerate(lv.names) if n in too_many]

    def correct(self, level: int, slot: int, name: str | None) -> None:
        read = self.levels[level - 1]
        read.names[slot] = name
        read.asked.append(slot)
