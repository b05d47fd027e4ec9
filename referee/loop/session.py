"""The referee at the table: applies events, logs them first, then shows and speaks the decision.

One session owns the match state. Every accepted event is committed to the match log before it
is announced, so a crash or power cut loses nothing that was said; `resume` replays the log.
The senses (camera, sensors, buttons, page) only ever reach the engine through `submit`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from referee.events import IllegalEvent, parse_event
from referee.match import Match


class Speaker(Protocol):
    def say(self, text: str, urgent: bool = False) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...


class _WallClock:
    def now(self) -> float:
        return time.monotonic()


@dataclass
class Pending:
    """A color the referee waits for, and since when (for the timeouts of RULES.md)."""

    kind: str
    player: str
    since: float


@dataclass
class SessionStats:
    accepted: int = 0
    refused: int = 0
    announce_latency_s: list[float] = field(default_factory=list)
    # (event kind, clock time, wall time) of every accepted event: latency against ground truth
    timeline: list[tuple[str, float, float]] = field(default_factory=list)


class RefereeSession:
    def __init__(
        self,
        store: Any = None,
        hub: Any = None,
        speaker: Speaker | None = None,
        clock: Clock | None = None,
        echo: Callable[[str], None] | None = None,
    ):
        self.store = store
        self.hub = hub
        self.speaker = speaker
        self.clock = clock or _WallClock()
        self.echo = echo
        self.match = Match()
        self.match_id: str | None = None
        self.round_no = 0
        self.players: list[str] = []
        self.options: dict | None = None
        self.pending: Pending | None = None
        self.stats = SessionStats()
        self.frame_jpeg: bytes | None = None
        self.last_refusal: str | None = None

    # -- state ----------------------------------------------------------------------------------
    @property
    def round(self):
        return self.match.current

    @property
    def over(self) -> bool:
        return self.round is not None and self.round.over

    # -- starting -------------------------------------------------------------------------------
    def start_match(self, players: Sequence[str], options: dict | None = None) -> str | None:
        self.players = list(players)
        self.options = options
        self.match = Match()
        if self.store is not None:
            self.match_id = self.store.new_match(self.players, options)
        self.round_no = 0
        return self.match_id

    def start_round(self, tower: Sequence[Sequence[str | None]], blocks: Any = None) -> dict:
        setup: dict[str, Any] = {"event": "setup", "players": self.players, "tower": [list(r) for r in tower]}
        if self.options:
            setup["options"] = self.options
        if blocks is not None:
            setup["blocks"] = blocks
        if self.store is not None:
            self.round_no = self.store.new_round(self.match_id)
        else:
            self.round_no += 1
        return self.submit(setup)

    def resume(self) -> bool:
        """Pick up an unfinished match from the log: replay its events, say where play stands."""
        if self.store is None:
            return False
        info = self.store.unfinished_match()
        if info is None:
            return False
        self.match_id = info["id"]
        self.players = list(info.get("players") or [])
        match = Match()
        last_round = 0
        for logged in self.store.iter_events(self.match_id):
            try:
                match = match.apply(parse_event(logged.event))
            except IllegalEvent as exc:  # a log written by another version: report, keep going
                self.note(f"resume: event {logged.round}/{logged.seq} is no longer accepted: {exc}")
            last_round = logged.round
        if match.current is None:
            return False
        self.match = match
        self.round_no = last_round
        self.options = dict(info.get("options") or {}) or None
        rnd = self.round
        note = f"Resuming match {self.match_id}, round {self.round_no}, where it stopped."
        self.announce([note] + [s for s in _prompt(rnd)], urgent=False)
        return True

    # -- events ---------------------------------------------------------------------------------
    def submit(self, event: dict, evidence: dict | None = None, released_at: float | None = None) -> dict:
        """Apply one referee event: log it, publish it, speak it. Refused events are said, not logged."""
        try:
            parsed = parse_event(event)
            match = self.match.apply(parsed)
        except IllegalEvent as exc:
            self.stats.refused += 1
            self.last_refusal = str(exc)
            report = {"ok": False, "error": str(exc)}
            self.note(f"refused {event}: {exc}")
            if self.hub is not None:
                self.hub.publish({**self._table_state(), "ok": False, "error": str(exc)}, [f"Please check: {exc}"])
            return report
        prev = self.match.current
        self.match = match
        rnd = match.current
        report = rnd.report()
        if self.store is not None:
            self.store.append(self.match_id, self.round_no, parsed.to_dict(), evidence=evidence,
                              t=time.time(), output=report)
            if rnd.over and (prev is None or not prev.over):  # this event ended the round
                self.store.finish_round(self.match_id, self.round_no, rnd.outcome.winner, rnd.outcome.loser,
                                        rnd.outcome.reason)
        self.stats.accepted += 1
        self.stats.timeline.append((parsed.kind, self.clock.now(), time.monotonic()))
        self._track_pending(rnd)
        self.announce(report["say"], urgent=bool(report["fouls"]) or rnd.over)
        if released_at is not None:
            self.stats.announce_latency_s.append(max(0.0, self.clock.now() - released_at))
        return report

    def finish_match(self) -> None:
        if self.store is not None and self.match_id is not None:
            self.store.finish_match(self.match_id)

    # -- colors: page, buttons and timeouts -------------------------------------------------------
    def name_color(self, color: str, player: str | None = None) -> dict | None:
        """A color from a button or the page goes to whichever color the referee waits for."""
        rnd = self.round
        if rnd is None or rnd.waiting_for is None:
            return None
        event = {"event": rnd.waiting_for, "color": color}
        if player:
            event["player"] = player
        return self.submit(event, evidence={"source": "button" if player is None else "page"})

    def tick(self) -> dict | None:
        """Apply the color timeouts: past them the referee names the color itself and says so."""
        rnd = self.round
        if self.pending is None or rnd is None or rnd.waiting_for is None:
            return None
        limit = rnd.options.wild_timeout_s if self.pending.kind == "wild_color" else rnd.options.penalty_color_timeout_s
        if self.clock.now() - self.pending.since < limit:
            return None
        color = rnd.default_color().value
        who = self.pending.player
        self.announce([f"{who} named no color in time: the referee names {color}."], urgent=False)
        return self.submit({"event": rnd.waiting_for, "color": color, "player": who},
                           evidence={"source": "timeout", "waited_s": round(self.clock.now() - self.pending.since, 2)})

    def handle_action(self, action: dict) -> dict | None:
        """A request from the page (already validated by web_ui.actions)."""
        kind = action.get("action")
        if kind in ("wild_color", "penalty_color"):
            event = {"event": kind, "color": action["color"]}
            if action.get("player"):
                event["player"] = action["player"]
            return self.submit(event, evidence={"source": action.get("source", "page")})
        if kind == "uno":
            return self.submit({"event": "uno", "caller": action["caller"], "offender": action["offender"]},
                               evidence={"source": action.get("source", "page")})
        if kind == "claim_no_match":
            return self.submit({"event": "claim_no_match", "player": action["player"]},
                               evidence={"source": action.get("source", "page")})
        return None

    def poll_page(self) -> list[dict]:
        if self.hub is None:
            return []
        return [r for a in self.hub.actions() if (r := self.handle_action(a)) is not None]

    # -- output ---------------------------------------------------------------------------------
    def _track_pending(self, rnd) -> None:
        if rnd.waiting_for is None:
            self.pending = None
        elif self.pending is None or self.pending.kind != rnd.waiting_for or self.pending.player != rnd.turn:
            self.pending = Pending(rnd.waiting_for, rnd.turn, self.clock.now())

    def _table_state(self) -> dict:
        rnd = self.round
        if rnd is None:
            return {}
        state = rnd.report()
        state["tower"] = rnd.tower.names()
        state["hand"] = (
            {"player": rnd.players[rnd.hand.player], "block": rnd.hand.block.name,
             "level": rnd.hand.level, "slot": rnd.hand.slot}
            if rnd.hand else None
        )
        state["players"] = list(rnd.players)
        state["builder"] = rnd.players[rnd.builder]
        state["match"] = self.match_id
        state["round"] = self.round_no
        state["turns"] = rnd.turns_completed
        state["standings"] = {p: vars(s) for p, s in self.match.standings}
        return state

    def announce(self, lines: Sequence[str], urgent: bool = False) -> None:
        """Show lines on the page (with the table state) and speak them."""
        lines = [s for s in lines if s]
        if self.hub is not None:
            state = self._table_state()
            state["say"] = list(lines)
            self.hub.publish(state, list(lines), self.frame_jpeg)
        for line in lines:
            self.note(line)
            if self.speaker is not None:
                self.speaker.say(line, urgent=urgent)

    def note(self, text: str) -> None:
        """A line for the console (the operator), not for the table."""
        if self.echo is not None:
            self.echo(text)


def _prompt(rnd) -> list[str]:
    from referee import announce

    text = announce.prompt_for(rnd)
    return [text] if text else []
