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


def register(groups) -> None:
    p = groups.subcommand("sim", "kit", "write a vision kit (CONTRACT section 2) rendered by the twin", _kit)
    p.add_argument("out", help="kit folder to write")
    p.add_argument("--images", type=int, default=200, help="number of images")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same kit)")
