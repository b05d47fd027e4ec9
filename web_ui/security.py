"""The table PIN and a small token-bucket rate limiter.

Why: anyone in the room can open the page on a phone; only the table (who can read the PIN on the
referee's console) may change a game. The limiter keeps a flood of requests, or someone guessing
the PIN, from starving the referee.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Callable


def new_pin(digits: int = 4) -> str:
    """A random table PIN, shown on the console at start."""
    return "".join(secrets.choice("0123456789") for _ in range(digits))


def check_pin(expected: str, given: object) -> bool:
    """Constant-time comparison; anything that is not text is wrong."""
    if not isinstance(given, str) or not given.strip():
        return False
    return hmac.compare_digest(expected.encode(), given.strip().encode())


def pin_fingerprint(secret: str, pin: str) -> str:
    """What the session remembers instead of the PIN (a new PIN locks every session out)."""
    return hmac.new(secret.encode(), pin.encode(), hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Limit:
    """`burst` requests at once, refilled at `per_second`."""

    burst: float
    per_second: float


class RateLimiter:
    """Token buckets per (client, kind). Bounded memory: old buckets are forgotten."""

    def __init__(self, limits: dict[str, Limit], clock: Callable[[], float] = time.monotonic, max_keys: int = 4096):
        self.limits = dict(limits)
        self._clock = clock
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._max_keys = max_keys

    def allow(self, client: str, kind: str) -> tuple[bool, float]:
        """(allowed, seconds to wait before the next request would be allowed)."""
        limit = self.limits.get(kind)
        if limit is None:
            return True, 0.0
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get((client, kind), (limit.burst, now))
            tokens = min(limit.burst, tokens + (now - last) * limit.per_second)
            if tokens >= 1.0:
                self._buckets[(client, kind)] = (tokens - 1.0, now)
                allowed, wait = True, 0.0
            else:
                self._buckets[(client, kind)] = (tokens, now)
                allowed, wait = False, (1.0 - tokens) / limit.per_second
            if len(self._buckets) > self._max_keys:
                for key in list(self._buckets)[: self._max_keys // 2]:
                    del self._buckets[key]
        return allowed, wait


DEFAULT_LIMITS = {
    "unlock": Limit(burst=5, per_second=5 / 60),     # PIN guesses: 5 at once, then 5 a minute
    "action": Limit(burst=10, per_second=2),          # button presses
    "api": Limit(burst=120, per_second=30),           # reads
}
