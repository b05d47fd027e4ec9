"""Guided calibration of one table, step by step in the terminal: markers, load cell, IMU, vision, check.

Every step says what to do, measures, says how good the result is and writes its file only when it is
good. On the twin (`--backend sim`) the twin acts out each instruction, so the whole route runs
unattended; on the Pi a person does it and presses Enter.

The vision step builds the match tower block by block in an order the referee names (each block once),
photographing after each block (and a few times with a hand or two over the tower), so the photos are
labelled without typing; it then runs `stacko calibrate vision` on them and checks the result by reading
the finished top level in a fresh photo.
"""

from __future__ import annotations

import io
import json
import random
import shutil
from contextlib import redirect_stdout
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import cv2

from calibration.detector_settings import default_imu_floors_ms2, write_table_detector_settings
from calibration.files import CalibrationDir, CalibrationError, write_json
from calibration.steps import Action, MPU6050Samples, StepResult, calibrate_imu, calibrate_loadcell
from hardware.errors import DeviceError

STEPS = ("markers", "loadcell", "imu", "vision", "check")


class TerminalGuide:
    """Prints each instruction; waits for Enter (a person) or lets the twin do it (`rig.act`)."""

    def __init__(self, rig, interactive: bool, out: Callable[[str], None] = print, ask: Callable[[str], str] = input):
        self.rig, self.interactive, self.out, self.ask = rig, interactive, out, ask

    def say(self, text: str) -> None:
        self.out(text)

    def do(self, action: Action) -> None:
        self.out(f"  -> {action.text}")
        self._carry_out(action, "     (the twin did it)", "     press Enter when done ")

    def _carry_out(self, action: Action, note: str, prompt: str) -> None:
        """The twin acts it out, or a person does it and answers (Enter); `--yes` on the Pi does not wait."""
        if self.rig.backend == "sim":
            self.rig.act(action)
            if note:
                self.out(note)
        elif self.interactive:
            self.ask(prompt)

    def result(self, result: StepResult) -> None:
        self.say(f"  {result.part}: {result.grade.upper()}")
        for line in result.lines:
            self.say(f"     {line}")


class JsonGuide(TerminalGuide):
    """The same route as JSON lines, for a page or another program to show: {"say"}, {"do", "text"} (then
    it waits for one line on stdin, unless the twin acts) and {"step", "ok", "grade", "lines"}."""

    def say(self, text: str) -> None:
        if text.strip():
            self.out(json.dumps({"say": text.strip()}))

    def do(self, action: Action) -> None:
        self.out(json.dumps({"do": action.key, "text": action.text, **({"grams": action.grams} if action.grams else {})}))
        self._carry_out(action, "", "")

    def result(self, result: StepResult) -> None:
        self.out(json.dumps({"step": result.part, "ok": result.ok, "grade": result.grade, "lines": result.lines}))


# ---------------------------------------------------------------- markers


def step_markers(rig, cal: CalibrationDir, guide: TerminalGuide, limits: Mapping[str, Any],
                 sheet_mm: float | None = None) -> StepResult:
    """The tray sheet's geometry in tray.json, and the camera sees all four markers."""
    from deploy.doctor import check_camera

    if rig.backend == "sim":
        from hardware.sim.textures import TrayLayout

        write_json(cal.tray_path, TrayLayout().tray_json())  # the twin's tray has the sheet printed on it
    else:
        run_cli(["calibrate", "markers", "--out", str(cal.path), *(["--size-mm", str(sheet_mm)] if sheet_mm else [])])
        guide.say(f"  The marker sheet is in {cal.path} (PNG/PDF). Print it at 100% scale (no 'fit to page').")
        guide.do(Action("place_sheet", "Lay the printed sheet flat on the tray, markers up, and tape its corners."))
    try:
        cal.tray()
    except CalibrationError as exc:
        return StepResult("markers", False, "failed", [str(exc)])
    check = check_camera(rig, limits)[0]
    if not check.ok:
        return StepResult("markers", False, "failed", [check.found, f"fix: {check.fix}"])
    return StepResult("markers", True, "good", [check.found, f"tray geometry in {cal.tray_path}"])


# ---------------------------------------------------------------- sensors


def step_loadcell(rig, cal: CalibrationDir, guide: TerminalGuide, limits: Mapping[str, Any], known_grams: float) -> StepResult:
    cell = rig.loadcell()
    cell.start()
    try:
        result = calibrate_loadcell(cell.reader, guide, limits, known_grams, cell.chip)
    finally:
        cell.stop()
    if result.ok:
        cal.save_loadcell(result.value)
        result.lines.append(f"saved {cal.loadcell_path}")
    return result


