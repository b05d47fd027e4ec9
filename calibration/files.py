"""Calibration files of one table: what they hold, how they are checked, where they live.

A table's calibration is a folder (default: the user's data dir, or $STACKO_CALIBRATION_DIR):
```
loadcell.json   tare offset and counts per gram, with the known-weight and one-block checks
imu.json        quiet noise of the tray and the collapse/touch thresholds learnt from it
tray.json       marker sheet geometry (CONTRACT section 2 format, written by `stacko calibrate markers`)
vision/         what `stacko calibrate vision` learnt (colors, glyphs, hands)
```
Every file is validated on load: a damaged, partial or implausible file is rejected with a message
that says which file, what is wrong and which command writes a good one. Freshness comes from the
file's own `created` time (or its modification time for files other commands write).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

SCHEMA_VERSION = 1
DEFAULT_LIMITS = Path(__file__).with_name("defaults") / "calibration.json"
LOADCELL_CHIPS = ("nau7802", "hx711")
ADC_MIN, ADC_MAX = -(1 << 23), (1 << 23) - 1  # both chips give 24-bit signed readings
PARTS = ("tray", "loadcell", "imu", "vision")
FIX = {
    "tray": "stacko calibrate markers",
    "loadcell": "stacko calibrate loadcell",
    "imu": "stacko calibrate imu",
    "vision": "stacko calibrate vision",
}


class CalibrationError(ValueError):
    """A calibration file that cannot be used; the message says what is wrong and how to fix it."""


def load_limits(path: Path | None = None) -> dict[str, Any]:
    """The limits calibration is judged by (calibration/defaults/calibration.json unless given)."""
    path = Path(path) if path else DEFAULT_LIMITS
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"cannot read the calibration limits {path}: {exc}") from exc
    for key in ("max_age_days", "loadcell", "imu", "camera", "doctor", "disk"):
        if not isinstance(data.get(key), dict):
            raise CalibrationError(f"calibration limits {path}: section '{key}' is missing")
    return data


def default_dir() -> Path:
    """Where this table's calibration lives: $STACKO_CALIBRATION_DIR, else the user's data dir."""
    env = os.environ.get("STACKO_CALIBRATION_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("stacko-referee")) / "calibration"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------- field checks


class _Fields:
    """Reads fields of one JSON object, turning every problem into a CalibrationError naming the file."""

    def __init__(self, data: Any, what: str, fix: str):
        self.what, self.fix = what, fix
        if not isinstance(data, Mapping):
            self.fail("it does not hold a JSON object")
        self.data = data

    def fail(self, problem: str) -> None:
        raise CalibrationError(f"{self.what} cannot be used: {problem}. Run `{self.fix}` to write a good one.")

    def get(self, name: str) -> Any:
        if name not in self.data:
            self.fail(f"'{name}' is missing (the file is incomplete)")
        return self.data[name]

    def number(self, name: str, lo: float | None = None, hi: float | None = None, nonzero: bool = False) -> float:
        v = self.get(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(f"'{name}' must be a number, not {v!r}")
        if nonzero and v == 0:
            self.fail(f"'{name}' must not be zero")
        if lo is not None and v < lo:
            self.fail(f"'{name}' is {v}, below the smallest sensible value {lo}")
        if hi is not None and v > hi:
            self.fail(f"'{name}' is {v}, above the largest sensible value {hi}")
        return float(v)

    def integer(self, name: str, lo: int, hi: int) -> int:
        v = self.get(name)
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(f"'{name}' must be a whole number, not {v!r}")
        if not lo <= v <= hi:
            self.fail(f"'{name}' is {v}, outside {lo}..{hi}")
        return v

    def vector(self, name: str, n: int) -> tuple[float, ...]:
        v = self.get(name)
        if not isinstance(v, list) or len(v) != n:
            self.fail(f"'{name}' must be a list of {n} numbers")
        for x in v:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                self.fail(f"'{name}' must hold only numbers, not {x!r}")
        return tuple(float(x) for x in v)

    def choice(self, name: str, options: tuple[str, ...]) -> str:
        v = self.get(name)
        if v not in options:
            self.fail(f"'{name}' is {v!r}, expected one of {', '.join(options)}")
        return v

    def header(self, kind: str) -> datetime:
        version = self.get("version")
        if version != SCHEMA_VERSION:
            self.fail(f"it is version {version!r}, this referee reads version {SCHEMA_VERSION}")
        if self.get("kind") != kind:
            self.fail(f"it is a '{self.data.get('kind')}' file, not a '{kind}' file")
        created = self.get("created")
        try:
            t = datetime.fromisoformat(str(created))
        except ValueError:
            self.fail(f"'created' is not a date and time: {created!r}")
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        return t


def _read_json(path: Path, what: str, fix: str) -> Any:
    if not path.exists():
        raise CalibrationError(f"{what} is missing. Run `{fix}` to make it.")
    try:
        return json.loads(path.read_text())
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{what} is not a text file. Run `{fix}` to write a good one.") from exc
    except ValueError as exc:
        raise CalibrationError(f"{what} is damaged (not valid JSON: {exc}). Run `{fix}` to write a good one.") from exc
    except OSError as exc:
        raise CalibrationError(f"{what} cannot be read: {exc.strerror}. Check its permissions.") from exc


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically (temp file + rename), so a crash never leaves half a calibration file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------- load cell


@dataclass(frozen=True)
class LoadCellCalibration:
    """Raw ADC counts -> grams: grams = (counts - offset_counts) / counts_per_gram."""

    chip: str
    offset_counts: int
    counts_per_gram: float
    noise_grams: float          # standard deviation of a still reading, in grams
    known_grams: float          # the known weight used to scale
    zero_return_grams: float    # the reading once the known weight was taken off again (should be ~0)
    block_measured_grams: float | None  # one block put on the tray, as read (None: step skipped)
    created: datetime

    def grams(self, counts: float) -> float:
        return (counts - self.offset_counts) / self.counts_per_gram

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["created"] = self.created.isoformat()
        return {"version": SCHEMA_VERSION, "kind": "loadcell", **d}

    @classmethod
    def from_json(cls, data: Any, limits: Mapping[str, Any], what: str = "The load-cell calibration") -> "LoadCellCalibration":
        lim = limits["loadcell"]
        f = _Fields(data, what, FIX["loadcell"])
        created = f.header("loadcell")
        cpg = f.number("counts_per_gram", nonzero=True)
        if not lim["min_abs_counts_per_gram"] <= abs(cpg) <= lim["max_abs_counts_per_gram"]:
            f.fail(f"'counts_per_gram' is {cpg}: a load cell under a tray gives between "
                   f"{lim['min_abs_counts_per_gram']} and {lim['max_abs_counts_per_gram']} counts per gram")
        noise = f.number("noise_grams", lo=0.0)
        block = data.get("block_measured_grams")
        if block is not None:
            block = f.number("block_measured_grams")
        cal = cls(
            chip=f.choice("chip", LOADCELL_CHIPS),
            offset_counts=f.integer("offset_counts", ADC_MIN, ADC_MAX),
            counts_per_gram=cpg,
            noise_grams=noise,
            known_grams=f.number("known_grams", lo=1.0, hi=20000.0),
            zero_return_grams=f.number("zero_return_grams"),
            block_measured_grams=block,
            created=created,
        )
        for problem in loadcell_problems(cal, limits):
            f.fail(problem)
        return cal


def loadcell_problems(cal: LoadCellCalibration, limits: Mapping[str, Any]) -> list[str]:
    """Why this load-cell calibration would not let the referee see one block clearly (empty: good)."""
    lim = limits["loadcell"]
    out = []
    block = lim["block_grams"]
    if cal.noise_grams > 0 and block / cal.noise_grams < lim["min_block_to_noise"]:
        out.append(f"the reading wobbles by {cal.noise_grams:.2f} g, so one {block:.0f} g block would not show clearly "
                   f"(needs at most {block / lim['min_block_to_noise']:.2f} g): check the load cell's wires and that nothing touches the tray")
    if abs(cal.zero_return_grams) > max(lim["max_zero_return_grams"], 3 * cal.noise_grams):
        out.append(f"after the {cal.known_grams:g} g weight came off, the empty tray read {cal.zero_return_grams:+.1f} g "
                   "instead of 0: the tray rubs against something or the load cell is loose")
    if cal.block_measured_grams is not None:
        tol = max(0.3 * block, 3 * cal.noise_grams)
        if abs(cal.block_measured_grams - block) > tol:
            out.append(f"one block read as {cal.block_measured_grams:.1f} g, expected about {block:.0f} g")
    return out


# ---------------------------------------------------------------- IMU


@dataclass(frozen=True)
class ImuCalibration:
    """The tray's accelerometer/gyro at rest, and detector thresholds set from that noise."""

    sample_hz: float
    accel_mean_ms2: tuple[float, float, float]  # gravity as the tray sees it (tilt)
    accel_noise_ms2: float    # RMS of |accel| - mean over the quiet window
    gyro_bias_dps: tuple[float, float, float]
    gyro_noise_dps: float     # RMS of the gyro after removing its bias
    touch_threshold_ms2: float
    collapse_threshold_ms2: float
    created: datetime

    @property
    def gravity_ms2(self) -> float:
        return math.sqrt(sum(a * a for a in self.accel_mean_ms2))

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["created"] = self.created.isoformat()
        d["accel_mean_ms2"] = list(self.accel_mean_ms2)
        d["gyro_bias_dps"] = list(self.gyro_bias_dps)
        return {"version": SCHEMA_VERSION, "kind": "imu", **d}

    @classmethod
    def from_json(cls, data: Any, limits: Mapping[str, Any], what: str = "The IMU calibration") -> "ImuCalibration":
        f = _Fields(data, what, FIX["imu"])
        created = f.header("imu")
        cal = cls(
            sample_hz=f.number("sample_hz", lo=10.0, hi=8000.0),
            accel_mean_ms2=f.vector("accel_mean_ms2", 3),  # type: ignore[arg-type]
            accel_noise_ms2=f.number("accel_noise_ms2", lo=0.0),
            gyro_bias_dps=f.vector("gyro_bias_dps", 3),  # type: ignore[arg-type]
            gyro_noise_dps=f.number("gyro_noise_dps", lo=0.0),
            touch_threshold_ms2=f.number("touch_threshold_ms2", lo=0.0, nonzero=True),
            collapse_threshold_ms2=f.number("collapse_threshold_ms2", lo=0.0, nonzero=True),
            created=created,
        )
        if cal.collapse_threshold_ms2 <= cal.touch_threshold_ms2:
            f.fail("the collapse threshold must be above the touch threshold")
        for problem in imu_problems(cal, limits):
            f.fail(problem)
        return cal


