"""An smbus2-compatible bus with emulated chips at addresses, and the faults a real bus has.

Faults: a NACK (OSError errno 121, "Remote I/O error") for the next N transfers to an address; a stuck
bus (SDA held low: every transfer times out, OSError errno 110) for N transfers or until released; a chip
that vanishes (it NACKs for ever, as when a wire comes loose mid-match).
"""

from __future__ import annotations

import errno
import os
from typing import Protocol, Sequence


class EmulatedChip(Protocol):
    def read_register(self, register: int) -> int: ...
    def write_register(self, register: int, value: int) -> None: ...


def _nack() -> OSError:
    return OSError(errno.EREMOTEIO, os.strerror(errno.EREMOTEIO))


def _timeout() -> OSError:
    return OSError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT))


class EmulatedBus:
    """Devices by address. Block reads/writes auto-increment the register unless the chip defines
    `read_block(register, length)` (a FIFO port does not increment). Every transfer is logged."""

    def __init__(self, devices: dict[int, EmulatedChip] | None = None):
        self.devices: dict[int, EmulatedChip] = dict(devices or {})
        self._nacks: dict[int, int] = {}
        self._stuck = 0
        self._vanished: set[int] = set()
        self.log: list[tuple[str, int, int, tuple[int, ...]]] = []  # (op, addr, register, bytes)
        self.closed = False

    # --- fault injection -------------------------------------------------------------------
    def nack(self, address: int, times: int = 1) -> None:
        """The next `times` transfers to `address` are not acknowledged."""
        self._nacks[address] = self._nacks.get(address, 0) + times

    def stick(self, times: int = -1) -> None:
        """Hold SDA low: the next `times` transfers time out (-1: until `release()`)."""
        self._stuck = times

    def release(self) -> None:
        self._stuck = 0

    def vanish(self, address: int) -> None:
        """The chip at `address` stops answering for good (a loose wire)."""
        self._vanished.add(address)

    def reappear(self, address: int) -> None:
        self._vanished.discard(address)

    # --- the smbus2 interface --------------------------------------------------------------
    def _chip(self, address: int) -> EmulatedChip:
        if self.closed:
            raise OSError(errno.EBADF, "bus is closed")
        if self._stuck:
            if self._stuck > 0:
                self._stuck -= 1
            raise _timeout()
        if self._nacks.get(address, 0) > 0:
            self._nacks[address] -= 1
            raise _nack()
        if address in self._vanished or address not in self.devices:
            raise _nack()
        return self.devices[address]

    def read_byte_data(self, i2c_addr: int, register: int) -> int:
        value = self._chip(i2c_addr).read_register(register) & 0xFF
        self.log.append(("r", i2c_addr, register, (value,)))
        return value

    def write_byte_data(self, i2c_addr: int, register: int, value: int) -> None:
        self._chip(i2c_addr).write_register(register, value & 0xFF)
        self.log.append(("w", i2c_addr, register, (value & 0xFF,)))

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int) -> list[int]:
        if not 0 < length <= 32:
            raise OSError(errno.EINVAL, "block length must be 1..32")
        chip = self._chip(i2c_addr)
        block = getattr(chip, "read_block", None)
        if block is not None:
            data = [b & 0xFF for b in block(register, length)]
        else:
            data = [chip.read_register((register + i) & 0xFF) & 0xFF for i in range(length)]
        self.log.append(("rb", i2c_addr, register, tuple(data)))
        return data

    def write_i2c_block_data(self, i2c_addr: int, register: int, data: Sequence[int]) -> None:
        chip = self._chip(i2c_addr)
        for i, b in enumerate(data):
            chip.write_register((register + i) & 0xFF, b & 0xFF)
        self.log.append(("wb", i2c_addr, register, tuple(b & 0xFF for b in data)))

    def close(self) -> None:
        self.closed = True