def step_imu(rig, cal: CalibrationDir, guide: TerminalGuide, limits: Mapping[str, Any]) -> StepResult:
    imu = rig.imu()
    imu.start()
    try:
        result = calibrate_imu(MPU6050Samples(imu, rig.clock), guide, limits, imu.sample_rate, default_imu_floors_ms2())
    finally:
        imu.stop()
    if result.ok:
        cal.save_imu(result.value)
        try:
            loadcell = cal.loadcell()
        except CalibrationError:
            loadcell = None
        path = write_table_detector_settings(cal.table_detectors_path, result.value, loadcell)
        result.lines.append(f"saved {cal.imu_path} and the table's detector settings {path}")
    return result


# ---------------------------------------------------------------- vision


def run_cli(argv: list[str]) -> str:
    """Run another part's `stacko` subcommand in this process (their interface is the CLI); its stdout."""
    from referee.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(argv)
    if code:
        raise CalibrationError(f"`stacko {' '.join(argv)}` failed (exit {code}): {buf.getvalue().strip()[-400:]}")
    return buf.getvalue()


Shot = tuple[int, tuple[int, ...], int]  # (level being built, its slots filled so far, hands over the tower)


def photo_plan(tower: list[list[str | None]]) -> list[Shot]:
    """The photos, in building order: every level once when complete, some levels also part-built (so the
    reader learns empty slots), and a few with one or two hands over the tower (this table's skin and light)."""
    plan: list[Shot] = []
    for k in range(1, len(tower) + 1):
        full = tuple(s for s in range(3) if tower[k - 1][s] is not None)
        # one photo per block placed: the order of the level's blocks turns with the level
        order = [full[(i + k) % len(full)] for i in range(len(full))] if full else []
        for n in range(1, len(order)):
            plan.append((k, tuple(sorted(order[:n])), 0))
        plan.append((k, full, 0))
        if k % 3 == 2:
            plan.append((k, full, 1))
        if k % 5 == 4:
            plan.append((k, full, 2))
    return plan


def top_slots(level: list[str | None], filled: tuple[int, ...]) -> list[str | None]:
    return [name if s in filled else None for s, name in enumerate(level)]


def slot_hint(tray: Mapping[str, Any]) -> str:
    """Which side slot 0 is on, in words a builder can follow: named by the printed markers nearest it."""
    centers = {int(k): (sum(c[0] for c in v) / 4, sum(c[1] for c in v) / 4) for k, v in tray["markers"].items()}
    low_y = sorted(sorted(centers, key=lambda m: centers[m][1])[:2])
    low_x = sorted(sorted(centers, key=lambda m: centers[m][0])[:2])
    return (f"Slot 0 is the block nearest markers {low_y[0]} and {low_y[1]} for a level along the tray, nearest markers "
            f"{low_x[0]} and {low_x[1]} for a level across it; slot 1 is the middle. 'Along' means parallel to the "
            f"edge with markers {low_y[0]} and {low_y[1]}.")


def orientation(level: int) -> str:
    return "x" if level % 2 else "y"


def step_vision(rig, cal: CalibrationDir, guide: TerminalGuide, seed: int,
                levels: int | None = None) -> tuple[StepResult, list[list[str | None]]]:
    """Build the tower block by block in a named order, a photo after each block; learn from the photos."""
    from referee.tower import random_tower

    tower = random_tower(random.Random(seed))[:levels]  # the whole tower (each block once) unless told fewer levels
    kit = cal.path / f"kit-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    (kit / "images").mkdir(parents=True)
    shutil.copy(cal.tray_path, kit / "tray.json")
    camera = rig.camera()
    labels: dict[str, dict] = {}
    guide.say(f"  Build the tower in the middle of the tray, block by block as named (level 1 at the bottom). "
              f"{slot_hint(cal.tray())} {len(photo_plan(tower))} photos.")
    placed: dict[int, set[int]] = {}  # level -> slots already built
    for i, (k, filled, hands) in enumerate(photo_plan(tower), start=1):
        slots = top_slots(tower[k - 1], filled)
        if hands:
            text = f"Hold {'one hand' if hands == 1 else 'both hands'} over the tower, not touching it."
        else:
            added = [s for s in filled if s not in placed.setdefault(k, set())]
            placed[k].update(added)
            where = "along" if orientation(k) == "x" else "across"
            text = f"Level {k} ({where} the tray): put " + " and ".join(f"{tower[k - 1][s]} in slot {s}" for s in added) + ". Hands away."
        built = [list(lv) for lv in tower[: k - 1]] + [slots]
        guide.do(Action("build_level", text, data={"levels": built, "hands": hands, "shot": i}))
        image = camera.read()
        name = f"{i:04d}.png"
        if not cv2.imwrite(str(kit / "images" / name), image):
            raise CalibrationError(f"could not save the photo {kit / 'images' / name}: is the SD card full?")
        labels[name] = {"orientation": orientation(k), "slots": slots, "hands": hands}
    (kit / "labels.json").write_text(json.dumps(labels, indent=1) + "\n", encoding="utf-8")
    guide.say(f"  Learning this table's colors, glyphs and hands from {len(labels)} photos ...")
    if cal.vision_path.exists():
        shutil.rmtree(cal.vision_path)
    out = run_cli(["calibrate", "vision", str(kit), "--out", str(cal.vision_path)])
    lines = [f"photos kept in {kit}", f"vision calibration in {cal.vision_path}"]
    lines += [f"vision: {line}" for line in out.strip().splitlines()[-3:]]
    return StepResult("vision", True, "good", lines), tower


