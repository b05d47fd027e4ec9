"""Calibration of a table: markers, load cell, IMU and vision, guided step by step."""
