"""The load-cell and IMU calibration steps: tell the person what to do, measure, judge, return the result.

Each step talks to the table only through a `Guide` (a person at a terminal, or the twin acting out the
instructions) and to the chips through small reader protocols, so the same code calibrates a real tray
and the emulated chips.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np

from calibration.files import (
    CalibrationError,
    ImuCalibration,
    LoadCellCalibration,
    imu_problems,
    imu_thresholds,
    loadcell_problems,
    utc_now,
)
from hardware.clock import Clock
from hardware.errors import DeviceError


@dataclass(frozen=True)
class Action:
    """Something the person must do to the table before the step measures. `key` lets the twin do it."""

    key: str  # empty_tray | put_weight | remove_weight | put_block | remove_block | keep_still | place_sheet | build_level | show_top
    text: str
    grams: float | None = None
    data: Mapping[str, Any] | None = None  # e.g. the levels to build and hands to hold over them


class Guide(Protocol):
    def say(self, text: str) -> None:
        """Tell the person something (progress, results)."""

    def do(self, action: Action) -> None:
        """Have the action done: wait for the person (Enter), or let the twin act it out."""


class CountsReader(Protocol):
    def counts(self, n: int) -> np.ndarray:
        """The next `n` raw ADC readings of the load cell."""


class ImuReader(Protocol):
    def samples(self, seconds: float) -> tuple[np.ndarray, np.ndarray]:
        """(accel (N,3) m/s^2, gyro (N,3) deg/s) over the next `seconds`."""


@dataclass
class StepResult:
    """How a step went: `ok`, a one-word grade, and lines that say how good it is."""

    part: str
    ok: bool
    grade: str  # good | usable | failed
    lines: list[str] = field(default_factory=list)
    value: Any = None


class NAU7802Counts:
    """Raw readings from the NAU7802 driver, polled on the data-ready bit."""

    def __init__(self, adc, clock: Clock):
        self.adc, self.clock = adc, clock
        self.period = 1.0 / adc.config.rate_sps

    def counts(self, n: int) -> np.ndarray:
        out: list[int] = []
        deadline = self.clock.now() + 3 * n * self.period + 1.0
        while len(out) < n:
            v = self.adc.poll()
            if v is not None:
                out.append(v)
                continue
            if self.clock.now() > deadline:
                raise DeviceError(self.adc.dev.name, self.adc.dev.where, "the load-cell ADC stopped delivering readings",
                                  "its 3.3 V supply and the four load-cell wires")
            self.clock.sleep(self.period / 2)
        return np.asarray(out, dtype=float)


class HX711Counts:
    """Raw readings from the bit-banged HX711 driver (each read waits for its conversion)."""

    def __init__(self, hx):
        self.hx = hx

    def counts(self, n: int) -> np.ndarray:
        return np.asarray([self.hx.read_raw() for _ in range(n)], dtype=float)


@dataclass
class LoadCellHandle:
    """One load-cell ADC, whichever chip: how to start and stop it and read raw counts."""

    chip: str  # nau7802 | hx711
    start: Callable[[], None]
    stop: Callable[[], None]
    reader: CountsReader


class MPU6050Samples:
    """Accelerometer and gyro samples from the MPU-6050 driver's FIFO."""

    def __init__(self, imu, clock: Clock, poll_s: float = 0.02):
        self.imu, self.clock, self.poll_s = imu, clock, poll_s

    def samples(self, seconds: float) -> tuple[np.ndarray, np.ndarray]:
        for _ in range(3):  # drop what piled up while waiting, until the FIFO reads clean (no stale overflow)
            if not self.imu.read_fifo().overflowed:
                break
        accel, gyro = [], []
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            self.clock.sleep(self.poll_s)
            batch = self.imu.read_fifo()
            if batch.overflowed:
                raise DeviceError(self.imu.dev.name, self.imu.dev.where, "its FIFO overflowed while calibrating",
                                  "that nothing else is using the Pi heavily right now, and try again")
            accel.append(batch.accel)
            gyro.append(batch.gyro)
        if not accel or sum(len(a) for a in accel) == 0:
            raise DeviceError(self.imu.dev.name, self.imu.dev.where, "it delivered no samples", "its wiring and power")
        return np.concatenate(accel), np.concatenate(gyro)


# ---------------------------------------------------------------- load cell


def _settled(reader: CountsReader, lim: Mapping[str, Any]) -> np.ndarray:
    reader.counts(int(lim["settle_samples"]))  # let the tray stop swinging
    return reader.counts(int(lim["samples"]))