def read_test_level(vision_dir: Path, image, levels: int) -> dict:
    """Read the top as the referee does in play: it knows how many levels stand (its map), so
    only that height and the one above are considered. Answers like `stacko vision identify`."""
    from referee.loop.perception import MapGuidedReader
    from vision.reader import CalibrationMissing, load_pipeline
    from vision.tray import TrayNotFound

    try:
        reading = MapGuidedReader(load_pipeline(vision_dir)).read(image, 0.0, 0, z_hint_mm=levels * 15.0)
    except (CalibrationMissing, TrayNotFound, ValueError) as exc:
        return {"error": str(exc)}
    return {"orientation": reading.orientation, "slots": reading.names, "hands": len(reading.hands)}


def step_check(rig, cal: CalibrationDir, guide: TerminalGuide, tower: list[list[str | None]], seed: int) -> StepResult:
    """Read the finished tower's top level in a fresh photo (a light the vision step did not see)."""
    guide.do(Action("show_top", "Hands away from the tower: the referee reads its top level.",
                    data={"levels": tower, "hands": 0, "shot": 10_000 + seed}))
    image = rig.camera().read()
    path = cal.path / "check-top-level.png"
    cv2.imwrite(str(path), image)
    got = read_test_level(cal.vision_path, image, len(tower))
    want = {"orientation": orientation(len(tower)), "slots": list(tower[-1]), "hands": 0}
    if "error" in got:
        return StepResult("check", False, "failed", [f"the test level could not be read: {got['error']}"])
    slots_ok = got.get("slots") == want["slots"] and got.get("orientation") == want["orientation"]
    lines = [f"read {got.get('slots')} ({got.get('orientation')}), the tower has {want['slots']} ({want['orientation']})",
             f"hands over the tower: saw {got.get('hands')}, there were 0"]
    if not slots_ok:
        lines.append("the test level was misread: check the light (even, no strong shadows), then run the vision step again")
        return StepResult("check", False, "failed", lines)
    if got.get("hands") != 0:
        lines.append("warning: hands were seen where there were none, so two-hand fouls may be called wrongly; "
                     "keep sleeves and skin-coloured things off the table edge and run the vision step again")
        return StepResult("check", True, "usable", lines)
    return StepResult("check", True, "good", lines)


# ---------------------------------------------------------------- the whole route


def run_guided(rig, cal: CalibrationDir, limits: Mapping[str, Any], guide: TerminalGuide, known_grams: float,
               seed: int = 0, steps: tuple[str, ...] = STEPS, sheet_mm: float | None = None,
               levels: int | None = None) -> list[StepResult]:
    """Every step in order; stops at the first step that fails (later steps rely on it)."""
    results: list[StepResult] = []
    tower: list[list[str | None]] | None = None
    titles = {"markers": "the marker sheet", "loadcell": "the load cell", "imu": "the IMU (tray vibration)",
              "vision": "the blocks' colors and glyphs", "check": "reading a test level"}
    for n, step in enumerate(steps, start=1):
        guide.say(f"\nStep {n} of {len(steps)}: {titles[step]}")
        try:
            if step == "markers":
                result = step_markers(rig, cal, guide, limits, sheet_mm)
            elif step == "loadcell":
                result = step_loadcell(rig, cal, guide, limits, known_grams)
            elif step == "imu":
                result = step_imu(rig, cal, guide, limits)
            elif step == "vision":
                result, tower = step_vision(rig, cal, guide, seed, levels)
            else:
                if tower is None:
                    raise CalibrationError("the check reads the tower the vision step built: run the vision step first")
                result = step_check(rig, cal, guide, tower, seed)
        except (CalibrationError, DeviceError) as exc:
            result = StepResult(step, False, "failed", [str(exc)])
        guide.result(result)
        results.append(result)
        if not result.ok:
            guide.say(f"\nCalibration stopped at step {n}: fix what it says, then run `stacko calibrate` again.")
            break
    return results
