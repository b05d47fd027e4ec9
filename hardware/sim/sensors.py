"""The tray's accelerometer and load cell, computed from the simulation.

The physics logs, every step, the tray's proper acceleration and rate of turn at the IMU site
and the force in the load-cell mount (spring plus damper of the compliant tray mount). The
sensor models turn that trace into readings at any time up to the simulation's present: linear
interpolation between 2 ms physics steps (so the IMU can be read at 1 kHz), then bias, slow
drift (a random walk), white noise and quantization, with the load cell averaging over its
conversion period as a sigma-delta ADC does. They implement `hardware.sources.ImuSource` and
`LoadSource`, so the register-level chip emulations (which add their own conversion noise; use
`SensorNoise.behind_chip()` there) can be fed by the twin.

Never tune a detector to the noiseless trace: the noise figures here are the datasheets'
ballpark, not the twin's best case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

G = 9.81


@dataclass(frozen=True)
class SensorNoise:
    """Error model of the two sensors (units: m/s^2, deg/s, grams, seconds)."""

    accel_noise: float = 0.05  # white, per sample (MPU-6050 at ~260 Hz bandwidth)
    accel_bias: float = 0.15  # std of the per-axis bias drawn at power-up
    accel_drift: float = 0.002  # random walk, per sqrt(second)
    accel_lsb: float = 4 * G / 32768  # +-4 g range
    gyro_noise: float = 0.1
    gyro_bias: float = 1.5
    gyro_drift: float = 0.01
    gyro_lsb: float = 250 / 32768
    load_noise: float = 0.35  # grams rms at 320 SPS
    load_bias: float = 0.0  # the tare removes it; the raw offset lives in the chip emulation
    load_drift: float = 0.05  # grams per sqrt(second): creep and temperature
    load_lsb: float = 0.01

    @classmethod
    def behind_chip(cls) -> "SensorNoise":
        """For feeding the chip emulations, which add conversion noise and quantize themselves."""
        return replace(cls(), accel_noise=0.0, accel_lsb=0.0, gyro_noise=0.0, gyro_lsb=0.0, load_noise=0.0, load_lsb=0.0)

    @classmethod
    def none(cls) -> "SensorNoise":
        """The physics trace itself (for tests of the physics, never for detectors)."""
        return cls(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)


class PhysicsTrace:
    """What the tray feels, one row per physics step (grows as the twin steps)."""

    def __init__(self, capacity: int = 1 << 16):
        self._t = np.zeros(capacity)
        self._accel = np.zeros((capacity, 3))
        self._gyro = np.zeros((capacity, 3))
        self._force = np.zeros(capacity)
        self.n = 0

    def append(self, t: float, accel: np.ndarray, gyro_dps: np.ndarray, force_n: float) -> None:
        if self.n == len(self._t):
            grow = len(self._t)
            self._t = np.concatenate([self._t, np.zeros(grow)])
            self._accel = np.concatenate([self._accel, np.zeros((grow, 3))])
            self._gyro = np.concatenate([self._gyro, np.zeros((grow, 3))])
            self._force = np.concatenate([self._force, np.zeros(grow)])
        i = self.n
        self._t[i], self._accel[i], self._gyro[i], self._force[i] = t, accel, gyro_dps, force_n
        self.n += 1

    @property
    def t(self) -> np.ndarray:
        return self._t[: self.n]

    @property
    def accel(self) -> np.ndarray:
        return self._accel[: self.n]

    @property
    def gyro(self) -> np.ndarray:
        return self._gyro[: self.n]

    @property
    def force(self) -> np.ndarray:
        return self._force[: self.n]

    @property
    def t_end(self) -> float:
        return float(self._t[self.n - 1]) if self.n else 0.0

    def _check(self, t: np.ndarray) -> None:
        if self.n == 0:
            raise ValueError("the twin has not run yet: no sensor data")
        if np.any(t > self.t_end + 1e-9):
            raise ValueError(f"asked for sensor data at t={float(np.max(t)):.4f} s, but the twin has only run to {self.t_end:.4f} s")

    def accel_at(self, t: np.ndarray) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, float))
        self._check(t)
        return np.stack([np.interp(t, self.t, self.accel[:, k]) for k in range(3)], axis=1)

    def gyro_at(self, t: np.ndarray) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, float))
        self._check(t)
        return np.stack([np.interp(t, self.t, self.gyro[:, k]) for k in range(3)], axis=1)

    def mean_force(self, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """Mean mount force over [t0, t1] per window (trapezoid over the physics samples)."""
        t0, t1 = np.atleast_1d(t0), np.atleast_1d(t1)
        self._check(t1)
        cum = np.concatenate([[0.0], np.cumsum(0.5 * (self.force[1:] + self.force[:-1]) * np.diff(self.t))])

        def integral(x: np.ndarray) -> np.ndarray:
            x = np.clip(x, self.t[0], self.t_end)
            i = np.clip(np.searchsorted(self.t, x, side="right") - 1, 0, max(0, self.n - 2))
            f_i = self.force[i]
            f_x = np.interp(x, self.t, self.force)
            return cum[i] + 0.5 * (f_i + f_x) * (x - self.t[i])

        width = np.maximum(t1 - t0, 1e-9)
        out = (integral(t1) - integral(t0)) / width
        point = (t1 - t0) <= 1e-9
        if np.any(point):
            out[point] = np.interp(t1[point], self.t, self.force)
        return out


def _quantize(x: np.ndarray, lsb: float) -> np.ndarray:
    return np.round(x / lsb) * lsb if lsb > 0 else x


class _Drift:
    """A random walk evaluated at increasing times (seeded, deterministic)."""

    def __init__(self, rng: np.random.Generator, dims: int, per_sqrt_s: float):
        self.rng, self.dims, self.k = rng, dims, per_sqrt_s
        self.t, self.v = None, np.zeros(dims)

    def at(self, ts: np.ndarray) -> np.ndarray:
        out = np.empty((len(ts), self.dims))
        for i, t in enumerate(ts):
            if self.t is not None and t > self.t and self.k > 0:
                self.v = self.v + self.rng.normal(0, self.k * math.sqrt(t - self.t), self.dims)
            if self.t is None or t > self.t:
                self.t = t
            out[i] = self.v
        return out


class TwinImu:
    """The tray accelerometer/gyro (ImuSource): tray frame, gravity included, deg/s."""

    def __init__(self, trace: PhysicsTrace, noise: SensorNoise, seed: int):
        self.trace, self.noise = trace, noise
        rng = np.random.default_rng([seed, 11])
        self._rng = rng
        self.accel_bias = rng.normal(0, noise.accel_bias, 3)
        self.gyro_bias = rng.normal(0, noise.gyro_bias, 3)
        self._accel_drift = _Drift(np.random.default_rng([seed, 12]), 3, noise.accel_drift)
        self._gyro_drift = _Drift(np.random.default_rng([seed, 13]), 3, noise.gyro_drift)

    def series(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Readings at increasing times `ts` (N,) -> accel (N,3), gyro (N,3)."""
        ts = np.asarray(ts, float)
        n = self.noise
        a = self.trace.accel_at(ts) + self.accel_bias + self._accel_drift.at(ts) + self._rng.normal(0, n.accel_noise, (len(ts), 3))
        g = self.trace.gyro_at(ts) + self.gyro_bias + self._gyro_drift.at(ts) + self._rng.normal(0, n.gyro_noise, (len(ts), 3))
        return _quantize(a, n.accel_lsb), _quantize(g, n.gyro_lsb)

    def imu_sample(self, t: float) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        a, g = self.series(np.array([t]))
        return tuple(float(v) for v in a[0]), tuple(float(v) for v in g[0])  # type: ignore[return-value]


class TwinLoadCell:
    """The load cell under the tray (LoadSource): grams of tray + tower, averaged per conversion."""

    def __init__(self, trace: PhysicsTrace, noise: SensorNoise, seed: int, sps: float = 320.0):
        self.trace, self.noise, self.sps = trace, noise, sps
        self._rng = np.random.default_rng([seed, 21])
        self._drift = _Drift(np.random.default_rng([seed, 22]), 1, noise.load_drift)

    def series(self, ts: np.ndarray) -> np.ndarray:
        """Conversions completed at increasing times `ts`, each the mean over the preceding period."""
        ts = np.asarray(ts, float)
        grams = self.trace.mean_force(ts - 1.0 / self.sps, ts) / G * 1000.0
        grams = grams + self.noise.load_bias + self._drift.at(ts)[:, 0] + self._rng.normal(0, self.noise.load_noise, len(ts))
        return _quantize(grams, self.noise.load_lsb)

    def load_grams(self, t: float) -> float:
        return float(self.series(np.array([t]))[0])
