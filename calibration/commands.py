"""`stacko calibrate` (guided, every step) and its own steps `stacko calibrate loadcell` / `imu`.

The vision engineer's `stacko calibrate markers` and `stacko calibrate vision` are the other steps;
the guided route calls them through the CLI.
"""

from __future__ import annotations

import argparse
import sys


def _setup(args: argparse.Namespace):
    from calibration.files import CalibrationDir, load_limits
    from calibration.guided import JsonGuide, TerminalGuide
    from deploy.rig import make_rig

    limits = load_limits()
    cal = CalibrationDir(args.calibration, limits)
    cal.path.mkdir(parents=True, exist_ok=True)
    rig = make_rig(args.backend, args.seed, args.without)
    kind = JsonGuide if args.json else TerminalGuide
    guide = kind(rig, interactive=not args.yes and (args.json or sys.stdin.isatty()))
    return limits, cal, rig, guide


def _run(args: argparse.Namespace, steps: tuple[str, ...]) -> int:
    from calibration.guided import run_guided

    try:
        limits, cal, rig, guide = _setup(args)
    except ValueError as exc:
        print(f"stacko calibrate: {exc}")
        return 2
    known = args.known_grams if args.known_grams else limits["loadcell"]["default_known_grams"]
    guide.say(f"Calibrating {'the twin' if args.backend == 'sim' else 'this table'} into {cal.path}")
    try:
        results = run_guided(rig, cal, limits, guide, known, args.seed, steps, getattr(args, "sheet_mm", None),
                             getattr(args, "levels", None), getattr(args, "route", "quick"))
    finally:
        rig.close()
    ok = all(r.ok for r in results) and len(results) == len(steps)
    if ok and len(steps) > 1:
        guide.say("\nCalibration complete: run `stacko doctor` to check the whole table.")
    return 0 if ok else 1


def guided(args: argparse.Namespace) -> int:
    from calibration.guided import STEPS

    steps = tuple(s.strip() for s in args.steps.split(",")) if args.steps else STEPS
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        print(f"stacko calibrate: unknown step(s) {', '.join(unknown)}; the steps are {', '.join(STEPS)}")
        return 2
    return _run(args, steps)


def _bench(args: argparse.Namespace) -> int:
    from calibration.bench import run_bench

    return run_bench(args.seeds, args.test_levels, args.levels, args.route)


def register(groups) -> None:
    from deploy.commands import add_rig_arguments

    def common(p: argparse.ArgumentParser) -> None:
        add_rig_arguments(p)
        p.add_argument("--yes", action="store_true", help="do not wait for Enter between instructions (tests, the twin)")
        p.add_argument("--json", action="store_true",
                       help="JSON lines for a page to show ({say}, {do, text}: answer with one line on stdin, {step, ok, grade, lines})")
        p.add_argument("--known-grams", type=float, default=None,
                       help="the known weight used to scale the load cell, in grams (default 500: e.g. a full 500 ml bottle)")

    b = groups.subcommand("bench", "calibration", "the guided calibration on the twin: time, load-cell error, "
                          "vision accuracy on top levels it never saw", _bench)
    b.add_argument("--seeds", type=int, default=3, help="twin tables to calibrate (default 3)")
    b.add_argument("--test-levels", type=int, default=20, help="fresh top levels read after each calibration (default 20)")
    b.add_argument("--levels", type=int, default=None,
                   help="levels built in the vision step (default: 4 on the quick route, all 15 on the tower route)")
    b.add_argument("--route", choices=("quick", "tower"), default="quick", help="the vision step's route (default quick)")

    p = groups.group_default("calibrate", guided)
    common(p)
    p.add_argument("--sheet-mm", type=float, default=None,
                   help="side of the printed marker sheet in mm, to fit your tray (default: the vision sheet's 280)")
    p.add_argument("--route", choices=("quick", "tower"), default="quick",
                   help="vision step: 'quick' names a few levels that show every color and glyph, with a level of any "
                        "blocks between them, a photo or two per named level (about 5 minutes in all); 'tower' builds "
                        "the whole tower, a photo after every block (about 15 minutes)")
    p.add_argument("--levels", type=int, default=None,
                   help="vision step: levels to build and photograph (default: 4 on the quick route, 15 on the tower route)")
    p.add_argument("--steps", default=None,
                   help="comma-separated subset of markers,vision,loadcell,imu,check, run in the order given "
                        "(default: all, in that order: the vision models learn while the load cell and IMU are done)")
    common(groups.subcommand("calibrate", "loadcell", "tare and scale the load cell with a known weight; check one block shows",
                             lambda a: _run(a, ("loadcell",))))
    common(groups.subcommand("calibrate", "imu", "learn the tray's quiet vibration and set the touch/collapse thresholds",
                             lambda a: _run(a, ("imu",))))
