"""`stacko doctor`: registered here, built in deploy/doctor.py (imported only when it runs)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

PARTS = ("camera", "imu", "loadcell", "buttons", "speaker")


def default_log_path() -> Path:
    """Where the match log lives: $STACKO_LOG (set on the Pi by deploy/install.sh) or the user's data dir."""
    env = os.environ.get("STACKO_LOG")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("stacko-referee")) / "matches.sqlite"


def add_rig_arguments(p: argparse.ArgumentParser) -> None:
    """--backend/--seed/--without/--calibration, shared by `stacko doctor` and `stacko calibrate`."""
    p.add_argument("--backend", choices=("pi", "sim"), default=os.environ.get("STACKO_BACKEND", "pi"),
                   help="pi: the real parts; sim: the twin's emulated parts (default: $STACKO_BACKEND or pi)")
    p.add_argument("--seed", type=int, default=0, help="twin seed (sim only)")
    p.add_argument("--without", action="append", default=[], choices=PARTS, metavar="PART",
                   help=f"sim only: leave a part out, as if unplugged ({', '.join(PARTS)}); repeatable")
    p.add_argument("--calibration", type=Path, default=None,
                   help="calibration folder (default: $STACKO_CALIBRATION_DIR or the user's data dir)")


def doctor(args: argparse.Namespace) -> int:
    from calibration.files import CalibrationDir, load_limits
    from deploy.doctor import format_check, run_doctor, to_json
    from deploy.rig import make_rig

    limits = load_limits()
    cal = CalibrationDir(args.calibration, limits)
    log = args.log or default_log_path()
    try:
        rig = make_rig(args.backend, args.seed, args.without)
    except ValueError as exc:
        print(f"stacko doctor: {exc}")
        return 2
    if not args.json:
        print(f"stacko doctor: checking every part ({'the twin' if args.backend == 'sim' else 'this Pi'}; "
              f"calibration in {cal.path})")
    try:
        results = run_doctor(rig, cal, log.parent, limits, press_buttons=args.press_buttons, speak=not args.quiet,
                             report=(lambda c: print(to_json(c), flush=True)) if args.json else
                             (lambda c: print(format_check(c), flush=True)))
    finally:
        rig.close()
    bad = [c for c in results if not c.ok]
    if not args.json:
        if bad:
            print(f"{len(bad)} problem(s): fix them as said above, then run `stacko doctor` again.")
        else:
            print("All good: the table is ready for a match.")
    return 1 if bad else 0


def register(groups) -> None:
    p = groups.command("doctor", "check every part of the table and say what to fix", doctor)
    add_rig_arguments(p)
    p.add_argument("--log", type=Path, default=None, help="match log path (disk space is checked there)")
    p.add_argument("--press-buttons", action="store_true", help="ask for each button to be pressed")
    p.add_argument("--quiet", action="store_true", help="do not play the test sentence on the speaker")
    p.add_argument("--json", action="store_true", help="one JSON line per check")
