"""`stacko bench vision`: calibrate on one kit, score kits it never saw, time frames on one thread."""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from vision.calibrate import calibrate_kit
from vision.evaluate import HANDS_GROUPS, MATCH_LEVELS, evaluate_kit, json_ready, kit_truth, summarize, time_frames
from vision.miss_kinds import miss_line
from vision.reader import load_pipeline, single_thread
from vision.stage_clock import stage_line
from vision.styles import Style, parse_style, style_kit
from vision.synthkit import SynthOptions, default_tray, write_kit

TARGETS = {"per_slot_visible": 0.99, "orientation_visible": 1.0, "two_hands_decision": 0.97, "hands_exact": 0.90}


def unseen_options(base: SynthOptions) -> SynthOptions:
    """Conditions the calibration kit never shows: harsher light, more blur and noise, more tilt,
    the darkest and lightest skin tones only."""
    return replace(base, light_range=(0.45, 1.45), blur_max=2.0, noise_max=10.0, tilt_deg=16.0,
                   skin_tones=(0, 1, 6, 7, 8))


def calib_options(base: SynthOptions) -> SynthOptions:
    return replace(base, light_range=(0.75, 1.15), blur_max=1.0, noise_max=5.0, tilt_deg=8.0, skin_tones=(2, 3, 4, 5))


def default_test_kits(work: Path, n_images: int, calib: str, tray, seed_offset: int = 0) -> list[str]:
    """Two unseen kits: one from another table's camera, and one from the calibration kit's own
    camera (its focal length), as a table calibrated from its own photos plays: the second
    measures the light, blur, pose and skin tones the calibration never saw without a camera
    change on top. `seed_offset`: added to their seeds (202, 404), for another family's."""
    other = write_kit(work / "unseen-kit", n_images, seed=202 + seed_offset, opt=unseen_options(SynthOptions()), tray=tray)
    same = write_kit(work / "unseen-same-camera-kit", n_images, seed=404 + seed_offset, opt=unseen_options(SynthOptions()),
                     tray=tray, focal=kit_focal(calib))
    return [str(other), str(same)]


def kit_focal(kit: str) -> float | None:
    """The focal length a rendered kit's truth.json records (None for a kit without one)."""
    try:
        return float(next(iter(kit_truth(kit).values()))["f"])
    except (ValueError, KeyError, StopIteration, TypeError):
        return None


def run_bench(args: argparse.Namespace) -> int:
    single_thread()
    work = Path(args.work or tempfile.mkdtemp(prefix="stacko-bench-vision-"))
    work.mkdir(parents=True, exist_ok=True)
    tray = default_tray()
    families = max(1, args.families)
    if families > 1 and (args.calib_kit or args.test_kit):
        print("--families draws its own kits: leave out --calib-kit and --test-kit", file=sys.stderr)
        return 2
    try:
        style = parse_style(args.style or "")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if style.effects and (args.calib_kit or args.test_kit):
        print("--style restyles the kits the bench draws: leave out --calib-kit and --test-kit", file=sys.stderr)
        return 2
    tag = {"style": style.name} if style.effects else {}  # on every JSON line of a styled bench
    rows: list[dict] = []
    medians: list[float] = []
    stages: list[dict[str, float]] = []
    by_hands: list[dict[str, dict]] = []
    for f in range(families):
        offset = 1000 * f  # family 1 is the bench's usual kits (seeds 101, 202, 404); then 1101, 1202, 1404...
        home = work if families == 1 else work / f"family-{f + 1}"
        home.mkdir(parents=True, exist_ok=True)
        calib = args.calib_kit
        if not calib:
            calib = str(write_kit(home / "calib-kit", args.images, seed=101 + offset, opt=calib_options(SynthOptions()),
                                  tray=tray))
        tests = list(args.test_kit) or default_test_kits(home, args.images, calib, tray, offset)
        if style.effects:  # a camera's or renderer's look: on the calibration's photos and the scored ones alike
            restyle([calib, *tests], style)
        print(f"calibrating on {calib}", file=sys.stderr)
        calibrate_kit(calib, home / "calibration", log=lambda m: print("  " + m, file=sys.stderr))
        pipe = load_pipeline(home / "calibration")
        for k, kit in enumerate(tests):
            suffix = f".{f + 1}.{k}" if families > 1 else (f".{k}" if len(tests) > 1 else "")
            s = evaluate_kit(pipe, kit, f"{args.rows}{suffix}" if args.rows else None, keep=rows)
            ft = time_frames(pipe, kit)
            s["median_ms"], s["p95_ms"], s["median_cpu_ms"], s["stage_ms"] = ft.median_ms, ft.p95_ms, ft.median_cpu_ms, ft.stage_ms
            s["median_ms_by_hands"] = ft.by_hands
            medians.append(ft.median_ms)
            stages.append(ft.stage_ms)
            by_hands.append(ft.by_hands)
            print(json.dumps({"kit": kit, **tag, **json_ready(s, 4)}))
            _report(s, ft.median_ms, ft.p95_ms, ft.median_cpu_ms)
    if families > 1:
        total = {**summarize(rows), "kits": len(medians), "median_ms_of_kits": float(np.median(medians)),
                 "stage_ms": mean_stages(stages), "median_ms_by_hands": median_by_hands(by_hands)}
        print(json.dumps({"kit": f"all {len(medians)} kits of {families} families", **tag, **json_ready(total, 4)}))
        print(f"all {len(medians)} kits of {families} families ({total['images']} images):", file=sys.stderr)
        _report(total, total["median_ms_of_kits"], None, None)
    return 0


