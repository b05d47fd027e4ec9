"""Detectors: timestamped IMU and load-cell streams in, `referee.observations.SensorEvent` out.

`SensorDetectors` (fusion.py) is the one object the match loop feeds; the stages (imu.py, load.py) are
small stateful classes with every threshold in `DetectorConfig` (config.py, defaults in
calibration/defaults/detectors.json). `CameraConfirmedCollapse` (camera_confirmed.py) adds the camera's
fallen blocks (vision/fallen.py) to the collapse detector.
"""

from hardware.detectors.camera_confirmed import CameraConfirmedCollapse
from hardware.detectors.config import DetectorConfig, DetectorConfigError, load_detector_config
from hardware.detectors.fusion import SensorDetectors

__all__ = ["CameraConfirmedCollapse", "DetectorConfig", "DetectorConfigError", "load_detector_config", "SensorDetectors"]
