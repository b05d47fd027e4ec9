"""Evaluation on labelled kits (chesscog-style): per-image rows and summary accuracies.

`stacko bench vision` calibrates on one kit and scores another (light, blur, noise, pose and
skin tones calibration never saw), timing every frame with OpenCV on one thread.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from vision.frame_errors import UnreadableFrame, reader_fault
from vision.kit import load_kit
from vision.miss_kinds import hand_misses, slot_misses
from vision.reader import Pipeline, read_frame, single_thread
from vision.stage_clock import REGISTRATION, STOPPED, StageClock
from vision.tray import TrayNotFound


def evaluate_kit(pipe: Pipeline, kit_path: str | Path, rows_out: str | Path | None = None,
                 keep: list[dict] | None = None) -> dict:
    """Score a pipeline on a labelled kit; optionally write one JSON line per image, and add the
    rows to `keep` (a caller scoring several kits as one: `summarize` them)."""
    rows, times = kit_rows(pipe, kit_path)
    if rows_out:
        Path(rows_out).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if keep is not None:
        keep.extend(rows)
    return {
        **summarize(rows),
        "median_ms": float(np.median(times) * 1000) if times else float("nan"),
        "p95_ms": float(np.percentile(times, 95) * 1000) if times else float("nan"),
    }


def summarize(rows: list[dict]) -> dict:
    """The accuracy measures of kit rows (`kit_rows`; error rows count as images, not scored)."""
    ok = [r for r in rows if "error" not in r]
    n = max(1, len(ok))
    return {
        "images": len(rows),
        "errors": len(rows) - len(ok),
        "top_level_exact": sum(all(r["slot_ok"]) and r["orientation_ok"] for r in ok) / n,
        "per_slot": sum(sum(r["slot_ok"]) for r in ok) / (3 * n),
        "orientation": sum(r["orientation_ok"] for r in ok) / n,
        "hands_exact": sum(r["hands_ok"] for r in ok) / n,
        "two_hands_decision": sum(r["two_ok"] for r in ok) / n,
        "uncertain": sum(r["uncertain"] for r in ok) / n,
        **visible_scores(ok),
        **tall_scores(ok),
        **doubt_scores(ok),
        "slot_misses": slot_misses(ok, MATCH_LEVELS),
        "hand_misses": hand_misses(ok),
    }


def json_ready(summary: dict, digits: int | None = None) -> dict:
    """A summary for a JSON line: NaN (a measure with nothing to score, such as the share of
    wrong readings reported unsure when none was wrong) as null, which every JSON reader takes
    (NaN is not JSON); floats rounded to `digits` when given, within a nested dict too."""
    def clean(v):
        if isinstance(v, float):
            return None if v != v else (round(v, digits) if digits is not None else v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return v
    return {k: clean(v) for k, v in summary.items()}


def kit_rows(pipe: Pipeline, kit_path: str | Path) -> tuple[list[dict], list[float]]:
    """Every image of a labelled kit read: one row per image (its reading against its label,
    or the error), and the seconds each read image took."""
    kit = load_kit(kit_path)
    truth = kit_truth(kit_path)
    hidden_of = hidden_fractions(kit_path, kit, truth)
    rows = []
    times = []
    for name, lab in kit.labels.items():
        img = cv2.imread(str(kit.image_path(name)), cv2.IMREAD_COLOR)
        if img is None:
            rows.append({"image": name, "error": "unreadable"})
            continue
        t0 = time.perf_counter()
        try:
            res = read_frame(pipe, img)
        except (TrayNotFound, UnreadableFrame) as exc:
            rows.append({"image": name, "error": str(exc), "truth": _truth(lab)})
            continue
        except Exception as exc:  # a fault in the reader: counted as this image's error, the kit goes on
            rows.append({"image": name, "error": reader_fault(exc), "truth": _truth(lab)})
            continue
        times.append(time.perf_counter() - t0)
        r = res.reading
        truth_slots = [b.name if b else None for b in lab.slots]
        row = {
            "image": name,
            "orientation": r.orientation, "slots": r.names, "hands": len(r.hands),
            "truth": _truth(lab),
            "slot_ok": [a == b for a, b in zip(r.names, truth_slots)],
            "orientation_ok": r.orientation == lab.orientation,
            "hands_ok": len(r.hands) == lab.hands,
            "two_ok": (len(r.hands) >= 2) == (lab.hands >= 2),
            "uncertain": r.uncertain,
            "hidden": hidden_of.get(name),
            "z_top": round(res.z_top, 1),
            "ms": round(times[-1] * 1000, 2),
        }
        t = truth.get(name)
        levels = t.get("levels") if isinstance(t, dict) else None
        if isinstance(levels, int):
            row["levels"] = levels
        rows.append(row)
    return rows, times


def kit_truth(kit_path: str | Path) -> dict:
    """A rendered kit's truth per image (level count, hidden fractions, hands): the synthetic
    kit's truth.json, or the twin kit's scenes.jsonl as the same keys (`levels` the tower's
    level count, `slot_hidden`, `hands`; a twin kit written before it recorded `slot_hidden`
    gives the level count and hands only). {} for a kit with neither, or one that cannot be read (a table's own
    photos have none)."""
    p = Path(kit_path) / "truth.json"
    if not p.is_file():
        return _twin_truth(Path(kit_path) / "scenes.jsonl")
    try:
        truth = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return truth if isinstance(truth, dict) else {}


def _twin_truth(path: Path) -> dict:
    """The twin kit's scenes.jsonl as `kit_truth` gives a synthetic kit's truth.json."""
    if not path.is_file():
        return {}
    out: dict[str, dict] = {}
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            d = json.loads(line) if line.strip() else None
            if not isinstance(d, dict) or not isinstance(d.get("image"), str):
                continue
            t: dict = {}
            if isinstance(d.get("levels"), list):
                t["levels"] = len(d["levels"])
            hidden = d.get("slot_hidden")
            if isinstance(hidden, list) and len(hidden) == 3 and all(isinstance(v, (int, float)) for v in hidden):
                t["slot_hidden"] = [float(v) for v in hidden]
            if isinstance(d.get("hands"), list):
                t["hands"] = [h for h in d["hands"] if isinstance(h, dict)]
            out[d["image"]] = t
    except (OSError, json.JSONDecodeError):
        return {}
    return out


def hidden_fractions(kit_path: str | Path, kit, truth: dict | None = None) -> dict[str, list[float] | None]:
    """How much of each top slot hands hide, per image, where the kit says or it is plain.

    A rendered kit's truth (`kit_truth`: the synthetic kit's truth.json, the twin kit's
    scenes.jsonl) gives the fraction per slot; otherwise an image whose label has
    no hand over the tower has every slot in view, and an image with hands is left out (unknown).
    `truth`: the kit's truth.json as `kit_truth` reads it (read here when not given)."""
    truth = kit_truth(kit_path) if truth is None else truth
    out: dict[str, list[float] | None] = {}
    for name, lab in kit.labels.items():
        t = truth.get(name, {})
        if isinstance(t, dict) and "slot_hidden" in t:
            out[name] = [float(v) for v in t["slot_hidden"]]
        else:
            out[name] = [0.0, 0.0, 0.0] if lab.hands == 0 else None
    return out


