"""The rules engine: a round of Uno Stacko as an immutable state that events turn into new states.

`Round.apply(event)` returns a new Round and never changes the one it was called on, so the state
is a pure function of the event list: a log replays, steps back and verifies. Illegal events raise
`IllegalEvent` with a message for players and leave nothing changed.

Play is a queue of steps. The head is what the referee waits for: a `PullStep` (someone owes
blocks), `NameWild` or `NamePenalty` (someone must name a color). `EndTurn` and `NextTurn` are
bookkeeping steps settled at once. Interrupts (a penalty served "at once") are steps inserted in
front of the next pull, so the interrupted obligation resumes untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence, Union

from referee import announce
from referee.blocks import BlockError, BlockSet, Color, Kind, resolve_block_set
from referee.events import (
    ClaimNoMatch,
    Collapse,
    Event,
    IllegalEvent,
    PenaltyColor,
    Place,
    Pull,
    Setup,
    Touch,
    TwoHands,
    Uno,
    WildColor,
)
from referee.options import OptionError, Options
from referee.rules import ANYTHING, NO_CALL, Call, Demand, Rules, rules_for
from referee.tower import SLOTS, PullOption, Tower, tower_from_names
from referee.blocks import Block

MIN_PLAYERS, MAX_PLAYERS = 2, 10
CLOCKWISE, COUNTERCLOCKWISE = 1, -1


# -- records and steps --------------------------------------------------------------------------
@dataclass(frozen=True)
class TurnRecord:
    """One turn (or one foul outside a turn): what it cost, so it is penalised at most once."""

    player: int
    is_turn: bool
    fouls: tuple[str, ...] = ()
    two_hands: bool = False
    penalised: bool = False
    caller: int | None = None
    penalty_scheduled: bool = False


@dataclass(frozen=True)
class PullStep:
    player: int
    demand: Demand
    count: int
    record: int
    penalty: bool = False
    call: Call = NO_CALL
    pulls: int = 0
    last_block: Block | None = None


@dataclass(frozen=True)
class NameWild:
    player: int
    record: int


@dataclass(frozen=True)
class NamePenalty:
    caller: int
    offender: int
    record: int


@dataclass(frozen=True)
class EndTurn:
    record: int


@dataclass(frozen=True)
class NextTurn:
    player: int
    demand: Demand | None  # None until the Wild's color is named
    count: int


Step = Union[PullStep, NameWild, NamePenalty, EndTurn, NextTurn]


@dataclass(frozen=True)
class Hand:
    """The block a player holds between pull and place."""

    block: Block
    level: int
    slot: int
    player: int
    record: int
    out_of_turn: bool = False


@dataclass(frozen=True)
class Outcome:
    winner: str | None
    loser: str | None
    reason: str  # "collapse" or "no-block-left"


@dataclass(frozen=True)
class Foul:
    player: str
    rule: str

    def to_dict(self) -> dict[str, str]:
        return {"player": self.player, "rule": self.rule}


@dataclass(frozen=True)
class News:
    """What the last event did: its fouls and announcements, in order."""

    fouls: tuple[Foul, ...] = ()
    say: tuple[str, ...] = ()


# -- the state ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Round:
    rules: Rules
    players: tuple[str, ...]
    builder: int
    block_set: BlockSet
    tower: Tower
    direction: int = CLOCKWISE
    queue: tuple[Step, ...] = ()
    hand: Hand | None = None
    records: tuple[TurnRecord, ...] = ()
    deferred: tuple[int, ...] = ()
    last_toucher: int = 0
    completers: tuple[int, ...] = ()
    last_turn_record: int | None = None
    outcome: Outcome | None = None
    news: News = News()

    # -- reading the state --------------------------------------------------------------------
    @property
    def options(self) -> Options:
        return self.rules.options

    @property
    def over(self) -> bool:
        return self.outcome is not None

    @property
    def head(self) -> Step | None:
        return self.queue[0] if self.queue and not self.over else None

    @property
    def turn(self) -> str | None:
        """Who must act now: owes a block, or must name a color."""
        head = self.head
        if isinstance(head, (PullStep, NameWild)):
            return self.players[head.player]
        if isinstance(head, NamePenalty):
            return self.players[head.caller]
        return None

    @property
    def call(self) -> Call:
        head = self.head
        return head.call if isinstance(head, PullStep) else NO_CALL

    @property
    def waiting_for(self) -> str | None:
        head = self.head
        if isinstance(head, NameWild):
            return "wild_color"
        if isinstance(head, NamePenalty):
            return "penalty_color"
        return None

    @property
    def direction_name(self) -> str:
        return "clockwise" if self.direction == CLOCKWISE else "counterclockwise"

    @property
    def turns_completed(self) -> int:
        return len(self.completers)

    def available(self) -> list[PullOption]:
        return self.tower.available()

    def legal_pulls(self) -> list[PullOption]:
        """Pulls by the player to act that commit no foul (position and identity)."""
        head = self.head
        if not isinstance(head, PullStep) or self.hand is not None:
            return []
        if head.call.free:
            demand = self.rules.free_demand(head.call)
        else:
            demand = head.demand
        return self.rules.answering(demand, self.tower)

    def place_options(self) -> list[tuple[int, int]]:
        """Where the block in hand may go without a foul."""
        if self.hand is None:
            return []
        level = self.tower.place_level()
        return [(level, s) for s in self.tower.free_slots(level)]

    def default_color(self) -> Color:
        """The color the referee names when a Wild's or penalty color is not named in time.

        Wild: the color with the most available blocks; penalty: with the most available number blocks.
        """
        numbers_only = isinstance(self.head, NamePenalty)
        counts = {c: 0 for c in Color}
        for o in self.tower.available():
            if o.block.color is not None and (not numbers_only or o.block.kind is Kind.NUMBER):
                counts[o.block.color] += 1
        return max(Color, key=lambda c: counts[c])  # ties: red, yellow, green, blue order

    def report(self) -> dict[str, Any]:
        """The state in CONTRACT.md section 1 output shape, with this event's fouls and announcements."""
        out = self.outcome
        return {
            "ok": True,
            "turn": self.turn,
            "direction": self.direction_name,
            "call": self.call.to_dict(),
            "waiting_for": self.waiting_for,
            "fouls": [f.to_dict() for f in self.news.fouls],
            "over": self.over,
            "winner": out.winner if out else None,
            "loser": out.loser if out else None,
            "say": list(self.news.say),
        }

    # -- changing the state -------------------------------------------------------------------
    def apply(self, event: Event) -> "Round":
        if isinstance(event, Setup):
            raise IllegalEvent("a new round starts from the match, not inside a round")
        if self.over:
            raise IllegalEvent(
                f"the round is over ({announce.outcome_phrase(self.outcome)}); set up a new round to play again"
            )
        draft = _Draft(self)
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise IllegalEvent(f"the referee does not know the event {event.kind!r}")
        handler(draft, event)
        return draft.freeze()


