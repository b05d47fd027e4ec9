"""`stacko doctor`: check every part a match needs and say, in plain words, what is wrong and how to fix it.

Each check is a function of (rig or files, limits) returning `Check`s; a failing part never stops the
others from being checked. Exit status 1 when anything is wrong.
"""

from __future__ import annotations

import json
import shutil
import wave
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from calibration.files import ADC_MAX, ADC_MIN, CalibrationDir, CalibrationError
from hardware.errors import DeviceError

I2C_FIX = ("check its four wires: VCC to 3.3 V (header pin 1), GND (pin 6), SDA to GPIO2 (pin 3), SCL to GPIO3 (pin 5); "
           "`i2cdetect -y 1` must show {addr}. If /dev/i2c-1 is missing, run `sudo raspi-config nonint do_i2c 0` and reboot")


@dataclass(frozen=True)
class Check:
    part: str
    ok: bool
    found: str      # what the check saw
    fix: str = ""   # what to do about it (only when not ok)


def _device_failure(part: str, exc: DeviceError, fix: str | None = None) -> Check:
    """A driver's error in plain words: which part, where it is wired, what to do."""
    silent = any(w in exc.problem for w in ("NACK", "timed out", "cannot open"))
    found = f"the {exc.device} does not answer ({exc.where}: {exc.problem})" if silent else f"{exc.device} ({exc.where}): {exc.problem}"
    return Check(part, False, found, fix or f"check {exc.check}")


# ---------------------------------------------------------------- camera


