"""Device classes the match loop uses, the same whichever backend feeds them.

- `ImuDevice`: the MPU-6050 driver (real bus or emulated bus) -> `ImuBatch` per read.
- `LoadCellDevice`: NAU7802 or HX711 driver + `LoadScale` -> grams per read.
- `SensorStream`: both, as `read() -> (imu_t, accel, load_t, grams)` (what the loop's detectors eat).
- `ReplaySensors`: the same from a recorded session, served by the clock.
A chip that stops answering mid-match is *reported* (`problem`, `on_problem`) and retried every
`retry_s`, never fatal: the loop keeps running on what still works.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hardware.chips.mpu6050 import MPU6050, ImuBatch
from hardware.chips.nau7802 import LoadScale
from hardware.clock import Clock
from hardware.errors import DeviceError
from hardware.recorder import Session


class _Health:
    def __init__(self, name: str, clock: Clock, retry_s: float, on_problem: Callable[[str, str | None], None] | None):
        self.name, self.clock, self.retry_s, self.on_problem = name, clock, retry_s, on_problem
        self.problem: str | None = None
        self._next_try = -float("inf")

    def failed(self, exc: DeviceError) -> None:
        if self.problem is None and self.on_problem:
            self.on_problem(self.name, str(exc))
        self.problem = str(exc)
        self._next_try = self.clock.now() + self.retry_s

    def recovered(self) -> None:
        if self.problem is not None and self.on_problem:
            self.on_problem(self.name, None)
        self.problem = None

    def may_try(self) -> bool:
        return self.problem is None or self.clock.now() >= self._next_try


class ImuDevice:
    def __init__(self, driver: MPU6050, clock: Clock, retry_s: float = 2.0,
                 on_problem: Callable[[str, str | None], None] | None = None):
        self.driver, self.clock = driver, clock
        self.health = _Health("accelerometer", clock, retry_s, on_problem)
        self._started = False

    @property
    def problem(self) -> str | None:
        return self.health.problem

    def start(self) -> None:
        """Raises DeviceError/DeviceMissing if the chip is not there at start-up (a set-up problem)."""
        self.driver.start()
        self._started = True

    def read(self) -> ImuBatch:
        if not self.health.may_try():
            return ImuBatch.empty()
        try:
            if not self._started:
                self.start()
            batch = self.driver.read_fifo()
        except DeviceError as exc:
            self._started = False
            self.health.failed(exc)
            return ImuBatch.empty()
        self.health.recovered()
        return batch


class LoadCellDevice:
    """`driver` has `start()` (NAU7802) or not (HX711), and `poll() -> counts | None`."""

    def __init__(self, driver, scale: LoadScale, clock: Clock, retry_s: float = 2.0, max_per_read: int = 64,
                 on_problem: Callable[[str, str | None], None] | None = None):
        self.driver, self.scale, self.clock, self.max_per_read = driver, scale, clock, max_per_read
        self.health = _Health("load cell", clock, retry_s, on_problem)
        self._started = not hasattr(driver, "start")

    @property
    def problem(self) -> str | None:
        return self.health.problem

    def start(self) -> None:
        if hasattr(self.driver, "start"):
            self.driver.start()
        self._started = True

    def read_counts(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.health.may_try():
            return np.zeros(0), np.zeros(0)
        ts, cs = [], []
        try:
            if not self._started:
                self.start()
            for _ in range(self.max_per_read):
                c = self.driver.poll()
                if c is None:
                    break
                ts.append(self.clock.now())
                cs.append(c)
        except DeviceError as exc:
            self._started = False
            self.health.failed(exc)
        else:
            self.health.recovered()
        return np.array(ts, float), np.array(cs, float)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        t, c = self.read_counts()
        return t, (c - self.scale.offset_counts) / self.scale.counts_per_gram

    def tare(self, samples: int = 32, timeout_s: float = 2.0) -> None:
        """Zero the reading on what is on the tray now (the sim backend does this at start)."""
        got: list[float] = []
        end = self.clock.now() + timeout_s
        while len(got) < samples and self.clock.now() < end:
            _, c = self.read_counts()
            got += c.tolist()
            self.clock.sleep(0.001)
        if not got:
            raise DeviceError("load cell", "tare", "no readings to tare with", "that the load cell answers")
        self.scale.tare(got)


class SensorStream:
    """IMU + load cell as the match loop reads them: `read()` returns the samples since the last call.

    The NAU7802 has no FIFO: a conversion not fetched before the next one is lost. So something must
    `poll_load()` at least at the conversion rate (320/s): on the Pi, `start_thread()` runs a small
    polling thread; on the twin, pass `on_step=lambda twin: sensors.poll_load()` to `Twin.step`, which
    calls it every 2 ms physics step. The IMU has a 1024-byte FIFO (85 ms at 1 kHz), so reading it from
    `read()` is enough as long as the loop polls at least every ~80 ms.
    """

    def __init__(self, imu: ImuDevice | None, load: LoadCellDevice | None):
        import threading

        self.imu, self.load = imu, load
        self._lock = threading.Lock()
        self._lt: list[np.ndarray] = []
        self._lg: list[np.ndarray] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_load(self) -> None:
        if self.load is None:
            return
        t, g = self.load.read()
        if len(t):
            with self._lock:
                self._lt.append(t)
                self._lg.append(g)

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        b, lt, g = self.read_full()
        return b.t, b.accel, lt, g

    def read_full(self) -> tuple[ImuBatch, np.ndarray, np.ndarray]:
        """Like `read()`, with the gyro (for the recorder)."""
        b = self.imu.read() if self.imu else ImuBatch.empty()
        if self._thread is None:
            self.poll_load()
        with self._lock:
            lt = np.concatenate(self._lt) if self._lt else np.zeros(0)
            g = np.concatenate(self._lg) if self._lg else np.zeros(0)
            self._lt, self._lg = [], []
        return b, lt, g

    def start_thread(self, period_s: float = 0.002) -> None:
        """Poll the load cell in the background (real clock only)."""
        import threading
        import time

        def run() -> None:
            while not self._stop.is_set():
                self.poll_load()
                time.sleep(period_s)

        self._thread = threading.Thread(target=run, name="loadcell-poll", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    @property
    def problems(self) -> dict[str, str]:
        return {d.health.name: d.problem for d in (self.imu, self.load) if d is not None and d.problem}


class ReplaySensors:
    """A recorded session's IMU and load streams, served up to the clock's time."""

    def __init__(self, session: Session, clock: Clock):
        self.st = session.streams()
        self.clock = clock
        self._i = self._l = 0

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        now = self.clock.now()
        i = int(np.searchsorted(self.st.imu_t, now, side="right"))
        l = int(np.searchsorted(self.st.load_t, now, side="right"))
        out = (self.st.imu_t[self._i:i], self.st.accel[self._i:i], self.st.load_t[self._l:l], self.st.grams[self._l:l])
        self._i, self._l = i, l
        return out

    @property
    def start_t(self) -> float:
        ts = [x[0] for x in (self.st.imu_t, self.st.load_t) if len(x)]
        return min(ts) if ts else 0.0

    @property
    def end_t(self) -> float:
        ts = [x[-1] for x in (self.st.imu_t, self.st.load_t) if len(x)]
        return max(ts) if ts else 0.0

    @property
    def finished(self) -> bool:
        return self._i >= len(self.st.imu_t) and self._l >= len(self.st.load_t)