def new_round(
    players: Sequence[str],
    tower: Sequence[Sequence[str | None]],
    options: Options | dict | None = None,
    blocks: object = None,
    builder: int = 0,
) -> Round:
    """Set up a round: seats clockwise, the builder starts with a free pull."""
    names = list(players)
    if not (MIN_PLAYERS <= len(names) <= MAX_PLAYERS):
        raise IllegalEvent(f"Uno Stacko needs 2 to 10 players, not {len(names)}")
    if any(not isinstance(n, str) or not n.strip() for n in names):
        raise IllegalEvent("every player needs a name")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise IllegalEvent(f"two players are called {dup!r}: names must differ")
    try:
        opts = options if isinstance(options, Options) else Options().updated(options)
        block_set = resolve_block_set(blocks if not isinstance(blocks, tuple) else list(blocks))
        tower_map = tower_from_names([list(r) for r in tower], block_set)
    except (OptionError, BlockError) as exc:
        raise IllegalEvent(str(exc)) from None
    if not tower_map.available():
        raise IllegalEvent("no block of this tower may be pulled: a tower needs full levels below its top")
    rnd = Round(
        rules=rules_for(opts, len(names)),
        players=tuple(names),
        builder=builder,
        block_set=block_set,
        tower=tower_map,
        queue=(NextTurn(builder, ANYTHING, 1),),
        last_toucher=builder,
    )
    draft = _Draft(rnd)
    draft.say(announce.new_round(names, builder))
    draft.settle()
    draft.say(announce.prompt_for(draft))
    return draft.freeze()


