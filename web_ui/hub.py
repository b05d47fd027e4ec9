"""The live table: what the match loop publishes and what the page asks of it.

Why a hub between the loop and the web server: the loop must never wait for a slow phone. It
publishes and moves on; each viewer has its own bounded queue, and a viewer that falls too far
behind is dropped and catches up from the recent history when its browser reconnects
(Last-Event-ID). Requests from the page travel the other way through a bounded action queue.
"""

from __future__ import annotations

import collections
import json
import queue
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .actions import ActionError, check_answer, parse_action


@dataclass(eq=False)  # compared and hashed by identity: each is one viewer
class Subscription:
    """One viewer's stream. `closed` is set when it fell behind (its browser will reconnect)."""

    queue: "queue.Queue[dict]"
    closed: threading.Event = field(default_factory=threading.Event)

    def get(self, timeout: float) -> dict | None:
        """The next message, or None after `timeout` seconds (time for a keep-alive)."""
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None


class TableHub:
    """Publish table states to any number of viewers; collect the page's requests for the loop."""

    def __init__(self, history: int = 256, viewer_queue: int = 64, action_queue: int = 64):
        self._lock = threading.Lock()
        # A new hub (a restarted referee) starts again at seq 1; the epoch tells browsers so.
        self.epoch = secrets.token_hex(4)
        self._seq = 0
        self._history: collections.deque[dict] = collections.deque(maxlen=history)
        self._subscribers: set[Subscription] = set()
        self._viewer_queue = viewer_queue
        self._frame: bytes | None = None
        self._frame_seq: int | None = None
        self._actions: "queue.Queue[dict]" = queue.Queue(maxsize=action_queue)
        self._question: dict | None = None   # the referee's open question, as last published
        self._answered = False               # an answer to it is already queued

    # -- loop -> page -----------------------------------------------------------------------
    def publish(self, report: dict, say: list[str] | None = None, frame_jpeg: bytes | None = None) -> int:
        """Send a new table state (CONTRACT section 1 output, plus optional "tower", "hand",
        "players", "match", "round" keys) to every viewer; returns its sequence number."""
        if not isinstance(report, dict):
            raise TypeError("report must be a dict")
        say = list(say if say is not None else report.get("say") or [])
        with self._lock:
            question = report.get("question") if isinstance(report.get("question"), dict) else None
            # a new question, or a refusal (an answer the referee could not use: the table may answer again)
            if question != self._question or report.get("ok") is False:
                self._question, self._answered = question, False
            self._seq += 1
            if frame_jpeg is not None:
                self._frame, self._frame_seq = bytes(frame_jpeg), self._seq
            message = {"seq": self._seq, "epoch": self.epoch, "t": time.time(), "report": report, "say": say,
                       "frame": self._frame_seq}
            # Encode once here, not once per viewer.
            message["data"] = json.dumps(message, separators=(",", ":"), default=str)
            self._history.append(message)
            for sub in list(self._subscribers):
                try:
                    sub.queue.put_nowait(message)
                except queue.Full:
                    sub.closed.set()
                    self._subscribers.discard(sub)
            return self._seq

    def latest(self) -> dict | None:
        with self._lock:
            return self._history[-1] if self._history else None

    def frame(self) -> tuple[int | None, bytes | None]:
        with self._lock:
            return self._frame_seq, self._frame

    @property
    def live(self) -> bool:
        """True once a match loop has published anything."""
        with self._lock:
            return self._seq > 0

    def subscribe(self, last_seq: int | None = None) -> Subscription:
        """A new viewer. With `last_seq` (its browser's Last-Event-ID) it gets what it missed;
        without (or if that is no longer in the history) it gets the current round so far, so its
        feed of announcements and fouls is complete."""
        with self._lock:
            backlog: list[dict]
            if last_seq is not None and self._history and self._history[0]["seq"] <= last_seq + 1:
                backlog = [m for m in self._history if m["seq"] > last_seq]
            else:
                backlog = self._current_round()
            sub = Subscription(queue.Queue(maxsize=self._viewer_queue + len(backlog)))
            for m in backlog:
                sub.queue.put_nowait(m)
            self._subscribers.add(sub)
        return sub

    def _current_round(self) -> list[dict]:
        """The kept messages of the latest round (by the reports' "match"/"round" keys)."""
        if not self._history:
            return []
        key = lambda m: (m["report"].get("match"), m["report"].get("round"))  # noqa: E731
        latest = key(self._history[-1])
        if latest == (None, None):
            return [self._history[-1]]
        out = []
        for m in reversed(self._history):
            if key(m) != latest:
                break
            out.append(m)
        return out[::-1]

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subscribers.discard(sub)

    @property
    def viewers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    # -- page -> loop -----------------------------------------------------------------------
    def submit(self, action: Any, source: str = "page") -> dict:
        """Validate a request (raises ActionError) and queue it for the loop."""
        checked = parse_action(action)
        checked["t"] = time.time()
        checked["source"] = source
        with self._lock:
            if checked["action"] == "answer":  # only the open question, and only once
                check_answer(checked, self._question, self._answered)
            try:
                self._actions.put_nowait(checked)
            except queue.Full:
                raise ActionError("the referee is busy; try again in a moment") from None
            if checked["action"] == "answer":
                self._answered = True
        return checked

    @property
    def question(self) -> dict | None:
        """The referee's open question as last published (None: none)."""
        with self._lock:
            return self._question

    def actions(self) -> list[dict]:
        """Every queued request, oldest first, without waiting (the loop polls this each tick)."""
        out = []
        while True:
            try:
                out.append(self._actions.get_nowait())
            except queue.Empty:
                return out

    def next_action(self, timeout: float | None = None) -> dict | None:
        """Wait up to `timeout` seconds for one request (None: none came)."""
        try:
            return self._actions.get(timeout=timeout)
        except queue.Empty:
            return None