def restyle(kits: list[str], style: Style) -> None:
    """Each drawn kit's photos with the style put on (`vision.styles`), told on stderr."""
    for kit in kits:
        n = style_kit(style, kit)
        print(f"  {style.name} put on {n} photos of {kit}", file=sys.stderr)


def mean_stages(stages: list[dict[str, float]]) -> dict[str, float]:
    """The kits' mean ms per stage; a stage one kit has and another not (frames stopped by a
    fault) counts 0 for the other."""
    keys = list(dict.fromkeys(k for st in stages for k in st))
    return {k: float(np.mean([st.get(k, 0.0) for st in stages])) for k in keys}


def median_by_hands(kits: list[dict[str, dict]]) -> dict[str, dict]:
    """Per group of frames by the hands over the tower (evaluate.HANDS_GROUPS): the median of
    the kits' medians, as the families' frame time is, and the frames counted in all."""
    out = {}
    for g in HANDS_GROUPS:
        got = [k[g] for k in kits if g in k]
        if got:
            out[g] = {"median_ms": float(np.median([x["median_ms"] for x in got])),
                      "frames": int(sum(x["frames"] for x in got))}
    return out


def hands_line(by: dict[str, dict]) -> str:
    """'no hand 11.6 ms (269 frames), one hand ...': where the frame time goes with hands."""
    return ", ".join(f"{g} {x['median_ms']:.1f} ms ({x['frames']} frames)" for g, x in by.items())


def _report(s: dict, med: float, p95: float | None, cpu: float | None) -> None:
    """One kit's (or the families') measures against the targets, for a reader."""
    for key, target in TARGETS.items():
        flag = "ok" if s[key] >= target else "BELOW TARGET"
        print(f"  {key}: {s[key]:.3f} (target {target}) {flag}", file=sys.stderr)
    if s.get("visible_slots_tall"):
        print(f"  per_slot_visible on towers of {MATCH_LEVELS} levels and more (where a match is played): "
              f"{s['per_slot_visible_tall']:.3f} of {s['visible_slots_tall']} slots", file=sys.stderr)
    if not math.isnan(s["sure_but_wrong"]):  # (NaN: no image's hidden fractions known)
        unsure = f", {s['wrong_reported_unsure']:.3f} of them reported unsure" if s["wrong_visible"] else ""
        print(f"  read wrong: {s['wrong_visible']} images{unsure}; sure but wrong {s['sure_but_wrong']:.3f} of the "
              f"images; right but reported unsure {s['right_reported_unsure']:.3f}", file=sys.stderr)
    if s.get("slot_misses", {}).get("all"):
        m = s["slot_misses"]
        print(f"  slots in view read wrong, by kind: {miss_line(m['all'], m['tall'])}", file=sys.stderr)
    if s.get("hand_misses"):
        print(f"  hand counts wrong, by kind: {miss_line(s['hand_misses'])}", file=sys.stderr)
    if s.get("stage_ms"):
        print(f"  by stage: {stage_line(s['stage_ms'])}", file=sys.stderr)
    if s.get("median_ms_by_hands"):
        print(f"  median frame time by hands over the tower: {hands_line(s['median_ms_by_hands'])}", file=sys.stderr)
    if p95 is None:
        print(f"  median of the kits' median frame times {med:.2f} ms (target median <= 10 ms)", file=sys.stderr)
    else:
        print(f"  median {med:.2f} ms, p95 {p95:.2f} ms wall, median {cpu:.2f} ms CPU per 640x480 frame "
              "(target median <= 10 ms)", file=sys.stderr)
