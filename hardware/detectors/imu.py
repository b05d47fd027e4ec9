"""Vibration from the accelerometer: accel minus its running mean (gravity and tilt removed), in g.

A table knock is a short, sharp vibration; a collapse hits hard (blocks landing); a touch is weaker and
longer. The running mean is causal and carries across chunks, so the result does not depend on how the
stream was cut.
"""

from __future__ import annotations

import numpy as np

G = 9.80665


class Vibration:
    def __init__(self, window_s: float):
        self.window_s = window_s
        self._tail_t = np.zeros(0)
        self._tail_a = np.zeros((0, 3))

    def process(self, t: np.ndarray, accel: np.ndarray) -> np.ndarray:
        """Vibration magnitude (g) for each new sample."""
        t = np.asarray(t, dtype=float)
        accel = np.asarray(accel, dtype=float).reshape(-1, 3)
        if len(t) == 0:
            return np.zeros(0)
        all_t = np.concatenate([self._tail_t, t])
        all_a = np.concatenate([self._tail_a, accel])
        csum = np.vstack([np.zeros((1, 3)), np.cumsum(all_a, axis=0)])
        idx_new = np.arange(len(self._tail_t), len(all_t))
        start = np.searchsorted(all_t, all_t[idx_new] - self.window_s, side="left")
        counts = (idx_new + 1 - start)[:, None]
        mean = (csum[idx_new + 1] - csum[start]) / counts
        vib = np.linalg.norm(all_a[idx_new] - mean, axis=1) / G
        keep = all_t > all_t[-1] - self.window_s
        self._tail_t, self._tail_a = all_t[keep], all_a[keep]
        return vib


class TiltRate:
    """The tower rocking, seen by the gyro under the tray: the rate of turn low-passed over `lowpass_s`
    minus its mean over `baseline_s` (bias and drift removed), in deg/s. A hand pushing the tower tilts
    the tray at a few hertz; the tray mount's 25-50 Hz ringing averages out."""

    def __init__(self, lowpass_s: float, baseline_s: float):
        self.lowpass_s, self.baseline_s = lowpass_s, baseline_s
        self._tail_t = np.zeros(0)
        self._tail_g = np.zeros((0, 3))

    def process(self, t: np.ndarray, gyro: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        gyro = np.asarray(gyro, dtype=float).reshape(-1, 3)
        if len(t) == 0:
            return np.zeros(0)
        all_t = np.concatenate([self._tail_t, t])
        all_g = np.concatenate([self._tail_g, gyro])
        csum = np.vstack([np.zeros((1, 3)), np.cumsum(all_g, axis=0)])
        idx = np.arange(len(self._tail_t), len(all_t))

        def mean_over(window: float) -> np.ndarray:
            start = np.searchsorted(all_t, all_t[idx] - window, side="left")
            return (csum[idx + 1] - csum[start]) / (idx + 1 - start)[:, None]

        rate = np.linalg.norm(mean_over(self.lowpass_s) - mean_over(self.baseline_s), axis=1)
        keep = all_t > all_t[-1] - self.baseline_s
        self._tail_t, self._tail_g = all_t[keep], all_g[keep]
        return rate


class VibrationBuffer:
    """The recent vibration trace, for 'was there an impact between t0 and t1?' questions."""

    def __init__(self, keep_s: float = 5.0):
        self.keep_s = keep_s
        self.t = np.zeros(0)
        self.v = np.zeros(0)

    def append(self, t: np.ndarray, v: np.ndarray) -> None:
        if len(t) == 0:
            return
        self.t = np.concatenate([self.t, t])
        self.v = np.concatenate([self.v, v])
        cut = np.searchsorted(self.t, self.t[-1] - self.keep_s)
        if cut > 0:
            self.t, self.v = self.t[cut:], self.v[cut:]

    @property
    def latest(self) -> float | None:
        return float(self.t[-1]) if len(self.t) else None

    def window(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
        i0, i1 = np.searchsorted(self.t, t0, side="right"), np.searchsorted(self.t, t1, side="right")
        return self.t[i0:i1], self.v[i0:i1]

    def peak(self, t0: float, t1: float) -> float:
        _, v = self.window(t0, t1)
        return float(v.max()) if len(v) else 0.0

    def first_above(self, t0: float, t1: float, level: float) -> float | None:
        t, v = self.window(t0, t1)
        hit = np.nonzero(v >= level)[0]
        return float(t[hit[0]]) if len(hit) else None
