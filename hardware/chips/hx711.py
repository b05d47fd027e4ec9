"""HX711 24-bit load-cell ADC, bit-banged on two GPIO pins with gpiozero (lgpio on a Pi 5).

Protocol (Avia HX711 datasheet): DOUT goes low when a conversion is ready; 24 clock pulses on PD_SCK
shift the two's-complement result out MSB first (read after each rising edge); 1, 2 or 3 more pulses
choose the next conversion's input and gain (25: A x128, 26: B x32, 27: A x64). Holding PD_SCK high
for more than 60 us powers the chip down. Python's GPIO latency is close to that limit, which is one
reason the NAU7802 (I2C) is this project's first choice; the HX711 suits the common cheap boards.
"""

from __future__ import annotations

from hardware.clock import Clock
from hardware.errors import DeviceError, DeviceMissing

EXTRA_PULSES = {128: 1, 32: 2, 64: 3}  # channel A x128, channel B x32, channel A x64


def to_signed24(v: int) -> int:
    return v - (1 << 24) if v & 0x800000 else v


class HX711:
    def __init__(self, dout_pin: int, sck_pin: int, clock: Clock, gain: int = 128, pin_factory=None):
        if gain not in EXTRA_PULSES:
            raise ValueError("HX711 gain must be 128 or 64 (channel A) or 32 (channel B)")
        try:
            from gpiozero import DigitalInputDevice, DigitalOutputDevice
            from gpiozero.exc import GPIOZeroError
        except ImportError as exc:  # pragma: no cover
            raise DeviceMissing("load cell (HX711)", "GPIO", "gpiozero is not installed", "pip install gpiozero") from exc
        self.where = f"DT on GPIO{dout_pin}, SCK on GPIO{sck_pin}"
        try:
            self._sck = DigitalOutputDevice(sck_pin, initial_value=False, pin_factory=pin_factory)
            self._dout = DigitalInputDevice(dout_pin, pull_up=None, active_state=True, pin_factory=pin_factory)
        except GPIOZeroError as exc:
            raise DeviceMissing("load cell (HX711)", self.where, f"cannot use the pins ({exc})",
                                "the pin numbers in the device settings and that no other program holds them") from exc
        self.clock, self.gain = clock, gain
        self._sck_pin, self._dout_pin = self._sck.pin, self._dout.pin

    def ready(self) -> bool:
        return not self._dout_pin.state

    def read_raw(self, timeout: float = 0.5) -> int:
        """Wait for a conversion (DOUT low) and clock it out; the extra pulses set the next gain."""
        deadline = self.clock.now() + timeout
        while not self.ready():
            if self.clock.now() >= deadline:
                raise DeviceError("load cell (HX711)", self.where, f"no conversion within {timeout:g} s (DOUT stays high)",
                                  "VCC/GND at the HX711 board, and that DT and SCK are not swapped")
            self.clock.sleep(0.001)
        sck, dout = self._sck_pin, self._dout_pin
        value = 0
        for _ in range(24):
            sck.state = True
            value = (value << 1) | (1 if dout.state else 0)
            sck.state = False
        for _ in range(EXTRA_PULSES[self.gain]):
            sck.state = True
            sck.state = False
        return to_signed24(value)

    def poll(self) -> int | None:
        return self.read_raw() if self.ready() else None

    def power_down(self) -> None:
        self._sck_pin.state = True
        self.clock.sleep(0.0001)

    def power_up(self) -> None:
        self._sck_pin.state = False

    def close(self) -> None:
        self._sck.close()
        self._dout.close()
