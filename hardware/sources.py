"""Physical sources that feed the emulated chips: the twin (or a test) says what the tray feels."""

from __future__ import annotations

from typing import Callable, Protocol

Vec3 = tuple[float, float, float]


class ImuSource(Protocol):
    def imu_sample(self, t: float) -> tuple[Vec3, Vec3]:
        """(accel m/s^2 in the tray frame incl. gravity, about (0, 0, +9.81) at rest; gyro deg/s)."""


class LoadSource(Protocol):
    def load_grams(self, t: float) -> float:
        """Mass-equivalent on the load cell in grams (tray + tower)."""


class StillImu:
    """A tray at rest: gravity only (tests, defaults)."""

    def __init__(self, g: float = 9.80665):
        self.g = g

    def imu_sample(self, t: float) -> tuple[Vec3, Vec3]:
        return (0.0, 0.0, self.g), (0.0, 0.0, 0.0)


class FunctionImu:
    """Wrap a function t -> (accel, gyro)."""

    def __init__(self, fn: Callable[[float], tuple[Vec3, Vec3]]):
        self.fn = fn

    def imu_sample(self, t: float) -> tuple[Vec3, Vec3]:
        return self.fn(t)


class FunctionLoad:
    """Wrap a function t -> grams (or a constant)."""

    def __init__(self, fn: Callable[[float], float] | float):
        self.fn = fn if callable(fn) else (lambda t, v=float(fn): v)

    def load_grams(self, t: float) -> float:
        return float(self.fn(t))
