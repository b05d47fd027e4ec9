"""Fusion: the senses' observations become referee events, with the evidence behind each.

- A lift (load cell) with the hands seen reaching in (camera: which seat) starts a pull.
- The block that appears on top (camera), once the hands have left, with the weight back (load
  cell), is the place; the tower map says where that block came from, so the pull is emitted then,
  followed by "two hands" if the puller's two hands were on the tower, then the place.
- A collapse (impact plus lasting weight loss) is blamed through a touch by whoever's hand is on
  the tower at that moment, then the collapse.
- Where the camera and the map disagree, the fuser asks (a `Question`) instead of guessing.

The fuser reads the current `Round` but never changes it: it only proposes events.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Union

from referee.blocks import Block
from referee.engine import Round
from referee.observations import HandReading, SensorEvent, SensorEventKind, SlotReading, TopLevelReading
from referee.tower import Tower


class FusionConfigError(ValueError):
    """Fusion settings that cannot be used; the message names the file and the setting."""


@dataclass(frozen=True)
class FusionConfig:
    """Thresholds of the fusion, from a calibration file (never buried in code)."""

    pull_window_s: float = 2.5       # hands seen this long before a lift are the puller's
    settle_frames: int = 2           # hand-free frames that must agree on the top level after a place
    ask_below: float = 0.25          # a block reading below this is asked about when even the map cannot settle it
    two_hands_frames: int = 3        # frames showing two hands at the tower during a pull to call "Uno!"
    two_hands_after_lift_s: float = 0.3  # two hands count until this long after the block came out
    withdraw_s: float = 0.8          # hands seen this soon after a place was called are that player's, withdrawing
    two_hands_apart_deg: float = 20.0  # ... and only arms entering this far apart (one wide arm is not two hands)
    which_block_from_frames_max: int = 4  # a doubtful block among this many candidates may be named by
                                     # where the pull's frames show it sticking out (more: the table is asked)
    placer_arm_deg: float = 30.0     # after a place, a hand whose arm enters this near the placer's is theirs, withdrawing
    place_timeout_s: float = 4.0     # the camera must confirm a place this long after the weight returns
    vanish_frames: int = 3           # frames with no block where the map's top is: the tower fell ...
    impact_window_s: float = 2.0     # ... confirmed by an impact the tray felt this recently
    place_under_hand_confidence: float = 0.75  # a new block read this surely counts while the hand withdraws
    faint_slot_below: float = 0.25   # one block is laid at a time: beside one new block read surely, another
                                     # "new" slot read below this is a misreading, not a second block
    foul_confidence: float = 0.9     # a reading that would mean a foul counts alone only this sure; below, a
                                     # legal block among the camera's candidates is put to the table first
    top_gone_under_hand_frames: int = 10  # a top-level slot read empty this many frames in a row under a hand ...
    top_gone_under_hand_confidence: float = 0.9  # ... this surely, after the lift: its block was pulled
    glyph_sure_confidence: float = 0.75  # a glyph read below this may be one of its runner-ups: where the pull's
                                     # frames cannot tell its place from a runner-up's, the table is asked
    runner_up_min: float = 0.05      # ... a runner-up the reader gave at least this much
    axis_tip_frames: int = 3         # a pull's fingertips seen on at least this many frames ...
    axis_tip_share: float = 0.8      # ... this share of them at the end faces of one direction's blocks (beyond
    axis_tip_out: float = 0.8        # this part of the tower's half side along it, within it across it) tell the
                                     # direction of the level the block was pushed out of
    doubtful_still_frames: int = 2   # a new block still doubtful on this many still frames (the weight back) is
                                     # named from the pull's frames, or put to the table (waiting longer
                                     # changed no call on the recorded matches, only the time to it)
    glyph_share_min: float = 0.95    # a new block read below place_under_hand_confidence still counts when this
                                     # share of the reader's belief goes to its glyph (the doubt is whether the
                                     # slot is filled, which the weight back settles) ...
    glyph_confidence_min: float = 0.5  # ... read at least this surely, the same on settle_frames frames in a row

    @classmethod
    def from_file(cls, path: str | Path) -> "FusionConfig":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise FusionConfigError(f"cannot read the fusion settings {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise FusionConfigError(f"the fusion settings {path} are not valid JSON: {exc.msg} (line {exc.lineno})") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, where: str = "fusion settings") -> "FusionConfig":
        if not isinstance(data, dict):
            raise FusionConfigError(f"the {where} must be a JSON object")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name.startswith("_"):
                continue
            if name not in known:
                raise FusionConfigError(f"unknown setting '{name}' in the {where}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise FusionConfigError(f"setting '{name}' in the {where} must be a number >= 0, not {value!r}")
            values[name] = type(getattr(cls(), name))(value)
        return cls(**values)


@dataclass(frozen=True)
class Footprint:
    """Where the tower stands on the tray (tray millimetres): its centre and half its side."""

    center_mm: tuple[float, float]
    half_mm: float


@dataclass(frozen=True)
class SeatingPlan:
    """Where each seat sits around the tray: the direction (degrees, tray frame) from the tower."""

    angles_deg: tuple[float, ...]
    clear_fraction: float = 0.4  # an arm counts for a seat only within this part of the seats' spacing

    @classmethod
    def evenly(cls, n_seats: int, first_deg: float = 0.0) -> "SeatingPlan":
        return cls(tuple((first_deg + 360.0 * i / n_seats) % 360.0 for i in range(n_seats)))

    def seat_of(self, hand: HandReading) -> int | None:
        """The seat a hand belongs to, when the camera saw where its arm comes from (else None).

        The side of the tower a fingertip is on is no evidence of the seat: a player pushes a
        block from whichever end it shows, reaching round the tower. Only the arm's entry
        direction (or a seat already known) says whose hand it is.
        """
        if hand.seat is not None:
            return hand.seat
        if hand.entry_deg is None:
            return None
        gaps = sorted((_angle_gap(hand.entry_deg, a), s) for s, a in enumerate(self.angles_deg))
        if len(gaps) > 1 and gaps[0][0] > self.clear_fraction * self.spacing_deg():
            return None  # an arm between two seats says nothing about whose it is
        return gaps[0][1]

    def spacing_deg(self) -> float:
        """The smallest angle between two neighbouring seats."""
        a = sorted(self.angles_deg)
        if len(a) < 2:
            return 360.0
        return min(min(_angle_gap(x, y) for x, y in zip(a, a[1:])), _angle_gap(a[-1], a[0]))


def two_arms(hands, apart_deg: float) -> bool:
    """Two hands at the tower: two arms seen entering at least `apart_deg` apart. A "second hand"
    entering where the first does is the camera splitting one wide arm (or a hand and its sleeve);
    an "Uno!" penalty is not called on that."""
    if len(hands) < 2:
        return False
    angles = [h.entry_deg for h in hands]
    if any(a is None for a in angles):
        return True  # the camera could not tell where they came from: count them
    return any(_angle_gap(a, b) >= apart_deg for i, a in enumerate(angles) for b in angles[i + 1:])


def _angle_gap(a: float, b: float) -> float:
    d = abs(a - b) % 360.0
    return min(d, 360.0 - d)


@dataclass(frozen=True)
class FusedEvent:
    event: dict
    evidence: dict
    released_at: float | None = None


@dataclass(frozen=True)
class Question:
    """The referee is unsure: it says so on the page and asks the table to pick."""

    text: str
    options: tuple[str, ...]
    context: dict = field(default_factory=dict)
    kind: str = "which_block"  # "which_block" (a block name), "which_spot" ("level/slot" it left), "where_placed",
                               # "who_touched" (a player, or NOBODY, after a collapse)


Output = Union[FusedEvent, Question]
NOBODY = "nobody"  # the answer to "who was touching the tower?" when no one was
OTHER_BLOCK = "another block"  # the answer to "is the block placed on top X?" when it is none of those offered


@dataclass
class _Pull:
    """One stretch of hands over the tower: a pull and place, or only a touch."""

    lift_t: float | None
    votes: Counter
    two_hand_frames: int = 0
    place_t: float | None = None
    stable: int = 0
    last_names: tuple | None = None
    last_hand_t: float | None = None
    top_gone: Counter = field(default_factory=Counter)  # top-level slots seen empty after the lift
    gone_under_hand: Counter = field(default_factory=Counter)  # ... and the current run of frames seen so under a hand
    entries: list = field(default_factory=list)  # where the arms seen during this pull came in (degrees)
    tips: list = field(default_factory=list)  # fingertips (tray mm) seen while the block came out




class Fuser:
    """Turns one table's observations into referee events, turn after turn."""

    def __init__(self, seating: SeatingPlan, config: FusionConfig = FusionConfig(), footprint: Footprint | None = None):
        self.seating = seating
        self.config = config
        self.footprint = footprint  # the tower on the tray: where a fingertip pushing a block out is
        self.recent: list[TopLevelReading] = []  # frames of the last pull window
        self.pull: _Pull | None = None
        self.vanished = 0
        self.last_impact_t: float | None = None
        self.collapsed = False
        # After a place is called (perhaps while the hand lets go), that hand is still over the
        # tower for a moment: it is not the next pull's hand, nor a second hand.
        self.hands_leaving = False
        self.clear_since: float | None = None
        self.place_called_t: float | None = None
        self.placer_entries: tuple[float, ...] = ()  # where the placer's arms came in
        # The table is being asked about the last place (the map waits for the answer): the block
        # it put on top is not a new block appearing without a hand (set by the loop per frame).
        self.asking_about_the_place = False

    # -- inputs ---------------------------------------------------------------------------------
    def on_frame(self, reading: TopLevelReading, rnd: Round) -> list[Output]:
        """One camera reading. Hands start (or feed) a pull; a settled new block on top ends it.

        An uncertain reading (a hand hiding part of the top) still says where the hands are, so it
        feeds the pull's seat and two-hand evidence; only sure readings decide a place or a collapse.
        """
        reading, only_the_placer = self._without_the_placers_hands(reading)
        self.recent.append(reading)
        horizon = reading.t - self.config.pull_window_s
        while self.recent and self.recent[0].t < horizon:
            self.recent.pop(0)
        if not reading.uncertain:
            if not any(s.occupied for s in reading.slots):
                # A hand over the tower may hide the top's only block (seed 107): under a hand the
                # top counts as gone only after an impact the tray felt.
                felt = self.last_impact_t is not None and reading.t - self.last_impact_t <= self.config.impact_window_s
                self.vanished += 1 if felt or not reading.hands else 0
                out = self._collapse_seen(reading, rnd)
                if out:
                    return out
            else:
                self.vanished = 0
        if only_the_placer:
            return []  # the last player's hand withdrawing
        if reading.hands:  # a hand over the tower may hide or hold a block: wait until it has gone
            pull = self.pull or self._start(None)
            for h in reading.hands:
                seat = self.seating.seat_of(h)
                if seat is not None:
                    pull.votes[seat] += 1
                if h.entry_deg is not None:
                    pull.entries.append(h.entry_deg)
            pulling = pull.lift_t is None or reading.t <= pull.lift_t + self.config.two_hands_after_lift_s
            if pulling:
                pull.tips += [h.tip_mm for h in reading.hands]
            if pulling and two_arms(reading.hands, self.config.two_hands_apart_deg):
                pull.two_hand_frames += 1  # two hands at the tower while the block comes out
            pull.last_hand_t = reading.t
            self._note_top_gone(pull, reading, rnd)
            if pulling:
                pull.stable = 0
                return []
            # The block is out and a hand is over the top: it may be letting go of it. A new block
            # read surely, in the same place on consecutive frames, is the place (the referee need
            # not wait for the hand to withdraw; the weight settling comes later and only confirms).
            return self._settle(pull, reading, rnd, self.config.place_under_hand_confidence)
        if reading.uncertain and self.pull is None:
            return []
        if reading.uncertain:
            # Some slot is read weakly (often an old block), but the new block may be clear: the
            # place counts when that block is read surely, as under a withdrawing hand. A new block
            # that stays doubtful while the top holds still is put to the table (not left unsaid).
            out = self._settle(self.pull, reading, rnd, self.config.place_under_hand_confidence)
            if out or self.pull is None or self.pull.stable < self.config.doubtful_still_frames:
                return out
            return self._ask_which_block(self.pull, reading, rnd) or self._place_unseen(self.pull, reading, rnd)
        if self.pull is None:
            if self.asking_about_the_place or placed_slot(rnd.tower, reading) is None:
                return []
            self.pull = self._start(None)  # a block appeared without a hand seen: still judge it
        pull = self.pull
        self._note_top_gone(pull, reading, rnd)
        out = self._settle(pull, reading, rnd, 0.0)
        if out:
            return out
        if pull.stable < self.config.settle_frames:
            return []
        out = self._put_back_on_top(pull, reading, rnd)
        if out:
            return out
        if pull.lift_t is None:
            # Hands came and went and nothing new is on top: a touch at most. (Weight coming back
            # without a lift is a block already called, settling: no pull is left open for the
            # next player's hands to join.)
            self.pull = None
            return []
        return self._place_unseen(pull, reading, rnd)

    def _placed_by(self, pull: "_Pull", reading: TopLevelReading) -> None:
        """A place is called: the hands of that pull still over the tower are withdrawing."""
        self.hands_leaving = bool(reading.hands)
        self.place_called_t = reading.t
        self.placer_entries = tuple(pull.entries[-8:])

    def _without_the_placers_hands(self, reading: TopLevelReading) -> tuple[TopLevelReading, bool]:
        """The frame without the hands of the player who just placed (withdrawing after the call),
        and whether it showed only theirs. A hand whose arm comes in far from the placer's (another
        seat) is the next pull's, even a moment after the call; a hand whose arm the camera could
        not place counts as the placer's while they withdraw."""
        withdrawing = self.place_called_t is not None and reading.t - self.place_called_t < self.config.withdraw_s
        if not (self.hands_leaving or withdrawing):
            return reading, False
        if not reading.hands:
            if self.hands_leaving:
                self.hands_leaving, self.clear_since = False, reading.t
            return reading, False
        kept = tuple(h for h in reading.hands if not self._placers(h))
        if len(kept) == len(reading.hands):
            if self.hands_leaving:
                self.hands_leaving, self.clear_since = False, reading.t
            return reading, False
        return replace(reading, hands=kept), not kept

    def _placers(self, hand: HandReading) -> bool:
        if hand.entry_deg is None or not self.placer_entries:
            return True
        near = self.config.placer_arm_deg
        return any(_angle_gap(hand.entry_deg, e) <= near for e in self.placer_entries)

    def _place_unseen(self, pull: "_Pull", reading: TopLevelReading, rnd: Round) -> list[Output]:
        """The weight came back long ago but the camera cannot say where the block went: ask."""
        if pull.place_t is None or reading.t - pull.place_t <= self.config.place_timeout_s:
            return []
        self.pull = None
        return [Question("The referee did not see where the block went: please show where it was placed.",
                         place_choices(rnd.tower),
                         {"player": self._name(rnd, pull), "two_hand_frames": pull.two_hand_frames,
                          "lift_t": pull.lift_t, "place_t": pull.place_t, "pushed_along": self._pushed_along(pull)},
                         kind="where_placed")]

    def _note_top_gone(self, pull: "_Pull", reading: TopLevelReading, rnd: Round) -> None:
        """After the lift, a block the map has on top that the camera surely sees missing.

        A hand over the top may hide a block for a moment (up to 5 frames in a row on the recorded
        matches), so under hands only a long run of sure "empty" readings of that slot counts
        (`top_gone_under_hand_frames`); hand-free frames count at once."""
        top = rnd.tower.top_level
        if pull.lift_t is None or not top or reading.orientation != Tower.orientation(top):
            return
        have = rnd.tower.level(top)
        if reading.hands:
            c = self.config
            for i in range(3):
                slot = reading.slots[i]
                empty = have[i] is not None and not slot.occupied and slot.confidence >= c.top_gone_under_hand_confidence
                pull.gone_under_hand[i] = pull.gone_under_hand[i] + 1 if empty else 0
                if pull.gone_under_hand[i] >= c.top_gone_under_hand_frames:
                    pull.top_gone[i] = max(pull.top_gone[i], c.settle_frames)
            return
        if reading.uncertain:
            return
        for i in range(3):
            if have[i] is not None and not reading.slots[i].occupied:
                pull.top_gone[i] += 1

    def _placed(self, pull: "_Pull", tower: Tower, reading: TopLevelReading) -> tuple[int, int] | None:
        """Where this pull's block was laid, as the camera shows the top now."""
        return placed_slot(tower, reading, self._vacated(pull, tower, reading), self.config.faint_slot_below)

    def _vacated(self, pull: "_Pull", tower: Tower, reading: TopLevelReading) -> frozenset[int]:
        """Top-level slots seen emptied after the lift on enough hand-free frames, and still empty:
        the pulled block came from there (it may be laid elsewhere on the same level)."""
        if not tower.top_level or reading.orientation != Tower.orientation(tower.top_level):
            return frozenset()
        return frozenset(i for i, n in pull.top_gone.items()
                         if n >= self.config.settle_frames and not reading.slots[i].occupied)

    def _put_back_on_top(self, pull: "_Pull", reading: TopLevelReading, rnd: Round) -> list[Output]:
        """A block pulled from the top level itself and laid back in its place: the top looks as
        before, but the camera saw that block gone while the weight was off."""
        if pull.place_t is None or not pull.top_gone:
            return []
        slot, frames = pull.top_gone.most_common(1)[0]
        top = rnd.tower.top_level
        if frames < self.config.settle_frames or placed_slot(rnd.tower, reading) is not None:
            return []
        if any(not reading.slots[i].occupied for i in range(3) if rnd.tower.level(top)[i] is not None):
            return []  # not back yet
        block = rnd.tower.level(top)[slot]
        evidence = {"lift_t": pull.lift_t, "place_t": pull.place_t, "frame": reading.frame_seq,
                    "reading": reading.names, "seat_votes": dict(pull.votes), "top_slot_seen_empty_frames": frames,
                    "note": "pulled from the top level and laid back in its place"}
        self.pull = None
        return self._pull_and_place(self._name(rnd, pull), block.name, (top, slot), (top, slot),
                                    pull.two_hand_frames, evidence, pull.place_t)

    def _settle(self, pull: "_Pull", reading: TopLevelReading, rnd: Round, min_conf: float) -> list[Output]:
        """Count frames that agree on the top; once enough do, judge the place (if any)."""
        names = tuple(reading.names) + (reading.orientation,)
        pull.stable = pull.stable + 1 if names == pull.last_names else 1
        pull.last_names = names
        if pull.stable < self.config.settle_frames:
            return []
        return self._judge_settled(pull, reading, rnd, min_conf)

    def _judge_settled(self, pull: "_Pull", reading: TopLevelReading, rnd: Round, min_conf: float) -> list[Output]:
        """The top has held still on enough frames: the place, if the weight (or a longer still top)
        says the block is no longer carried."""
        in_hand = pull.lift_t is not None and pull.place_t is None
        if in_hand and (min_conf > 0 or pull.stable < 2 * self.config.settle_frames):
            return []  # the block may still be held just above the top: wait for its weight (or a longer still top)
        if min_conf > 0:
            placed = self._placed(pull, rnd.tower, reading)
            if placed is None:
                return []
            if reading.slots[placed[1]].confidence < min_conf and not (pull.place_t is not None and self._glyph_sure(placed[1])):
                return []
        return self._try_place(pull, reading, rnd)

    def _glyph_sure(self, slot: int) -> bool:
        """The new block's glyph is sure though its slot reads below place_under_hand_confidence: on the
        last settle_frames frames the same block, nearly all the reader's belief on it (its runner-ups
        near nothing). The doubt is then whether the slot is filled, which the weight back answers
        (on the recorded matches every frame read so was right; a misread glyph keeps a runner-up)."""
        c = self.config
        frames = self.recent[-c.settle_frames:]
        if len(frames) < c.settle_frames:
            return False
        names = {r.slots[slot].block.name if r.slots[slot].block else None for r in frames}
        return None not in names and len(names) == 1 and all(
            r.slots[slot].confidence >= c.glyph_confidence_min and glyph_share(r.slots[slot]) >= c.glyph_share_min
            for r in frames)

    def reset(self) -> None:
        """Forget the pull in progress (the table told the referee what happened, or a new round)."""
        self.pull = None
        self.vanished = 0
        self.collapsed = False
        self.hands_leaving = False

    def reset_pull(self) -> None:
        """The table answered about the pull in progress: start afresh from the next frame."""
        self.pull = None

    def _start(self, lift_t: float | None) -> _Pull:
        self.pull = _Pull(lift_t, Counter())
        return self.pull

    def _name(self, rnd: Round, pull: _Pull) -> str | None:
        seat = self._puller(pull)
        return rnd.players[seat] if seat is not None else rnd.turn

    def _collapse_seen(self, reading: TopLevelReading, rnd: Round) -> list[Output]:
        """The top of the tower is gone from where the map has it, after an impact: a collapse."""
        c = self.config
        if self.collapsed or self.vanished < c.vanish_frames:
            return []
        recent = self.last_impact_t is not None and reading.t - self.last_impact_t <= c.impact_window_s
        if not recent and self.vanished < 2 * c.vanish_frames:
            return []
        event = SensorEvent(SensorEventKind.COLLAPSE, reading.t, 0.8,
                            {"camera_frames_without_top": float(self.vanished),
                             "since_impact_s": round(reading.t - self.last_impact_t, 3) if recent else -1.0})
        return self._collapse(event, rnd)

    def on_sensor(self, event: SensorEvent, rnd: Round) -> list[Output]:
        kind = event.kind
        if kind in (SensorEventKind.KNOCK, SensorEventKind.TOUCH, SensorEventKind.COLLAPSE):
            self.last_impact_t = event.t
        if self.collapsed:
            return []
        if kind is SensorEventKind.LIFT and rnd.hand is None:
            pull = self.pull or self._start(event.t)
            pull.lift_t = event.t
            for r in self.recent:  # the hands that reached in before the weight left (since the last hand left)
                # after the last place (the placer's withdrawing hands are already left out of `recent`)
                fresh = (self.clear_since is None or r.t >= self.clear_since) and \
                    (self.place_called_t is None or r.t > self.place_called_t)
                if r.hands and fresh and (pull.last_hand_t is None or r.t < pull.last_hand_t):
                    for seat in (self.seating.seat_of(h) for h in r.hands):
                        if seat is not None:
                            pull.votes[seat] += 1
            return []
        if kind is SensorEventKind.PLACE and self.pull is not None:
            pull = self.pull
            pull.place_t = event.t
            # The top already held still with the new block on it: the weight coming back is the
            # last thing the place waited for, so it is called now, not at the next frame.
            last = self.recent[-1] if self.recent else None
            if last is None or pull.stable < self.config.settle_frames or \
                    tuple(last.names) + (last.orientation,) != pull.last_names:
                return []
            covered = bool(last.hands) or last.uncertain
            return self._judge_settled(pull, last, rnd, self.config.place_under_hand_confidence if covered else 0.0)
        if kind is SensorEventKind.TOUCH:
            seat = self._hand_seat_near(event.t)
            if seat is None or self.pull is not None:
                return []
            return [FusedEvent({"event": "touch", "player": rnd.players[seat]},
                               {"sensor": dict(event.evidence), "t": event.t, "seat": seat})]
        if kind is SensorEventKind.COLLAPSE:
            return self._collapse(event, rnd)
        return []

    # -- decisions ------------------------------------------------------------------------------
    def _puller(self, pull: _Pull) -> int | None:
        return pull.votes.most_common(1)[0][0] if pull.votes else None

    def _hand_seat_near(self, t: float, window: float = 0.6) -> int | None:
        seats = (self.seating.seat_of(h) for r in self.recent if abs(r.t - t) <= window for h in r.hands)
        votes = Counter(s for s in seats if s is not None)
        return votes.most_common(1)[0][0] if votes else None

    def collapse_reported(self, t: float, rnd: Round, evidence: dict) -> list[Output]:
        """A player says the tower fell, which the referee's own sensing missed (a block sliding
        off the top as it is let go lands softly on the tray: twin seed 118). Blamed as a fall
        the sensors felt: a pull under way names its player, who was at the tower; with none,
        the table is asked who was touching it. Logged plainly, the collapse would go to whoever
        placed last as the referee saw it (RULES.md 8), while the referee may have missed the
        very turn that knocked it down. The hands seen when the report comes are not asked:
        by then the players reach for the fallen blocks."""
        return self._collapse(SensorEvent(SensorEventKind.COLLAPSE, t), rnd, evidence=evidence, hands_at_fall=False)

    def _collapse(self, event: SensorEvent, rnd: Round, evidence: dict | None = None,
                  hands_at_fall: bool = True) -> list[Output]:
        out: list[Output] = []
        seat = None
        why = "a pull under way as it fell"
        if self.pull is not None:  # a pull was under way: its player was at the tower
            seat = self._puller(self.pull)
            if seat is None and rnd.turn in rnd.players:
                seat = rnd.players.index(rnd.turn)
        if seat is None and hands_at_fall:
            seat, why = self._hand_seat_near(event.t), "hand on the tower as it fell"
        if evidence is None:
            evidence = {"sensor": dict(event.evidence), "t": event.t, "confidence": event.confidence}
        if seat is not None:
            out.append(FusedEvent({"event": "touch", "player": rnd.players[seat]},
                                  {"t": event.t, "seat": seat, "why": why}))
        out.append(FusedEvent({"event": "collapse"}, evidence, released_at=event.t))
        if seat is None or (rnd.turn in rnd.players and rnd.players[seat] != rnd.turn):
            # No hand was seen at the tower (RULES.md 8 then blames the last player who touched
            # it), or the hand seen was not that of the player whose turn it is: the camera may
            # have missed a hand or misjudged where an arm came from, so the table is asked. An
            # answer naming someone else takes the call back and blames them (table_loop).
            seen = "with no hand seen on it" if seat is None else f"with {rnd.players[seat]}'s hand seen on it, in {rnd.turn}'s turn"
            out.append(Question(f"The tower fell {seen}: who was touching it?",
                                (*rnd.players, NOBODY), {"t": event.t, "players": list(rnd.players)},
                                kind="who_touched"))
        self.pull = None
        self.collapsed = True
        return out

    def _try_place(self, pull: _Pull, reading: TopLevelReading, rnd: Round) -> list[Output]:
        tower = rnd.tower
        placed = self._placed(pull, tower, reading)
        if placed is None:
            return []  # the top looks as the map says: nothing placed yet
        level, slot = placed
        slot_reading = reading.slots[slot]
        # Which of two identical blocks came out is not guessed from the hand: a player's arm comes
        # from their seat whichever end of the block they push (the loop looks for the block
        # sticking out of the tower instead, referee/loop/pulled_from.py, or asks).
        choice = choose_block(tower, slot_reading, self.config)
        choice = self._seen_leaving_the_top(pull, tower, choice)
        puller = self._name(rnd, pull)
        context = self._place_context(pull, rnd, reading, level, slot)
        self._placed_by(pull, reading)
        if isinstance(choice, Question):
            self.pull = None
            read = {"read_confidence": round(slot_reading.confidence, 3),
                    "runner_ups": [n for n, score in slot_reading.candidates
                                   if n != choice.context.get("block") and score >= self.config.runner_up_min]}
            return [Question(choice.text, choice.options, {**choice.context, **context, **read}, choice.kind)]
        block, source, note = choice
        doubt = self._doubtful_foul(rnd, block, slot_reading)
        if doubt is not None:
            self.pull = None
            return [Question(doubt.text, doubt.options, context, doubt.kind)]
        evidence = {
            "lift_t": pull.lift_t, "place_t": pull.place_t, "frame": reading.frame_seq,
            "reading": reading.names, "orientation": reading.orientation,
            "confidence": round(slot_reading.confidence, 3), "seat_votes": dict(pull.votes),
            "two_hand_frames": pull.two_hand_frames, "note": note,
            "hands_in_frame": len(reading.hands),
        }
        released = pull.place_t if pull.place_t is not None else reading.t
        self.pull = None
        return self._pull_and_place(puller, block.name, source, (level, slot), pull.two_hand_frames, evidence, released)

    def _ask_which_block(self, pull: "_Pull", reading: TopLevelReading, rnd: Round) -> list[Output]:
        """A new block on top, read steadily but doubtfully: ask which it is, among the camera's
        readings of it that the map holds."""
        placed = self._placed(pull, rnd.tower, reading)
        if placed is None or pull.lift_t is None or pull.place_t is None:
            return []  # (without the weight back, the block may still be carried over the top)
        level, slot = placed
        sr = reading.slots[slot]
        in_map = {b.name for b in rnd.tower.blocks()}
        names = [n for n in ([sr.block.name] if sr.block else []) + [c for c, _ in sr.candidates] if n in in_map]
        options = tuple(dict.fromkeys(names))[:4]
        if not options:
            return []
        self.pull = None
        self._placed_by(pull, reading)
        spoken = " or ".join(Block.parse(n).spoken() for n in options)
        return [Question(f"Is the block placed on top {spoken}?", options,
                         self._place_context(pull, rnd, reading, level, slot), kind="which_block")]

    def _place_context(self, pull: "_Pull", rnd: Round, reading: TopLevelReading, level: int, slot: int) -> dict:
        """What a question about this place carries, so that the answer can make the pull's events."""
        return {"level": level, "slot": slot, "player": self._name(rnd, pull), "frame": reading.frame_seq,
                "two_hand_frames": pull.two_hand_frames, "lift_t": pull.lift_t, "place_t": pull.place_t,
                "pushed_along": self._pushed_along(pull)}

    def _pushed_along(self, pull: "_Pull") -> str | None:
        """The direction ("x"/"y") of the level the block came out of, from where the fingertips were
        while it came out: a block is pushed (or pinched) at an end face, so the tips of a pull from an
        "x" level stay beyond the tower's sides along x and within its width along y. None when the
        tips do not clearly say (a corner, too few frames, no footprint known)."""
        c, fp = self.config, self.footprint
        if fp is None or len(pull.tips) < c.axis_tip_frames:
            return None
        out = c.axis_tip_out * fp.half_mm
        cx, cy = fp.center_mm
        at_x_ends = sum(abs(x - cx) >= out and abs(y - cy) <= out for x, y in pull.tips)
        at_y_ends = sum(abs(y - cy) >= out and abs(x - cx) <= out for x, y in pull.tips)
        need = c.axis_tip_share * len(pull.tips)
        return "x" if at_x_ends >= need else "y" if at_y_ends >= need else None

    def _seen_leaving_the_top(self, pull: "_Pull", tower: Tower, choice):
        """The camera saw a block of the map's top level gone while the weight was off: if the
        placed block is that one, it came from there (a foul by position), whatever other place
        of the map holds the same block and would be legal."""
        name = choice[0].name if not isinstance(choice, Question) else choice.context.get("block")
        if name is None or not tower.top_level:
            return choice
        top = tower.top_level
        gone = [s for s, n in pull.top_gone.most_common() if n >= self.config.settle_frames
                and tower.level(top)[s] is not None and tower.level(top)[s].name == name]
        if not gone:
            return choice
        note = f"seen leaving the top level (level {top}, slot {gone[0]})"
        return Block.parse(name), (top, gone[0]), note

    def rival_places(self, question: Question, tower: Tower, seen: str | None = None) -> tuple[str, ...]:
        """Places ("level/slot") of the blocks the reader gave as runner-ups to a glyph it read below
        `glyph_sure_confidence`, that the answer to `question` ("which of its places?") cannot rule out.
        `seen`: the place the pull's frames showed the block sticking out of; what sticks out tells the
        side and the slot, not the height, so a runner-up held in the same slot of a level of the same
        direction is as likely (seed 123: blue 3 read 0.69 at level 5 where a blue 1 at level 13 came out).
        Without `seen`, every place of a runner-up that may be pulled stays possible."""
        ctx = question.context
        if question.kind != "which_spot" or ctx.get("read_confidence") is None \
                or ctx["read_confidence"] >= self.config.glyph_sure_confidence:
            return ()
        names = set(ctx.get("runner_ups") or ())
        places = [(lv, s) for lv, s, b in tower.positions()
                  if b.name in names and lv < tower.top_level and tower.is_available(lv, s)]
        if seen is not None:
            level, slot = (int(v) for v in seen.split("/"))
            places = [(lv, s) for lv, s in places if s == slot and lv % 2 == level % 2]
        return tuple(f"{lv}/{s}" for lv, s in sorted(places) if f"{lv}/{s}" not in question.options)

    def which_of(self, question: Question, options: tuple[str, ...], tower: Tower) -> Question:
        """`question` ("which of its places?") asked again among places of several blocks."""
        spoken = " or ".join(f"{tower.at(*(int(v) for v in o.split('/'))).spoken()} from level {o.split('/')[0]}, "
                             f"slot {o.split('/')[1]}" for o in options)
        ctx = {k: v for k, v in question.context.items() if k != "preferred"}
        return Question(f"Which block was pulled: {spoken}?", options, {**ctx, "block": None, "rivals_checked": True},
                        kind="which_spot")

    def _doubtful_foul(self, rnd: Round, block: Block, slot_reading) -> Question | None:
        """A block that would be a foul, read less than surely, while the camera's runners-up include a
        block the rules allow: ask which it is rather than blame a player for a misread glyph."""
        legal = {o.block.name for o in rnd.legal_pulls()}
        if not legal or block.name in legal or slot_reading.confidence >= self.config.foul_confidence:
            return None
        in_map = {b.name for b in rnd.tower.blocks()}
        alternatives = [n for n, score in slot_reading.candidates
                        if n in legal and n in in_map and n != block.name and score >= self.config.ask_below]
        if not alternatives:
            return None
        options = (block.name, *alternatives[:3])
        spoken = " or ".join(Block.parse(n).spoken() for n in options)
        return Question(f"Is the block placed on top {spoken}?", options, kind="which_block")

    def _pull_and_place(self, puller: str | None, block: str, source: tuple[int, int], spot: tuple[int, int],
                        two_hand_frames: int, evidence: dict, released: float | None) -> list[Output]:
        """The pull (from where the map holds the block), "two hands" if seen, and the place."""
        events: list[Output] = [FusedEvent(
            {"event": "pull", "level": source[0], "slot": source[1], "player": puller, "block": block}, evidence)]
        if two_hand_frames >= self.config.two_hands_frames:
            events.append(FusedEvent({"event": "two_hands", "player": puller},
                                     {"frames": two_hand_frames, "lift_t": evidence.get("lift_t")}))
        events.append(FusedEvent({"event": "place", "level": spot[0], "slot": spot[1]}, evidence, released_at=released))
        return events

    # -- answers from the table -------------------------------------------------------------------
    def answer(self, question: Question, option: str, rnd: Round) -> list[Output]:
        """The table picked `option` for `question`: the events it settles, or the next question.

        "where_placed" gives the spot, then asks which block it is; "which_block" gives the block,
        then asks which of its places it left if the map holds it twice; "which_spot" gives that.
        """
        if option not in question.options:
            raise ValueError(f"{option!r} is not one of the choices ({', '.join(question.options)})")
        ctx = dict(question.context)
        evidence = {"answered": option, "question": question.text, "lift_t": ctx.get("lift_t"),
                    "place_t": ctx.get("place_t"), "two_hand_frames": ctx.get("two_hand_frames", 0)}
        released = ctx.get("place_t")
        two = int(ctx.get("two_hand_frames") or 0)
        tower = rnd.tower
        if question.kind == "where_placed":
            level, slot = (int(v) for v in option.split("/"))
            names = sorted({b.name for lv, s, b in tower.positions() if lv < tower.top_level or tower.is_available(lv, s)})
            return [Question(f"Which block was placed on level {level}, slot {slot}?", tuple(names),
                             {**ctx, "level": level, "slot": slot}, kind="which_block")]
        if question.kind == "which_block" and option == OTHER_BLOCK:
            offered = set(question.options)
            names = tuple(sorted({b.name for b in tower.blocks()} - offered))
            return [Question("Which block was placed on top?", names, ctx, kind="which_block")]
        spot = (int(ctx["level"]), int(ctx["slot"]))
        if question.kind == "which_block":
            choice = choose_block(tower, SlotReading(Block.parse(option), 1.0), self.config)
            if isinstance(choice, Question):
                return [Question(choice.text, choice.options, {**ctx, **choice.context}, choice.kind)]
            block, source, note = choice
            return self._pull_and_place(ctx.get("player"), block.name, source, spot, two, {**evidence, "note": note}, released)
        if question.kind == "which_spot":
            level, slot = (int(v) for v in option.split("/"))
            block = ctx.get("block") or tower.at(level, slot).name  # (places of several blocks: the map's there)
            return self._pull_and_place(ctx.get("player"), block, (level, slot), spot, two, evidence, released)
        raise ValueError(f"unknown question kind {question.kind!r}")

