"""Logged rounds, seen again: the tower at each step, the engine's decisions now, the table state.

Why here and not in the engine: the history page needs a tower picture for every step of an old
round even when the engine's report did not carry one, and `stacko log replay` must compare the
engine of today with the decisions written down at the time.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from .store import LoggedEvent, MatchStore, StoreError

# The parts of a CONTRACT section 1 output that are decisions (announcement wording may change).
DECISION_KEYS = ("ok", "turn", "direction", "call", "waiting_for", "fouls", "over", "winner", "loser")


class EngineMissing(StoreError):
    """The rules engine (referee.script) cannot be imported."""


def script_runner() -> Any:
    """A fresh referee.script.ScriptRunner (imported late: the engine is another part)."""
    try:
        from referee.script import ScriptRunner
    except ImportError as exc:
        raise EngineMissing(f"the rules engine is not available ({exc}); cannot re-run logged rounds") from None
    return ScriptRunner()


def rerun(events: Iterable[dict]) -> list[dict]:
    """Feed events through a new ScriptRunner, as `stacko referee script` would; one output each."""
    runner = script_runner()
    return [runner.feed(dict(e)) for e in events]


def decision_differences(logged: dict | None, now: dict) -> list[dict]:
    """Where the engine's decision now differs from the logged one (empty: the same)."""
    if logged is None:
        return [{"field": "*", "logged": None, "now": {k: now.get(k) for k in DECISION_KEYS if k in now}}]
    diffs = []
    keys = ("ok",) if not now.get("ok", False) or not logged.get("ok", False) else DECISION_KEYS
    for key in keys:
        if logged.get(key) != now.get(key):
            diffs.append({"field": key, "logged": logged.get(key), "now": now.get(key)})
    return diffs


def replay_round(store: MatchStore, match_id: str, round_no: int) -> list[dict]:
    """Re-run one logged round (without its voided events); a line for each event decided differently now."""
    logged = store.events(match_id, round_no)
    outputs = rerun(e.event for e in logged)
    report = []
    for entry, now in zip(logged, outputs):
        diffs = decision_differences(entry.output, now)
        if diffs:
            report.append({"match": match_id, "round": round_no, "seq": entry.seq, "event": entry.event,
                           "differences": diffs})
    return report


# -- the tower picture, step by step ----------------------------------------------------------
def _empty_levels(rows: Any) -> list[list[str | None]] | None:
    if not isinstance(rows, list):
        return None
    levels = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 3:
            return None
        levels.append([b if isinstance(b, str) else None for b in row])
    return levels


def tower_steps(events: Sequence[dict], outputs: Sequence[dict | None]) -> list[dict]:
    """The tower (levels bottom first, block names or None) and the block in hand after each event.

    Uses the report's own "tower"/"hand" where the referee logged them, else follows setup, pull
    and place events that the referee accepted (ok: true, or no decision logged).
    """
    levels: list[list[str | None]] = []
    hand: str | None = None
    steps = []
    for i, event in enumerate(events):
        out = outputs[i] if i < len(outputs) else None
        accepted = out is None or bool(out.get("ok", True))
        kind = event.get("event") if isinstance(event, dict) else None
        if accepted and kind == "setup":
            levels = _empty_levels(event.get("tower")) or []
            hand = None
        elif accepted and kind == "pull":
            lv, slot = event.get("level"), event.get("slot")
            if isinstance(lv, int) and isinstance(slot, int) and 1 <= lv <= len(levels) and 0 <= slot <= 2:
                hand, levels[lv - 1][slot] = levels[lv - 1][slot], None
        elif accepted and kind == "place":
            lv, slot = event.get("level"), event.get("slot")
            if isinstance(lv, int) and isinstance(slot, int) and 1 <= lv and 0 <= slot <= 2:
                while len(levels) < lv:
                    levels.append([None, None, None])
                levels[lv - 1][slot] = hand
                hand = None
        if out is not None and _empty_levels(out.get("tower")) is not None:
            levels = _empty_levels(out["tower"]) or []
            hand = out.get("hand") if isinstance(out.get("hand"), str) else hand
        while levels and all(b is None for b in levels[-1]):
            levels.pop()
        steps.append({"tower": [list(r) for r in levels], "hand": hand})
    return steps


def hand_name(hand: Any) -> str | None:
    """A report's "hand" may be a block name or an object with a "block" key."""
    if isinstance(hand, str):
        return hand
    if isinstance(hand, dict) and isinstance(hand.get("block"), str):
        return hand["block"]
    return None


def round_steps(store: MatchStore, match_id: str, round_no: int) -> list[dict]:
    """Each logged event with the decision and the tower after it (the history page's stepper).

    Voided events are listed too, with their `void`; the tower after one is the tower before it."""
    logged: list[LoggedEvent] = store.events(match_id, round_no, include_voided=True)
    standing = [e for e in logged if not e.voided]
    towers = iter(tower_steps([e.event for e in standing], [e.output for e in standing]))
    tower: dict = {"tower": [], "hand": None}
    steps = []
    for entry in logged:
        if not entry.voided:
            tower = next(towers)
        steps.append({"seq": entry.seq, "t": entry.t, "event": entry.event, "output": entry.output,
                      "evidence": entry.evidence, "void": entry.void, "tower": tower["tower"], "hand": tower["hand"]})
    return steps


def state_from_log(store: MatchStore) -> dict | None:
    """The table as the latest logged round left it, re-run through the engine (None: empty log).

    Falls back to the logged decision when the engine is not available.
    """
    match_id = store.latest_match_id()
    if match_id is None:
        return None
    rounds = store.rounds(match_id)
    if not rounds:
        return None
    round_no = rounds[-1]["round"]
    logged = store.events(match_id, round_no)
    if not logged:
        return None
    try:
        outputs = rerun(e.event for e in logged)
    except EngineMissing:
        outputs = [e.output or {"ok": True} for e in logged]
    # The state is that of the last accepted event (a refused one leaves the state as it was).
    state = next((o for o in reversed(outputs) if o.get("ok")), None)
    if state is None:
        return None
    state = dict(state)
    tower = tower_steps([e.event for e in logged], outputs)[-1]
    state.setdefault("tower", tower["tower"])
    state.setdefault("hand", tower["hand"])
    state.setdefault("players", store.players(match_id))
    state.update({"match": match_id, "round": round_no})
    return state