def imu_problems(cal: ImuCalibration, limits: Mapping[str, Any]) -> list[str]:
    """Why this IMU calibration looks wrong (empty: good)."""
    lim = limits["imu"]
    out = []
    if abs(cal.gravity_ms2 - lim["gravity_ms2"]) > lim["max_gravity_error_ms2"]:
        out.append(f"the accelerometer felt {cal.gravity_ms2:.2f} m/s^2 of gravity instead of about {lim['gravity_ms2']:.2f}: "
                   "it is not measuring properly (wrong range setting or a faulty board)")
    if cal.accel_noise_ms2 > lim["max_quiet_accel_noise_ms2"]:
        out.append(f"the tray shook ({cal.accel_noise_ms2:.3f} m/s^2) while it should have been still: "
                   "keep hands off the table and calibrate again")
    if cal.gyro_noise_dps > lim["max_quiet_gyro_noise_dps"]:
        out.append(f"the gyro is noisy ({cal.gyro_noise_dps:.2f} deg/s) while the tray is still")
    if cal.accel_noise_ms2 == 0.0 and cal.gyro_noise_dps == 0.0:
        out.append("the IMU gave exactly the same reading every time: it is stuck, not measuring")
    return out


def imu_thresholds(accel_noise_ms2: float, limits: Mapping[str, Any], floors_ms2: tuple[float, float]) -> tuple[float, float]:
    """(touch, collapse) thresholds from the quiet noise: a multiple of the noise, never below the
    detectors' default thresholds `floors_ms2` (a quiet table keeps the defaults; a shaky one raises them)."""
    lim = limits["imu"]
    touch = max(floors_ms2[0], lim["touch_noise_multiple"] * accel_noise_ms2)
    collapse = max(floors_ms2[1], lim["collapse_noise_multiple"] * accel_noise_ms2, 2 * touch)
    return touch, collapse


