"""The one object the match loop talks to: log each referee event, then show it on the page.

Why bundle the two: every decision must be on disk before anyone sees it (a SIGKILL right after
the page showed a foul must not lose that foul), and the page needs the tower picture, the
players and the round with every report; doing it in one place keeps the loop short.
"""

from __future__ import annotations

from typing import Any

from .hub import TableHub
from .replay import hand_name, tower_steps
from .store import MatchStore


class TableRecorder:
    """Log and publish a match: start_match, start_round, record (per event), finish_round."""

    def __init__(self, store: MatchStore, hub: TableHub):
        self.store = store
        self.hub = hub
        self.match_id: str | None = None
        self.round_no: int | None = None
        self.players: list[str] = []
        self._events: list[dict] = []
        self._outputs: list[dict | None] = []

    def start_match(self, players: list[str], options: dict | None = None) -> str:
        self.match_id = self.store.new_match(players, options)
        self.players = list(players)
        self.round_no = None
        return self.match_id

    def start_round(self, players: list[str] | None = None) -> int:
        """Open the next round; its first recorded event must be the round's `setup`."""
        if self.match_id is None:
            raise RuntimeError("start_match first")
        if players:
            self.players = list(players)
        self.round_no = self.store.new_round(self.match_id)
        self._events, self._outputs = [], []
        return self.round_no

    def resume(self) -> dict | None:
        """Pick up the newest unfinished match after a restart; returns store.unfinished_match()
        (its "events" are the open round's, to feed back through the engine) or None."""
        info = self.store.unfinished_match()
        if info is None:
            return None
        self.match_id, self.players = info["id"], info["players"]
        self.round_no = info["open_round"]
        self._events = list(info["events"])
        self._outputs = [e.output for e in self.store.events(self.match_id, self.round_no)] if self.round_no else []
        return info

    def record(self, event: dict, output: dict, *, evidence: dict | None = None, frame_jpeg: bytes | None = None,
               tower: list | None = None, hand: Any = None, t: float | None = None) -> int:
        """Log `event` with the referee's `output` (CONTRACT section 1) and publish the new state.

        `tower`/`hand`: the engine's map, if the loop has it; otherwise followed from the events.
        Returns the event's sequence number in the round."""
        if self.match_id is None or self.round_no is None:
            raise RuntimeError("start_match and start_round first")
        seq = self.store.append(self.match_id, self.round_no, event, evidence, t, output=output)
        self._events.append(event)
        self._outputs.append(output)
        if event.get("event") == "setup" and isinstance(event.get("players"), list):
            self.players = list(event["players"])
        if tower is None:
            step = tower_steps(self._events, self._outputs)[-1]
            tower, hand = step["tower"], step["hand"] if hand is None else hand
        from .follow import standings_by_player

        report = dict(output, tower=tower, hand=hand_name(hand), players=self.players,
                      match=self.match_id, round=self.round_no, standings=standings_by_player(self.store, self.match_id))
        self.hub.publish(report, list(output.get("say") or []), frame_jpeg)
        return seq

    def finish_round(self, winner: str | None, loser: str | None, reason: str = "") -> None:
        if self.match_id is not None and self.round_no is not None:
            self.store.finish_round(self.match_id, self.round_no, winner, loser, reason)

    def finish_match(self) -> None:
        if self.match_id is not None:
            self.store.finish_match(self.match_id)
