"""Errors a player can act on: which device, where it is wired, what to check."""

from __future__ import annotations


class DeviceError(RuntimeError):
    """A device did not answer or answered nonsense after retries."""

    def __init__(self, device: str, where: str, problem: str, check: str):
        self.device, self.where, self.problem, self.check = device, where, problem, check
        super().__init__(f"{device} ({where}): {problem}. Check: {check}")


class DeviceMissing(DeviceError):
    """The device is not there at all (not wired, wrong address, library missing)."""