# ---------------------------------------------------------------- tray and vision


def validate_tray(data: Any, what: str = "The tray marker file") -> dict[str, Any]:
    """Check a CONTRACT section 2 tray.json as the vision pipeline reads it, plus what a table needs:
    all four markers (ids 0-3) of the printed sheet, with corners in millimetres."""
    from vision.kit import KitError, tray_from_json

    try:
        tray = tray_from_json(data, "tray.json")
    except KitError as exc:
        raise CalibrationError(f"{what} cannot be used: {exc}. Run `{FIX['tray']}` to write a good one.") from None
    f = _Fields(data, what, FIX["tray"])
    missing = [str(m) for m in range(4) if m not in tray.markers]
    if missing:
        f.fail(f"marker(s) {', '.join(missing)} are missing: the sheet has four markers, ids 0 to 3")
    for mid, corners in tray.markers.items():
        side = math.dist(corners[0], corners[1])
        if side < 5.0:
            f.fail(f"marker {mid} is only {side:.1f} mm wide: the corners must be in millimetres")
    return dict(data)


def vision_dir_time(path: Path) -> datetime:
    """Check the folder `stacko calibrate vision` writes: present, not empty, its JSON files readable.

    Returns the time of its newest file (its freshness)."""
    fix = FIX["vision"]
    if not path.is_dir():
        raise CalibrationError(f"The vision calibration is missing ({path}). Run `{fix} KIT --out {path}` "
                               "(or the guided `stacko calibrate`) to make it.")
    files = [p for p in path.rglob("*") if p.is_file()]
    jsons = [p for p in files if p.suffix == ".json"]
    if not jsons:
        raise CalibrationError(f"The vision calibration ({path}) is incomplete: it has no settings file. Run `{fix}` again.")
    for p in jsons:
        _read_json(p, f"The vision calibration file {p}", fix)
    for p in files:
        if p.stat().st_size == 0:
            raise CalibrationError(f"The vision calibration file {p} is empty (an interrupted calibration?). Run `{fix}` again.")
    newest = max(p.stat().st_mtime for p in files)
    return datetime.fromtimestamp(newest, timezone.utc)


