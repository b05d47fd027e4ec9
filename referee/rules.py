"""What a block asks of the next player, and which blocks answer: the rule variants.

Like python-chess variants, each house rule that changes matching or effects is a small subclass,
found in a registry from the options and the number of players, never a flag tested all over the
engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from referee.blocks import Block, Color, Kind
from referee.options import Options
from referee.tower import PullOption, Tower


@dataclass(frozen=True)
class Demand:
    """What an obligation asks for, before the tower map is consulted.

    `anything`: the first turn, any block. `numbers_only`: Draw Two and penalties.
    """

    colors: tuple[Color, ...] = ()
    numbers: tuple[int, ...] = ()
    numbers_only: bool = False
    symbols: tuple[Kind, ...] = ()
    anything: bool = False


ANYTHING = Demand(anything=True)


@dataclass(frozen=True)
class Call:
    """The obligation shown for the player to act: CONTRACT.md section 1 `call`."""

    count: int
    colors: tuple[Color, ...] = ()
    numbers: tuple[int, ...] = ()
    numbers_only: bool = False
    free: bool = False
    symbols: tuple[Kind, ...] = ()

    def to_dict(self) -> dict:
        out = {
            "count": self.count,
            "colors": [c.value for c in self.colors],
            "numbers": list(self.numbers),
            "numbers_only": self.numbers_only,
            "free": self.free,
        }
        if self.symbols:
            out["symbols"] = [k.value for k in self.symbols]
        return out


NO_CALL = Call(0)


@dataclass(frozen=True)
class Effect:
    """What a placed block does to play: who is next, in which direction, owing what."""

    advance: int = 1          # seats to move in the (new) direction
    reverse: bool = False     # the direction flips before moving
    demand: Demand | None = None  # None: the Wild, whose color its puller names
    count: int = 1
    skipped: bool = False


class Rules:
    """Standard Uno Stacko with three or more players (RULES.md sections 4 and 7)."""

    name: ClassVar[str] = "standard"

    def __init__(self, options: Options, n_players: int):
        self.options = options
        self.n_players = n_players

    @classmethod
    def applies(cls, options: Options, n_players: int) -> bool:
        return True

    # -- matching ------------------------------------------------------------------------------
    def answers(self, block: Block, demand: Demand) -> bool:
        """Does `block` answer `demand`, judged on identity only (position is judged apart)?"""
        if demand.anything:
            return not (demand.numbers_only and block.is_action)
        if demand.numbers_only and block.is_action:
            return False
        if block.kind is Kind.WILD:
            return True  # the Wild may be pulled in place of any block, except in a draw
        if block.color in demand.colors:
            return True
        return block.kind is Kind.NUMBER and block.number in demand.numbers

    def identity_foul(self, block: Block, demand: Demand) -> str | None:
        """`action-in-draw` or `wrong-block`, or None when the block answers."""
        if demand.numbers_only and block.is_action:
            return "action-in-draw"
        return None if self.answers(block, demand) else "wrong-block"

    def resolve(self, demand: Demand, count: int, tower: Tower) -> Call:
        """The call as shown: the demand, or a free pull when no available block answers it."""
        if demand.anything:
            return Call(count, numbers_only=demand.numbers_only, free=True)
        available = tower.available()
        if any(self.answers(o.block, demand) for o in available):
            return Call(count, demand.colors, demand.numbers, demand.numbers_only, False, demand.symbols)
        # A free pull: in a draw, any available number block first, then any available block.
        numbers_left = demand.numbers_only and any(o.block.kind is Kind.NUMBER for o in available)
        return Call(count, numbers_only=numbers_left, free=True)

    def free_demand(self, call: Call) -> Demand:
        """The demand a granted free pull stands for."""
        return Demand(numbers_only=call.numbers_only, anything=True)

    def answering(self, demand: Demand, tower: Tower) -> list[PullOption]:
        return [o for o in tower.available() if self.answers(o.block, demand)]

    # -- effects -------------------------------------------------------------------------------
    def effect(self, block: Block) -> Effect:
        if block.kind is Kind.NUMBER:
            return Effect(demand=Demand(colors=(block.color,), numbers=(block.number,)))
        if block.kind is Kind.WILD:
            return Effect(demand=None)
        if block.kind is Kind.DRAW2:
            return Effect(demand=Demand(colors=(block.color,), numbers_only=True), count=2)
        symbols = self.symbols_for(block)
        if block.kind is Kind.REVERSE:
            return Effect(reverse=True, demand=Demand(colors=(block.color,), symbols=symbols))
        return Effect(advance=2, skipped=True, demand=Demand(colors=(block.color,), symbols=symbols))

    def symbols_for(self, block: Block) -> tuple[Kind, ...]:
        return ()

    def wild_demand(self, color: Color) -> Demand:
        return Demand(colors=(color,))

    def penalty_demand(self, color: Color) -> Demand:
        return Demand(colors=(color,), numbers_only=True)


class SymbolMatchRules(Rules):
    """Option `match_symbols`: UNO-style, an action block also answers a call set by the same symbol."""

    name = "match-symbols"

    @classmethod
    def applies(cls, options: Options, n_players: int) -> bool:
        return options.match_symbols

    def answers(self, block: Block, demand: Demand) -> bool:
        if super().answers(block, demand):
            return True
        return not demand.numbers_only and block.kind in demand.symbols

    def symbols_for(self, block: Block) -> tuple[Kind, ...]:
        return (block.kind,)  # a Draw Two is served with number blocks, so only Reverse/Skip get here


class TwoPlayerRules(Rules):
    """Two players (both sheets): Reverse and Skip act as a Draw Two of their color, and only so."""

    name = "two-player"

    @classmethod
    def applies(cls, options: Options, n_players: int) -> bool:
        return n_players == 2

    def effect(self, block: Block) -> Effect:
        if block.kind in (Kind.REVERSE, Kind.SKIP):
            return Effect(demand=Demand(colors=(block.color,), numbers_only=True), count=2)
        return super().effect(block)


class TwoPlayerSymbolRules(TwoPlayerRules, SymbolMatchRules):
    name = "two-player+match-symbols"

    @classmethod
    def applies(cls, options: Options, n_players: int) -> bool:
        return n_players == 2 and options.match_symbols


# Most specific first: the first variant that applies is the one played.
VARIANTS: tuple[type[Rules], ...] = (TwoPlayerSymbolRules, TwoPlayerRules, SymbolMatchRules, Rules)


def rules_for(options: Options, n_players: int) -> Rules:
    for variant in VARIANTS:
        if variant.applies(options, n_players):
            return variant(options, n_players)
    raise AssertionError("the standard rules always apply")