def visible_outcomes(ok_rows: list[dict], hidden_max: float = 0.1,
                     mostly_visible: float = 0.5) -> tuple[list[bool], list[bool], list[bool]]:
    """Right or wrong, for the acceptance measures: each slot hands hide by at most a tenth; the
    orientation of each image where some top block is mostly visible; the whole top of each image
    with every slot in view. Images whose hidden fractions are unknown count in none."""
    slots: list[bool] = []
    orient: list[bool] = []
    for r in ok_rows:
        if r.get("hidden"):
            s, o = _judged(r, hidden_max, mostly_visible)
            slots += s
            orient += [] if o is None else [o]
    whole = [all(r["slot_ok"]) and r["orientation_ok"] for r in ok_rows if r.get("hidden") and max(r["hidden"]) <= hidden_max]
    return slots, orient, whole


def _judged(r: dict, hidden_max: float, mostly_visible: float) -> tuple[list[bool], bool | None]:
    """One row with known hidden fractions, as the acceptance measures judge it: right or wrong
    for each slot hands hide by at most `hidden_max`, and for its orientation where some top
    block is hidden by less than `mostly_visible` (None where the orientation does not count)."""
    hidden = r["hidden"]
    slots = [bool(r["slot_ok"][i]) for i in range(3) if hidden[i] <= hidden_max]
    counts = any(h < mostly_visible and t is not None for h, t in zip(hidden, r["truth"]["slots"]))
    return slots, (bool(r["orientation_ok"]) if counts else None)


def visible_scores(ok_rows: list[dict], hidden_max: float = 0.1, mostly_visible: float = 0.5) -> dict:
    """The acceptance measures (`visible_outcomes`) as shares."""
    slots, orient, whole = visible_outcomes(ok_rows, hidden_max, mostly_visible)
    return {
        "per_slot_visible": sum(slots) / len(slots) if slots else float("nan"),
        "visible_slots": len(slots),
        "orientation_visible": sum(orient) / len(orient) if orient else float("nan"),
        "top_level_exact_visible": sum(whole) / len(whole) if whole else float("nan"),
    }


