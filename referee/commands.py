"""Subcommands of the referee package: `referee script`, `bench referee` (and the match loop's)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from referee.loop.demo import DemoResult


def register(groups) -> None:
    p = groups.subcommand("referee", "script", "replay a recorded match through the rules engine (JSON lines)", _script)
    p.add_argument("file", help="the script file, or - for standard input")
    groups.top.choices["referee"].description = "the rules engine"

    b = groups.subcommand("bench", "referee", "engine speed: events per second, and replaying 1,000 matches", _bench)
    b.add_argument("--games", type=int, default=2000, help="random complete games to time (default 2000)")
    b.add_argument("--matches", type=int, default=1000, help="matches in the log to replay and verify (default 1000)")
    b.add_argument("--seed", type=int, default=1)
    register_loop(groups)
    c = groups.subcommand("calibrate", "twin-vision", "remake the twin's vision calibration shipped in calibration/twin/vision", _twin_vision)
    c.add_argument("--out", help="where to write it (default: calibration/twin/vision)")
    c.add_argument("--images", type=int, default=60)
    m = groups.subcommand("bench", "match", "whole twin matches against ground truth: agreement and latency", _bench_match)
    m.add_argument("--matches", type=int, default=3)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--players", type=int, default=3)
    m.add_argument("--max-turns", type=int, default=60)
    m.add_argument("--skill", default="average", choices=["careful", "average", "careless", "mixed"],
                   help="the players' skill; mixed: careful, average, careless in turn")
    m.add_argument("--out", help="write the per-match results here (JSON)")
    m.add_argument("--record", help="write each match's observations to this folder (for tests/loop/recorded)")
    m.add_argument("--workers", type=int, default=1, help="matches played at once, in separate processes")
    m.add_argument("--table", default="plain", choices=["plain", "checker"], help="the twin table's top (checker: a check cloth)")
    b = groups.subcommand("bench", "build", "the table's build read on the twin (stacko run's reading), some levels laid unseen", _bench_build)
    b.add_argument("--seeds", default="101-110", help="twin seeds, FIRST-LAST (default 101-110)")
    b.add_argument("--levels", type=int, default=5, help="levels laid (default 5)")
    b.add_argument("--unseen", default="2,4", help="levels laid while hands hid the tower, comma-separated ('' for none)")
    b.add_argument("--no-load-cell", action="store_true", help="the camera alone, as a table without a load cell")
    b.add_argument("--frames-per-level", type=int, default=12, help="camera frames of each level shown (0.05 s apart)")
    b.add_argument("--resting-hand-g", type=float, default=0.0,
                   help="a hand this heavy resting on the tray away from the tower in each level's second half")
    b.add_argument("--load-cell-stops-at", type=int, metavar="LEVEL",
                   help="the load cell stops answering once this level is laid (the build reads on by the camera alone)")
    b.add_argument("--out", help="write the per-build results here (JSON)")


def _script(args: argparse.Namespace) -> int:
    from referee.script import run_stream

    if args.file == "-":
        stream = sys.stdin
        stream.reconfigure(errors="replace")
        run_stream(stream, sys.stdout)
        return 0
    try:
        stream = open(args.file, encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"stacko: cannot read the script {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    with stream:
        try:
            run_stream(stream, sys.stdout)
        except OSError as exc:
            print(f"stacko: reading {args.file} failed: {exc.strerror}", file=sys.stderr)
            return 2
    return 0


def _bench(args: argparse.Namespace) -> int:
    from referee.bench import run_bench

    return run_bench(games=args.games, matches=args.matches, seed=args.seed)


def register_loop(groups) -> None:
    r = groups.command("run", "referee the real table (Pi), resuming an unfinished match from the log", _run)
    r.add_argument("--backend", choices=["pi", "replay"], help="devices: pi (default) or replay of a recorded session")
    r.add_argument("--session", help="with --backend replay: the recorded session folder")
    r.add_argument("--players", help="names in seat order, comma-separated (else from the status page)")
    r.add_argument("--log", help="the match log (SQLite; default in the user's data folder)")
    r.add_argument("--port", type=int, default=None, help="status page port (default $STACKO_PORT or 8000)")
    r.add_argument("--no-serve", action="store_true")
    r.add_argument("--vision", help="the vision calibration folder (default: the table's calibration folder)")
    r.add_argument("--max-seconds", type=float, help="stop after this long (replays)")
    d = groups.command("demo", "referee a whole match of simulated players on the digital twin", _demo)
    d.add_argument("--players", type=int, default=3, help="simulated players, 2 to 10 (default 3)")
    d.add_argument("--seed", type=int, default=1, help="the twin's seed: same seed, same match")
    d.add_argument("--fast", action="store_true", help="as fast as the machine allows, no real-time pacing")
    d.add_argument("--no-serve", action="store_true", help="no status page")
    d.add_argument("--port", type=int, default=8000, help="status page port (default 8000)")
    d.add_argument("--log", help="the match log to write (SQLite; default in the user's data folder)")
    d.add_argument("--skill", default="average", choices=["careful", "average", "careless"], help="the players' skill")
    d.add_argument("--max-turns", type=int, default=200)
    d.add_argument("--voice-dir", help="write the referee's speech as WAV files here instead of speaking")
    d.add_argument("--vision", help="a vision calibration folder (default: made from a twin kit on first run)")
    d.add_argument("--record", help="write the match's observations (readings, sensor events, truth) to this .jsonl.gz, to replay later")
    d.add_argument("--calibration", help="a whole calibration folder from `stacko calibrate` on the twin (vision, load cell, detectors)")
    d.add_argument("--quiet", action="store_true", help="print only the final JSON line")
    d.add_argument("--table", default="plain", choices=["plain", "checker"], help="the twin table's top (checker: a check cloth)")


def _bench_match(args: argparse.Namespace) -> int:
    from referee.loop.bench_match import run_bench as bench

    bench(args.matches, args.seed, args.players, args.max_turns, args.skill, args.out, args.record, args.workers, args.table)
    return 0


def _bench_build(args: argparse.Namespace) -> int:
    from referee.loop.bench_build import run_bench as bench

    try:
        first, _, last = args.seeds.partition("-")
        seeds = range(int(first), int(last or first) + 1)
        unseen = tuple(int(v) for v in args.unseen.split(",") if v.strip())
    except ValueError:
        print("stacko bench build: --seeds is FIRST-LAST (e.g. 101-110) and --unseen levels like 2,4", file=sys.stderr)
        return 2
    if not 1 <= args.levels <= 15:
        print("stacko bench build: --levels is 1 to 15 (the 45 blocks make 15 levels)", file=sys.stderr)
        return 2
    if any(not 1 <= k <= args.levels for k in unseen):
        print("stacko bench build: --unseen levels must be among the levels laid", file=sys.stderr)
        return 2
    if args.load_cell_stops_at is not None and (args.no_load_cell or not 1 <= args.load_cell_stops_at <= args.levels):
        print("stacko bench build: --load-cell-stops-at is a level laid (1 to --levels), with the load cell", file=sys.stderr)
        return 2
    if args.frames_per_level < 2:
        print("stacko bench build: --frames-per-level must be 2 or more", file=sys.stderr)
        return 2
    bench(seeds, args.levels, unseen, weighed=not args.no_load_cell, out=args.out, resting_hand_g=args.resting_hand_g,
          frames_per_level=args.frames_per_level, load_cell_silent_from=args.load_cell_stops_at)
    return 0


def _twin_vision(args: argparse.Namespace) -> int:
    from pathlib import Path

    from referee.loop.demo import SHIPPED_TWIN_VISION, make_twin_vision_calibration

    out = Path(args.out) if args.out else SHIPPED_TWIN_VISION
    make_twin_vision_calibration(out, images=args.images)
    print(f"twin vision calibration written to {out}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from referee.loop.run import RunOptions, run_table

    players = [p.strip() for p in args.players.split(",")] if args.players else None
    opts = RunOptions(backend=args.backend, players=players, log=args.log, serve=not args.no_serve,
                      vision_dir=args.vision, session_dir=args.session, max_seconds=args.max_seconds)
    if args.port is not None:
        opts.port = args.port
    return run_table(opts)


def _demo(args: argparse.Namespace) -> int:
    import json

    from referee.loop.demo import DemoOptions, run_demo

    if not 2 <= args.players <= 10:
        print("stacko demo: --players must be 2 to 10", file=sys.stderr)
        return 2
    opts = DemoOptions(players=args.players, seed=args.seed, fast=args.fast, serve=not args.no_serve,
                       port=args.port, log=args.log, skill=args.skill, max_turns=args.max_turns,
                       voice_dir=args.voice_dir, vision_dir=args.vision, calibration_dir=args.calibration, record_to=args.record, quiet=args.quiet,
                       table=args.table)
    if args.calibration:
        from calibration.files import CalibrationError
        from hardware.detectors.config import DetectorConfigError

        try:
            from referee.loop.demo import table_calibration

            table_calibration(opts, lambda s: None)
        except (CalibrationError, DetectorConfigError) as exc:
            print(f"stacko demo: the calibration folder {args.calibration} cannot be used: {exc}", file=sys.stderr)
            return 2
    result = run_demo(opts)
    if not args.quiet:
        n = len(result.checks)
        agree = sum(c.agree for c in result.checks)
        alone = sum(c.agree and c.how == "seen" for c in result.checks)
        print(f"Turns against the twin's truth: {agree}/{n} logged right, {alone}/{n} seen right by the referee alone; "
              f"questions asked: {result.questions}, turns players had to tell: {result.missed_turns}; "
              f"simulated {result.sim_s:.1f} s in {result.wall_s:.1f} s.")
    print(json.dumps(result.summary()))
    return demo_exit_status(result, args.max_turns)


def demo_exit_status(result: DemoResult, max_turns: int) -> int:
    """0 when the match ended as asked: a loser called, or the --max-turns played (a short demo
    stops there on purpose); 1 when it stopped short of both (the twin or the referee gave up)."""
    finished = result.loser is not None or result.winner is not None
    return 0 if finished or result.turns >= max_turns else 1
