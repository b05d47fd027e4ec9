"""Register-level NAU7802 emulation fed by a `LoadSource` and a clock.

The bridge is modelled physically: a load cell of `capacity_g` with `sensitivity_mv_per_v` output, read
ratiometrically (so the LDO voltage cancels), a bridge offset, and an internal ADC offset that only the
internal calibration (CALS) removes. Conversions run at the configured rate; the CR bit says a new one is
waiting and reading ADCO_B0 clears it. The chip has no FIFO: a driver that polls too slowly loses samples.
"""

from __future__ import annotations

import math

import numpy as np

from hardware.chips import nau7802_regs as R
from hardware.clock import Clock
from hardware.sources import LoadSource

POWER_UP_S = 0.0002    # PUD -> PUR
CALIBRATION_CONVERSIONS = 3


class EmulatedNAU7802:
    def __init__(self, source: LoadSource, clock: Clock, capacity_g: float = 5000.0, sensitivity_mv_per_v: float = 1.0,
                 bridge_offset_mv_per_v: float = 0.08, internal_offset_counts: int = 3100, noise_g: float = 0.15,
                 seed: int = 0):
        self.source, self.clock = source, clock
        self.capacity_g, self.sensitivity = capacity_g, sensitivity_mv_per_v
        self.bridge_offset = bridge_offset_mv_per_v
        self.internal_offset_counts = internal_offset_counts
        self.noise_g = noise_g
        self._rng = np.random.default_rng(seed)
        self.reset()

    def reset(self) -> None:
        self.regs = bytearray(32)
        self.regs[R.DEVICE_REV] = R.REVISION_LOW_NIBBLE
        self._pud_at: float | None = None
        self._cal_done_at: float | None = None
        self._calibrated_offset = 0
        self._next_conv: float | None = None

    def counts_per_gram(self, gain: int | None = None) -> float:
        """ADC counts per gram: full-scale input is +-VREF/(2*gain), 2^23 counts."""
        gain = gain or R.gain_of(self.regs[R.CTRL1])
        return self.sensitivity * 1e-3 / self.capacity_g * 2 * gain * (1 << 23)

    # --- state -------------------------------------------------------------------------------
    def _converting(self) -> bool:
        pu = self.regs[R.PU_CTRL]
        return bool(pu & R.PUD and pu & R.PUA and pu & R.PUR and pu & R.CS and self._cal_done_at is None)

    def _update(self) -> None:
        now = self.clock.now()
        pu = self.regs[R.PU_CTRL]
        if self._pud_at is not None and not pu & R.PUR and now - self._pud_at >= POWER_UP_S:
            self.regs[R.PU_CTRL] |= R.PUR
        rate = R.rate_of(self.regs[R.CTRL2])
        if self._cal_done_at is not None and now >= self._cal_done_at:
            self._finish_calibration()
        if not self._converting():
            self._next_conv = None
            return
        if self._next_conv is None:
            self._next_conv = now + 1.0 / rate
            return
        if now >= self._next_conv:
            n = int(math.floor((now - self._next_conv) * rate))
            t_last = self._next_conv + n / rate
            self._convert(t_last)
            self._next_conv = t_last + 1.0 / rate

    def _convert(self, t: float) -> None:
        gain = R.gain_of(self.regs[R.CTRL1])
        grams = self.source.load_grams(t) + (self._rng.normal(0.0, self.noise_g) if self.noise_g else 0.0)
        bridge_counts = self.bridge_offset * 1e-3 * 2 * gain * (1 << 23)
        counts = bridge_counts + grams * self.counts_per_gram(gain) + self.internal_offset_counts - self._calibrated_offset
        v = max(-(1 << 23), min((1 << 23) - 1, int(round(counts))))
        u = v & 0xFFFFFF
        self.regs[R.ADCO_B2], self.regs[R.ADCO_B1], self.regs[R.ADCO_B0] = (u >> 16) & 0xFF, (u >> 8) & 0xFF, u & 0xFF
        self.regs[R.PU_CTRL] |= R.CR

    def _finish_calibration(self) -> None:
        self._cal_done_at = None
        ctrl2 = self.regs[R.CTRL2] & ~R.CALS
        pu = self.regs[R.PU_CTRL]
        if not (pu & R.PUA and pu & R.PUD):
            ctrl2 |= R.CAL_ERR
        elif (ctrl2 & R.CALMOD_MASK) == 0:  # internal offset calibration
            self._calibrated_offset = self.internal_offset_counts
            u = self.internal_offset_counts & 0xFFFFFF
            self.regs[R.OCAL1_B2:R.OCAL1_B2 + 3] = bytes(((u >> 16) & 0xFF, (u >> 8) & 0xFF, u & 0xFF))
        self.regs[R.CTRL2] = ctrl2

    # --- register interface -----------------------------------------------------------------
    def read_register(self, register: int) -> int:
        self._update()
        value = self.regs[register & 0x1F]
        if register == R.ADCO_B0:
            self.regs[R.PU_CTRL] &= ~R.CR & 0xFF
        return value

    def write_register(self, register: int, value: int) -> None:
        self._update()
        register &= 0x1F
        now = self.clock.now()
        if register == R.PU_CTRL:
            if value & R.RR:
                self.reset()
                self.regs[R.PU_CTRL] = R.RR
                return
            keep = self.regs[R.PU_CTRL] & (R.PUR | R.CR)
            value = (value & ~(R.PUR | R.CR)) | keep
            if value & R.PUD and self._pud_at is None:
                self._pud_at = now
            if not value & R.PUD:
                self._pud_at = None
                value &= ~R.PUR
            self.regs[R.PU_CTRL] = value & 0xFF
            return
        if register in (R.ADCO_B2, R.ADCO_B1, R.ADCO_B0, R.DEVICE_REV):
            return
        if register == R.CTRL2:
            value &= ~R.CAL_ERR
            if value & R.CALS:
                rate = R.rate_of(value)
                self._cal_done_at = now + CALIBRATION_CONVERSIONS / rate
        self.regs[register] = value & 0xFF