def doubt_scores(ok_rows: list[dict], hidden_max: float = 0.1, mostly_visible: float = 0.5) -> dict:
    """Whether the reader says so when it is wrong: of the images whose hidden fractions are
    known, those read wrong by the acceptance measures (a slot hands hide by at most a tenth, or
    the orientation where some top block is mostly visible), the share reported unsure, and the
    share of all such images read wrong but reported sure. Why: an unsure reading makes the
    referee ask the table; a sure wrong one can make it call a foul that was not."""
    wrong, right = [], []
    for r in ok_rows:
        if not r.get("hidden"):
            continue
        slots, orient = _judged(r, hidden_max, mostly_visible)
        if not slots and orient is None:
            continue
        bad = not all(slots) or orient is False
        (wrong if bad else right).append(bool(r["uncertain"]))
    n = len(wrong) + len(right)
    return {
        "wrong_visible": len(wrong),
        "wrong_reported_unsure": sum(wrong) / len(wrong) if wrong else float("nan"),
        "sure_but_wrong": (len(wrong) - sum(wrong)) / n if n else float("nan"),
        "right_reported_unsure": sum(right) / len(right) if right else float("nan"),
    }


MATCH_LEVELS = 15  # a match starts with the 45 blocks stacked fifteen levels high


def tall_scores(ok_rows: list[dict], least_levels: int = MATCH_LEVELS, hidden_max: float = 0.1) -> dict:
    """Per slot in view (`visible_outcomes`) on towers of `least_levels` levels and more, where
    a match is played, for a kit whose truth gives each tower's level count (NaN and 0 slots
    otherwise). Why: the kits spread the tower's height evenly from 3 to 18 levels, and the tall
    tops, half-way to the lens and seen from aside, are where slots are missed most."""
    tall = [r for r in ok_rows if isinstance(r.get("levels"), int) and r["levels"] >= least_levels]
    slots, _, _ = visible_outcomes(tall, hidden_max)
    return {"per_slot_visible_tall": sum(slots) / len(slots) if slots else float("nan"), "visible_slots_tall": len(slots)}


def _truth(lab) -> dict:
    return {"orientation": lab.orientation, "slots": [b.name if b else None for b in lab.slots], "hands": lab.hands}


@dataclass(frozen=True)
class FrameTimes:
    """A kit's frames timed: median and p95 wall ms, the median CPU ms (what one free core would
    take when the machine is shared), each stage's mean ms per frame (stage_clock), and the
    median wall ms and count of the frames with no hand, one and two or more over the tower (as
    labelled: `by_hands`). A hand costs: the hands stage follows its arm, and a top under a hand
    reads doubtfully, which the retries and checks pay for. On 480 frames of six kits (2026-11-28)
    the medians were 11.6 / 15.9 / 19.0 ms, so the median of all frames is set where the frames
    without a hand end and those with one begin."""

    median_ms: float
    p95_ms: float
    median_cpu_ms: float
    stage_ms: dict[str, float]
    by_hands: dict[str, dict] = field(default_factory=dict)  # group -> {"median_ms", "frames"}


HANDS_GROUPS = ("no hand", "one hand", "two or more")


def hands_group(hands: int) -> str:
    """The bench's group of a frame by the hands labelled over the tower."""
    return HANDS_GROUPS[min(max(int(hands), 0), 2)]


def time_frames(pipe: Pipeline, kit_path: str | Path, repeats: int = 3) -> FrameTimes:
    """The kit's frames read at 640x480 (resized to that size), one OpenCV thread, `repeats`
    times over. A frame whose tray is not found is timed as far as it went (its registration),
    and one stopped by a fault in the reader too (stage_clock.STOPPED, after its last lap)."""
    single_thread()
    kit = load_kit(kit_path)
    frames, groups = [], []
    for name, lab in kit.labels.items():
        img = cv2.imread(str(kit.image_path(name)), cv2.IMREAD_COLOR)
        if img is not None:
            frames.append(cv2.resize(img, (640, 480), interpolation=cv2.INTER_AREA) if img.shape[:2] != (480, 640) else img)
            groups.append(hands_group(lab.hands))
    times, cpu = [], []
    clock = StageClock()
    for _ in range(repeats):
        for img in frames:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                read_frame(pipe, img, clock=clock)
            except (TrayNotFound, UnreadableFrame):
                clock.lap(REGISTRATION)  # (it stopped in frame_context: no lap since the frame's start)
            except Exception:  # a fault in the reader (kit_rows reports it as the image's error)
                clock.lap(STOPPED)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    by = {g: [t for t, h in zip(times, groups * repeats) if h == g] for g in HANDS_GROUPS}
    return FrameTimes(float(np.median(times) * 1000), float(np.percentile(times, 95) * 1000),
                      float(np.median(cpu) * 1000), clock.mean_ms(),
                      {g: {"median_ms": float(np.median(ts) * 1000), "frames": len(ts) // max(repeats, 1)}
                       for g, ts in by.items() if ts})