def placed_slot(tower: Tower, reading: TopLevelReading, vacated: frozenset[int] = frozenset(),
                faint_below: float = 0.0) -> tuple[int, int] | None:
    """Where a new block appeared on top, comparing the camera's top level with the map's.

    `vacated`: slots of the map's top level the camera saw emptied during this pull (a block
    pulled from the top level itself); they count as free, so a block moved within the top level
    is found where it was laid. `faint_below`: a "new" slot read below this confidence beside one
    read surely is a misreading (one block is laid at a time).
    """
    top = tower.top_level
    if reading.orientation is None:
        return None
    occupied = [i for i, s in enumerate(reading.slots) if s.occupied]
    if reading.orientation == Tower.orientation(top):
        have = [None if i in vacated else b for i, b in enumerate(tower.level(top))]
        known = [i for i in range(3) if have[i] is not None]
        if any(not reading.slots[i].occupied for i in known):
            return None  # the camera misses a block the map knows is there: not a reading to act on
        same = sum(_same_color(reading.slots[i].block, have[i]) for i in known)
        if known and same * 2 < len(known):
            return None  # most known blocks read in another color: a misread frame
        new = _the_one_new(reading, [i for i in occupied if have[i] is None], faint_below)
        return None if new is None else (top, new)
    new = _the_one_new(reading, occupied, faint_below)
    return None if new is None else (top + 1, new)


