"""What the referee's senses report, in the referee's own types.

Data flows one way: hardware -> these observations (vision, detectors, buttons) -> referee events.
Vision and the sensor detectors return these; only the match loop turns them into events.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

from referee.blocks import Block

Orientation = str  # "x": long side along the tray's x axis, slots by increasing y; "y": the other way


@dataclass(frozen=True)
class SlotReading:
    """One slot of the top level as the camera reads it; `block` None means the slot is empty."""

    block: Block | None
    confidence: float
    # Runner-up names with their scores, so the match loop can check them against the tower map.
    candidates: tuple[tuple[str, float], ...] = ()

    @property
    def occupied(self) -> bool:
        return self.block is not None


@dataclass(frozen=True)
class HandReading:
    """A hand over the tower's footprint and the tray side it comes from."""

    side: str  # "north" (+y), "east" (+x), "south" (-y), "west" (-x) of the tray
    tip_mm: tuple[float, float]  # fingertip nearest the tower, tray millimetres
    confidence: float
    seat: int | None = None  # filled in by the match loop from the seating plan
    entry_deg: float | None = None  # direction (tray frame, degrees from +x) from the tower to where the arm enters


@dataclass(frozen=True)
class TopLevelReading:
    """The top of the tower in one frame."""

    orientation: Orientation | None
    slots: tuple[SlotReading, ...]
    hands: tuple[HandReading, ...] = ()
    t: float = 0.0
    frame_seq: int = -1
    uncertain: bool = False
    note: str = ""

    @property
    def names(self) -> list[str | None]:
        return [s.block.name if s.block else None for s in self.slots]


class SensorEventKind(str, enum.Enum):
    LIFT = "lift"          # the tray lost about one block's weight
    PLACE = "place"        # the weight came back and settled
    TOUCH = "touch"        # vibration without a weight change
    KNOCK = "knock"        # an impact that is not the tower (table knock)
    COLLAPSE = "collapse"  # impact with weight redistribution or loss


@dataclass(frozen=True)
class SensorEvent:
    kind: SensorEventKind
    t: float
    confidence: float = 1.0
    evidence: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ButtonPress:
    button: str  # "red", "yellow", "green", "blue", "uno", "confirm"
    t: float
