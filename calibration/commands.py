"""`stacko calibrate` (guided, every step) and its own steps `stacko calibrate loadcell` / `imu`.

`stacko calibrate --page` shows the same route on the status page (calibration/page_guide.py): the table
taps "Done" on its tablet instead of pressing Enter.

The vision engineer's `stacko calibrate markers` and `stacko calibrate vision` are the other steps;
the guided route calls them through the CLI.
"""

from __future__ import annotations

import argparse
import os
import sys


def _setup(args: argparse.Namespace, steps: tuple[str, ...]):
    from calibration.files import CalibrationDir, load_limits
    from calibration.guided import JsonGuide, TerminalGuide
    from deploy.rig import make_rig

    limits = load_limits()
    cal = CalibrationDir(args.calibration, limits)
    cal.path.mkdir(parents=True, exist_ok=True)
    rig = make_rig(args.backend, args.seed, args.without)
    if getattr(args, "page", False):
        from calibration.page_guide import CalibrationHub, PageGuide, estimate_person_s
        from calibration.person_time import PersonTimeModel, TimeLedger

        model = PersonTimeModel.load()
        expected = estimate_person_s(model, steps, getattr(args, "route", "quick"), args.seed, getattr(args, "levels", None))
        guide = PageGuide(rig, interactive=not args.yes, hub=CalibrationHub(), ledger=TimeLedger(model),
                          steps=steps, expected_s=expected)
        return limits, cal, rig, guide
    kind = JsonGuide if args.json else TerminalGuide
    guide = kind(rig, interactive=not args.yes and (args.json or sys.stdin.isatty()))
    return limits, cal, rig, guide


def _start_page(args: argparse.Namespace, guide) -> object | None:
    """The status page for the page route; None (after saying why) when it cannot start."""
    from referee.loop.wiring import serve_page

    try:
        server = serve_page(guide.hub, None, args.host, args.port, lambda _: None)
    except SystemExit:  # werkzeug exits (after saying so) when the port is taken
        server = None
    if server is None:
        print(f"stacko calibrate: the status page could not start on port {args.port} (is the referee running? "
              "stop its service first, or choose another --port); nothing was calibrated.")
        return None
    guide.publish(["The referee is being calibrated."])
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    print(f"Calibration on the status page: http://{shown}:{server.port}/ (from a tablet: this machine's address, "
          f"port {server.port}); unlock it with the table PIN {server.pin}, then tap Done after each instruction.")
    return server


def _run(args: argparse.Namespace, steps: tuple[str, ...]) -> int:
    from calibration.guided import run_guided

    if getattr(args, "page", False) and args.json:
        print("stacko calibrate: choose --page or --json, not both")
        return 2
    try:
        limits, cal, rig, guide = _setup(args, steps)
    except ValueError as exc:
        print(f"stacko calibrate: {exc}")
        return 2
    server = None
    if getattr(args, "page", False):
        server = _start_page(args, guide)
        if server is None:
            rig.close()
            return 2
    known = args.known_grams if args.known_grams else limits["loadcell"]["default_known_grams"]
    guide.say(f"Calibrating {'the twin' if args.backend == 'sim' else 'this table'} into {cal.path}")
    try:
        results = run_guided(rig, cal, limits, guide, known, args.seed, steps, getattr(args, "sheet_mm", None),
                             getattr(args, "levels", None), getattr(args, "route", "quick"))
        ok = all(r.ok for r in results) and len(results) == len(steps)
        if server is not None:
            guide.finish(ok, "Calibration complete: run `stacko doctor` to check the whole table." if ok
                         else "Calibration stopped: fix what the failed step says, then run `stacko calibrate` again.")
            if guide.interactive and sys.stdin.isatty():
                guide.ask("The page shows the results; press Enter to close it ")
        elif ok and len(steps) > 1:
            guide.say("\nCalibration complete: run `stacko doctor` to check the whole table.")
    finally:
        rig.close()
        if server is not None:
            server.stop()
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
    p.add_argument("--page", action="store_true",
                   help="show the route on the status page too: the table taps Done on its tablet instead of pressing Enter")
    p.add_argument("--port", type=int, default=int(os.environ.get("STACKO_PORT", "8000")),
                   help="status page port for --page (default $STACKO_PORT or 8000)")
    p.add_argument("--host", default="0.0.0.0", help="status page address for --page (default: all, so tablets can reach it)")
    p.add_argument("--steps", default=None,
                   help="comma-separated subset of markers,vision,loadcell,imu,check, run in the order given "
                        "(default: all, in that order: the vision models learn while the load cell and IMU are done)")
    common(groups.subcommand("calibrate", "loadcell", "tare and scale the load cell with a known weight; check one block shows",
                             lambda a: _run(a, ("loadcell",))))
    common(groups.subcommand("calibrate", "imu", "learn the tray's quiet vibration and set the touch/collapse thresholds",
                             lambda a: _run(a, ("imu",))))
