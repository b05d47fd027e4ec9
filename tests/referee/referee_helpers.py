"""Helpers that let a test read like a game at the table."""

from __future__ import annotations

import json
import subprocess
import sys

from referee.script import ScriptRunner

# Six full levels, bottom first. Highest completed level: 6, so levels 1-5 may be pulled.
TOWER = [
    ["red-1", "blue-1", "green-1"],
    ["red-2", "blue-2", "green-2"],
    ["red-3", "yellow-3", "blue-draw2"],
    ["red-skip", "green-reverse", "wild"],
    ["yellow-1", "yellow-2", "blue-4"],
    ["red-4", "green-4", "yellow-4"],
]


def setup(players=("Ana", "Ben", "Cy"), tower=None, **extra):
    event = {"event": "setup", "players": list(players), "tower": tower or TOWER}
    event.update(extra)
    return event


def pull(level, slot, **kw):
    return {"event": "pull", "level": level, "slot": slot, **kw}


def place(level, slot, **kw):
    return {"event": "place", "level": level, "slot": slot, **kw}


class Table:
    """A referee fed one event at a time; `last` is its latest answer."""

    def __init__(self, *events):
        self.runner = ScriptRunner()
        self.outputs = []
        for e in events:
            self(e)

    def __call__(self, event):
        out = self.runner.feed(event)
        self.outputs.append(out)
        return out

    @property
    def last(self):
        return self.outputs[-1]

    @property
    def round(self):
        return self.runner.match.current

    def play(self, *events):
        for e in events:
            out = self(e)
            assert out["ok"], (e, out)
        return self.last

    def turn(self, level, slot, to_level, to_slot, **kw):
        """A whole turn: pull then place."""
        self.play(pull(level, slot, **kw), place(to_level, to_slot))
        return self.last


def run_cli(*args, input=None):
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *args], input=input, capture_output=True, text=True, timeout=60
    )


def lines(stdout):
    return [json.loads(l) for l in stdout.splitlines() if l.strip()]
