"""How well hands are counted and placed on a labelled kit: `python -m vision.hands_eval CAL KIT...`.

Counting is scored against labels.json (CONTRACT.md section 2). Where the kit also records where
each hand's arm came from (the twin's scenes.jsonl `from_deg`, the synthetic kit's truth.json),
the entry direction is scored too: the error in degrees of every counted hand matched to a true
one (best pairing), and how often the nearest of three evenly spaced seats is right when the
hand came from a seat's direction (error under 60 degrees). A false "two or more" (a false
"Uno!" in the making) is worse than a missed one, so it is counted apart; and as the match loop
decides the foul (`referee.loop.fusion.two_arms`: two arms entering at least 20 degrees apart),
how many frames whose true arms are that far apart it would call, and how many frames with
fewer than two hands it would wrongly call. Hands are timed on one thread. `--wrong` also lists
the frames counted wrong (label, count, the arms' entry directions and the true ones), to look at.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np

from referee.loop.fusion import two_arms
from vision import top_level as tl
from vision.evaluate import kit_truth
from vision.hands import find_hands
from vision.kit import load_kit
from vision.reader import Pipeline, load_pipeline, straighten, top_height
from vision.tray import TrayNotFound, register


def true_entries(kit_path: str | Path) -> dict[str, list[float]]:
    """Per image, the directions (degrees, tray frame) the counted hands' arms come from, if the kit says."""
    # (the twin's scenes.jsonl or the synthetic kit's truth.json, as kit_truth reads them; the
    # twin's tray axes are the world's)
    return {name: [float(h["from_deg"]) for h in d["hands"] if h["over_tower"]]
            for name, d in kit_truth(kit_path).items() if isinstance(d, dict) and "hands" in d}


APART_DEG = 20.0  # the match loop's two_hands_apart_deg


def angle_gap(a: float, b: float) -> float:
    d = abs(a - b) % 360.0
    return min(d, 360.0 - d)


def score_kit(pipe: Pipeline, kit_path: str | Path) -> dict:
    cv2.setNumThreads(1)
    kit = load_kit(kit_path)
    truth = true_entries(kit_path)
    n = exact = two = false_two = missed_two = uno_frames = uno_called = uno_false = 0
    errs: list[float] = []
    ms: list[float] = []
    wrong: list[dict] = []
    for name, lab in kit.labels.items():
        img = cv2.imread(str(kit.image_path(name)), cv2.IMREAD_COLOR)
        if img is None:
            continue
        img = straighten(pipe, img)  # through the camera's lens, as the reader sees frames
        try:
            reg = register(pipe.cfg, pipe.tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), pipe.detector)
        except TrayNotFound:
            continue
        tray_bgr = tl.tray_color(pipe.cfg, pipe.tray, reg, img)
        gains = tl.color_gains(pipe.cfg, tray_bgr)
        z = top_height(pipe, reg, img, tray_bgr, gains)
        t0 = time.process_time()
        hands = find_hands(pipe.cfg, pipe.tray, reg, img, tray_bgr, z, pipe.background, gains, pipe.hand_grid)
        ms.append((time.process_time() - t0) * 1000)
        n += 1
        exact += len(hands) == lab.hands
        if len(hands) != lab.hands:
            wrong.append({"image": name, "label": lab.hands, "counted": len(hands),
                          "entry_deg": [h.entry_deg for h in hands], "true_deg": truth.get(name, [])})
        two += (len(hands) >= 2) == (lab.hands >= 2)
        false_two += len(hands) >= 2 and lab.hands < 2
        missed_two += len(hands) < 2 and lab.hands >= 2
        want = truth.get(name)
        apart = lab.hands >= 2 and bool(want) and any(angle_gap(a, b) >= APART_DEG for i, a in enumerate(want) for b in want[i + 1:])
        called = two_arms(hands, APART_DEG)
        uno_frames += apart
        uno_called += apart and called
        uno_false += called and lab.hands < 2
        got = [h.entry_deg for h in hands if h.entry_deg is not None]
        if want and len(got) == len(want):
            best = min(itertools.permutations(got), key=lambda p: sum(angle_gap(a, b) for a, b in zip(p, want)))
            errs += [angle_gap(a, b) for a, b in zip(best, want)]
    out = {"kit": str(kit_path), "images": n, "hands_exact": exact / max(1, n), "two_hands_decision": two / max(1, n),
           "false_two_or_more": false_two, "missed_two_or_more": missed_two,
           "two_arms_called": f"{uno_called}/{uno_frames}", "two_arms_false": uno_false,
           "hands_cpu_ms_median": float(np.median(ms)) if ms else float("nan"), "wrong": wrong}
    if errs:
        e = np.array(errs)
        out.update({"entry_matched": len(errs), "entry_err_median_deg": float(np.median(e)),
                    "entry_err_p95_deg": float(np.percentile(e, 95)), "seat_of_3_right": float(np.mean(e < 60.0))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calibration")
    ap.add_argument("kits", nargs="+")
    ap.add_argument("--wrong", action="store_true", help="also list the frames counted wrong, one a line")
    args = ap.parse_args(argv)
    pipe = load_pipeline(args.calibration)
    for k in args.kits:
        s = score_kit(pipe, k)
        wrong = s.pop("wrong")
        print(json.dumps({a: (round(b, 3) if isinstance(b, float) else b) for a, b in s.items()}))
        for w in wrong if args.wrong else ():
            print("  " + json.dumps(w))
    return 0


if __name__ == "__main__":
    sys.exit(main())
