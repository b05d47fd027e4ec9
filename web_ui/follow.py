"""Follow a match log that another process writes, and show it live on the page.

Why: `stacko serve --log PATH` may run beside a referee that has no web server of its own
(`stacko demo --no-serve`), or outlive a referee that was killed; reading the append-only log is
the one interface both sides already share. The browser still gets server-sent events, not polls.
"""

from __future__ import annotations

import threading

from .hub import TableHub
from .replay import EngineMissing, script_runner, tower_steps
from .store import LoggedEvent, MatchStore


def standings_by_player(store: MatchStore, match_id: str) -> dict:
    """{name: {"wins", "losses", "fouls"}} for one match, as the live report carries it."""
    return {s["player"]: {"wins": s["wins"], "losses": s["losses"], "fouls": s["fouls"]}
            for s in store.standings(match_id)}


class LogFollower:
    """Publish each newly logged event's table state to the hub (a background thread)."""

    def __init__(self, store: MatchStore, hub: TableHub, interval_s: float = 0.25):
        self.store = store
        self.hub = hub
        self.interval_s = interval_s
        self._cursor = store.latest_round_start_rowid()
        self._void_cursor = store.last_void_rowid()
        self._round: tuple[str, int] | None = None
        self._events: list[dict] = []
        self._outputs: list[dict] = []
        self._runner = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-follower", daemon=True)

    def start(self) -> "LogFollower":
        self.poll()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception as exc:  # a locked or damaged log must not kill the page
                print(f"stacko serve: cannot read the match log: {exc}", flush=True)

    def poll(self) -> int:
        """Publish what was logged since the last poll; returns how many events were read."""
        batch = self.store.events_after(self._cursor)
        for rowid, entry in batch:
            self._cursor = rowid
            self._take(entry)
        voids = self.store.voids_after(self._void_cursor)
        if voids:
            self._void_cursor = voids[-1][0]
            if any((m, r) == self._round for _, m, r, _ in voids):
                self._rebuild()
        return len(batch)

    def _rebuild(self) -> None:
        """An event of the shown round was taken back: re-run the round from the events that stand."""
        assert self._round is not None
        match_id, round_no = self._round
        self._round = None
        last = None
        for entry in self.store.events(match_id, round_no):
            last = self._take(entry, publish=False) or last
        if last is not None:
            self.hub.publish(dict(last[1], say=["The referee took back an event."]), ["The referee took back an event."])

    def _take(self, entry: LoggedEvent, publish: bool = True) -> tuple[dict, dict] | None:
        """Follow one logged event; publish the table after it (or return (output, report) if not)."""
        key = (entry.match, entry.round)
        if key != self._round:
            self._round, self._events, self._outputs = key, [], []
            try:
                self._runner = script_runner()
            except EngineMissing:
                self._runner = None
        decided = self._runner.feed(dict(entry.event)) if self._runner is not None else None
        output = entry.output or decided or {"ok": True}
        self._events.append(entry.event)
        self._outputs.append(output)
        if not output.get("ok"):
            return None  # a refused event leaves the table as it was
        step = tower_steps(self._events, self._outputs)[-1]
        report = dict(output, match=entry.match, round=entry.round, players=self.store.players(entry.match),
                      standings=standings_by_player(self.store, entry.match))
        report.setdefault("tower", step["tower"])
        report.setdefault("hand", step["hand"])
        if not publish:
            return output, report
        self.hub.publish(report, list(output.get("say") or []))
        return output, report
