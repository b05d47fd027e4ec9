"""Where a frame's time goes: read_frame's stages timed, for the bench.

The frame-time target is a budget shared by every stage, and the bench's median alone does not
say which stage to work on. read_frame takes a StageClock and laps it at each stage's end; with
none it does nothing more than test for it, so a reading costs the same as without.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

REGISTRATION = "registration and light"
HEIGHT = "height search"
TOP = "top reading"
RETRIES = "other heights and focal lengths"
CHECKS = "checks"
HANDS = "hands"
# in read_frame's order (the hands' arms are found right after the height, for the skin's colour:
# that time is the hands' too)
STAGES = (REGISTRATION, HEIGHT, TOP, RETRIES, CHECKS, HANDS)
STOPPED = "frames stopped by a fault"  # (only when one was: from its last lap to the fault)


@dataclass
class StageClock:
    """The time of each stage over the frames timed: `start` a frame, then `lap` each stage as it
    ends (the time since the last lap goes to that stage)."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    frames: int = 0
    _last: float = 0.0

    def start(self) -> None:
        self.frames += 1
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + (now - self._last)
        self._last = now

    def mean_ms(self) -> dict[str, float]:
        """Each stage's mean ms per frame started (0 for a stage no frame reached)."""
        return {s: 1000.0 * t / max(1, self.frames) for s, t in self.seconds.items()}


def stage_line(mean_ms: dict[str, float]) -> str:
    """The stages' mean ms for a reader, largest first, with their sum."""
    parts = ", ".join(f"{s} {v:.1f}" for s, v in sorted(mean_ms.items(), key=lambda kv: -kv[1]))
    return f"{parts} (sum {sum(mean_ms.values()):.1f} ms, mean per frame)"