# -- the mutable draft an event is applied to -----------------------------------------------------
class _Draft:
    """A private working copy: the handlers change it, `freeze` makes the new immutable Round."""

    def __init__(self, rnd: Round):
        self.base = rnd
        self.rules = rnd.rules
        self.players = rnd.players
        self.tower = rnd.tower
        self.direction = rnd.direction
        self.queue: list[Step] = list(rnd.queue)
        self.hand = rnd.hand
        self.records = list(rnd.records)
        self.deferred = list(rnd.deferred)
        self.last_toucher = rnd.last_toucher
        self.completers = list(rnd.completers)
        self.last_turn_record = rnd.last_turn_record
        self.outcome: Outcome | None = rnd.outcome
        self.fouls: list[Foul] = []
        self.said: list[str] = []
        self._before = (rnd.turn, rnd.call, rnd.waiting_for)

    def freeze(self) -> Round:
        return replace(
            self.base,
            tower=self.tower,
            direction=self.direction,
            queue=tuple(self.queue),
            hand=self.hand,
            records=tuple(self.records),
            deferred=tuple(self.deferred),
            last_toucher=self.last_toucher,
            completers=tuple(self.completers),
            last_turn_record=self.last_turn_record,
            outcome=self.outcome,
            news=News(tuple(self.fouls), tuple(self.said)),
        )

    # -- helpers ------------------------------------------------------------------------------
    @property
    def options(self) -> Options:
        return self.rules.options

    @property
    def head(self) -> Step | None:
        return self.queue[0] if self.queue else None

    def name(self, seat: int) -> str:
        return self.players[seat]

    def say(self, text: str | None) -> None:
        if text:
            self.said.append(text)

    def seat(self, name: str | None, role: str = "player") -> int:
        if name not in self.players:
            raise IllegalEvent(f"{name!r} is not playing in this round (players: {', '.join(self.players)})")
        return self.players.index(name)

    def next_seat(self, seat: int, steps: int = 1) -> int:
        return (seat + steps * self.direction) % len(self.players)

    def new_record(self, player: int, is_turn: bool) -> int:
        self.records.append(TurnRecord(player, is_turn))
        return len(self.records) - 1

    # -- fouls and penalties ------------------------------------------------------------------
    def foul(self, record: int, rule: str, detail: str = "") -> None:
        rec = self.records[record]
        self.records[record] = replace(rec, fouls=rec.fouls + (rule,))
        self.fouls.append(Foul(self.name(rec.player), rule))
        penalised = rule == "two-hands" or self.options.foul_penalty == "uno"
        self.say(announce.foul(self.name(rec.player), rule, detail, penalised and not rec.penalised,
                               warning_only=not penalised))
        if penalised:
            self.penalise(record)

    def penalise(self, record: int, caller: int | None = None) -> None:
        rec = self.records[record]
        if rec.penalised:
            return
        if caller is None:
            caller = self.next_seat(rec.player)  # the next seat at the moment of the foul
        self.records[record] = replace(rec, penalised=True, caller=caller)
        self.schedule_penalty(record)

    def schedule_penalty(self, record: int) -> None:
        """Queue the penalty's color naming: at the end of the turn if it is still open, else at once."""
        rec = self.records[record]
        if not rec.penalised or rec.penalty_scheduled:
            return
        if self.hand is not None and self.hand.record == record:
            return  # decided when the block in hand is placed
        for step in self.queue:
            if isinstance(step, (EndTurn, NameWild)) and step.record == record:
                return  # the turn's end serves it
            if isinstance(step, PullStep) and step.record == record and not step.penalty:
                return
        self.records[record] = replace(rec, penalty_scheduled=True)
        if self.hand is not None:
            self.deferred.append(record)
        else:
            self.insert_interrupt(record)

    def insert_interrupt(self, record: int) -> None:
        rec = self.records[record]
        pos = next((i for i, s in enumerate(self.queue) if isinstance(s, (PullStep, NextTurn))), len(self.queue))
        self.queue.insert(pos, NamePenalty(rec.caller, rec.player, record))

    def record_of_current(self, seat: int) -> int | None:
        """The record of `seat`'s turn in progress, if that player is the one acting now."""
        if self.hand is not None and self.hand.player == seat:
            return self.hand.record
        head = self.head
        if isinstance(head, (PullStep, NameWild)) and head.player == seat:
            return head.record
        if isinstance(head, NamePenalty) and head.offender == seat:
            return head.record
        return None

    def record_of_last_turn(self, seat: int) -> int | None:
        """`seat`'s turn that just ended, if the next player has not pulled yet (a late "Uno!")."""
        rid = self.last_turn_record
        head = self.head
        if rid is None or self.records[rid].player != seat or self.hand is not None:
            return None
        if isinstance(head, PullStep) and not head.penalty and head.pulls == 0:
            return rid
        return None

    def two_hands(self, seat: int, caller: int | None) -> None:
        """Two hands on the tower, seen by the referee (caller None) or called by a player."""
        record = self.record_of_current(seat)
        if record is None:
            record = self.record_of_last_turn(seat)
        if record is None:
            record = self.new_record(seat, is_turn=False)
        rec = self.records[record]
        if rec.two_hands:
            self.say(announce.already_called(self.name(seat)))
            return
        self.records[record] = replace(rec, two_hands=True, fouls=rec.fouls + ("two-hands",))
        self.fouls.append(Foul(self.name(seat), "two-hands"))
        if rec.penalised:
            self.say(announce.two_hands(self.name(seat), None))
            return
        namer = caller if caller is not None else self.next_seat(seat)
        self.say(announce.two_hands(self.name(seat), self.name(namer)))
        self.penalise(record, namer)

    # -- play ---------------------------------------------------------------------------------
    def finish_step(self, step: PullStep) -> None:
        self.queue.pop(0)
        if step.penalty:
            if self.records[step.record].is_turn:
                self.completers.append(step.player)  # the penalty was the last thing the turn owed
            return
        effect = self.rules.effect(step.last_block)
        if effect.reverse:
            self.direction = -self.direction
            self.say(announce.reversed_(self.direction == CLOCKWISE))
        if effect.skipped:
            self.say(announce.skipped(self.name(self.next_seat(step.player))))
        nxt = self.next_seat(step.player, effect.advance)
        follow: list[Step] = []
        if effect.demand is None:
            follow.append(NameWild(step.player, step.record))
        follow += [EndTurn(step.record), NextTurn(nxt, effect.demand, effect.count)]
        self.queue[0:0] = follow

    def settle(self) -> None:
        """Run bookkeeping steps until the referee waits for someone; refresh the call."""
        while self.queue:
            head = self.queue[0]
            if isinstance(head, EndTurn):
                rec = self.records[head.record]
                self.last_turn_record = head.record
                if rec.penalised and not rec.penalty_scheduled:
                    self.records[head.record] = replace(rec, penalty_scheduled=True)
                    self.queue[0] = NamePenalty(rec.caller, rec.player, head.record)
                else:
                    self.queue.pop(0)
                    if not rec.penalised:
                        self.completers.append(rec.player)
                continue
            if isinstance(head, NextTurn):
                record = self.new_record(head.player, is_turn=True)
                self.queue[0] = PullStep(head.player, head.demand, head.count, record)
                continue
            if isinstance(head, PullStep) and self.hand is None:
                self.queue[0] = replace(head, call=self.rules.resolve(head.demand, head.count, self.tower))
            break

    def end_if_no_block_left(self, placer: int) -> bool:
        if self.tower.available():
            return False
        self.outcome = Outcome(self.name(placer), None, "no-block-left")
        self.queue = []
        self.say(announce.outcome_sentence(self.outcome))
        return True

    def prompt_if_changed(self) -> None:
        rnd = self.freeze()
        if (rnd.turn, rnd.call, rnd.waiting_for) != self._before or not self.said or self.fouls:
            self.say(announce.prompt_for(self))


