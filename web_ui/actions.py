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
ACTION_TYPES = ("wild_color", "penalty_color", "uno", "claim_no_match", "players", "answer", "undo", "event",
                "calibration_next")
# Events the table may enter by hand (a new round's setup comes from the referee, not the page).
HAND_EVENTS = ("pull", "place", "wild_color", "penalty_color", "two_hands", "uno", "touch", "claim_no_match", "collapse")
MAX_TOKEN = 64  # a question id or an answer option


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
    {"action": "players", "players": [names in seat order, first builds]},
    {"action": "answer", "question": id, "option": one of the question's options},
    {"action": "undo"} (take back the last call), {"action": "event", "event": {a referee event}},
    {"action": "calibration_next", "step": the open calibration instruction's key} (the table tapped "Done").
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
    if kind == "answer":
        return {"action": "answer", "question": _token(data.get("question"), "the question"),
                "option": _token(data.get("option"), "the answer")}
    if kind == "undo":
        return {"action": "undo"}
    if kind == "event":
        return {"action": "event", "event": _hand_event(data.get("event"))}
    if kind == "calibration_next":
        return {"action": "calibration_next", "step": _token(data.get("step"), "the calibration instruction")}
    players = data.get("players")
    if not isinstance(players, list) or not 2 <= len(players) <= 10:
        raise ActionError("a table needs 2 to 10 players")
    names = [_name(p, f"seat {i + 1}") for i, p in enumerate(players)]
    if len({n.casefold() for n in names}) != len(names):
        raise ActionError("two players have the same name; give each a different one")
    return {"action": "players", "players": names}


def _token(value: Any, what: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise ActionError(f"{what} is missing")
    text = str(value).strip()
    if len(text) > MAX_TOKEN or not text.isprintable():
        raise ActionError(f"{what} is not one the referee could have offered")
    return text


def _hand_event(value: Any) -> dict:
    """A referee event entered by hand: well formed here; whether it is legal is the engine's call."""
    from referee.events import IllegalEvent, parse_event

    if not isinstance(value, dict):
        raise ActionError('an event must be an object like {"event": "pull", "level": 4, "slot": 0}')
    kind = value.get("event")
    if kind not in HAND_EVENTS:
        raise ActionError(f"the page can enter these events: {', '.join(HAND_EVENTS)}; not {kind!r}")
    event = {k: v for k, v in value.items() if v not in (None, "")}
    for key in ("player", "caller", "offender"):
        if key in event:
            event[key] = _name(event[key], f"the event's {key}")
    if "color" in event:
        event["color"] = _color(event["color"])
    try:
        return parse_event(event).to_dict()
    except IllegalEvent as exc:
        raise ActionError(str(exc)) from None


def check_answer(action: dict, question: dict | None, answered: bool = False) -> None:
    """An answer must be to the question open on the page now, and one of its options.

    `answered`: this question already got an answer that is on its way to the referee."""
    if not question:
        raise ActionError("the referee has no open question: it was already answered or withdrawn")
    if action["question"] != question.get("id"):
        raise ActionError("that question is no longer open: the referee has moved on; answer the one on the page now")
    if answered:
        raise ActionError("this question was already answered")
    options = [str(o) for o in question.get("options") or []]
    if action["option"] not in options:
        labels = question.get("labels") or options
        raise ActionError(f"{action['option']!r} is not one of the answers: pick one of {', '.join(map(str, labels))}")


def check_calibration_next(action: dict, calibration: dict | None, tapped: bool = False) -> None:
    """A "Done" must be for the calibration instruction open on the page now (the published state's
    "calibration" key), and only once: a tap from a page that had not caught up must not skip an instruction.

    `tapped`: this instruction already got its "Done"."""
    if not isinstance(calibration, dict):
        raise ActionError("the referee is not calibrating now: there is nothing to mark done")
    open_one = calibration.get("instruction")
    if not isinstance(open_one, dict):
        raise ActionError("no instruction is waiting: the referee is measuring or has finished; wait for the next one")
    if action["step"] != open_one.get("key"):
        raise ActionError("that instruction is already done: the referee has moved on; follow the one on the page now")
    if open_one.get("by") != "table":
        raise ActionError("this instruction needs no 'Done': the twin acts it out by itself")
    if tapped:
        raise ActionError("this instruction was already marked done")


def action_to_event(action: dict) -> dict | None:
    """The CONTRACT section 1 event an action stands for (None for player setup, answers and undo,
    which are not referee events themselves)."""
    kind = action["action"]
    if kind in ("players", "answer", "undo", "calibration_next"):
        return None
    if kind == "event":
        return dict(action["event"])
    event = {k: v for k, v in action.items() if k not in ("action", "t", "source")}
    event["event"] = kind
    return event
