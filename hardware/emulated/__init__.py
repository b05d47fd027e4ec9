"""Register-level chip emulations behind an smbus2-like bus: the real drivers read them byte for byte."""
