"""A table on the twin for calibration and `stacko doctor`: the hardware engineer's emulated MPU-6050 and
NAU7802 on an emulated I2C bus, read by the real drivers, fed by a tray whose contents the guide's
actions change (a weight put on, one block, hands off the table).

Parts can be left out (`without`), so tests show what the referee says when a chip is not wired.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


from calibration.steps import Action
from hardware.chips import mpu6050_regs, nau7802_regs
from hardware.clock import SimClock
from hardware.emulated.bus import EmulatedBus
from hardware.i2c import I2CDevice

IMU_ADDRESS = mpu6050_regs.DEFAULT_ADDRESS
LOADCELL_ADDRESS = nau7802_regs.ADDRESS
PARTS = ("camera", "imu", "loadcell", "buttons", "speaker")


@dataclass
class TrayState:
    """What lies on the tray, and when it last changed (a change shakes the tray for a moment)."""

    tray_grams: float = 600.0
    items_grams: float = 0.0
    changes: list[tuple[float, float]] = field(default_factory=list)  # (t, grams added or removed)
    still_noise_ms2: float = 0.01
    seed: int = 0

    def load_grams(self, t: float) -> float:
        g = self.tray_grams
        for t0, dg in self.changes:
            if t >= t0:
                # a placed weight rocks on the mount's spring for a moment (about 40 Hz, damped in ~0.1 s)
                g += dg * (1.0 - math.exp(-(t - t0) / 0.03) * math.cos(2 * math.pi * 40 * (t - t0)))
        return g

    def imu_sample(self, t: float) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        # the table's own tremor (fans, floor): a few hundredths of m/s^2, deterministic in t
        phase = self.seed * 0.37
        ax = self.still_noise_ms2 * math.sin(2 * math.pi * 23 * t + phase)
        ay = self.still_noise_ms2 * math.sin(2 * math.pi * 31 * t + 2 * phase)
        az = 9.80665
        for t0, dg in self.changes:
            if 0 <= t - t0 < 0.5:
                az += 0.002 * abs(dg) * math.exp(-(t - t0) / 0.05) * math.sin(2 * math.pi * 40 * (t - t0))
        return (ax, ay, az), (0.0, 0.0, 0.0)


class TwinTable:
    """Emulated tray chips on one bus, a simulated clock, and the actions a person would do."""

    def __init__(self, seed: int = 0, without: tuple[str, ...] = (), clock: SimClock | None = None):
        from hardware.emulated.mpu6050 import EmulatedMPU6050
        from hardware.emulated.nau7802 import EmulatedNAU7802

        unknown = set(without) - set(PARTS)
        if unknown:
            raise ValueError(f"unknown part(s) {', '.join(sorted(unknown))}; parts are {', '.join(PARTS)}")
        self.without = tuple(without)
        self.clock = clock or SimClock()
        self.tray = TrayState(seed=seed)
        devices = {}
        if "imu" not in without:
            devices[IMU_ADDRESS] = EmulatedMPU6050(self.tray, self.clock, seed=seed)
        if "loadcell" not in without:
            devices[LOADCELL_ADDRESS] = EmulatedNAU7802(self.tray, self.clock, seed=seed + 1)
        self.bus = EmulatedBus(devices)

    def has(self, part: str) -> bool:
        return part not in self.without

    def imu_device(self) -> I2CDevice:
        return I2CDevice(self.bus, IMU_ADDRESS, "IMU (MPU-6050)", self.clock)

    def loadcell_device(self) -> I2CDevice:
        return I2CDevice(self.bus, LOADCELL_ADDRESS, "load-cell ADC (NAU7802)", self.clock)

    def perform(self, action: Action) -> None:
        """Do what the guide asked, as a careful person would, then let a couple of seconds pass."""
        t = self.clock.now()
        block = 17.0
        if action.key == "empty_tray":
            if self.tray.items_grams:
                self.tray.changes.append((t, -self.tray.items_grams))
                self.tray.items_grams = 0.0
        elif action.key in ("put_weight", "put_block"):
            grams = float(action.grams if action.grams is not None else block)
            self.tray.changes.append((t, grams))
            self.tray.items_grams += grams
        elif action.key in ("remove_weight", "remove_block"):
            last = next((dg for _, dg in reversed(self.tray.changes) if dg > 0), 0.0)
            self.tray.changes.append((t, -last))
            self.tray.items_grams -= last
        self.clock.advance(2.0)
