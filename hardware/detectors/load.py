"""The load cell's settled level and its steps: a block lifted (-17 g), a block placed (+17 g).

Samples go through a short median (single-sample spikes of a knock) and two cascaded moving means
(the tray mount rings at 25-50 Hz while hands work at the tower: a 50 ms mean, twice, removes that
ringing far better than a median does); the smoothing's delay is subtracted from step times. The level is
*settled* when the filtered value stays inside a narrow band for `stable_window_s`. Lifts and places
alternate (a player holds one block at a time), so the tracker keeps a *floor*: the tray's settled level
with no block in hand, or with one block in hand. From the floor, a settled level about one block lower
is a lift (then the floor follows it); while a block is in hand, a settled level about one block higher is
a place. A hand pressing on the tower only adds weight and is ignored; small changes are drift, followed
slowly; a level that stays elsewhere for `reanchor_s` becomes the new floor silently (blocks settling,
a missed event). The step's time is when the filtered signal crossed half-way, found by looking back,
so it does not depend on how long settling took.

Early place (`early_place_s` > 0): with a block in hand, the quick signal (the median under one short
mean) staying within `early_place_band_g` of the level before the lift for `early_place_s` is a place
at once, without waiting for the settled level (the match loop announces a place within 0.3 s of the
release). The settled level still follows: `place_settled` confirms it (its delta for the log), or
`place_withdrawn` if the weight settles back at the block-in-hand level (the block was not let go).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from statistics import median

from hardware.detectors.config import LoadConfig


@dataclass(frozen=True)
class LoadStep:
    kind: str          # "lift", "place", "reanchor", or after an early place "place_settled" / "place_withdrawn"
    delta_g: float
    t: float           # when the change happened (half-way crossing)
    detected_at: float
    level_g: float
    early: bool = False  # a place called on the quick signal, before the level settled


class _MovingMean:
    """Mean of the values in the last `window_s` seconds (streaming, running sum)."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        self._q: deque[tuple[float, float]] = deque()
        self._sum = 0.0

    def add(self, t: float, v: float) -> float:
        self._q.append((t, v))
        self._sum += v
        while self._q and self._q[0][0] <= t - self.window_s:
            self._sum -= self._q.popleft()[1]
        if len(self._q) == 1:
            self._sum = v  # no drift of the running sum
        return self._sum / len(self._q)


