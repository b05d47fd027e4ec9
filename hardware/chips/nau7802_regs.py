"""NAU7802 register map (Nuvoton NAU7802 datasheet rev 1.7), shared by driver and emulation."""

PU_CTRL = 0x00
CTRL1 = 0x01
CTRL2 = 0x02
OCAL1_B2 = 0x03
GCAL1_B3 = 0x06
I2C_CONTROL = 0x11
ADCO_B2 = 0x12
ADCO_B1 = 0x13
ADCO_B0 = 0x14
ADC = 0x15
PGA = 0x1B
PGA_PWR = 0x1C
DEVICE_REV = 0x1F

ADDRESS = 0x2A  # fixed

# PU_CTRL bits
RR, PUD, PUA, PUR, CS, CR, OSCS, AVDDS = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
# CTRL2 bits
CALMOD_MASK, CALS, CAL_ERR, CRS_MASK = 0x03, 0x04, 0x08, 0x70
PGA_CAP_EN = 0x80
ADC_CHOPPER_OFF = 0x30  # REG_CHPS = 11: turn the clock chopper off (as the SparkFun library does)

GAINS = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4, 32: 5, 64: 6, 128: 7}   # gain -> GAINS bits (CTRL1 2:0)
RATES_SPS = {10: 0, 20: 1, 40: 2, 80: 3, 320: 7}                 # rate -> CRS bits (CTRL2 6:4)
LDO_VOLTS = {4.5: 0, 4.2: 1, 3.9: 2, 3.6: 3, 3.3: 4, 3.0: 5, 2.7: 6, 2.4: 7}  # -> VLDO (CTRL1 5:3)
REVISION_LOW_NIBBLE = 0x0F


def gain_of(ctrl1: int) -> int:
    return 1 << (ctrl1 & 0x07)


def rate_of(ctrl2: int) -> int:
    code = (ctrl2 & CRS_MASK) >> 4
    return {v: k for k, v in RATES_SPS.items()}.get(code, 10)


def to_signed24(b2: int, b1: int, b0: int) -> int:
    v = (b2 << 16) | (b1 << 8) | b0
    return v - (1 << 24) if v & 0x800000 else v