# -- event handlers -------------------------------------------------------------------------------
def _pull(d: _Draft, ev: Pull) -> None:
    head = d.head
    if d.hand is not None:
        raise IllegalEvent(
            f"{d.name(d.hand.player)} is holding {d.hand.block.spoken()}: it must be placed before another pull"
        )
    if not isinstance(head, PullStep):
        raise IllegalEvent(announce.waiting_message(d))
    seat = head.player if ev.player is None else d.seat(ev.player)
    if ev.slot not in SLOTS or not (1 <= ev.level <= d.tower.top_level):
        raise IllegalEvent(
            f"there is no level {ev.level}, slot {ev.slot}: the tower has levels 1 to {d.tower.top_level}, slots 0, 1, 2"
        )
    block = d.tower.at(ev.level, ev.slot)
    if block is None:
        raise IllegalEvent(f"level {ev.level}, slot {ev.slot} is empty: there is no block to pull there")
    if ev.block is not None:
        try:
            claimed = Block.parse(ev.block)
        except BlockError as exc:
            raise IllegalEvent(str(exc)) from None
        if claimed != block:
            raise IllegalEvent(
                f"the map has {block.spoken()} at level {ev.level}, slot {ev.slot}, not {claimed.spoken()}: please check"
            )
    if ev.level < d.tower.top_level and sum(b is not None for b in d.tower.level(ev.level)) == 1:
        raise IllegalEvent(
            f"level {ev.level} would be left with no block under level {ev.level + 1}: the reading must be wrong, please check"
        )
    allowed_by_position = d.tower.pull_allowed_by_position(ev.level)
    highest = d.tower.highest_completed_level
    d.tower = d.tower.without(ev.level, ev.slot)
    d.last_toucher = seat
    d.say(announce.pulled(d.name(seat), block, ev.level))
    if seat == head.player:
        record = head.record
        d.hand = Hand(block, ev.level, ev.slot, seat, record)
        d.queue[0] = replace(head, pulls=head.pulls + 1)
        if not allowed_by_position:
            d.foul(record, "level", announce.level_detail(highest))
        demand = d.rules.free_demand(head.call) if head.call.free else head.demand
        identity = d.rules.identity_foul(block, demand)
        if identity:
            d.foul(record, identity, announce.identity_detail(identity, block, head.call))
    else:
        record = d.new_record(seat, is_turn=False)
        d.hand = Hand(block, ev.level, ev.slot, seat, record, out_of_turn=True)
        if not allowed_by_position:
            d.foul(record, "level", announce.level_detail(highest))
        d.foul(record, "out-of-turn", announce.out_of_turn_detail(d.name(head.player)))
    d.prompt_if_changed()


