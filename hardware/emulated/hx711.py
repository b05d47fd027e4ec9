"""An HX711 played on gpiozero's mock pins: the DOUT pin answers as the chip would to PD_SCK pulses.

Use with `gpiozero.Device.pin_factory = MockFactory()`: `MockHX711(factory, dout, sck, source, clock)`
creates both pins; the real `hardware.chips.hx711.HX711` driver then reads it bit for bit.
"""

from __future__ import annotations

import numpy as np
from gpiozero.pins.mock import MockPin

from hardware.clock import Clock
from hardware.sources import LoadSource

GAIN_FOR_PULSES = {25: 128, 26: 32, 27: 64}


class _ClockPin(MockPin):
    def __init__(self, factory, info, chip=None):
        super().__init__(factory, info)
        self.chip = chip

    def _set_state(self, value):
        super()._set_state(value)
        if self.chip is not None:
            self.chip.on_clock(bool(value))


class _DataPin(MockPin):
    def __init__(self, factory, info, chip=None):
        super().__init__(factory, info)
        self.chip = chip

    def _get_state(self):
        if self.chip is not None:
            self.chip.update()
        return super()._get_state()


class MockHX711:
    def __init__(self, factory, dout_pin: int, sck_pin: int, source: LoadSource, clock: Clock, rate_sps: float = 80.0,
                 offset_counts: int = -83_000, counts_per_gram_a128: float = 105.0, noise_g: float = 0.3, seed: int = 0):
        self.source, self.clock, self.rate = source, clock, rate_sps
        self.offset, self.cpg = offset_counts, counts_per_gram_a128
        self.noise_g = noise_g
        self._rng = np.random.default_rng(seed)
        self.dout = factory.pin(dout_pin, pin_class=_DataPin, chip=self)
        self.sck = factory.pin(sck_pin, pin_class=_ClockPin, chip=self)
        self.gain = 128
        self.powered = True
        self._next = clock.now() + 1.0 / rate_sps
        self._bits: list[int] | None = None  # the conversion being shifted out
        self._pulses = 0
        self._high_since: float | None = None
        self.dout.drive_high()

    def counts_per_gram(self) -> float:
        return self.cpg * self.gain / 128.0

    def update(self) -> None:
        """A conversion completes every 1/rate seconds: DOUT goes low (once the last one was read)."""
        if not self.powered:
            return
        reading = self._bits is not None and self._pulses < 25
        now = self.clock.now()
        if now >= self._next and not reading:
            grams = self.source.load_grams(now) + (self._rng.normal(0, self.noise_g) if self.noise_g else 0.0)
            v = int(round(self.offset + grams * self.counts_per_gram()))
            v = max(-(1 << 23), min((1 << 23) - 1, v)) & 0xFFFFFF
            self._bits = [(v >> (23 - i)) & 1 for i in range(24)]
            self._pulses = 0
            self._next = now + 1.0 / self.rate
            self.dout.drive_low()

    def on_clock(self, high: bool) -> None:
        now = self.clock.now()
        if high:
            self._high_since = now
            if self._bits is None or self._pulses >= 27:
                return
            self._pulses += 1
            if self._pulses <= 24:
                (self.dout.drive_high if self._bits[self._pulses - 1] else self.dout.drive_low)()
            elif self._pulses == 25:
                self.dout.drive_high()  # data done: DOUT stays high until the next conversion
            return
        if self._high_since is not None and now - self._high_since > 60e-6:
            # PD_SCK was held high: the chip powered down; waking resets it to channel A x128
            self.gain = 128
            self._bits, self._pulses = None, 0
            self._next = now + 1.0 / self.rate
            self.dout.drive_high()
            return
        if self._bits is not None and self._pulses >= 25:
            self.gain = GAIN_FOR_PULSES[self._pulses]  # the next conversion's input and gain