# ---------------------------------------------------------------- the folder


@dataclass(frozen=True)
class PartStatus:
    """How one part's calibration stands: ok, or the problem and the command that fixes it."""

    part: str
    ok: bool
    problem: str = ""
    age_days: float | None = None

    @property
    def fix(self) -> str:
        return FIX[self.part]


class CalibrationDir:
    """One table's calibration folder."""

    def __init__(self, path: Path | str | None = None, limits: Mapping[str, Any] | None = None):
        self.path = Path(path) if path else default_dir()
        self.limits = dict(limits) if limits else load_limits()

    @property
    def loadcell_path(self) -> Path:
        return self.path / "loadcell.json"

    @property
    def imu_path(self) -> Path:
        return self.path / "imu.json"

    @property
    def tray_path(self) -> Path:
        return self.path / "tray.json"

    @property
    def vision_path(self) -> Path:
        return self.path / "vision"

    @property
    def table_detectors_path(self) -> Path:
        return self.path / "detectors.json"

    def detectors_path(self) -> Path:
        """The detector settings the match loop should load: this table's (written by `stacko calibrate imu`)
        if there is one, else the defaults (calibration/defaults/detectors.json)."""
        if self.table_detectors_path.exists():
            return self.table_detectors_path
        return Path(__file__).with_name("defaults") / "detectors.json"

    def loadcell(self) -> LoadCellCalibration:
        what = f"The load-cell calibration ({self.loadcell_path})"
        return LoadCellCalibration.from_json(_read_json(self.loadcell_path, what, FIX["loadcell"]), self.limits, what)

    def imu(self) -> ImuCalibration:
        what = f"The IMU calibration ({self.imu_path})"
        return ImuCalibration.from_json(_read_json(self.imu_path, what, FIX["imu"]), self.limits, what)

    def tray(self) -> dict[str, Any]:
        what = f"The tray marker file ({self.tray_path})"
        return validate_tray(_read_json(self.tray_path, what, FIX["tray"]), what)

    def save_loadcell(self, cal: LoadCellCalibration) -> Path:
        write_json(self.loadcell_path, cal.to_json())
        return self.loadcell_path

    def save_imu(self, cal: ImuCalibration) -> Path:
        write_json(self.imu_path, cal.to_json())
        return self.imu_path

    def created(self, part: str) -> datetime:
        """Validate one part and return when it was made (raises CalibrationError)."""
        if part == "loadcell":
            return self.loadcell().created
        if part == "imu":
            return self.imu().created
        if part == "tray":
            self.tray()
            return datetime.fromtimestamp(self.tray_path.stat().st_mtime, timezone.utc)
        if part == "vision":
            return vision_dir_time(self.vision_path)
        raise ValueError(f"unknown calibration part {part!r}")

    def status(self, part: str, now: datetime | None = None) -> PartStatus:
        now = now or utc_now()
        try:
            created = self.created(part)
        except CalibrationError as exc:
            return PartStatus(part, False, str(exc))
        age = (now - created).total_seconds() / 86400.0
        max_age = self.limits["max_age_days"].get(part)
        if age < -1.0:
            return PartStatus(part, False, f"The {part} calibration is dated in the future ({created:%Y-%m-%d}): "
                                           f"the Pi's clock is wrong or the file was copied. Run `{FIX[part]}` again.", age)
        if max_age is not None and age > max_age:
            return PartStatus(part, False, f"The {part} calibration is {age:.0f} days old (older than {max_age} days): "
                                           f"run `{FIX[part]}` again.", age)
        return PartStatus(part, True, "", age)

    def statuses(self, now: datetime | None = None) -> list[PartStatus]:
        return [self.status(p, now) for p in PARTS]
