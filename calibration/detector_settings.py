"""The table's own detector settings: the hardware engineer's defaults with what calibration learnt.

`stacko calibrate imu` writes CALDIR/detectors.json, a complete detector settings file (same format
as calibration/defaults/detectors.json), so the match loop loads one file: the table's if it exists,
else the defaults. Only thresholds that depend on this table's noise change; they only ever go up.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from calibration.files import ImuCalibration, LoadCellCalibration, write_json

G = 9.80665


def default_detector_settings() -> dict[str, Any]:
    from hardware.detectors.config import DEFAULT_PATH

    return json.loads(Path(DEFAULT_PATH).read_text(encoding="utf-8"))


def default_imu_floors_ms2(defaults: dict[str, Any] | None = None) -> tuple[float, float]:
    """The detectors' default (touch, impact) vibration thresholds in m/s^2."""
    imu = (defaults or default_detector_settings())["imu"]
    return imu["touch_accel_g"] * G, imu["impact_g"] * G


def table_detector_settings(defaults: dict[str, Any], imu: ImuCalibration | None,
                            loadcell: LoadCellCalibration | None) -> dict[str, Any]:
    """Defaults with this table's thresholds; validated by the detectors' own loader."""
    from hardware.detectors.config import detector_config_from_dict

    out = copy.deepcopy(defaults)
    if imu is not None:
        sec = out["imu"]
        touch_g, impact_g = imu.touch_threshold_ms2 / G, imu.collapse_threshold_ms2 / G
        scale = max(1.0, touch_g / sec["touch_accel_g"])
        sec["touch_accel_g"] = max(sec["touch_accel_g"], touch_g)
        sec["impact_g"] = max(sec["impact_g"], impact_g)
        # A noisier table raises the knock threshold with the touch threshold. It is not capped by
        # the impact threshold: `impact_g` is the (low) confirmation a collapse needs, far below a
        # knock on the table (0.08 g against 0.5 g by default), and a cap there brings back false knocks.
        sec["knock_accel_g"] = sec["knock_accel_g"] * scale
    if loadcell is not None:
        # a settled load wobbles by a few times the cell's noise; never tighter than the default band
        out["load"]["stable_band_g"] = max(out["load"]["stable_band_g"], 8.0 * loadcell.noise_grams)
    out["comment"] = "This table's detector settings: the defaults with thresholds from `stacko calibrate`."
    detector_config_from_dict(out, "the table's detector settings")
    return out


def write_table_detector_settings(path: Path, imu: ImuCalibration | None, loadcell: LoadCellCalibration | None) -> Path:
    write_json(path, table_detector_settings(default_detector_settings(), imu, loadcell))
    return path
