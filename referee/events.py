"""Referee events: what happened at the table, as the engine consumes and the log stores them.

The JSON form is CONTRACT.md section 1; `parse_event` checks a dict and `Event.to_dict` gives it
back, so a logged event replays exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

from referee.blocks import Color


class IllegalEvent(ValueError):
    """An event that cannot be applied. The message is shown to players as it is."""


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, Color):
                value = value.value
            elif isinstance(value, tuple):
                value = _untuple(value)
            out[f.name] = value
        return out


def _untuple(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_untuple(v) for v in value]
    return value


@dataclass(frozen=True)
class Setup(Event):
    kind: ClassVar[str] = "setup"
    players: tuple[str, ...]
    tower: tuple[tuple[str | None, ...], ...]
    options: Mapping[str, Any] | None = None
    blocks: str | tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.options is not None:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True)
class Pull(Event):
    kind: ClassVar[str] = "pull"
    level: int
    slot: int
    player: str | None = None
    block: str | None = None


@dataclass(frozen=True)
class Place(Event):
    kind: ClassVar[str] = "place"
    level: int
    slot: int
    player: str | None = None


@dataclass(frozen=True)
class WildColor(Event):
    kind: ClassVar[str] = "wild_color"
    color: Color
    player: str | None = None


@dataclass(frozen=True)
class TwoHands(Event):
    kind: ClassVar[str] = "two_hands"
    player: str


@dataclass(frozen=True)
class Uno(Event):
    kind: ClassVar[str] = "uno"
    caller: str
    offender: str


@dataclass(frozen=True)
class PenaltyColor(Event):
    kind: ClassVar[str] = "penalty_color"
    color: Color
    player: str | None = None


@dataclass(frozen=True)
class Touch(Event):
    kind: ClassVar[str] = "touch"
    player: str


@dataclass(frozen=True)
class ClaimNoMatch(Event):
    kind: ClassVar[str] = "claim_no_match"
    player: str


@dataclass(frozen=True)
class Collapse(Event):
    kind: ClassVar[str] = "collapse"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (Setup, Pull, Place, WildColor, TwoHands, Uno, PenaltyColor, Touch, ClaimNoMatch, Collapse)
}


# -- parsing ------------------------------------------------------------------------------------
def _required(data: Mapping[str, Any], name: str, kind: str) -> Any:
    if name not in data or data[name] is None:
        raise IllegalEvent(f"a '{kind}' event needs the field '{name}'")
    return data[name]


def _int(data: Mapping[str, Any], name: str, kind: str) -> int:
    value = _required(data, name, kind)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise IllegalEvent(f"'{name}' must be a whole number, not {value!r}")
    return value


def _name(data: Mapping[str, Any], name: str, kind: str, optional: bool = False) -> str | None:
    if optional and data.get(name) is None:
        return None
    value = _required(data, name, kind)
    if not isinstance(value, str) or not value.strip():
        raise IllegalEvent(f"'{name}' must be a player's name, not {value!r}")
    return value


def _color(data: Mapping[str, Any], kind: str) -> Color:
    value = _required(data, "color", kind)
    try:
        return Color(value.lower() if isinstance(value, str) else value)
    except ValueError:
        raise IllegalEvent(f"{value!r} is not a color: name red, yellow, green or blue") from None


def parse_event(data: object) -> Event:
    """Check one decoded JSON object and turn it into an Event; raises IllegalEvent."""
    if not isinstance(data, Mapping):
        raise IllegalEvent("each line must be a JSON object like {\"event\": \"pull\", ...}")
    kind = data.get("event")
    if kind is None:
        raise IllegalEvent("this line has no 'event' field")
    if kind not in EVENT_TYPES:
        known = ", ".join(EVENT_TYPES)
        raise IllegalEvent(f"unknown event {kind!r} (known events: {known})")
    if kind == "setup":
        players = _required(data, "players", kind)
        if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
            raise IllegalEvent("'players' must be a list of names, in seat order clockwise")
        tower = _required(data, "tower", kind)
        if not isinstance(tower, list) or not all(isinstance(r, list) for r in tower):
            raise IllegalEvent("'tower' must be a list of levels, bottom first, each a list of 3 block names")
        options = data.get("options")
        if options is not None and not isinstance(options, Mapping):
            raise IllegalEvent("'options' must be an object of option names and values")
        blocks = data.get("blocks")
        if isinstance(blocks, list):
            blocks = tuple(blocks)
        return Setup(tuple(players), tuple(tuple(r) for r in tower), dict(options) if options else options, blocks)
    if kind == "pull":
        block = data.get("block")
        if block is not None and not isinstance(block, str):
            raise IllegalEvent(f"'block' must be a block name like 'red-3', not {block!r}")
        return Pull(_int(data, "level", kind), _int(data, "slot", kind), _name(data, "player", kind, True), block)
    if kind == "place":
        return Place(_int(data, "level", kind), _int(data, "slot", kind), _name(data, "player", kind, True))
    if kind == "wild_color":
        return WildColor(_color(data, kind), _name(data, "player", kind, True))
    if kind == "penalty_color":
        return PenaltyColor(_color(data, kind), _name(data, "player", kind, True))
    if kind == "two_hands":
        return TwoHands(_name(data, "player", kind))
    if kind == "uno":
        return Uno(_name(data, "caller", kind), _name(data, "offender", kind))
    if kind == "touch":
        return Touch(_name(data, "player", kind))
    if kind == "claim_no_match":
        return ClaimNoMatch(_name(data, "player", kind))
    return Collapse()
