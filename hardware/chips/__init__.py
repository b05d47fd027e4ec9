"""Register-level drivers for the tray's chips (MPU-6050, NAU7802, HX711)."""
