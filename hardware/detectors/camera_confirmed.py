"""Collapse, sensors + camera: the tray's sensors, and the camera seeing a block that fell from the tower.

RULES.md section 8: any block falling from the tower other than the one in a player's hand is a collapse.
Blocks leaving the tray are the load cell's (`SensorDetectors`: a lasting loss of weight after an impact).
A single block tipping off the top onto the tray keeps the weight and, under the tray, is a thud like a
clumsy pull's - only the camera can tell. `vision.fallen.find_fallen_blocks` finds blocks lying outside
the tower with no hand on them; this detector decides:

- a whole block lying outside the tower in a frame taken within `candidate_window_s` after a thud
  (vibration >= `candidate_g`) is a collapse at once if the camera is `sure_confidence` sure of it, else
  once it has lain at one place for `doubtful_still_s` (a block at the end of a pull, in a hand the load
  cell has not yet felt lift, moves between frames); the collapse's time is the thud's. A block already
  seen at that place before the thud did not fall in it (a block end sticking out of the tower, in its
  shadow, looks like a block lying beside it);
- a block lying at one place (within `same_place_mm`) for `persist_s` of frames is a collapse even with no
  thud (a block may slide off quietly, or land on the table beside the tray, which the tray cannot feel);
  so is a block cut by the picture's edge, which only counts once it stays;
- the sensors' own collapse events pass through; after the first collapse nothing more is reported;
- while a player carries a block (the sensors' lift, no place yet, passed to `sensor_event`) the block in
  hand, seen beside the tower, may look like a fallen one: a block then counts if it is
  `in_hand_min_confidence` sure, or lies still (within `same_place_mm`) for `in_hand_still_s` of frames
  (a carried block moves; a block pulled off the top by a dragging pull lies where it fell).

Blocks already lying outside the tower when the round starts (`ignore`) are not a collapse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Protocol

import numpy as np

from hardware.detectors.config import CameraCollapseConfig
from referee.observations import SensorEvent, SensorEventKind as K


class SeenBlock(Protocol):
    """What the camera reports of a fallen block (vision.fallen.FallenBlock has these)."""

    center_mm: tuple[float, float]
    confidence: float
    whole: bool


class ImpactSource(Protocol):
    def first_impact(self, t0: float, t1: float, level_g: float) -> tuple[float, float] | None: ...


@dataclass(eq=False)  # tracks are told apart by identity
class _Track:
    center: np.ndarray
    first_t: float
    last_t: float
    whole: bool
    before: float | None = None  # the frame before its first sighting (it was not seen lying there then)

    def lying_for(self) -> float:
        """How long the block has been seen lying at this place."""
        return self.last_t - self.first_t


@dataclass
class CameraConfirmedCollapse:
    """Feed it every frame's fallen blocks (`frame`) and the sensors' events (`sensor_event`)."""

    cfg: CameraCollapseConfig
    impacts: ImpactSource
    collapsed: bool = False
    events: list[SensorEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._tracks: list[_Track] = []
        self._ignored: list[np.ndarray] = []
        self.carrying = False  # a block is in a player's hand (the sensors' lift, not yet placed)
        self._sightings: list[tuple[float, np.ndarray]] = []  # (frame time, centre) of recent blocks seen
        self._last_frame_t: float | None = None

    def ignore(self, blocks: Iterable[SeenBlock]) -> None:
        """Blocks lying outside the tower before the round began (not a collapse)."""
        self._ignored += [np.asarray(b.center_mm, float) for b in blocks]

    def reset(self) -> None:
        """A new round: the tower stands again."""
        self.collapsed, self._tracks, self._ignored, self.carrying, self._sightings = False, [], [], False, []
        self._last_frame_t = None

    def sensor_event(self, event: SensorEvent) -> SensorEvent | None:
        """The sensors' events: a collapse passes through (once); lifts and places say whether a block is in hand."""
        if event.kind in (K.LIFT, K.PLACE):
            self.carrying = event.kind is K.LIFT
        if event.kind is not K.COLLAPSE or self.collapsed:
            return None
        self.collapsed = True
        self.events.append(event)
        return event

    def frame(self, t: float, blocks: Iterable[SeenBlock], detected_at: float | None = None) -> SensorEvent | None:
        """A frame taken at `t` showed these fallen blocks; returns a collapse if that settles it."""
        if self.collapsed:
            return None
        c = self.cfg
        seen = [b for b in blocks if b.confidence >= c.min_confidence and not self._is_ignored(b)]
        pairs = list(zip(seen, self._update_tracks(t, seen)))
        self._last_frame_t = t
        if self.carrying:  # the block in hand may be what is seen: only a sure or a still one counts
            pairs = [(b, tr) for b, tr in pairs
                     if b.confidence >= c.in_hand_min_confidence or tr.lying_for() >= c.in_hand_still_s - 1e-6]
        seen = [b for b, _ in pairs]
        impact = self._impact(t, [tr for _, tr in pairs])
        judged = [b for b, tr in pairs if (b.whole or c.partial_after_thud)
                  and (b.confidence >= c.sure_confidence or tr.lying_for() >= c.doubtful_still_s - 1e-6)
                  and (impact is None or not self._seen_before(b, impact[0]))]
        self._remember(t, seen)
        ev = None
        if judged and impact is not None:
            best = max(judged, key=lambda b: (b.whole, b.confidence))
            ev = self._event(impact[0], t, best, 0.9, {"impact_t": impact[0], "impact_g": round(impact[1], 3)}, detected_at)
        else:
            lasting = [tr for tr in self._tracks if tr.last_t == t and tr.lying_for() >= c.persist_s - 1e-6]
            if lasting and seen:
                tr = lasting[0]
                b = min(seen, key=lambda b: float(np.linalg.norm(np.asarray(b.center_mm) - tr.center)))
                extra = {"lying_since": tr.first_t}
                if impact is not None:
                    extra.update({"impact_t": impact[0], "impact_g": round(impact[1], 3)})
                ev = self._event(impact[0] if impact is not None else tr.first_t, t, b, 0.75, extra, detected_at)
        if ev is not None:
            self.collapsed = True
            self.events.append(ev)
        return ev

    def _impact(self, t: float, tracks: list[_Track]) -> tuple[float, float] | None:
        """The thud a block seen now fell in: the first within `candidate_window_s` before this frame,
        unless one came after the frame before a newly seen block's first sighting (less that
        frame gap again: it landed after that frame, where it was not yet seen); then that one.
        A player's jolts before the fall are thuds too: taking the window's first gave a block
        that slid off as it was placed (twin run 911-005, seen first at 21.9 s) the jolt of 20.9 s,
        0.7 s before it fell, while the block was still in hand."""
        c = self.cfg
        lo = t - c.candidate_window_s
        fresh = [tr for tr in tracks if tr.before is not None and tr.first_t > lo]
        if fresh:
            tr = min(fresh, key=lambda tr: tr.first_t)
            landed = self.impacts.first_impact(max(lo, 2 * tr.before - tr.first_t), t, c.candidate_g)
            if landed is not None:
                return landed
        return self.impacts.first_impact(lo, t, c.candidate_g)

    def _event(self, when: float, t: float, b: SeenBlock, conf: float, extra: dict, detected_at: float | None) -> SensorEvent:
        evidence = {"camera_t": t, "x_mm": float(b.center_mm[0]), "y_mm": float(b.center_mm[1]),
                    "camera_confidence": float(b.confidence), "whole": 1.0 if b.whole else 0.0,
                    "detected_at": t if detected_at is None else detected_at, **extra}
        return SensorEvent(K.COLLAPSE, float(when), conf * float(b.confidence) ** 0.25, evidence)

    def _remember(self, t: float, seen: list[SeenBlock]) -> None:
        """Keep where blocks were seen for two thud windows (what lay there before a thud)."""
        horizon = t - 2 * self.cfg.candidate_window_s
        self._sightings = [(ts, p) for ts, p in self._sightings if ts >= horizon]
        self._sightings += [(t, np.asarray(b.center_mm, float)) for b in seen]

    def _seen_before(self, b: SeenBlock, impact_t: float) -> bool:
        """Was a block seen lying at this place in a frame taken before the impact?"""
        p = np.asarray(b.center_mm, float)
        return any(ts < impact_t and np.linalg.norm(p - q) <= self.cfg.same_place_mm for ts, q in self._sightings)

    def _is_ignored(self, b: SeenBlock) -> bool:
        p = np.asarray(b.center_mm, float)
        return any(np.linalg.norm(p - q) <= self.cfg.same_place_mm for q in self._ignored)

    def _update_tracks(self, t: float, seen: list[SeenBlock]) -> list[_Track]:
        """A block still lying where it was keeps its track; a track not seen for `max_gap_s` ends (a hand
        passing over may hide a block for a moment). Returns each seen block's track."""
        kept: list[_Track] = []
        for b in seen:
            p = np.asarray(b.center_mm, float)
            match = None
            for tr in self._tracks:
                if tr not in kept and np.linalg.norm(p - tr.center) <= self.cfg.same_place_mm:
                    match = tr
                    break
            if match is None:
                match = _Track(p, t, t, b.whole, self._last_frame_t)
            match.last_t, match.whole = t, b.whole
            kept.append(match)
        mine = list(kept)
        kept += [tr for tr in self._tracks if tr not in kept and t - tr.last_t <= self.cfg.max_gap_s]
        self._tracks = kept
        return mine