def check_camera(rig, limits: Mapping[str, Any], frames: int = 3) -> list[Check]:
    """Frames arrive, show something (not a covered lens) and the four tray markers are in view."""
    import cv2

    from vision.tray import detect_markers, make_detector

    try:
        cam = rig.camera()
        images = [cam.read() for _ in range(frames)]
    except DeviceError as exc:
        return [_device_failure("camera", exc)]
    except (ImportError, RuntimeError, OSError) as exc:
        return [Check("camera", False, f"the camera could not be opened: {exc}",
                      "check the ribbon cable and that `rpicam-hello --list-cameras` lists the camera")]
    bad = [i for i in images if not isinstance(i, np.ndarray) or i.ndim != 3 or i.size == 0]
    if bad:
        return [Check("camera", False, "the camera answered but delivered no picture", "reboot the Pi; if it persists, reseat the camera cable")]
    img = images[-1]
    h, w = img.shape[:2]
    if float(img.std()) < limits["camera"]["min_contrast"]:
        return [Check("camera", False, f"{w}x{h} frames, but the picture is flat (lens covered, or no light)",
                      "take the cap off the lens and turn on the light over the table")]
    vision_cfg = json.loads((Path(__import__("vision").__file__).parent / "default_config.json").read_text())
    found = detect_markers(make_detector(vision_cfg), cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    seen = sorted(i for i in found if i in (0, 1, 2, 3))
    missing = [i for i in (0, 1, 2, 3) if i not in found]
    if missing:
        return [Check("camera", False, f"{w}x{h} frames; markers seen: {seen or 'none'}, missing: {missing}",
                      "lay the marker sheet flat on the tray, uncover marker(s) " + ", ".join(map(str, missing)) +
                      ", and aim the camera so the whole sheet is in the picture (check with the status page's camera view)")]
    return [Check("camera", True, f"{w}x{h} frames; all four markers (0-3) seen")]


# ---------------------------------------------------------------- IMU and load cell


def check_imu(rig, limits: Mapping[str, Any]) -> list[Check]:
    """The MPU-6050 answers, feels about 1 g, and is quiet while nobody touches the table."""
    from calibration.steps import MPU6050Samples
    from hardware.chips.mpu6050_regs import DEFAULT_ADDRESS

    try:
        imu = rig.imu()
        imu.start()
        accel, gyro = MPU6050Samples(imu, rig.clock).samples(limits["doctor"]["imu_seconds"])
        imu.stop()
    except DeviceError as exc:
        return [_device_failure("imu", exc, I2C_FIX.format(addr=f"{DEFAULT_ADDRESS:02x}"))]
    lim = limits["imu"]
    mean = accel.mean(axis=0)
    g = float(np.linalg.norm(mean))
    noise = float(np.sqrt(np.mean(np.sum((accel - mean) ** 2, axis=1))))
    found = f"{len(accel)} samples; gravity {g:.2f} m/s^2, quiet noise {noise:.3f} m/s^2"
    if abs(g - lim["gravity_ms2"]) > lim["max_gravity_error_ms2"]:
        return [Check("imu", False, found, "the accelerometer does not feel gravity properly: replace the MPU-6050 board")]
    if noise == 0.0 and float(np.ptp(gyro)) == 0.0:
        return [Check("imu", False, found + " (every reading identical)", "the IMU is stuck: power the Pi off and on")]
    if noise > lim["max_quiet_accel_noise_ms2"]:
        return [Check("imu", False, found, "the tray is shaking: keep hands off the table during the check, "
                                          "and make sure the IMU board is screwed tight to the tray")]
    return [Check("imu", True, found)]


def check_loadcell(rig, limits: Mapping[str, Any], cal: CalibrationDir) -> list[Check]:
    """The load-cell ADC answers, is not pinned at the end of its range, and (with a calibration) reads sane grams."""
    from hardware.chips.nau7802_regs import ADDRESS

    chip = "nau7802"
    try:
        cell = rig.loadcell()
        chip = cell.chip
        cell.start()
        counts = cell.reader.counts(int(limits["doctor"]["loadcell_samples"]))
        cell.stop()
    except DeviceError as exc:
        if chip == "hx711":
            return [_device_failure("loadcell", exc, "check the HX711's wires: VCC to 3.3 V, GND, DT and SCK to the GPIO pins "
                                                     "in the device settings (GPIO23 and GPIO24 by default), not swapped")]
        return [_device_failure("loadcell", exc, I2C_FIX.format(addr=f"{ADDRESS:02x}"))]
    if counts.max() >= ADC_MAX or counts.min() <= ADC_MIN:
        return [Check("loadcell", False, "the load cell reads the very end of its range",
                      "a load-cell wire is loose or swapped (red E+, black E-, white A-, green A+), or something heavy presses on the tray")]
    try:
        lc = cal.loadcell()
    except CalibrationError:
        return [Check("loadcell", True, f"answers; raw reading {np.median(counts):.0f} counts, noise {np.std(counts):.0f} counts "
                                        "(not calibrated yet: see the calibration lines)")]
    grams = (counts - lc.offset_counts) / lc.counts_per_gram
    noise_g = float(np.std(grams))
    block = limits["loadcell"]["block_grams"]
    found = f"reads {np.median(grams):.0f} g on the tray, noise {noise_g:.2f} g"
    if block / max(noise_g, 1e-9) < limits["loadcell"]["min_block_to_noise"]:
        return [Check("loadcell", False, found + f": one {block:g} g block would not show clearly",
                      "check nothing touches the tray or its cable, the load cell's screws are tight, and the wires are short and twisted")]
    lo, hi = limits["doctor"]["tray_grams_range"]
    if not lo <= float(np.median(grams)) <= hi:
        return [Check("loadcell", False, found, "the reading makes no sense for a tray: run `stacko calibrate loadcell` again")]
    return [Check("loadcell", True, found)]


# ---------------------------------------------------------------- buttons, speaker


def check_buttons(rig, limits: Mapping[str, Any], press: bool) -> list[Check]:
    """No button stuck down; with `press`, each button must be pressed when asked."""
    import warnings

    try:
        with warnings.catch_warnings():  # gpiozero's pin-library fallbacks; the failure itself is reported below
            warnings.simplefilter("ignore")
            panel = rig.buttons()
    except DeviceError as exc:
        return [_device_failure("buttons", exc)]
    except (ImportError, OSError, RuntimeError) as exc:
        return [Check("buttons", False, f"the GPIO pins cannot be used: {exc}",
                      "run as a user in the gpio group (deploy/install.sh adds the service user) and check no other program holds the pins")]
    try:
        names = list(panel.names())
        if not names:
            return [Check("buttons", False, "no buttons are set up", "wire the buttons as in docs/pi.md")]
        held = panel.held()
        if held:
            return [Check("buttons", False, f"button(s) {', '.join(held)} read as pressed all the time",
                          "a button is stuck or its wire touches GND: free it, or check its wiring")]
        if not press:
            return [Check("buttons", True, f"{len(names)} buttons, none stuck (run `stacko doctor --press-buttons` to try each one)")]
        dead = []
        for name in names:
            print(f"  press the {name} button ...", flush=True)
            if not panel.wait_press(name, limits["doctor"]["button_timeout_s"]):
                dead.append(name)
        if dead:
            return [Check("buttons", False, f"no press seen from: {', '.join(dead)}",
                          "check those buttons' wires: one leg to its GPIO pin, the other to GND (docs/pi.md)")]
        return [Check("buttons", True, f"all {len(names)} buttons respond")]
    finally:
        close = getattr(panel, "close", None)
        if close:
            close()


def wav_seconds_and_level(path: Path) -> tuple[float, float]:
    with wave.open(str(path)) as w:
        n, rate, width = w.getnframes(), w.getframerate(), w.getsampwidth()
        data = w.readframes(n)
    samples = np.frombuffer(data, dtype=np.int16 if width == 2 else np.uint8).astype(float)
    rms = float(np.sqrt(np.mean(samples ** 2))) if samples.size else 0.0
    return n / float(rate), rms


def check_speaker(rig, limits: Mapping[str, Any]) -> list[Check]:
    """A sound output exists and the referee's voice plays on it."""
    try:
        speaker = rig.speaker()
        outputs = speaker.outputs()
        if not outputs:
            return [Check("speaker", False, "no sound output found",
                          "plug in the USB speaker (or set up the I2S amplifier as in docs/pi.md) and check `aplay -l` lists it")]
        text = "Stacko referee: the speaker works."
        wav = speaker.say(text)
    except DeviceError as exc:
        return [_device_failure("speaker", exc)]
    if wav is not None:
        seconds, rms = wav_seconds_and_level(wav)
        lo, hi = limits["doctor"]["speech_seconds_range"]
        if not lo <= seconds <= hi or rms < limits["doctor"]["speech_min_rms"]:
            return [Check("speaker", False, f"the voice came out as {seconds:.1f} s of sound at level {rms:.0f}",
                          "reinstall espeak-ng (sudo apt install --reinstall espeak-ng)")]
        return [Check("speaker", True, f"{outputs[0]}; spoke {seconds:.1f} s")]
    return [Check("speaker", True, f"{outputs[0]}; played a test sentence (you should have heard it)")]


# ---------------------------------------------------------------- files and disk


def check_calibration(cal: CalibrationDir) -> list[Check]:
    out = []
    for status in cal.statuses():
        age = f", {status.age_days:.0f} days old" if status.age_days is not None else ""
        if status.ok:
            out.append(Check(f"calibration:{status.part}", True, f"valid{age}"))
        else:
            fix = "" if status.fix in status.problem else f"run `{status.fix}`"
            out.append(Check(f"calibration:{status.part}", False, status.problem, fix or "or use the guided `stacko calibrate`"))
    return out


def check_disk(path: Path, limits: Mapping[str, Any]) -> list[Check]:
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_mb = shutil.disk_usage(probe).free / 1e6
    need = limits["disk"]["min_free_mb"]
    found = f"{free_mb:.0f} MB free for match logs at {path}"
    if free_mb < need:
        return [Check("disk", False, found + f" (needs {need} MB)",
                      "free space on the SD card: `sudo apt clean`, delete old recordings, or use a bigger card")]
    return [Check("disk", True, found)]


# ---------------------------------------------------------------- all together


def run_doctor(rig, cal: CalibrationDir, log_dir: Path, limits: Mapping[str, Any], press_buttons: bool = False,
               speak: bool = True, report: Callable[[Check], None] | None = None) -> list[Check]:
    """Every check, in the order a person would fix things; `report` sees each result as it comes."""
    checks: list[Callable[[], list[Check]]] = [
        lambda: check_camera(rig, limits),
        lambda: check_imu(rig, limits),
        lambda: check_loadcell(rig, limits, cal),
        lambda: check_buttons(rig, limits, press_buttons),
    ]
    if speak:
        checks.append(lambda: check_speaker(rig, limits))
    checks += [lambda: check_calibration(cal), lambda: check_disk(log_dir, limits)]
    results: list[Check] = []
    for check in checks:
        for c in check():
            results.append(c)
            if report:
                report(c)
    return results


def format_check(c: Check) -> str:
    line = f"  {'ok  ' if c.ok else 'FAIL'}  {c.part:<20} {c.found}"
    if not c.ok and c.fix:
        line += f"\n        {'':<20} fix: {c.fix}"
    return line


def to_json(c: Check) -> str:
    return json.dumps(asdict(c))
