"""Subcommands of the referee package: `referee script`, `bench referee` (and the match loop's)."""

from __future__ import annotations

import argparse
import sys


def register(groups) -> None:
    p = groups.subcommand("referee", "script", "replay a recorded match through the rules engine (JSON lines)", _script)
    p.add_argument("file", help="the script file, or - for standard input")
    groups.top.choices["referee"].description = "the rules engine"

    b = groups.subcommand("bench", "referee", "engine speed: events per second, and replaying 1,000 matches", _bench)
    b.add_argument("--games", type=int, default=2000, help="random complete games to time (default 2000)")
    b.add_argument("--matches", type=int, default=1000, help="matches in the log to replay and verify (default 1000)")
    b.add_argument("--seed", type=int, default=1)


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
