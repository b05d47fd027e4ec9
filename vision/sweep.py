"""Settings swept over many labelled kits: `python -m vision.sweep --kit CAL KIT [--kit CAL KIT ...]
--set hands.table_reach_mm=30,45 [--set decision.empty_below=0.4,0.5] [--workers 2]`.

Thresholds are tuned on many kits, not one: a setting that wins a photo or two on one kit is
noise (docs/vision.md, 2026-11-25: the hand settings, at a local optimum on fourteen kits, moved
on thirty-six fresh ones). Each setting is applied to each calibration's config as it is read
(nothing is recalibrated), every kit is read by the whole pipeline (`evaluate.kit_rows`),
and one JSON line per setting, the calibrations' own settings first, gives the totals:
- visible slots read right (slots hands hide by at most a tenth), and how many;
- orientations right where some top block is mostly visible;
- exact hand counts, the "two or more" decision, and its false and missed calls.
A setting that calibration itself uses (the hand grid's picks, the height search when it learns
each photo's height) is measured here only as read: remake the calibrations to measure it whole.
Kits are read in parallel, one worker a kit, each worker loading its calibration once.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from multiprocessing import get_context
from pathlib import Path

Setting = dict[str, object]  # "section.key" -> value


def parse_settings(specs: list[str]) -> list[tuple[str, Setting]]:
    """'section.key=v1,v2' -> one setting per value (JSON values: numbers, true, [..] unquoted)."""
    out: list[tuple[str, Setting]] = []
    for spec in specs:
        key, sep, values = spec.partition("=")
        if not sep or "." not in key or not values:
            raise ValueError(f"a setting is section.key=value[,value...], not {spec!r}")
        for raw in _split_values(values):
            try:
                value = json.loads(raw)
            except ValueError:
                raise ValueError(f"{raw!r} in {spec!r} is not a number, true/false or a JSON list") from None
            out.append((f"{key}={raw}", {key: value}))
    return out


def _split_values(values: str) -> list[str]:
    """Split on commas outside brackets: 'focal_factors=[0.9,1.0],[1.0]' has two values."""
    parts, depth, cur = [], 0, ""
    for ch in values:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def apply(cfg: dict, setting: Setting) -> dict:
    """A copy of cfg with the setting's values; a key the config does not have is an error
    (a typo would otherwise sweep nothing)."""
    out = copy.deepcopy(cfg)
    for dotted, value in setting.items():
        section, _, key = dotted.partition(".")
        if section not in out or key not in out[section]:
            raise KeyError(f"the vision config has no setting {dotted}")
        out[section][key] = value
    return out


def kit_counts(rows: list[dict]) -> dict[str, int]:
    """Totals over one kit's rows (`evaluate.kit_rows`), the visible slots and
    orientations as `evaluate` counts them (images whose hidden fractions are unknown in neither)."""
    from vision.evaluate import visible_outcomes

    ok = [r for r in rows if "error" not in r]
    slots, orient, _ = visible_outcomes(ok)
    c = {"images": len(rows), "errors": len(rows) - len(ok), "slots_visible": len(slots), "slots_right": sum(slots),
         "orientations_visible": len(orient), "orientations_right": sum(orient)}
    c.update(dict.fromkeys(("hands_exact", "two_right", "two_false", "two_missed"), 0))
    for r in ok:  # right and wrong as the evaluator judged them; its wrong "two or more" split in two
        got, want = r["hands"], r["truth"]["hands"]
        c["hands_exact"] += bool(r["hands_ok"])
        c["two_right"] += bool(r["two_ok"])
        c["two_false"] += got >= 2 and want < 2
        c["two_missed"] += got < 2 and want >= 2
    return c


def _read_kit(job: tuple[str, str, list[Setting]]) -> list[dict[str, int]]:
    """One kit read with every setting (its calibration loaded once)."""
    from vision.evaluate import kit_rows
    from vision.reader import Pipeline, load_pipeline, single_thread

    cal, kit, settings = job
    single_thread()
    base = load_pipeline(cal)
    out = []
    for setting in settings:
        pipe = base if not setting else Pipeline(apply(base.cfg, setting), base.tray, base.models, base.background)
        out.append(kit_counts(kit_rows(pipe, kit)[0]))
    return out


def sweep(pairs: list[tuple[str, str]], settings: list[tuple[str, Setting]], workers: int = 1) -> list[dict]:
    """Totals per setting (the calibrations' own first, named "as calibrated") over all kits."""
    named = [("as calibrated", {})] + list(settings)
    jobs = [(cal, kit, [s for _, s in named]) for cal, kit in pairs]
    if workers > 1 and len(jobs) > 1:
        # spawned, not forked: a fork of a process whose other threads hold locks (a web server's,
        # OpenCV's) can hang in the child
        with get_context("spawn").Pool(min(workers, len(jobs))) as pool:
            per_kit = pool.map(_read_kit, jobs, chunksize=1)
    else:
        per_kit = [_read_kit(j) for j in jobs]
    out = []
    for k, (name, _) in enumerate(named):
        total: dict[str, object] = {"setting": name}
        for counts in per_kit:
            for key, v in counts[k].items():
                total[key] = int(total.get(key, 0)) + v
        out.append(total)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kit", nargs=2, action="append", metavar=("CALIBRATION", "KIT"), required=True,
                    help="a calibration folder and a labelled kit it reads (repeat for more kits)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=V1,V2",
                    help="a setting and the values to try, one at a time (repeat for more settings)")
    ap.add_argument("--workers", type=int, default=1, help="kits read at once (default 1)")
    args = ap.parse_args(argv)
    try:
        settings = parse_settings(args.set)
        from vision.reader import default_config
        for _, setting in settings:  # a typo is said before any kit is read
            apply(default_config(), setting)
        for cal, kit in args.kit:
            if not Path(cal, "config.json").is_file():
                raise ValueError(f"{cal} is not a calibration folder (no config.json): run `stacko calibrate vision`")
            if not Path(kit, "labels.json").is_file():
                raise ValueError(f"{kit} is not a labelled kit (no labels.json)")
        for line in sweep([tuple(p) for p in args.kit], settings, args.workers):
            print(json.dumps(line), flush=True)
    except (ValueError, KeyError) as exc:
        print(f"sweep: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