def _the_one_new(reading: TopLevelReading, new: list[int], faint_below: float) -> int | None:
    """The single slot holding the new block, or None when there is none or it is not clear which."""
    if len(new) == 1:
        return new[0]
    sure = [i for i in new if reading.slots[i].confidence >= faint_below]
    return sure[0] if faint_below > 0 and len(sure) == 1 else None


def glyph_share(reading: SlotReading) -> float:
    """The share of the reader's belief in a slot that goes to its top block: the scores of the block and of
    its runner-ups all carry the slot's occupancy, so their ratio is how sure the glyph alone is (0 when the
    reader named no runner-up: nothing then says how sure the glyph is)."""
    if reading.block is None:
        return 0.0
    runner_ups = [score for name, score in reading.candidates if name != reading.block.name]
    if not runner_ups:
        return 0.0
    others = sum(runner_ups)
    total = reading.confidence + others
    return reading.confidence / total if total > 0 else 0.0


def _same_color(read: Block | None, known: Block) -> bool:
    """Colors are read far more reliably than glyphs: a known block checks by its color."""
    return read is not None and read.color == known.color


def place_choices(tower: Tower) -> tuple[str, ...]:
    """Where a block can go on top, as 'level/slot' choices for a question on the page."""
    spots = [(tower.top_level, s) for s in tower.free_slots(tower.top_level)] if tower.top_level else []
    spots += [(tower.top_level + 1, s) for s in range(3)]
    return tuple(f"{lv}/{s}" for lv, s in spots)