def _place(d: _Draft, ev: Place) -> None:
    hand = d.hand
    if hand is None:
        raise IllegalEvent("nobody is holding a block to place")
    if ev.player is not None and d.seat(ev.player) != hand.player:
        raise IllegalEvent(f"{d.name(hand.player)} is holding the block, not {ev.player}")
    top = d.tower.top_level
    if ev.slot not in SLOTS or ev.level < 1:
        raise IllegalEvent(f"there is no level {ev.level}, slot {ev.slot}: slots are 0, 1 and 2, levels start at 1")
    if ev.level > top + 1:
        raise IllegalEvent(
            f"level {ev.level} is more than one level above the top (level {top}): the reading must be wrong, please check"
        )
    if ev.level <= top and d.tower.at(ev.level, ev.slot) is not None:
        raise IllegalEvent(f"level {ev.level}, slot {ev.slot} already holds {d.tower.at(ev.level, ev.slot).spoken()}")
    if ev.level < top:
        raise IllegalEvent(
            f"a block cannot go back into a hole below the top: place it on level {d.tower.place_level()}"
        )
    early = ev.level == top + 1 and top > 0 and not d.tower.top_complete
    d.tower = d.tower.with_block(ev.level, ev.slot, hand.block)
    d.hand = None
    d.last_toucher = hand.player
    if early:
        d.foul(hand.record, "early-level", announce.early_detail(top))
    if d.end_if_no_block_left(hand.player):
        return
    if hand.out_of_turn:
        d.schedule_penalty(hand.record)  # the block sets nothing: turn, call and direction stay
    else:
        head = d.queue[0]
        assert isinstance(head, PullStep) and head.player == hand.player
        step = replace(head, count=head.count - 1, last_block=hand.block)
        if step.count > 0:
            d.queue[0] = step
        else:
            d.finish_step(step)
    for record in d.deferred:
        d.insert_interrupt(record)
    d.deferred = []
    d.settle()
    d.prompt_if_changed()


