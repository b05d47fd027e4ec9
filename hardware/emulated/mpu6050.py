"""Register-level MPU-6050 emulation fed by an `ImuSource` and a clock.

As the clock advances it samples the source at the configured sample rate, adds sensor noise, applies a
one-pole approximation of the digital low-pass filter, quantizes to the configured range, updates the
data registers and fills the 1024-byte FIFO (which overflows, dropping its oldest bytes, as the chip's does).
"""

from __future__ import annotations

import math

import numpy as np

from hardware.chips import mpu6050_regs as R
from hardware.clock import Clock
from hardware.sources import ImuSource

_MAX_CATCH_UP = 4096  # samples generated at most per access (the FIFO holds < 100 frames anyway)


def _s16(v: float) -> int:
    return max(-32768, min(32767, int(round(v))))


class EmulatedMPU6050:
    def __init__(self, source: ImuSource, clock: Clock, accel_noise_g: float = 0.006, gyro_noise_dps: float = 0.1,
                 temperature_c: float = 25.0, seed: int = 0):
        self.source, self.clock = source, clock
        self.accel_noise_g, self.gyro_noise_dps = accel_noise_g, gyro_noise_dps
        self.temperature_c = temperature_c
        self._rng = np.random.default_rng(seed)
        self.reset()

    # --- chip state -------------------------------------------------------------------------
    def reset(self) -> None:
        self.regs = bytearray(128)
        self.regs[R.PWR_MGMT_1] = R.PWR_SLEEP
        self.regs[R.WHO_AM_I] = R.WHO_AM_I_VALUE
        self.fifo = bytearray()
        self._filtered: np.ndarray | None = None
        self._next_t = self.clock.now()

    @property
    def asleep(self) -> bool:
        return bool(self.regs[R.PWR_MGMT_1] & R.PWR_SLEEP)

    @property
    def dlpf_cfg(self) -> int:
        return self.regs[R.CONFIG] & 0x07

    @property
    def sample_rate(self) -> float:
        return R.gyro_output_rate(self.dlpf_cfg) / (1 + self.regs[R.SMPLRT_DIV])

    def _catch_up(self) -> None:
        now = self.clock.now()
        if self.asleep:
            self._next_t = now
            return
        period = 1.0 / self.sample_rate
        if self._next_t > now:
            return
        n = int(math.floor((now - self._next_t) / period)) + 1
        if n > _MAX_CATCH_UP:
            self._next_t += (n - _MAX_CATCH_UP) * period
            n = _MAX_CATCH_UP
        ts = self._next_t + period * np.arange(n)
        self._next_t = float(ts[-1]) + period
        series = getattr(self.source, "series", None)
        if series is not None:  # the twin computes a batch at once
            acc, gyr = series(ts)
            rows = np.hstack([np.asarray(acc, float), np.asarray(gyr, float)])
        else:
            rows = np.array([[*a, *g] for a, g in (self.source.imu_sample(float(t)) for t in ts)], dtype=float)
        for row in rows:
            self._sample_row(row)

    def _sample_row(self, row: np.ndarray) -> None:
        x = row.copy()
        x[:3] /= R.STANDARD_GRAVITY
        x[:3] += self._rng.normal(0.0, self.accel_noise_g, 3) if self.accel_noise_g else 0.0
        x[3:] += self._rng.normal(0.0, self.gyro_noise_dps, 3) if self.gyro_noise_dps else 0.0
        fc = R.DLPF_BANDWIDTH_HZ[self.dlpf_cfg]
        alpha = 1.0 - math.exp(-2 * math.pi * fc / max(self.sample_rate, 1000.0))
        if self.dlpf_cfg in (0, 7) or self._filtered is None:
            self._filtered = x
        else:
            self._filtered = self._filtered + alpha * (x - self._filtered)
        f = self._filtered
        afs = (self.regs[R.ACCEL_CONFIG] >> 3) & 3
        fs = (self.regs[R.GYRO_CONFIG] >> 3) & 3
        a = [_s16(v * R.ACCEL_LSB_PER_G[afs]) for v in f[:3]]
        g = [_s16(v * R.GYRO_LSB_PER_DPS[fs]) for v in f[3:]]
        temp = _s16((self.temperature_c - 36.53) * 340.0)
        words = a + [temp] + g
        data = bytearray()
        for w in words:
            data += (w & 0xFFFF).to_bytes(2, "big")
        self.regs[R.ACCEL_XOUT_H:R.ACCEL_XOUT_H + 14] = data
        self.regs[R.INT_STATUS] |= R.INT_DATA_RDY
        if self.regs[R.USER_CTRL] & R.USER_FIFO_EN:
            en = self.regs[R.FIFO_EN]
            frame = bytearray()
            if en & R.FIFO_EN_ACCEL:
                frame += data[0:6]
            if en & R.FIFO_EN_TEMP:
                frame += data[6:8]
            for bit, off in ((R.FIFO_EN_XG, 8), (R.FIFO_EN_YG, 10), (R.FIFO_EN_ZG, 12)):
                if en & bit:
                    frame += data[off:off + 2]
            self.fifo += frame
            if len(self.fifo) > R.FIFO_SIZE:
                del self.fifo[: len(self.fifo) - R.FIFO_SIZE]
                self.regs[R.INT_STATUS] |= R.INT_FIFO_OFLOW

    # --- register interface -----------------------------------------------------------------
    def read_register(self, register: int) -> int:
        self._catch_up()
        if register == R.FIFO_R_W:
            return self.fifo.pop(0) if self.fifo else 0xFF
        if register == R.FIFO_COUNTH:
            return (len(self.fifo) >> 8) & 0xFF
        if register == R.FIFO_COUNTL:
            return len(self.fifo) & 0xFF
        value = self.regs[register]
        if register == R.INT_STATUS:
            self.regs[R.INT_STATUS] = 0  # cleared on read
        return value

    def read_block(self, register: int, length: int) -> list[int]:
        self._catch_up()
        if register == R.FIFO_R_W:  # the FIFO port does not auto-increment; an empty FIFO reads 0xFF
            out = list(self.fifo[:length])
            del self.fifo[:length]
            return out + [0xFF] * (length - len(out))
        if register == R.FIFO_COUNTH and length >= 2:  # count latched once for the burst
            n = len(self.fifo)
            rest = [self.read_register(R.FIFO_COUNTH + 2 + i) for i in range(length - 2)]
            return [(n >> 8) & 0xFF, n & 0xFF, *rest]
        return [self.read_register((register + i) & 0x7F) for i in range(length)]

    def write_register(self, register: int, value: int) -> None:
        self._catch_up()
        if register == R.PWR_MGMT_1 and value & R.PWR_DEVICE_RESET:
            self.reset()
            return
        if register in (R.WHO_AM_I, R.INT_STATUS, R.FIFO_COUNTH, R.FIFO_COUNTL) or (
                R.ACCEL_XOUT_H <= register < R.ACCEL_XOUT_H + 14):
            return  # read-only
        if register == R.FIFO_R_W:
            return
        was_asleep = self.asleep
        if register == R.USER_CTRL and value & R.USER_FIFO_RESET:
            self.fifo.clear()
            value &= ~R.USER_FIFO_RESET
        self.regs[register] = value & 0xFF
        if register in (R.SMPLRT_DIV, R.CONFIG) or (was_asleep and not self.asleep):
            self._next_t = self.clock.now() + 1.0 / self.sample_rate
