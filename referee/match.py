"""A match: a series of rounds with standings, and who builds the next round.

The match holds rounds; each round is an immutable `Round`. A new `setup` starts the next round;
with the same players as before, the builder is chosen by option `next_builder` (RULES.md 8).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from referee.engine import Round, new_round
from referee.events import Event, IllegalEvent, Setup
from referee.options import OptionError, Options


@dataclass(frozen=True)
class Standing:
    wins: int = 0
    losses: int = 0
    fouls: int = 0


@dataclass(frozen=True)
class Match:
    rounds: tuple[Round, ...] = ()
    standings: tuple[tuple[str, Standing], ...] = ()
    options: Options | None = None

    @property
    def current(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    @property
    def round_number(self) -> int:
        return len(self.rounds)

    def standing(self, player: str) -> Standing:
        return dict(self.standings).get(player, Standing())

    def apply(self, event: Event) -> "Match":
        """Apply one event; raises IllegalEvent and leaves this match as it was."""
        if isinstance(event, Setup):
            return self._new_round(event)
        if self.current is None:
            raise IllegalEvent("no round is set up yet: the first line must be a 'setup' event")
        rnd = self.current.apply(event)
        return self._with_round(rnd)

    def _with_round(self, rnd: Round) -> "Match":
        table = dict(self.standings)
        for foul in rnd.news.fouls:
            s = table.get(foul.player, Standing())
            table[foul.player] = replace(s, fouls=s.fouls + 1)
        if rnd.outcome is not None and self.current is not None and self.current.outcome is None:
            if rnd.outcome.winner:
                s = table.get(rnd.outcome.winner, Standing())
                table[rnd.outcome.winner] = replace(s, wins=s.wins + 1)
            if rnd.outcome.loser:
                s = table.get(rnd.outcome.loser, Standing())
                table[rnd.outcome.loser] = replace(s, losses=s.losses + 1)
        return replace(self, rounds=self.rounds[:-1] + (rnd,), standings=tuple(table.items()))

    def _new_round(self, ev: Setup) -> "Match":
        base = self.options if (self.options is not None and ev.options is None) else Options()
        try:
            options = base.updated(ev.options)
        except OptionError as exc:
            raise IllegalEvent(str(exc)) from None
        builder = self._next_builder(list(ev.players), options)
        rnd = new_round(list(ev.players), ev.tower, options, ev.blocks, builder=builder)
        table = dict(self.standings)
        for p in ev.players:
            table.setdefault(p, Standing())
        return Match(self.rounds + (rnd,), tuple(table.items()), options)

    def _next_builder(self, players: list[str], options: Options) -> int:
        """The listed first player, unless the previous round (finished) names who builds next."""
        prev = self.current
        if prev is None or prev.outcome is None:
            return 0
        out = prev.outcome
        if options.next_builder == "loser":
            chosen = out.loser
        elif options.next_builder == "winner":
            chosen = out.winner
        else:
            chosen = None
        if chosen is None:  # rotate, or nobody lost / won: the seat after the last builder
            prev_builder = prev.players[prev.builder]
            seats = list(prev.players)
            chosen = seats[(seats.index(prev_builder) + 1) % len(seats)]
        return players.index(chosen) if chosen in players else 0
