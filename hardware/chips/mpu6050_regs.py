"""MPU-6050 register map and scales (InvenSense RM-MPU-6000A-00 rev 4.2), shared by driver and emulation."""

SMPLRT_DIV = 0x19
CONFIG = 0x1A
GYRO_CONFIG = 0x1B
ACCEL_CONFIG = 0x1C
FIFO_EN = 0x23
INT_ENABLE = 0x38
INT_STATUS = 0x3A
ACCEL_XOUT_H = 0x3B
TEMP_OUT_H = 0x41
GYRO_XOUT_H = 0x43
USER_CTRL = 0x6A
PWR_MGMT_1 = 0x6B
PWR_MGMT_2 = 0x6C
FIFO_COUNTH = 0x72
FIFO_COUNTL = 0x73
FIFO_R_W = 0x74
WHO_AM_I = 0x75

WHO_AM_I_VALUE = 0x68
DEFAULT_ADDRESS = 0x68  # AD0 low; 0x69 with AD0 high

PWR_DEVICE_RESET = 0x80
PWR_SLEEP = 0x40
PWR_CLK_PLL_XGYRO = 0x01
USER_FIFO_EN = 0x40
USER_FIFO_RESET = 0x04
FIFO_EN_XG, FIFO_EN_YG, FIFO_EN_ZG, FIFO_EN_ACCEL, FIFO_EN_TEMP = 0x40, 0x20, 0x10, 0x08, 0x80
INT_FIFO_OFLOW = 0x10
INT_DATA_RDY = 0x01
FIFO_SIZE = 1024

ACCEL_RANGES_G = {2: 0, 4: 1, 8: 2, 16: 3}          # full scale -> AFS_SEL
ACCEL_LSB_PER_G = {0: 16384.0, 1: 8192.0, 2: 4096.0, 3: 2048.0}
GYRO_RANGES_DPS = {250: 0, 500: 1, 1000: 2, 2000: 3}  # full scale -> FS_SEL
GYRO_LSB_PER_DPS = {0: 131.0, 1: 65.5, 2: 32.8, 3: 16.4}
# DLPF_CFG -> accelerometer bandwidth (Hz); 0 and 7 also switch the gyro output rate to 8 kHz.
DLPF_BANDWIDTH_HZ = {0: 260, 1: 184, 2: 94, 3: 44, 4: 21, 5: 10, 6: 5, 7: 260}

STANDARD_GRAVITY = 9.80665


def temp_c(raw: int) -> float:
    return raw / 340.0 + 36.53


def gyro_output_rate(dlpf_cfg: int) -> float:
    return 8000.0 if dlpf_cfg in (0, 7) else 1000.0
