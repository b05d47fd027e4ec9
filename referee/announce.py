"""What the referee says, in plain words, built from the state (RULES.md section 9).

Pure text functions: the page shows these lines and the speaker speaks them, so they are short,
name the player first and never use rule jargon a table would not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from referee.blocks import Block, Color, Kind
from referee.rules import Call

if TYPE_CHECKING:  # only for type hints; the engine imports this module
    from referee.engine import Outcome
    from referee.tower import PullOption

_COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}
_SYMBOL_WORDS = {Kind.DRAW2: "Draw Two", Kind.REVERSE: "Reverse", Kind.SKIP: "Skip"}


def join_names(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _or(words: Sequence[str]) -> str:
    words = list(words)
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def describe_call(call: Call) -> str:
    """'a red block or a 3', 'two blue number blocks', 'any block'."""
    if call.count == 0:
        return "nothing"
    if call.free:
        what = "number block" if call.numbers_only else "block"
        if call.count == 1:
            return f"any {what}"
        return f"any {_COUNT_WORDS.get(call.count, call.count)} {what}s"
    colors = [c.value for c in call.colors]
    if call.numbers_only:
        noun = "number block" if call.count == 1 else "number blocks"
        count = "a" if call.count == 1 else _COUNT_WORDS.get(call.count, str(call.count))
        return f"{count} {_or(colors)} {noun}"
    parts = [f"a {c} block" for c in colors]
    parts += [f"a {n}" for n in call.numbers]
    parts += [f"a {_SYMBOL_WORDS[k]}" for k in call.symbols]
    return _or(parts)


def outcome_phrase(outcome: "Outcome") -> str:
    if outcome.reason == "collapse":
        if outcome.winner:
            return f"{outcome.loser} lost, {outcome.winner} won"
        return f"{outcome.loser} lost"
    return f"{outcome.winner} won"


def outcome_sentence(outcome: "Outcome") -> str:
    if outcome.reason == "collapse":
        if outcome.winner:
            return f"The tower fell. {outcome.loser} loses, {outcome.winner} wins."
        return f"The tower fell. {outcome.loser} loses; nobody else has finished a turn, so nobody wins."
    return f"No block can be pulled any more: {outcome.winner} wins, nobody loses."


def new_round(names: Sequence[str], builder: int) -> str:
    return f"New round: {join_names(names)}. {names[builder]} built the tower and starts."


def prompt_for(state: Any) -> str:
    """Whose turn it is and what they must do, from a Round (or the engine's draft of one)."""
    from referee.engine import NameWild, NamePenalty, PullStep  # late: the engine imports this module

    if getattr(state, "outcome", None) is not None:
        return outcome_sentence(state.outcome)
    name = state.players.__getitem__
    hand = state.hand
    head = state.queue[0] if state.queue else None
    if hand is not None:
        return f"{name(hand.player)}: place {hand.block.spoken()} on top."
    if isinstance(head, NameWild):
        return f"{name(head.player)}, name a color for the Wild."
    if isinstance(head, NamePenalty):
        return f"Uno! {name(head.caller)}, name a color for {name(head.offender)}'s penalty."
    if isinstance(head, PullStep):
        call = head.call
        who = name(head.player)
        what = describe_call(call)
        if head.pulls and call.count == 1 and what.startswith("a "):
            what = "one more " + what[2:]
        if head.penalty:
            return f"{who}: penalty, pull {what}."
        if call.free and not head.demand.anything:
            return f"{who}: nothing available answers the call. Free pull: {what}."
        return f"{who}: pull {what}."
    return ""


def pulled(name: str, block: Block, level: int) -> str:
    return f"{name} pulled {block.spoken()} from level {level}."


def foul(name: str, rule: str, detail: str, penalised_now: bool, warning_only: bool = False) -> str:
    tail = " Penalty: two blocks." if penalised_now else " (a warning: no penalty)" if warning_only else ""
    return f"Foul by {name}: {detail}.{tail}" if detail else f"Foul by {name} ({rule}).{tail}"


def level_detail(highest: int) -> str:
    if highest < 1:
        return "no level may be pulled from yet"
    return f"blocks may only be pulled from below level {highest}, the highest completed level"


def identity_detail(rule: str, block: Block, call: Call) -> str:
    if rule == "action-in-draw":
        return f"{block.spoken()} is not a number block, and only number blocks serve a draw"
    return f"{block.spoken()} does not answer the call ({describe_call(call)})"


def out_of_turn_detail(turn_name: str) -> str:
    return f"it is {turn_name}'s turn"


def early_detail(top: int) -> str:
    return f"level {top} must be completed before a new level is started"


def two_hands(name: str, caller: str | None) -> str:
    if caller is None:
        return f"{name} used two hands: Uno! (already penalised this turn)."
    return f"{name} used two hands: Uno! {caller} names the color of {name}'s two penalty blocks."


def two_hands_seen_only(name: str) -> str:
    return f"Two hands seen on the tower ({name}); automatic Uno! is off, so only a player's call counts."


def already_called(name: str) -> str:
    return f"{name} was already called for two hands this turn."


def reversed_(clockwise: bool) -> str:
    return f"Reverse: play now goes {'clockwise' if clockwise else 'counterclockwise'}."


def skipped(name: str) -> str:
    return f"Skip: {name} is skipped."


def wild_named(name: str, color: Color) -> str:
    return f"{name} names {color.value} for the Wild."


def penalty_named(caller: str, offender: str, color: Color) -> str:
    return f"{caller} names {color.value}: {offender} pulls two {color.value} number blocks."


def already_free(name: str) -> str:
    return f"{name}: this is already a free pull."


def claim_refused(name: str, option: "PullOption") -> str:
    return (
        f"No match refused: {option.block.spoken()} at level {option.level}, slot {option.slot} "
        f"answers the call, {name}."
    )


def claim_granted(name: str) -> str:
    return f"No match granted: no available block answers the call, {name}."


def waiting_message(state: Any) -> str:
    from referee.engine import NameWild, NamePenalty

    head = state.queue[0] if state.queue else None
    if isinstance(head, NameWild):
        return f"waiting for {state.players[head.player]} to name the Wild's color before the next pull"
    if isinstance(head, NamePenalty):
        return f"waiting for {state.players[head.caller]} to name the penalty color before the next pull"
    return "no pull is expected now"
