"""Detector thresholds, loaded and validated from JSON (never constants buried in code).

Default file: calibration/defaults/detectors.json; a table's own calibration may override it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "calibration" / "defaults" / "detectors.json"


class DetectorConfigError(ValueError):
    """A detector calibration file that cannot be used, with what is wrong in plain words."""


@dataclass(frozen=True)
class LoadConfig:
    median_window_s: float      # spike-removing median over the load samples, then ...
    mean_window_s: float        # ... two cascaded moving means over this window (tray ringing)
    stable_window_s: float      # the load must stay within stable_band_g this long to count as settled
    stable_band_g: float
    block_g: float              # one block's weight
    step_tolerance_g: float     # a settled change within block_g +- this is one lift (down) or one place (up)
    min_step_g: float           # smaller settled changes are drift, followed slowly ...
    drift_tau_s: float          # ... with this time constant (so a slow pull still shows as a step)
    reanchor_s: float           # a settled level that is not one block away becomes the floor after this long
    early_place_s: float        # with a block in hand, the quick signal back within ...
    early_place_band_g: float   # ... this of the level before the lift this long is a place at once (0 s: off)

@dataclass(frozen=True)
class ImuConfig:
    highpass_window_s: float    # accel minus its running mean over this window = vibration
    touch_accel_g: float        # vibration above this starts an activity segment ...
    background_factor: float    # ... and above this many times the table's background vibration ...
    background_quantile: float  # ... (this quantile of the vibration over ...
    background_window_s: float  # ... this window: a table is never quite at rest)
    touch_gyro_dps: float       # the tray tilting (gyro, low-passed) faster than this is activity too ...
    gyro_lowpass_s: float       # ... averaged over this window ...
    gyro_baseline_s: float      # ... minus its mean over this window (gyro bias and drift)
    impact_g: float             # vibration peak that counts as an impact (collapse evidence)
    knock_accel_g: float        # an activity segment peaking above this, short and weightless, is a knock
    knock_min_s: float          # shorter spikes (one sample) are contact noise, not a knock
    knock_max_s: float
    touch_load_g: float         # load deviation from the settled level that starts an activity segment
    knock_max_load_g: float     # a knock's smoothed load deviation stays below this plus ...
    knock_inertial_g_per_g: float  # ... this many grams per g of vibration (the tray's mass shaken); a touch presses harder
    quiet_s: float              # an impulse (knock) ends after this long below the knock level
    min_touch_s: float          # activity shorter than this is noise, not a touch
    touch_confirm_s: float      # a touch is reported this long after it began, once no lift, place or knock explains it
    touch_refractory_s: float   # one touch per this long


@dataclass(frozen=True)
class CollapseConfig:
    drop_g: float               # load (median, then a `fast_window_s` mean) below the settled level by this much ...
    fast_window_s: float
    confirm_s: float            # ... for this long (longer than a knock's ringing), after ...
    impact_lookback_s: float    # ... an impact no earlier than this before the drop began
    require_impact: bool
    imu_stale_s: float          # without IMU data for this long the impact is not required (IMU lost)
    rearm_stable_s: float       # after a collapse, the load must be settled this long before arming again


@dataclass(frozen=True)
class CameraCollapseConfig:
    candidate_g: float          # a vibration peak this high is a thud worth a look by the camera ...
    candidate_window_s: float   # ... by a frame taken up to this long after it
    min_confidence: float       # fallen blocks the camera is less sure of are ignored
    persist_s: float            # a fallen block lying this long at one place is a collapse even without a thud
    same_place_mm: float        # ... "one place": its centre moves less than this between frames
    max_gap_s: float            # ... and it may go unseen this long (a hand passing over it)
    partial_after_thud: bool    # a block cut by the picture's edge counts after a thud too (else only once it stays)
    in_hand_min_confidence: float  # while a block is in hand (it may be the "fallen" block seen), at least this sure ...
    in_hand_still_s: float      # ... or lying still this long (a carried block moves)
    sure_confidence: float      # after a thud a block this sure counts at once; a less sure one ...
    doubtful_still_s: float     # ... must lie at one place this long (a block at the end of a pull, in a hand the
                                #     load cell has not yet felt lift, moves between frames)


@dataclass(frozen=True)
class SpeechConfig:
    holdoff_margin_s: float     # while speaking and this long after: vibration alone is no touch, and ...
    knock_g: float              # ... a knock must peak above this (louder than the speaker ever shakes the table)


@dataclass(frozen=True)
class DetectorConfig:
    load: LoadConfig
    imu: ImuConfig
    collapse: CollapseConfig
    speech: SpeechConfig
    camera_collapse: CameraCollapseConfig | None = None  # optional in a table's file: the defaults' then

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_SECTIONS = {"load": LoadConfig, "imu": ImuConfig, "collapse": CollapseConfig, "speech": SpeechConfig,
             "camera_collapse": CameraCollapseConfig}
_OPTIONAL = {"camera_collapse"}  # added later: files written before it take the default section
_OPTIONAL_SETTINGS = {"load": {"early_place_s", "early_place_band_g"}, "speech": {"knock_g"},
                      "camera_collapse": {"in_hand_min_confidence", "in_hand_still_s", "sure_confidence", "doubtful_still_s"}}  # added later: the defaults file's values


def detector_config_from_dict(data: Any, origin: str = "detector settings") -> DetectorConfig:
    if not isinstance(data, dict):
        raise DetectorConfigError(f"{origin}: expected a JSON object with sections {sorted(_SECTIONS)}")
    unknown = set(data) - set(_SECTIONS) - {"comment", "version"}
    if unknown:
        raise DetectorConfigError(f"{origin}: unknown section(s) {sorted(unknown)}; expected {sorted(_SECTIONS)}")
    sections = {}
    for name, cls in _SECTIONS.items():
        sec = data.get(name)
        if sec is None and name in _OPTIONAL:
            sec = _default_section(name)
        if not isinstance(sec, dict):
            raise DetectorConfigError(f"{origin}: section '{name}' is missing or not an object")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        extra = set(sec) - set(fields) - {"comment"}
        if extra:
            raise DetectorConfigError(f"{origin}: '{name}' has unknown setting(s) {sorted(extra)}")
        missing = set(fields) - set(sec)
        if missing & _OPTIONAL_SETTINGS.get(name, set()):
            defaults = _default_section(name) or {}
            sec = {**{k: defaults[k] for k in missing & _OPTIONAL_SETTINGS[name] if k in defaults}, **sec}
            missing = set(fields) - set(sec)
        if missing:
            raise DetectorConfigError(f"{origin}: '{name}' is missing setting(s) {sorted(missing)}")
        values = {}
        for key, f in fields.items():
            v = sec[key]
            if f.type in ("bool", bool):
                if not isinstance(v, bool):
                    raise DetectorConfigError(f"{origin}: {name}.{key} must be true or false, not {v!r}")
            else:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
                    raise DetectorConfigError(f"{origin}: {name}.{key} must be a number, not {v!r}")
                if v < 0:
                    raise DetectorConfigError(f"{origin}: {name}.{key} must not be negative ({v})")
                v = float(v)
            values[key] = v
        sections[name] = cls(**values)
    cfg = DetectorConfig(**sections)
    _check_consistency(cfg, origin)
    return cfg


def _check_consistency(cfg: DetectorConfig, origin: str) -> None:
    l, i, c = cfg.load, cfg.imu, cfg.collapse
    problems = []
    if l.block_g <= 0:
        problems.append("load.block_g must be positive")
    if l.step_tolerance_g >= l.block_g / 2 + l.block_g:
        problems.append("load.step_tolerance_g is so wide that one block and two blocks overlap")
    if l.min_step_g > l.block_g - l.step_tolerance_g:
        problems.append("load.min_step_g is larger than the smallest one-block step")
    if c.drop_g <= l.block_g + l.step_tolerance_g:
        problems.append("collapse.drop_g must be well above one block's weight, or every pull is a collapse")
    if i.impact_g < i.touch_accel_g:
        problems.append("imu.impact_g must be at least imu.touch_accel_g")
    for name, v in (("load.median_window_s", l.median_window_s), ("load.stable_window_s", l.stable_window_s),
                    ("imu.highpass_window_s", i.highpass_window_s), ("imu.quiet_s", i.quiet_s)):
        if v <= 0:
            problems.append(f"{name} must be positive")
    if problems:
        raise DetectorConfigError(f"{origin}: " + "; ".join(problems))


def _default_section(name: str) -> Any:
    try:
        return json.loads(DEFAULT_PATH.read_text(encoding="utf-8")).get(name)
    except (OSError, json.JSONDecodeError):
        return None


def load_detector_config(path: str | Path | None = None) -> DetectorConfig:
    p = Path(path) if path else DEFAULT_PATH
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DetectorConfigError(f"detector settings file {p} does not exist") from None
    except OSError as exc:
        raise DetectorConfigError(f"detector settings file {p} cannot be read: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DetectorConfigError(f"{p} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return detector_config_from_dict(data, str(p))
