"""The rules options of RULES.md, with their defaults, validated.

A table's house rules are data: one immutable object, checked once, so the engine never meets an
option it does not know or a value it cannot use.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping


class OptionError(ValueError):
    """An unknown option or a value it cannot take; the message is for players."""


FOUL_PENALTIES = ("uno", "warn")
NEXT_BUILDERS = ("loser", "winner", "rotate")
MAX_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Options:
    match_symbols: bool = False          # an action block also answers a call set by the same symbol
    wild_timeout_s: float = 30.0         # then the referee names the Wild's color
    auto_uno: bool = True                # the referee calls "Uno!" itself on two hands
    penalty_color_timeout_s: float = 20.0  # then the referee picks the penalty color
    foul_penalty: str = "uno"            # "uno": fouls cost two blocks; "warn": announced only
    next_builder: str = "loser"          # who builds and starts the next round

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def updated(self, values: Mapping[str, Any] | None) -> "Options":
        """These options with `values` applied, each checked; raises OptionError."""
        if values is None:
            return self
        if not isinstance(values, Mapping):
            raise OptionError("'options' must be an object of option names and values")
        known = {f.name for f in fields(self)}
        changes: dict[str, Any] = {}
        for name, value in values.items():
            if name not in known:
                raise OptionError(f"unknown option '{name}' (known options: {', '.join(sorted(known))})")
            changes[name] = _CHECKS[name](name, value)
        return replace(self, **changes)


def _switch(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("on", "off"):
        return value.lower() == "on"
    raise OptionError(f"option '{name}' is on or off (true/false), not {value!r}")


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(f"option '{name}' is a number of seconds, not {value!r}")
    if not (0 < value <= MAX_TIMEOUT_S):
        raise OptionError(f"option '{name}' must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, not {value!r}")
    return float(value)


def _choice(choices: tuple[str, ...]):
    def check(name: str, value: Any) -> str:
        if value not in choices:
            raise OptionError(f"option '{name}' must be one of {', '.join(choices)}, not {value!r}")
        return value

    return check


_CHECKS = {
    "match_symbols": _switch,
    "wild_timeout_s": _seconds,
    "auto_uno": _switch,
    "penalty_color_timeout_s": _seconds,
    "foul_penalty": _choice(FOUL_PENALTIES),
    "next_builder": _choice(NEXT_BUILDERS),
}
