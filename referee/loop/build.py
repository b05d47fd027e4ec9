"""Reading the tower as the builder stacks it, level by level, into the referee's map.

Each level is read when it is the top: three blocks, the orientation the level must have, the
same reading over a few frames. A block read with low confidence, or one the block set cannot
hold (a third red 3), is asked about on the page rather than guessed.

A level the builder covers with the next one before the camera has read it (hands over the tower
all the while) is told from the load cell: the tray then weighs more than one more level above
the last level read, while the camera sees the level above's orientation. Once the builder
confirms it (`BuildQuestions`: the weight cannot tell blocks from a hand resting on the tray away
from the tower), its three blocks are asked about and the reading goes on with the level above.
A weight the builder denies is not used while it stays. Two levels laid unseen show as a whole
level more on the tray: the camera's view in the awaited level's orientation is then the level
above the next, and is not taken for it. The weight claims nothing while the camera's view one
level up is the level below seen again from too high (its own blocks in their slots): nothing
stands on it, and what the tray weighs more is a hand resting on the tray (twin: 60 questions
answered no in 20 builds before, none after).

With no weight to vouch (no load cell, or one that stopped answering), the camera alone claims
the covered level, for the builder to confirm the same way. The view one level above the level
awaited is in the orientation of the level below; while the builder pauses it shows that level
below from one level too high, named and sure (on the twin, in every pause), so blocks seen
there are no sign of a level by themselves. Their names are: the level below seen so names its
own blocks in their slots, a level laid over the awaited one names others (`BuildConfig
.covered_names`). A view the builder denies is not claimed from again until hands come.
Two levels laid unseen the names cannot tell: the camera's view in the awaited level's
orientation is then the top, two levels higher, read named and sure as a level laid in view
(twin: every such view, at the same confidences). Before a level is taken, the height search
says which of the two heights the top is at (`MapGuidedReader.two_levels_up`); two up, the
level is claimed covered, and once confirmed the level between is claimed from the same top.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from referee.blocks import BlockSet
from referee.observations import TopLevelReading
from referee.tower import Tower


@dataclass(frozen=True)
class BuildConfig:
    stable_frames: int = 2
    min_confidence: float = 0.5
    block_g: float = 17.0  # one block's weight (the load cell's settings)
    # the tray settled this many blocks above the last level read: the level awaited is covered
    # when the camera sees the level above (it holds three; a half block clear of them, so a
    # base weighed a block short still holds), and whatever it sees from three blocks more
    covered_blocks: float = 3.5
    # with a load cell (the tray settled within this many frames with no hands), a steady reading
    # is taken only once the tray has settled on one of its frames: the weight that would show a
    # level laid unseen settles a few tenths of a second after the last hand leaves, while the
    # camera can read the top at once
    scale_frames: int = 30
    # Without a weight to vouch (no load cell, or one silent for scale_frames frames), the camera
    # alone claims the awaited level covered when its view in the level above's orientation names
    # this many blocks, each surely, that the level below does not hold in the same slot. On the
    # twin (seeds 101-120, levels 1-8) the level below seen from too high, in a pause (320 frames)
    # or with the awaited level begun (60), never named two: at most one, a misread (seed 116, a
    # sure yellow draw-two for the red one below); a level laid over an unseen one (280 frames)
    # always named two, three but on 8 where a duplicate or a same name stands in the same slot
    covered_names: int = 2
    # ... once that view has named the same blocks on this many frames running with no hands: one
    # frame more than a level's reading, since a claim costs the builder a question (the twin's
    # views read the same on every frame, so it costs nothing there)
    covered_seen_frames: int = 3


@dataclass
class LevelRead:
    level: int
    names: list[str | None]
    confidences: list[float]
    asked: list[int] = field(default_factory=list)  # slots the table had to confirm
    covered: bool = False  # laid over before the camera read it: every block is the builder's to name
    seen: tuple[str | None, ...] = (None, None, None)  # the camera's names, before the builder's corrections
    by_camera: bool = False  # found covered by the camera alone (no weight vouched for it)


class BuildReader:
    def __init__(self, block_set: BlockSet, config: BuildConfig = BuildConfig()):
        self.block_set = block_set
        self.config = config
        self.levels: list[LevelRead] = []
        self._last: tuple | None = None
        self._stable = 0
        self._covered_frames = 0
        self._vouched = False  # some frame of the steady reading had the tray settled (or no load cell)
        self._floor_g: float | None = None  # the lightest the tray settled before the first level
        self._now_g: float | None = None    # its settled weight on this frame (None: moving, or hands)
        self._base_g: float | None = None   # its weight with the last level read laid ...
        self._base_due = False              # ... to be taken from the next settled weight
        self._unweighed = 1 << 30           # frames with no hands since the tray last settled
        self._claimed_g: float | None = None  # the weight a covered level was last claimed at ...
        self._denied_g: float | None = None   # ... and one the builder denied
        self._over: tuple | None = None       # camera alone: the view in the level above's orientation ...
        self._over_frames = 0                 # ... on this many frames running
        self._claimed_view: tuple | None = None  # the view a covered level was last claimed from ...
        self._denied_views: list[tuple] = []     # ... and the views the builder denied (until hands come)
        self._claimed_two_up = False             # (that view the top two levels up)
        self._top_over: tuple | None = None      # the top seen two levels above the covered level accepted last

    @property
    def next_level(self) -> int:
        return len(self.levels) + 1

    def rows(self) -> list[list[str | None]]:
        return [lv.names for lv in self.levels]

    def on_frame(self, reading: TopLevelReading, settled_g: float | None = None,
                 two_up: Callable[[int], bool] | None = None) -> LevelRead | None:
        """Feed one frame, with the tray's settled weight when the load cell has one; returns
        the level once it has been read steadily, or found covered (else None). `two_up(level)`
        (the camera's `MapGuidedReader.two_levels_up` on this frame) is asked, with no weight to
        vouch, before a level is taken: whether the top is two levels higher.

        Every level of the build holds three blocks, so a slot read surely empty is one not laid
        yet. A slot read empty without confidence is a block the camera cannot name (the twin's
        Wild in the middle of level 1, seed 110, read so on every frame): the level is taken with
        that slot doubtful, for the builder to name, instead of waiting for a reading that never
        comes while the builder lays the levels above. A reading with no block named at all is
        not taken as a level: the level below seen from a level too high could read so (on the
        twin none of 210 such views, 21 seeds, did: each had a slot read surely empty). With no
        weight to vouch, a view in the level above's orientation claims the awaited level covered
        only when it names blocks the level below does not hold (`_seen_covered`)."""
        level = self.next_level
        self._now_g = None
        if reading.hands:
            self._stable = self._covered_frames = self._over_frames = 0
            self._denied_views.clear()  # the hands may have laid what the builder denied: ask again
            return None
        denied = settled_g is not None and self._denied(settled_g)
        if denied:
            settled_g = None  # weight the builder said is no block: the camera alone while it stays
        else:
            self._weighed(settled_g)
        # a frame the weight can vouch for: settled, or no load cell to wait for (none, one that
        # stopped answering, or weight the builder said is no block)
        vouched = settled_g is not None or denied or self._camera_alone
        above = self._blocks_above_base(settled_g)
        one_up = reading.orientation == Tower.orientation(level + 1)
        # the level below seen again from one level up, or the awaited level seen bare (every
        # slot surely empty; before level 1, the empty tray): nothing stands on the level below,
        # whatever the tray weighs (a hand resting on the tray away from the tower weighs like
        # blocks). Only the weight's claims ask it.
        nothing_laid = above is not None and (
            (one_up and self._below_seen_again(reading)) or self._seen_bare(reading, level))
        if above is not None and above >= self.config.covered_blocks + 3 and not nothing_laid:
            # a whole level over the awaited one: the view in its orientation is the level above that
            self._stable = 0
            return self._covered(level)
        if reading.orientation != Tower.orientation(level):
            self._stable = 0
            seen_above = one_up and any(n is not None for n in reading.names) and not nothing_laid
            if seen_above and above is not None and above >= self.config.covered_blocks:
                return self._covered(level)
            if settled_g is not None:
                self._covered_frames = 0
            if one_up and self._camera_alone:  # no weight to vouch: the names seen must
                return self._seen_covered(level, reading)
            self._over_frames = 0
            return None
        self._covered_frames = self._over_frames = 0
        names = tuple(reading.names)
        if (any(n is None and s.confidence >= self.config.min_confidence for n, s in zip(names, reading.slots))
                or all(n is None for n in names)):
            self._stable = 0
            return None
        if names == self._last and self._stable:
            self._stable += 1
            self._vouched = self._vouched or vouched
        else:
            self._stable, self._vouched = 1, vouched
        self._last = names
        # with a load cell, the tray must have settled on some frame of the steady reading: the
        # weight that shows two levels laid unseen (above) settles after the camera reads the top
        if self._stable < self.config.stable_frames or not self._vouched:
            return None
        self._stable, self._last = 0, None
        if self._camera_alone and two_up is not None and self._two_up(level, names, two_up):
            return self._claim_seen(level, names, two_up=True)
        return LevelRead(level, list(names), [s.confidence for s in reading.slots], seen=names)

    def load_cell_lost(self) -> None:
        """The load cell has stopped answering: no settled weight will come to vouch for a reading
        or tell a level laid unseen, so the camera reads on alone at once (not after
        `scale_frames` frames: a builder can lay a level in that time). A settled weight again
        ends it."""
        self._unweighed = max(self._unweighed, self.config.scale_frames + 1)

    @property
    def _camera_alone(self) -> bool:
        """No weight can vouch for what the camera sees: no load cell, or one that has not
        settled for `scale_frames` frames with no hands (one that stopped answering)."""
        return self._unweighed > self.config.scale_frames

    def _weighed(self, settled_g: float | None) -> None:
        """Note the tray's weight on a frame with no hands (a hand on the tower weighs too)."""
        if settled_g is None:
            self._unweighed += 1
            return
        self._unweighed = 0
        self._now_g = settled_g
        if not self.levels:
            self._floor_g = settled_g if self._floor_g is None else min(self._floor_g, settled_g)
        if self._base_due:
            self._base_g, self._base_due = settled_g, False

    @property
    def _base(self) -> float | None:
        """The tray's weight with the last level read laid (the empty tray's before the first)."""
        return self._base_g if self.levels else self._floor_g

    def _blocks_above_base(self, settled_g: float | None) -> float | None:
        """How many blocks the tray weighs above the last level read (above the empty tray before
        the first), or None when that is not known."""
        base = self._base
        if settled_g is None or base is None:
            return None
        return (settled_g - base) / self.config.block_g

    def _covered(self, level: int) -> LevelRead | None:
        """The awaited level as covered, once the frames have said so steadily: the tray weighs
        more than its three blocks above the last level read, and the camera sees a block on the
        level above (or the tray weighs a whole level more still, and whatever the camera sees in
        the awaited level's orientation is the level above that: two levels laid unseen)."""
        self._claimed_g, self._claimed_view = self._now_g, None
        self._covered_frames += 1
        if self._covered_frames < self.config.stable_frames:
            return None
        self._covered_frames = 0
        return LevelRead(level, [None, None, None], [0.0, 0.0, 0.0], covered=True)

    def _seen_covered(self, level: int, reading: TopLevelReading) -> LevelRead | None:
        """Camera alone: the awaited level as covered, once the view in the level above's
        orientation has named the same blocks on `covered_seen_frames` frames running, at least
        `covered_names` of them surely and other than the level below's in their slots. The level
        below seen from one level too high (on the twin, in every pause) names the level below's
        own blocks: it is no new level. Nor is a view the builder denied, until hands come."""
        sure = self._sure_names(reading)
        known = self._known_views()
        new = known is not None and all(_differing(sure, view) >= self.config.covered_names for view in known)
        if not (new or self._the_top_over(sure)):
            self._over_frames = 0
            return None
        self._over_frames = self._over_frames + 1 if sure == self._over else 1
        self._over = sure
        if self._over_frames < self.config.covered_seen_frames:
            return None
        self._over_frames = 0
        return self._claim_seen(level, sure)

    def _sure_names(self, reading: TopLevelReading) -> tuple[str | None, ...]:
        """The blocks the reading names surely (None where it names none, or not surely)."""
        return tuple(n if s.confidence >= self.config.min_confidence else None
                     for n, s in zip(reading.names, reading.slots))

    def _below_seen_again(self, reading: TopLevelReading) -> bool:
        """Whether the view one level above the awaited level is the level below seen from too
        high (or a view the builder denied): at least `covered_names` blocks named surely, each
        the one that view holds in its slot. A level laid over an unseen one names others (on
        the twin, 280 frames: two at least). One misread name is not taken for it: the weight
        then decides, as before."""
        known = self._known_views()
        sure = self._sure_names(reading)
        if known is None or sum(n is not None for n in sure) < self.config.covered_names:
            return False
        return any(_differing(sure, view) == 0 for view in known)

    def _seen_bare(self, reading: TopLevelReading, level: int) -> bool:
        """Whether the camera sees the awaited level bare: in its orientation, every slot read
        surely empty (the level below, or before level 1 the empty tray, shows through). Two
        levels laid unseen over it would show their top one level up, named."""
        return reading.orientation == Tower.orientation(level) and all(
            s.block is None and s.confidence >= self.config.min_confidence for s in reading.slots)

    def _the_top_over(self, names: tuple) -> bool:
        """Whether `names` are the top found two levels above the covered level below (`_two_up`):
        the level between is laid too, whether or not the builder has named the covered level's
        blocks yet."""
        top = self._top_over
        if top is None or _differing(names, (None, None, None)) < self.config.covered_names:
            return False
        return _differing(names, top) < self.config.covered_names  # (the same top, a name aside)

    def _two_up(self, level: int, names: tuple, two_up: Callable[[int], bool]) -> bool:
        """Camera alone, a level about to be taken: whether it is the top of two levels laid
        unseen (the awaited one and the next), as the height search scores it, and not a view
        the builder denied. Without the weight, the names cannot tell: the top of two levels laid
        unseen, two levels above the awaited one and in its orientation, reads named and sure."""
        if any(_differing(names, view) < self.config.covered_names for view in self._denied_views):
            return False
        return two_up(level)

    def _claim_seen(self, level: int, view: tuple, two_up: bool = False) -> LevelRead:
        """The awaited level claimed covered by the camera alone, from `view` (the names seen;
        `two_up`: the top, two levels up)."""
        self._claimed_view, self._claimed_g, self._claimed_two_up = view, None, two_up
        return LevelRead(level, [None, None, None], [0.0, 0.0, 0.0], covered=True, by_camera=True)

    def _known_views(self) -> list[tuple] | None:
        """What the view one level above the awaited level shows when nothing new is there: the
        empty tray (no name) before the first level; then the level below, as the camera read it
        and as the map holds it; and the views the builder denied. None while a covered level
        below still waits for the builder to name its blocks (its blocks, seen from too high,
        would read as new)."""
        if not self.levels:
            return [(None, None, None)] + self._denied_views
        below = self.levels[-1]
        if below.covered and None in below.names:
            return None
        return [tuple(below.names), below.seen] + self._denied_views

    def unread_blocks(self, settled_g: float | None) -> int:
        """Blocks the tray holds beyond the levels read, as its settled weight says (0 when it
        cannot say: no weight, or a weight the builder said is no block)."""
        if settled_g is None or self._denied(settled_g):
            return 0
        above = self._blocks_above_base(settled_g)
        if above is None:
            return 0
        return max(0, int(round(above)))

    def deny_covered(self) -> None:
        """The builder says the level last claimed covered was not laid. Claimed from the weight,
        the weight is something else on the tray (a hand resting on it): while the tray weighs that
        (within half a block), the weight is not used, no level is claimed again, and the camera
        reads on alone. Claimed by the camera alone, the view misled it: no level is claimed again
        from that view (nor one naming fewer than `covered_names` blocks other than it) until
        hands come over the tower, which may lay what the builder denied."""
        if self._claimed_view is not None:
            self._denied_views.append(self._claimed_view)
        else:
            self._denied_g = self._claimed_g

    def _denied(self, settled_g: float) -> bool:
        return self._denied_g is not None and abs(settled_g - self._denied_g) < 0.5 * self.config.block_g

    def doubtful_slots(self, read: LevelRead) -> list[int]:
        """Slots read with too little confidence to take without asking."""
        return [s for s, conf in enumerate(read.confidences) if conf < self.config.min_confidence]

    def accept(self, read: LevelRead) -> None:
        """Take the level into the map. The tray's weight with it laid is the base the next level
        is weighed from: as the frame that read it weighed it, else the next settled weight
        (the next level's first blocks may be on it by then: the base can only err heavy, and a
        covered level then goes unseen, never one made up); for a covered level, whose level
        above is on it already, the last base and three blocks."""
        if read.covered:
            base = self._base
            self._base_g = None if base is None else base + 3 * self.config.block_g
            self._base_due = False
        else:
            self._base_g = self._now_g
            self._base_due = self._now_g is None
        self.levels.append(read)
        self._over, self._over_frames, self._denied_views = None, 0, []
        self._top_over = self._claimed_view if read.covered and read.by_camera and self._claimed_two_up else None

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


def _differing(names: tuple, view: tuple) -> int:
    """How many slots `names` names a block in that `view` does not hold there."""
    return sum(1 for n, v in zip(names, view) if n is not None and n != v)