def _wild_color(d: _Draft, ev: WildColor) -> None:
    head = d.head
    if not isinstance(head, NameWild):
        raise IllegalEvent("no Wild color is awaited now")
    if ev.player is not None and d.seat(ev.player) != head.player:
        raise IllegalEvent(f"{d.name(head.player)} pulled the Wild and names its color, not {ev.player}")
    d.queue.pop(0)
    for i, step in enumerate(d.queue):
        if isinstance(step, NextTurn) and step.demand is None:
            d.queue[i] = replace(step, demand=d.rules.wild_demand(ev.color))
            break
    d.say(announce.wild_named(d.name(head.player), ev.color))
    d.settle()
    d.prompt_if_changed()


def _penalty_color(d: _Draft, ev: PenaltyColor) -> None:
    head = d.head
    if not isinstance(head, NamePenalty):
        raise IllegalEvent("no penalty color is awaited now")
    if ev.player is not None and d.seat(ev.player) != head.caller:
        raise IllegalEvent(f"{d.name(head.caller)} names the penalty color, not {ev.player}")
    d.queue[0] = PullStep(head.offender, d.rules.penalty_demand(ev.color), 2, head.record, penalty=True)
    d.say(announce.penalty_named(d.name(head.caller), d.name(head.offender), ev.color))
    d.settle()
    d.prompt_if_changed()


def _two_hands(d: _Draft, ev: TwoHands) -> None:
    seat = d.seat(ev.player)
    d.last_toucher = seat
    if not d.options.auto_uno:
        d.say(announce.two_hands_seen_only(d.name(seat)))
        return
    d.two_hands(seat, caller=None)
    d.settle()
    d.prompt_if_changed()


def _uno(d: _Draft, ev: Uno) -> None:
    caller, offender = d.seat(ev.caller), d.seat(ev.offender)
    if caller == offender:
        raise IllegalEvent(f"{ev.caller} cannot call \"Uno!\" on themselves")
    d.two_hands(offender, caller=caller)
    d.settle()
    d.prompt_if_changed()


def _touch(d: _Draft, ev: Touch) -> None:
    d.last_toucher = d.seat(ev.player)


def _claim_no_match(d: _Draft, ev: ClaimNoMatch) -> None:
    seat = d.seat(ev.player)
    head = d.head
    if not isinstance(head, PullStep) or head.player != seat:
        turn = d.base.turn
        raise IllegalEvent(f"only the player who must pull can claim no match, and that is {turn}, not {ev.player}")
    if d.hand is not None:
        raise IllegalEvent(f"{ev.player} already holds a block")
    if head.call.free:
        d.say(announce.already_free(ev.player))
        return
    answering = d.rules.answering(head.demand, d.tower)
    if answering:
        d.say(announce.claim_refused(ev.player, answering[0]))
        return
    d.queue[0] = replace(head, call=d.rules.resolve(head.demand, head.count, d.tower))
    d.say(announce.claim_granted(ev.player))
    d.prompt_if_changed()


def _collapse(d: _Draft, ev: Collapse) -> None:
    loser = d.last_toucher
    winner = next((p for p in reversed(d.completers) if p != loser), None)
    d.outcome = Outcome(d.name(winner) if winner is not None else None, d.name(loser), "collapse")
    d.queue = []  # the block in hand, if any, stays in that hand: it did not fall
    d.say(announce.outcome_sentence(d.outcome))


_HANDLERS = {
    Pull: _pull,
    Place: _place,
    WildColor: _wild_color,
    PenaltyColor: _penalty_color,
    TwoHands: _two_hands,
    Uno: _uno,
    Touch: _touch,
    ClaimNoMatch: _claim_no_match,
    Collapse: _collapse,
}
