"""The `stacko` console script: one entry point, each package registers its own subcommands.

Each package's `commands.register(groups)` only declares arguments and imports its heavy modules
inside the handler, so `stacko referee script` starts without loading OpenCV or MuJoCo.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable

COMMAND_MODULES = (
    "referee.commands",
    "hardware.commands",
    "hardware.sim.commands",
    "vision.commands",
    "web_ui.commands",
    "calibration.commands",
    "deploy.commands",
)


class CommandGroups:
    """The top-level subcommands plus shared groups (`bench`, `calibrate`, `sim`, ...)."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.top = parser.add_subparsers(dest="command", metavar="COMMAND")
        self.top.required = True
        self._groups: dict[str, argparse._SubParsersAction] = {}

    def command(self, name: str, help: str, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = self.top.add_parser(name, help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    def group(self, name: str, help: str = "") -> argparse._SubParsersAction:
        if name not in self._groups:
            p = self.top.add_parser(name, help=help or f"{name} commands", description=help or None)
            sub = p.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
            sub.required = True
            self._groups[name] = sub
        return self._groups[name]

    def group_default(self, group: str, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        """Let `stacko GROUP` with no subcommand run `handler` (e.g. guided `stacko calibrate`)."""
        self.group(group)
        parser = self.top.choices[group]
        parser.set_defaults(handler=handler)
        self._groups[group].required = False
        return parser

    def subcommand(self, group: str, name: str, help: str, handler: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = self.group(group).add_parser(name, help=help, description=help)
        p.set_defaults(handler=handler)
        return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stacko", description="Stacko Referee: the referee for Uno Stacko.")
    groups = CommandGroups(parser)
    groups.group("bench", "measure speed and accuracy")
    groups.group("calibrate", "calibrate this table (markers, load cell, IMU, vision)")
    for module in COMMAND_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue  # that part is not built yet
            raise
        mod.register(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
