"""What the page may ask of the match loop, validated before it reaches the loop.

Why a separate module: the page, the JSON API and the tests all go through `parse_action`, so the
loop only ever sees well-formed requests and a player gets a plain-words reason for a refusal.
"""

from __future__ import annotations

import re
from typing import Any

from referee.blocks import Color

MAX_NAME = 24
NAME_RE = re.compile(r"^[\w][\w .'\-]*$", re.UNICODE)
ACTION_TYPES = ("wild_color", "penalty_color", "uno", "claim_no_match", "players")


class ActionError(ValueError):
    """A request the page cannot pass on; the message is for the player who pressed the button."""


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ActionError(f"{what} needs a player's name")
    text = " ".join(value.split())
    if len(text) > MAX_NAME:
        raise ActionError(f"{what}: a name may have at most {MAX_NAME} characters")
    if not NAME_RE.match(text):
        raise ActionError(f"{what}: a name may hold letters, digits, spaces, dots, apostrophes and dashes")
    return text


def _color(value: Any) -> str:
    try:
        return Color(str(value).strip().lower()).value
    except ValueError:
        raise ActionError("pick one of the colors red, yellow, green or blue") from None


def parse_action(data: Any) -> dict:
    """Check one request from the page and return it in canonical form.

    Forms: {"action": "wild_color"|"penalty_color", "color", optional "player"},
    {"action": "uno", "caller", "offender"}, {"action": "claim_no_match", "player"},
    {"action": "players", "players": [names in seat order, first builds]}.
    """
    if not isinstance(data, dict):
        raise ActionError("a request must be a JSON object")
    kind = data.get("action")
    if kind not in ACTION_TYPES:
        raise ActionError(f"unknown request {kind!r}; known: {', '.join(ACTION_TYPES)}")
    if kind in ("wild_color", "penalty_color"):
        action = {"action": kind, "color": _color(data.get("color"))}
        if data.get("player") not in (None, ""):
            action["player"] = _name(data["player"], "the player naming the color")
        return action
    if kind == "uno":
        caller = _name(data.get("caller"), "'Uno!' caller")
        offender = _name(data.get("offender"), "'Uno!' offender")
        if caller == offender:
            raise ActionError("a player cannot call 'Uno!' on themselves")
        return {"action": "uno", "caller": caller, "offender": offender}
    if kind == "claim_no_match":
        return {"action": "claim_no_match", "player": _name(data.get("player"), "'no match'")}
    players = data.get("players")
    if not isinstance(players, list) or not 2 <= len(players) <= 10:
        raise ActionError("a table needs 2 to 10 players")
    names = [_name(p, f"seat {i + 1}") for i, p in enumerate(players)]
    if len({n.casefold() for n in names}) != len(names):
        raise ActionError("two players have the same name; give each a different one")
    return {"action": "players", "players": names}


def action_to_event(action: dict) -> dict | None:
    """The CONTRACT section 1 event an action stands for (None for player setup, which is not one)."""
    kind = action["action"]
    if kind == "players":
        return None
    event = {k: v for k, v in action.items() if k not in ("action", "t", "source")}
    event["event"] = kind
    return event
