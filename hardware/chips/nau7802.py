"""NAU7802 24-bit bridge ADC driver on smbus2: reset, power-up (PUR), LDO, gain, rate up to 320 SPS,
internal offset calibration (CALS), conversion reads gated on the CR bit; tare and scale to grams.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware.chips import nau7802_regs as R
from hardware.clock import Clock
from hardware.errors import DeviceError, DeviceMissing
from hardware.i2c import I2CDevice


@dataclass(frozen=True)
class NAU7802Config:
    gain: int = 128
    rate_sps: int = 320
    ldo_volts: float = 3.3

    def validate(self) -> None:
        if self.gain not in R.GAINS:
            raise ValueError(f"gain must be one of {sorted(R.GAINS)}")
        if self.rate_sps not in R.RATES_SPS:
            raise ValueError(f"rate must be one of {sorted(R.RATES_SPS)} samples/s")
        if self.ldo_volts not in R.LDO_VOLTS:
            raise ValueError(f"LDO voltage must be one of {sorted(R.LDO_VOLTS)} V")


class NAU7802:
    def __init__(self, device: I2CDevice, clock: Clock, config: NAU7802Config = NAU7802Config()):
        config.validate()
        self.dev, self.clock, self.config = device, clock, config

    def _wait_for(self, register: int, mask: int, want_set: bool, timeout: float, what: str) -> None:
        deadline = self.clock.now() + timeout
        while True:
            if bool(self.dev.read(register) & mask) == want_set:
                return
            if self.clock.now() >= deadline:
                raise DeviceError(self.dev.name, self.dev.where, f"{what} did not happen within {timeout:g} s",
                                  "the 3.3 V supply and that the load cell's four wires are on E+/E-/A+/A-")
            self.clock.sleep(0.001)

    def start(self) -> None:
        c = self.config
        self.dev.write(R.PU_CTRL, R.RR)                # register reset
        self.clock.sleep(0.001)
        self.dev.write(R.PU_CTRL, R.PUD)               # clear RR, power up digital
        self._wait_for(R.PU_CTRL, R.PUR, True, 0.1, "power-up ready (PUR)")
        rev = self.dev.read(R.DEVICE_REV)
        if rev & 0x0F != R.REVISION_LOW_NIBBLE:
            raise DeviceMissing(self.dev.name, self.dev.where, f"revision register reads 0x{rev:02X}, not an NAU7802",
                                "that the board at 0x2A is an NAU7802 (e.g. SparkFun Qwiic Scale)")
        self.dev.write(R.PU_CTRL, R.PUD | R.PUA | R.AVDDS)  # analog on, internal LDO
        self.dev.write(R.CTRL1, (R.LDO_VOLTS[c.ldo_volts] << 3) | R.GAINS[c.gain])
        self.dev.write(R.CTRL2, R.RATES_SPS[c.rate_sps] << 4)
        self.dev.write(R.ADC, R.ADC_CHOPPER_OFF)
        self.dev.update_bits(R.PGA_PWR, R.PGA_CAP_EN, R.PGA_CAP_EN)
        self.dev.update_bits(R.PU_CTRL, R.CS, R.CS)   # cycle start: continuous conversions (as Adafruit's enable())
        self.clock.sleep(0.25)  # the LDO and the bridge settle before the offset calibration
        self.calibrate_internal()

    def calibrate_internal(self) -> None:
        """Internal offset calibration (CALMOD=00, CALS=1), waiting for CALS to clear."""
        ctrl2 = self.dev.read(R.CTRL2)
        self.dev.write(R.CTRL2, (ctrl2 & ~(R.CALMOD_MASK | R.CAL_ERR)) | R.CALS)
        self._wait_for(R.CTRL2, R.CALS, False, 1.0, "internal calibration (CALS)")
        if self.dev.read(R.CTRL2) & R.CAL_ERR:
            raise DeviceError(self.dev.name, self.dev.where, "internal calibration failed (CAL_ERR)",
                              "that the analog supply is powered and the load cell is connected")

    def data_ready(self) -> bool:
        return bool(self.dev.read(R.PU_CTRL) & R.CR)

    def read_raw(self) -> int:
        """The last conversion, signed 24-bit counts (reading ADCO_B0 clears CR)."""
        b2, b1, b0 = self.dev.read_block(R.ADCO_B2, 3)
        return R.to_signed24(b2, b1, b0)

    def poll(self) -> int | None:
        return self.read_raw() if self.data_ready() else None

    def stop(self) -> None:
        self.dev.write(R.PU_CTRL, 0)  # power down digital and analog


@dataclass
class LoadScale:
    """counts -> grams: grams = (counts - offset) / counts_per_gram."""

    offset_counts: float = 0.0
    counts_per_gram: float = 429.5

    def grams(self, counts: float) -> float:
        return (counts - self.offset_counts) / self.counts_per_gram

    def tare(self, counts: list[int] | list[float], known_grams: float = 0.0) -> None:
        """Set the offset so the mean of `counts` reads `known_grams` (0: the empty tray)."""
        if not counts:
            raise ValueError("tare needs at least one reading")
        mean = sum(counts) / len(counts)
        self.offset_counts = mean - known_grams * self.counts_per_gram

    def calibrate(self, counts: list[int] | list[float], known_grams: float) -> None:
        """With the tray tared, a known mass sets counts_per_gram."""
        if known_grams <= 0:
            raise ValueError("the calibration mass must be positive")
        mean = sum(counts) / len(counts)
        cpg = (mean - self.offset_counts) / known_grams
        if abs(cpg) < 1e-6:
            raise ValueError("the reading did not change with the calibration mass: is the load cell connected?")
        self.counts_per_gram = cpg
