"""`stacko bench calibration`: how good and how quick the guided calibration is on the twin.

For each seed: the whole guided route (unattended), with the time a person would need by the time model
(calibration/person_time.py) next to the route's wall time here, then the result judged against the twin's truth:
the load cell's scale against the emulated chip's true counts per gram, one block's reading against 17 g,
and the vision calibration on fresh photos of top levels it never saw (random towers, other light), next to
the calibration the twin demo uses (see `yardstick_vision`) on the same photos.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2

from calibration.files import CalibrationDir, load_limits
from calibration.guided import QUICK_LEVELS, TerminalGuide, orientation, run_cli, run_guided
from deploy.rig import TwinRig


def _fresh_levels(rig: TwinRig, cal: CalibrationDir, n: int, seed: int, folder: Path) -> dict[str, dict]:
    """Photos of random towers (5-15 levels, full or part-built tops, no hands) in lights of their own."""
    from referee.tower import random_tower

    rng = random.Random(seed * 7 + 11)
    camera = rig.camera()
    truth = {}
    for i in range(n):
        tower = random_tower(random.Random(rng.randrange(1 << 30)))[: rng.randint(5, 15)]
        top = list(tower[-1])
        for s in rng.sample(range(3), rng.choice((0, 0, 1, 2))):
            top[s] = None
        if all(b is None for b in top):
            top[1] = tower[-1][1]
        levels = [list(lv) for lv in tower[:-1]] + [top]
        camera.pose(levels, 0, 50_000 + i)
        path = folder / f"test-{i:03d}.png"
        cv2.imwrite(str(path), camera.read())
        truth[str(path)] = {"orientation": orientation(len(levels)), "slots": top}
    return truth


def _score(vision_dir: Path, truth: dict[str, dict]) -> dict[str, float]:
    """Per-slot, whole-level and orientation accuracy of one vision calibration on the labelled photos."""
    out = run_cli(["vision", "identify", str(vision_dir), *truth])
    slots = exact = orient = 0
    for line in out.strip().splitlines():
        got = json.loads(line)
        want = truth[got["image"]]
        if "error" in got:
            continue
        slots += sum(a == b for a, b in zip(got["slots"], want["slots"]))
        exact += got["slots"] == want["slots"]
        orient += got["orientation"] == want["orientation"]
    n = len(truth)
    return {"per_slot_pct": round(100 * slots / (3 * n), 1), "exact_pct": round(100 * exact / n, 1),
            "orientation_pct": round(100 * orient / n, 1)}


def yardstick_vision() -> tuple[Path, str]:
    """The vision calibration the twin demo uses, to measure the guided one against: the shipped one
    (calibration/twin/vision, 80 labelled twin images) when this vision code made it, else the one the demo
    makes once from a 60-image twin kit and keeps in the user's cache (made now if missing)."""
    from referee.loop.demo import SHIPPED_TWIN_VISION, DemoOptions, _stamp, vision_calibration, vision_code_version

    if _stamp(SHIPPED_TWIN_VISION) == vision_code_version():
        return SHIPPED_TWIN_VISION, "shipped (80 twin images)"
    return Path(vision_calibration(DemoOptions(), lambda s: print(s, file=sys.stderr))), "demo's own (60 twin images)"


def run_bench(seeds: int, test_levels: int, levels: int | None = None, route: str = "quick") -> int:
    limits = load_limits()
    yardstick, yardstick_name = yardstick_vision()
    rows = []
    for seed in range(seeds):
        with tempfile.TemporaryDirectory(prefix="stacko-bench-cal-") as tmp:
            rig = TwinRig(seed=seed)
            cal = CalibrationDir(Path(tmp) / "cal", limits)
            said: list[str] = []
            guide = TerminalGuide(rig, False, out=said.append)
            t0 = time.perf_counter()
            try:
                results = run_guided(rig, cal, limits, guide, 500.0, seed, levels=levels, route=route)
                wall = time.perf_counter() - t0
                ok = all(r.ok for r in results) and len(results) == 5
                true_cpg = rig.table.bus.devices[0x2A].counts_per_gram()
                person = guide.ledger.summary()
                row = {"seed": seed, "route": route, "ok": ok, "route_wall_s": round(wall, 1),
                       "learning_on_pi_s": person["learning_on_pi_s"], "person_s": person["person_s"],
                       "person_min": person["person_min"], "person_per_step_s": person["per_step_s"],
                       "instructions": person["instructions"], "blocks_laid": person["blocks_laid"],
                       "photos": person["photos"],
                       "check": next((r.grade for r in results if r.part == "check"), "not reached")}
                if ok:
                    lc = cal.loadcell()
                    row.update(scale_error_pct=round(100 * (lc.counts_per_gram / true_cpg - 1), 3),
                               block_g=round(lc.block_measured_grams or 0, 2), noise_g=round(lc.noise_grams, 3),
                               collapse_threshold_ms2=round(cal.imu().collapse_threshold_ms2, 2))
                    truth = _fresh_levels(rig, cal, test_levels, seed, Path(tmp))
                    row.update(test_levels=len(truth), **_score(cal.vision_path, truth))
                    row["yardstick"] = _score(yardstick, truth)
            finally:
                rig.close()
        rows.append(row)
        print(json.dumps(row), flush=True)
    good = [r for r in rows if r["ok"]]
    summary = {"seeds": seeds, "route": route, "levels_built": levels or (15 if route == "tower" else QUICK_LEVELS),
               "routes_ok": len(good), "route_wall_s_median": statistics.median(r["route_wall_s"] for r in rows),
               "person_min_median": statistics.median(r["person_min"] for r in rows)}
    if good:
        summary.update(per_slot_pct=round(statistics.mean(r["per_slot_pct"] for r in good), 1),
                       exact_pct=round(statistics.mean(r["exact_pct"] for r in good), 1),
                       worst_scale_error_pct=max(abs(r["scale_error_pct"]) for r in good),
                       worst_block_error_g=round(max(abs(r["block_g"] - limits["loadcell"]["block_grams"]) for r in good), 2))
        summary.update(yardstick=yardstick_name,
                       yardstick_per_slot_pct=round(statistics.mean(r["yardstick"]["per_slot_pct"] for r in good), 1),
                       yardstick_exact_pct=round(statistics.mean(r["yardstick"]["exact_pct"] for r in good), 1))
    print(json.dumps({"summary": summary}))
    return 0 if len(good) == seeds else 1
