"""One clock object for all timing, so the twin and replays can run faster than real time.

Every device takes a clock; nothing reads `time.monotonic()` directly.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since an arbitrary origin (monotonic)."""

    def sleep(self, dt: float) -> None:
        """Wait dt seconds of this clock's time."""


class RealClock:
    """Wall time: the Pi."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, dt: float) -> None:
        if dt > 0:
            time.sleep(dt)


class SimClock:
    """Simulated time, advanced by the twin or a replay; `sleep` advances it (no real waiting).

    Thread-safe so a speaker thread and a sensor loop can share it.
    """

    def __init__(self, start: float = 0.0):
        self._t = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._t

    def advance(self, dt: float) -> float:
        if dt < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._t += dt
            return self._t

    def set(self, t: float) -> None:
        with self._lock:
            if t < self._t:
                raise ValueError(f"a clock cannot go backwards ({t} < {self._t})")
            self._t = float(t)

    def sleep(self, dt: float) -> None:
        if dt > 0:
            self.advance(dt)
