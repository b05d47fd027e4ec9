"""`stacko bench calibration`: how good and how quick the guided calibration is on the twin.

For each seed: the whole guided route (unattended), then the result judged against the twin's truth:
the load cell's scale against the emulated chip's true counts per gram, one block's reading against 17 g,
and the vision calibration on fresh photos of top levels it never saw (random towers, other light).
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import cv2

from calibration.files import CalibrationDir, load_limits
from calibration.guided import TerminalGuide, orientation, run_cli, run_guided
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


def run_bench(seeds: int, test_levels: int, levels: int | None = None) -> int:
    limits = load_limits()
    rows = []
    for seed in range(seeds):
        with tempfile.TemporaryDirectory(prefix="stacko-bench-cal-") as tmp:
            rig = TwinRig(seed=seed)
            cal = CalibrationDir(Path(tmp) / "cal", limits)
            said: list[str] = []
            guide = TerminalGuide(rig, False, out=said.append)
            t0 = time.perf_counter()
            try:
                results = run_guided(rig, cal, limits, guide, 500.0, seed, levels=levels)
                wall = time.perf_counter() - t0
                ok = all(r.ok for r in results) and len(results) == 5
                true_cpg = rig.table.bus.devices[0x2A].counts_per_gram()
                row = {"seed": seed, "ok": ok, "route_wall_s": round(wall, 1),
                       "instructions": sum(1 for line in said if line.startswith("  -> "))}
                if ok:
                    lc = cal.loadcell()
                    row.update(scale_error_pct=round(100 * (lc.counts_per_gram / true_cpg - 1), 3),
                               block_g=round(lc.block_measured_grams or 0, 2), noise_g=round(lc.noise_grams, 3),
                               collapse_threshold_ms2=round(cal.imu().collapse_threshold_ms2, 2))
                    truth = _fresh_levels(rig, cal, test_levels, seed, Path(tmp))
                    out = run_cli(["vision", "identify", str(cal.vision_path), *truth])
                    slots = exact = orient = 0
                    for line in out.strip().splitlines():
                        got = json.loads(line)
                        want = truth[got["image"]]
                        if "error" in got:
                            continue
                        slots += sum(a == b for a, b in zip(got["slots"], want["slots"]))
                        exact += got["slots"] == want["slots"]
                        orient += got["orientation"] == want["orientation"]
                    row.update(test_levels=len(truth), per_slot_pct=round(100 * slots / (3 * len(truth)), 1),
                               exact_pct=round(100 * exact / len(truth), 1), orientation_pct=round(100 * orient / len(truth), 1))
            finally:
                rig.close()
        rows.append(row)
        print(json.dumps(row), flush=True)
    good = [r for r in rows if r["ok"]]
    summary = {"seeds": seeds, "levels_built": levels or 15, "routes_ok": len(good),
               "route_wall_s_median": statistics.median(r["route_wall_s"] for r in rows)}
    if good:
        summary.update(per_slot_pct=round(statistics.mean(r["per_slot_pct"] for r in good), 1),
                       exact_pct=round(statistics.mean(r["exact_pct"] for r in good), 1),
                       worst_scale_error_pct=max(abs(r["scale_error_pct"]) for r in good),
                       worst_block_error_g=round(max(abs(r["block_g"] - limits["loadcell"]["block_grams"]) for r in good), 2))
    print(json.dumps({"summary": summary}))
    return 0 if len(good) == seeds else 1