def choose_block(tower: Tower, reading, config: FusionConfig):
    """The block read on top, checked against the map: (block, (level, slot), note) or a Question.

    A placed block must be one the map holds (it left the tower); among the map's positions of
    that block, one that may be pulled without a foul is preferred.
    """
    names_in_map = {b.name for b in tower.blocks()}
    ranked: list[tuple[str, float]] = []
    if reading.block is not None:
        ranked.append((reading.block.name, reading.confidence))
    ranked += [c for c in reading.candidates if c[0] != (reading.block.name if reading.block else None)]
    in_map = [(n, s) for n, s in ranked if n in names_in_map]
    note = ""
    if not in_map:
        options = tuple(sorted(names_in_map))
        return Question("The referee cannot tell which block was placed: which one is it?", options)
    name, score = in_map[0]
    if reading.block is not None and name != reading.block.name:
        note = f"read {reading.block.name}, but the map holds none: taken as {name}"
    if score < config.ask_below:
        offered = tuple(n for n, _ in in_map[:4])
        more = (OTHER_BLOCK,) if len(names_in_map) > len(offered) else ()  # the reading may have missed it
        return Question(f"Is the block placed on top {Block.parse(name).spoken()}?", offered + more)
    block = Block.parse(name)
    spots = [(lv, s) for lv, s, b in tower.positions() if b == block and lv < tower.top_level]
    if not spots:
        spots = [(lv, s) for lv, s, b in tower.positions() if b == block]
    rank = lambda p: (not tower.is_available(*p), not tower.pull_allowed_by_position(p[0]))  # noqa: E731
    spots.sort(key=lambda p: (rank(p), p))
    tied = [p for p in spots if rank(p) == rank(spots[0])]
    if len(tied) > 1:
        where = " or ".join(f"level {lv}, slot {s}" for lv, s in tied)
        return Question(f"Which {block.spoken()} was pulled: {where}?", tuple(f"{lv}/{s}" for lv, s in tied),
                        {"block": name}, kind="which_spot")
    if len(spots) > 1:  # one place is the likelier (a legal pull); the pull's frames may still show the other
        where = " or ".join(f"level {lv}, slot {s}" for lv, s in spots)
        return Question(f"Which {block.spoken()} was pulled: {where}?", tuple(f"{lv}/{s}" for lv, s in spots),
                        {"block": name, "preferred": f"{spots[0][0]}/{spots[0][1]}"}, kind="which_spot")
    return block, spots[0], note