class LoadTracker:
    def __init__(self, cfg: LoadConfig, history_s: float = 5.0, fast_window_s: float = 0.03):
        self.cfg = cfg
        self._fast = _MovingMean(fast_window_s)
        self.fast: float | None = None  # the median under one short mean: quicker, noisier (collapse test)
        self.fast_delay_s = fast_window_s / 2 + cfg.median_window_s / 2
        self._raw: deque[tuple[float, float]] = deque()
        self._box1 = _MovingMean(cfg.mean_window_s)
        self._box2 = _MovingMean(cfg.mean_window_s)
        self.delay_s = cfg.mean_window_s + cfg.median_window_s / 2  # group delay of the smoothing
        self._win: deque[tuple[float, float]] = deque()
        self._hist: deque[tuple[float, float]] = deque()
        self.history_s = history_s
        self.smoothed: float | None = None
        self.reference: float | None = None   # the floor
        self.holding = False                  # a block is in hand
        self.settled = False
        self.level: float | None = None       # the current settled level, if settled
        self._last_t: float | None = None
        self._elsewhere: tuple[float, float] | None = None  # (since, level) of an unmatched settled level
        self._last_step_at = -float("inf")  # when the last step was detected (its history is not re-used)
        self._lifted_from: float | None = None  # the floor before the block in hand was lifted
        self._early_win: deque[tuple[float, float]] = deque()
        self._provisional: tuple[float, float] | None = None  # (block-in-hand floor, expected level) after an early place

    def update(self, t: float, grams: float) -> LoadStep | None:
        c = self.cfg
        dt = 0.0 if self._last_t is None else max(0.0, t - self._last_t)
        self._last_t = t
        self._raw.append((t, grams))
        while self._raw and self._raw[0][0] <= t - c.median_window_s:
            self._raw.popleft()
        m = median(v for _, v in self._raw)
        self.fast = self._fast.add(t, m)
        early = self._early_place(t, self.fast)
        s = self._box2.add(t, self._box1.add(t, m))
        self.smoothed = s
        self._win.append((t, s))
        self._hist.append((t, s))
        while self._win and self._win[0][0] < t - c.stable_window_s:
            self._win.popleft()
        while self._hist and self._hist[0][0] < t - self.history_s:
            self._hist.popleft()
        span = t - self._win[0][0]
        values = [v for _, v in self._win]
        self.settled = span >= 0.9 * c.stable_window_s and max(values) - min(values) <= c.stable_band_g
        if early is not None:
            return early
        if not self.settled:
            self.level = None
            return None
        level = self.level = sum(values) / len(values)
        if self.reference is None:
            self.reference = level
            return None
        if self._provisional is not None:
            resolved = self._resolve_early(t, level)
            if resolved is not None:
                return resolved
        d = level - self.reference
        if abs(d) < c.min_step_g:
            self.reference += d * min(1.0, dt / c.drift_tau_s) if c.drift_tau_s > 0 else d
            self._elsewhere = None
            return None
        one_block = abs(abs(d) - c.block_g) <= c.step_tolerance_g
        if one_block and (d < 0) != self.holding:
            old = self.reference
            self._lifted_from = old if d < 0 else None
            self.reference, self.holding, self._elsewhere = level, d < 0, None
            step = LoadStep("lift" if d < 0 else "place", d, self.crossing_time(old, level, t), t, level)
            self._last_step_at = t
            return step
        if self._elsewhere is None or abs(level - self._elsewhere[1]) > c.stable_band_g:
            self._elsewhere = (t, level)
        elif t - self._elsewhere[0] >= c.reanchor_s:
            old = self.reference
            self.reference, self._elsewhere, self._provisional = level, None, None
            return LoadStep("reanchor", level - old, t, t, level)
        return None

    def _early_place(self, t: float, fast: float) -> LoadStep | None:
        """A block in hand, and the quick signal back at the level before the lift for `early_place_s`."""
        c = self.cfg
        self._early_win.append((t, fast))
        while self._early_win and self._early_win[0][0] < t - c.early_place_s:
            self._early_win.popleft()
        if c.early_place_s <= 0 or not self.holding or self.reference is None or self._provisional is not None:
            return None
        target = self._lifted_from if self._lifted_from is not None else self.reference + c.block_g
        if t - self._early_win[0][0] < 0.9 * c.early_place_s:
            return None
        if any(abs(v - target) > c.early_place_band_g for _, v in self._early_win):
            return None
        old = self.reference
        self._provisional = (old, target)
        self.reference, self.holding, self._elsewhere, self._lifted_from = target, False, None, None
        step = LoadStep("place", target - old, self.crossing_time(old, target, t), t, target, early=True)
        self._last_step_at = t
        return step

    def _resolve_early(self, t: float, level: float) -> LoadStep | None:
        """After an early place, the settled level confirms it (one block above the block-in-hand
        floor) or withdraws it (back at that floor: the block is still in hand)."""
        c = self.cfg
        in_hand, target = self._provisional
        if abs(level - target) <= c.step_tolerance_g and abs(level - in_hand - c.block_g) <= c.step_tolerance_g:
            self._provisional, self.reference = None, level
            self._last_step_at = t
            return LoadStep("place_settled", level - in_hand, t, t, level)
        if abs(level - in_hand) < c.min_step_g:
            self._provisional, self.reference, self.holding, self._lifted_from = None, level, True, target
            self._last_step_at = t
            return LoadStep("place_withdrawn", level - target, t, t, level)
        return None

    def crossing_time(self, old: float, new: float, now: float) -> float:
        """When the level went from `old` to `new`: the split of the recent history (since the last step)
        that best separates samples on the old side of half-way from those on the new side. Robust to
        the smoothed signal wandering back across half-way while hands still work at the tower.
        After an early place the smoothed history lags the quick signal: the split is then near its end."""
        import numpy as np

        hist = [(tt, v) for tt, v in self._hist if tt > self._last_step_at]
        if not hist:
            return now - self.delay_s
        ts = np.array([h[0] for h in hist])
        vs = np.array([h[1] for h in hist])
        mid = (old + new) / 2
        new_side = (vs < mid) if new < old else (vs > mid)
        # cost of splitting before sample k: new-side samples before k + old-side samples from k on
        before_new = np.concatenate([[0], np.cumsum(new_side)])
        after_old = np.concatenate([np.cumsum((~new_side)[::-1])[::-1], [0]])
        cost = before_new + after_old
        k = int(np.flatnonzero(cost == cost.min())[0])
        k = min(k, len(ts) - 1)
        return float(ts[k]) - self.delay_s

    def force_reference(self, level: float | None, holding: bool = False) -> None:
        self.reference, self.holding, self._elsewhere = level, holding, None
        self._provisional, self._lifted_from = None, None
