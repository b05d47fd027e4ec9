"""`stacko sim ...` and `stacko bench sim`: the digital twin's commands (MuJoCo imported in handlers)."""

from __future__ import annotations

import argparse
import json
import sys


def _kit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hardware.sim.kit import write_kit

    if args.images < 1:
        print("--images must be at least 1", file=sys.stderr)
        return 2
    labels = write_kit(Path(args.out), args.images, args.seed)
    hands = sum(v["hands"] for v in labels.values())
    print(json.dumps({"kit": str(args.out), "images": len(labels), "hands_over_tower": hands}))
    return 0


def _record(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hardware.sim.runs import record_runs

    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    summaries = record_runs(Path(args.out), args.runs, args.seed, fps=args.fps, log=lambda s: print(json.dumps(s), flush=True))
    total = {k: sum(s[k] for s in summaries) for k in ("pulls", "places", "touches", "knocks", "two_hands")}
    total["collapses"] = sum(1 for s in summaries if s["collapse_t"] is not None)
    total["runs"] = len(summaries)
    print(json.dumps({"recorded": str(args.out), **total}))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from hardware.sim.bench import bench_physics, bench_pulls, bench_pushes, bench_render, bench_stand

    if args.only_pulls and args.pulls <= 0:
        print("--only-pulls needs --pulls N", file=sys.stderr)
        return 2
    if not args.only_pulls:
        print(json.dumps(bench_physics(args.seed, args.still, args.turns)), flush=True)
        print(json.dumps(bench_render(args.seed, args.frames)), flush=True)
    if args.stand > 0:
        print(json.dumps(bench_stand(args.seed, args.stand)), flush=True)
    if args.pushes > 0:
        print(json.dumps(bench_pushes(args.seed, args.pushes)), flush=True)
    if args.pulls > 0:
        skills = ("careful", "average", "careless") if args.skill == "all" else (args.skill,)
        log = (lambda row: print(json.dumps(row), file=sys.stderr, flush=True)) if args.verbose else None
        for row in bench_pulls(args.seed, args.pulls, skills, log=log):
            print(json.dumps(row), flush=True)
    return 0


def register(groups) -> None:
    p = groups.subcommand("sim", "kit", "write a vision kit (CONTRACT section 2) rendered by the twin", _kit)
    p.add_argument("out", help="kit folder to write")
    p.add_argument("--images", type=int, default=200, help="number of images")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same kit)")

    p = groups.subcommand("sim", "record", "record self-playing twin rounds as session folders (detector benchmark data)", _record)
    p.add_argument("out", help="folder to hold run-001, run-002, ...")
    p.add_argument("--runs", type=int, default=12, help="number of rounds")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same runs)")
    p.add_argument("--fps", type=float, default=2.0, help="overhead frames per second to save (0: none)")

    p = groups.subcommand("bench", "sim", "twin speed: simulated s per wall s with sensors at full rate, ms per frame", _bench)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--still", type=float, default=5.0, help="simulated seconds of untouched tower to time")
    p.add_argument("--turns", type=int, default=3, help="pull-and-place turns to time")
    p.add_argument("--frames", type=int, default=10, help="frames per render measurement")
    p.add_argument("--stand", type=float, default=0.0, help="also check an untouched tower stands this long (60 for the issue's check)")
    p.add_argument("--pushes", type=int, default=0, help="also push this many fresh towers hard and count how many fall (20 for the issue's check)")
    p.add_argument("--pulls", type=int, default=0,
                   help="also play this many self-play pulls per skill (fresh towers of 15, 12 and 9 levels, up to 8 pulls each) "
                        "and report collapses per pull and how far the level above is dragged (median, p95 mm)")
    p.add_argument("--skill", choices=("all", "careful", "average", "careless"), default="all", help="skill(s) for --pulls")
    p.add_argument("--only-pulls", action="store_true", help="with --pulls: skip the speed and render figures")
    p.add_argument("--verbose", action="store_true", help="with --pulls: each tower's pulls on stderr")
