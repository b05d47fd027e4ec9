"""MPU-6050 driver on smbus2, at register level: identity check, wake-up, ranges, sample rate, low-pass
filter, FIFO burst reads (up to 1 kHz), scaled to m/s^2 and deg/s.

Timestamps: a burst's last frame is stamped with the read time and earlier frames one sample period apart,
so the error is bounded by one FIFO poll and does not drift with the chip's oscillator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware.chips import mpu6050_regs as R
from hardware.clock import Clock
from hardware.errors import DeviceError, DeviceMissing
from hardware.i2c import I2CDevice

FRAME_BYTES = 12  # accel xyz + gyro xyz, 16-bit big-endian each
_BURST = (32 // FRAME_BYTES) * FRAME_BYTES  # whole frames per SMBus block read (24 bytes)


@dataclass(frozen=True)
class MPU6050Config:
    accel_range_g: int = 4
    gyro_range_dps: int = 500
    sample_rate_hz: float = 1000.0
    dlpf_cfg: int = 3  # 44 Hz accelerometer bandwidth

    def validate(self) -> None:
        if self.accel_range_g not in R.ACCEL_RANGES_G:
            raise ValueError(f"accelerometer range must be one of {sorted(R.ACCEL_RANGES_G)} g")
        if self.gyro_range_dps not in R.GYRO_RANGES_DPS:
            raise ValueError(f"gyro range must be one of {sorted(R.GYRO_RANGES_DPS)} deg/s")
        if not 1 <= self.dlpf_cfg <= 6:
            raise ValueError("dlpf_cfg must be 1..6 (0 and 7 switch the gyro to 8 kHz, which the FIFO cannot keep up with)")
        if not 4.0 <= self.sample_rate_hz <= 1000.0:
            raise ValueError("sample rate must be 4..1000 Hz")

    @property
    def smplrt_div(self) -> int:
        return max(0, min(255, int(round(1000.0 / self.sample_rate_hz)) - 1))


@dataclass
class ImuBatch:
    t: np.ndarray       # (N,) seconds
    accel: np.ndarray   # (N, 3) m/s^2
    gyro: np.ndarray    # (N, 3) deg/s
    overflowed: bool = False

    @staticmethod
    def empty() -> "ImuBatch":
        return ImuBatch(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)))


class MPU6050:
    def __init__(self, device: I2CDevice, clock: Clock, config: MPU6050Config = MPU6050Config()):
        config.validate()
        self.dev, self.clock, self.config = device, clock, config
        self.overflows = 0
        self.accel_scale = R.STANDARD_GRAVITY / R.ACCEL_LSB_PER_G[R.ACCEL_RANGES_G[config.accel_range_g]]
        self.gyro_scale = 1.0 / R.GYRO_LSB_PER_DPS[R.GYRO_RANGES_DPS[config.gyro_range_dps]]

    @property
    def sample_rate(self) -> float:
        return 1000.0 / (1 + self.config.smplrt_div)

    def check_identity(self) -> None:
        who = self.dev.read(R.WHO_AM_I)
        if who != R.WHO_AM_I_VALUE:
            hint = {0x70: "an MPU-6500", 0x71: "an MPU-9250", 0x73: "an MPU-9255", 0x98: "an ICM-20689"}.get(who, "not an MPU-6050")
            raise DeviceMissing(self.dev.name, self.dev.where, f"WHO_AM_I reads 0x{who:02X}, expected 0x68 ({hint})",
                                "that the board is an MPU-6050 (GY-521) and AD0 is tied low")

    def start(self) -> None:
        """Reset, wake on the gyro PLL, configure, and start filling the FIFO."""
        self.check_identity()
        self.dev.write(R.PWR_MGMT_1, R.PWR_DEVICE_RESET)
        self.clock.sleep(0.1)
        self.dev.write(R.PWR_MGMT_1, R.PWR_CLK_PLL_XGYRO)  # wake, clock from the X gyro PLL (more stable)
        self.clock.sleep(0.01)
        c = self.config
        self.dev.write(R.CONFIG, c.dlpf_cfg)
        self.dev.write(R.SMPLRT_DIV, c.smplrt_div)
        self.dev.write(R.GYRO_CONFIG, R.GYRO_RANGES_DPS[c.gyro_range_dps] << 3)
        self.dev.write(R.ACCEL_CONFIG, R.ACCEL_RANGES_G[c.accel_range_g] << 3)
        for reg, want in ((R.CONFIG, c.dlpf_cfg), (R.SMPLRT_DIV, c.smplrt_div),
                          (R.ACCEL_CONFIG, R.ACCEL_RANGES_G[c.accel_range_g] << 3)):
            got = self.dev.read(reg)
            if got != want:
                raise DeviceError(self.dev.name, self.dev.where, f"register 0x{reg:02X} reads back 0x{got:02X}, wrote 0x{want:02X}",
                                  "for a second device at the same address or a noisy bus (shorter wires, 4.7k pull-ups)")
        self.dev.write(R.FIFO_EN, 0)
        self.dev.write(R.USER_CTRL, R.USER_FIFO_RESET)
        self.dev.write(R.FIFO_EN, R.FIFO_EN_ACCEL | R.FIFO_EN_XG | R.FIFO_EN_YG | R.FIFO_EN_ZG)
        self.dev.write(R.USER_CTRL, R.USER_FIFO_EN)
        self.dev.read(R.INT_STATUS)  # clear a stale overflow flag

    def reset_fifo(self) -> None:
        self.dev.write(R.USER_CTRL, R.USER_FIFO_RESET)
        self.dev.write(R.USER_CTRL, R.USER_FIFO_EN)

    def fifo_count(self) -> int:
        hi, lo = self.dev.read_block(R.FIFO_COUNTH, 2)
        return (hi << 8) | lo

    def read_fifo(self) -> ImuBatch:
        """Every complete frame waiting in the FIFO. After an overflow the FIFO is reset (frames lost)."""
        if self.dev.read(R.INT_STATUS) & R.INT_FIFO_OFLOW:
            self.overflows += 1
            self.reset_fifo()
            batch = ImuBatch.empty()
            batch.overflowed = True
            return batch
        frames = self.fifo_count() // FRAME_BYTES
        t_read = self.clock.now()
        raw = bytearray()
        remaining = frames * FRAME_BYTES
        while remaining > 0:
            n = min(_BURST, remaining)
            raw += bytes(self.dev.read_block(R.FIFO_R_W, n))
            remaining -= n
        return self._decode(raw, frames, t_read)

    def _decode(self, raw: bytes, frames: int, t_read: float) -> ImuBatch:
        if frames == 0:
            return ImuBatch.empty()
        words = np.frombuffer(bytes(raw), dtype=">i2").reshape(frames, 6).astype(float)
        t = t_read - (frames - 1 - np.arange(frames)) / self.sample_rate
        return ImuBatch(t, words[:, :3] * self.accel_scale, words[:, 3:] * self.gyro_scale)

    def read_now(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The latest sample from the data registers: (accel m/s^2, gyro deg/s, temperature C)."""
        b = bytes(self.dev.read_block(R.ACCEL_XOUT_H, 14))
        w = np.frombuffer(b, dtype=">i2").astype(float)
        return w[0:3] * self.accel_scale, w[4:7] * self.gyro_scale, R.temp_c(int(w[3]))

    def stop(self) -> None:
        self.dev.write(R.USER_CTRL, 0)
        self.dev.write(R.PWR_MGMT_1, R.PWR_SLEEP)