def calibrate_loadcell(reader: CountsReader, guide: Guide, limits: Mapping[str, Any], known_grams: float,
                       chip: str = "nau7802") -> StepResult:
    """Tare on the empty tray, scale with a known weight, then check the zero comes back and one block shows."""
    lim = limits["loadcell"]
    block_g = float(lim["block_grams"])
    if known_grams < 5 * block_g:
        raise CalibrationError(f"the known weight must be at least {5 * block_g:g} g (a few blocks' worth) to scale well; "
                               f"{known_grams:g} g is too light")
    guide.do(Action("empty_tray", "Take everything off the tray (the tower too) and keep your hands off the table."))
    empty = _settled(reader, lim)
    offset = float(np.median(empty))
    guide.do(Action("put_weight", f"Put the known weight ({known_grams:g} g) in the middle of the tray and let go.", known_grams))
    loaded = _settled(reader, lim)
    cpg = (float(np.median(loaded)) - offset) / known_grams
    if abs(cpg) < lim["min_abs_counts_per_gram"]:
        raise CalibrationError("the load cell's reading hardly changed when the weight went on: check that the tray rests "
                               "only on the load cell and that its four wires are on the ADC (E+, E-, A+, A-)")
    noise_g = float(max(np.std(empty), np.std(loaded)) / abs(cpg))
    guide.do(Action("remove_weight", "Take the weight off again."))
    zero_g = (float(np.median(_settled(reader, lim))) - offset) / cpg
    guide.do(Action("put_block", "Put ONE block on the tray.", block_g))
    block_read = (float(np.median(_settled(reader, lim))) - offset) / cpg - zero_g
    guide.do(Action("remove_block", "Take the block off."))
    cal = LoadCellCalibration(chip=chip, offset_counts=int(round(offset)), counts_per_gram=cpg, noise_grams=noise_g,
                              known_grams=known_grams, zero_return_grams=zero_g, block_measured_grams=block_read,
                              created=utc_now())
    problems = loadcell_problems(cal, limits)
    ratio = block_g / noise_g if noise_g > 0 else float("inf")
    lines = [
        f"scale: {cpg:.1f} ADC counts per gram (offset {cal.offset_counts})",
        f"noise: {noise_g:.2f} g, so one {block_g:g} g block is {ratio:.0f} times the noise (needs {lim['min_block_to_noise']:g})",
        f"one block read as {block_read:.1f} g; the empty tray came back to {zero_g:+.2f} g",
    ]
    grade = "failed" if problems else ("good" if ratio >= 3 * lim["min_block_to_noise"] else "usable")
    return StepResult("loadcell", not problems, grade, lines + [f"problem: {p}" for p in problems], cal)


# ---------------------------------------------------------------- IMU


def calibrate_imu(reader: ImuReader, guide: Guide, limits: Mapping[str, Any], sample_hz: float,
                  floors_ms2: tuple[float, float]) -> StepResult:
    """Learn the quiet tray's noise and set the touch and collapse thresholds from it (never below `floors_ms2`)."""
    lim = limits["imu"]
    seconds = float(lim["quiet_seconds"])
    guide.do(Action("keep_still", f"Keep hands off the table and the tray for {seconds:g} seconds (the tower may stand on it)."))
    reader.samples(float(lim["settle_seconds"]))  # the table stops ringing from the key press first
    accel, gyro = reader.samples(seconds)
    mean = accel.mean(axis=0)
    noise = float(np.sqrt(np.mean(np.sum((accel - mean) ** 2, axis=1))))
    bias = gyro.mean(axis=0)
    gyro_noise = float(np.sqrt(np.mean(np.sum((gyro - bias) ** 2, axis=1))))
    touch, collapse = imu_thresholds(noise, limits, floors_ms2)
    cal = ImuCalibration(sample_hz=float(sample_hz), accel_mean_ms2=tuple(float(x) for x in mean),  # type: ignore[arg-type]
                         accel_noise_ms2=noise, gyro_bias_dps=tuple(float(x) for x in bias),  # type: ignore[arg-type]
                         gyro_noise_dps=gyro_noise, touch_threshold_ms2=touch, collapse_threshold_ms2=collapse,
                         created=utc_now())
    problems = imu_problems(cal, limits)
    tilt = float(np.degrees(np.arccos(min(1.0, abs(mean[2]) / max(1e-9, np.linalg.norm(mean))))))
    lines = [
        f"{len(accel)} samples in {seconds:g} s; gravity {cal.gravity_ms2:.2f} m/s^2, tray tilted {tilt:.1f} degrees",
        f"quiet noise: {noise:.3f} m/s^2, gyro {gyro_noise:.2f} deg/s",
        f"thresholds: touch {touch:.2f} m/s^2, collapse {collapse:.2f} m/s^2 "
        f"({collapse / noise if noise else float('inf'):.0f} times the quiet noise)",
    ]
    if tilt > 5:
        lines.append("the tray is not level: level the table or the tray's feet for a steadier tower")
    grade = "failed" if problems else ("good" if noise < lim["max_quiet_accel_noise_ms2"] / 4 else "usable")
    return StepResult("imu", not problems, grade, lines + [f"problem: {p}" for p in problems], cal)
