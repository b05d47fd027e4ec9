"""The I2C bus seen by the drivers: smbus2's interface, with retries and errors a player can act on.

The real bus is `smbus2.SMBus(n)`; tests and the twin use `hardware.emulated.bus.EmulatedBus`, which has
the same five methods. `I2CDevice` wraps one chip address on a bus: it retries failed transfers with a
bounded back-off (through the clock, so it costs nothing in simulation) and then raises `DeviceError`
naming the chip, the bus, the address and what to check.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Protocol, Sequence

from hardware.clock import Clock
from hardware.errors import DeviceError, DeviceMissing


class Bus(Protocol):
    """The part of `smbus2.SMBus` the drivers use."""

    def read_byte_data(self, i2c_addr: int, register: int) -> int: ...
    def write_byte_data(self, i2c_addr: int, register: int, value: int) -> None: ...
    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int) -> list[int]: ...
    def write_i2c_block_data(self, i2c_addr: int, register: int, data: Sequence[int]) -> None: ...
    def close(self) -> None: ...


def open_bus(number: int = 1) -> Bus:
    """The Pi's I2C bus (`/dev/i2c-1` on the 40-pin header)."""
    try:
        import smbus2
    except ImportError as exc:  # pragma: no cover - smbus2 is a dependency
        raise DeviceMissing("I2C bus", f"bus {number}", "the smbus2 library is not installed", "pip install smbus2") from exc
    try:
        return smbus2.SMBus(number)
    except (FileNotFoundError, PermissionError) as exc:
        raise DeviceMissing(
            "I2C bus", f"/dev/i2c-{number}", f"cannot open the bus ({exc.strerror})",
            "enable I2C with `sudo raspi-config nonint do_i2c 0` and add this user to the i2c group",
        ) from exc


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded back-off: `attempts` tries, waits doubling from `first_wait` up to `max_wait` seconds."""

    attempts: int = 4
    first_wait: float = 0.002
    max_wait: float = 0.05

    def waits(self) -> list[float]:
        out, w = [], self.first_wait
        for _ in range(self.attempts - 1):
            out.append(min(w, self.max_wait))
            w *= 2
        return out


def describe_os_error(exc: OSError) -> str:
    if exc.errno == errno.EREMOTEIO:
        return "no acknowledge (NACK) from the chip"
    if exc.errno in (errno.ETIMEDOUT, errno.EAGAIN):
        return "the bus timed out (a stuck bus: SDA held low)"
    if exc.errno == errno.EIO:
        return "input/output error on the bus"
    return str(exc)


class I2CDevice:
    """One chip on a bus, with retries. `name` and `check` make the final error useful to a player."""

    def __init__(self, bus: Bus, address: int, name: str, clock: Clock, bus_label: str = "I2C bus 1",
                 check: str = "the wiring (SDA, SCL, 3.3 V, GND) and the address jumper", retry: RetryPolicy = RetryPolicy()):
        self.bus, self.address, self.name, self.clock = bus, address, name, clock
        self.bus_label, self.check, self.retry = bus_label, check, retry
        self.retries = 0  # how many transfers needed a retry, for `stacko doctor`

    @property
    def where(self) -> str:
        return f"{self.bus_label}, address 0x{self.address:02X}"

    def _do(self, what: str, fn, *args):
        waits = self.retry.waits()
        last: OSError | None = None
        for attempt in range(len(waits) + 1):
            try:
                return fn(self.address, *args)
            except OSError as exc:
                last = exc
                if attempt < len(waits):
                    self.retries += 1
                    self.clock.sleep(waits[attempt])
        assert last is not None
        raise DeviceError(self.name, self.where, f"{what} failed after {self.retry.attempts} tries: {describe_os_error(last)}",
                          self.check) from last

    def read(self, register: int) -> int:
        return self._do(f"reading register 0x{register:02X}", self.bus.read_byte_data, register)

    def write(self, register: int, value: int) -> None:
        self._do(f"writing register 0x{register:02X}", self.bus.write_byte_data, register, value & 0xFF)

    def read_block(self, register: int, length: int) -> list[int]:
        if not 0 < length <= 32:
            raise ValueError("SMBus block reads are 1 to 32 bytes")
        return list(self._do(f"reading {length} bytes from 0x{register:02X}", self.bus.read_i2c_block_data, register, length))

    def write_block(self, register: int, data: Sequence[int]) -> None:
        self._do(f"writing {len(data)} bytes to 0x{register:02X}", self.bus.write_i2c_block_data, register, list(data))

    def update_bits(self, register: int, mask: int, value: int) -> None:
        """Read-modify-write the bits in `mask`."""
        old = self.read(register)
        self.write(register, (old & ~mask) | (value & mask))
