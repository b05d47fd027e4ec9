"""How long the guided calibration takes a person: a time model (calibration/defaults/person_time.json)
summed over the instructions a route actually gave, plus the waits on the machine it actually had.

The twin acts out every instruction in no time, so its wall time says nothing about a person at the
table; this ledger is what `stacko bench calibration` and the route's closing line report instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from calibration.files import CalibrationError
from calibration.steps import Action

DEFAULT_MODEL = Path(__file__).with_name("defaults") / "person_time.json"
_NUMBERS = ("read_instruction_s", "read_per_named_block_s", "confirm_s", "photo_s", "find_named_block_s",
            "lay_block_s", "read_result_s", "learning_slowdown_on_pi")


@dataclass(frozen=True)
class PersonTimeModel:
    """Seconds per kind of handling; `actions` maps an instruction's key to its handling on top of reading."""

    values: Mapping[str, float]
    actions: Mapping[str, float]

    @classmethod
    def load(cls, path: Path | None = None) -> "PersonTimeModel":
        path = Path(path) if path else DEFAULT_MODEL
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"cannot read the calibration time model {path}: {exc}") from exc
        values = {}
        for key in _NUMBERS:
            v = data.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise CalibrationError(f"the calibration time model {path}: '{key}' must be a number of seconds >= 0")
            values[key] = float(v)
        actions = {k: float(v) for k, v in data.get("actions", {}).items() if not k.startswith("_")}
        return cls(values, actions)

    def instruction_s(self, action: Action) -> dict[str, float]:
        """One instruction's person time, split by what it is spent on."""
        v, data = self.values, dict(action.data or {})
        if action.key not in self.actions:
            raise CalibrationError(f"the calibration time model has no time for the instruction '{action.key}'")
        blocks, any_blocks = int(data.get("placed", 0)), int(data.get("laid_any", 0))
        parts = {"reading": v["read_instruction_s"] + blocks * v["read_per_named_block_s"],
                 "handling": self.actions[action.key],
                 # a named block is found, then laid; "any block" is only laid
                 "blocks": blocks * (v["find_named_block_s"] + v["lay_block_s"]) + any_blocks * v["lay_block_s"],
                 # a photo is taken with the button press that says "done" (and the step back from the tower)
                 "confirm": v["photo_s"] if data.get("photo") else v["confirm_s"]}
        return parts


@dataclass
class TimeLedger:
    """The person time and machine waits of one route, step by step."""

    model: PersonTimeModel
    steps: dict[str, dict[str, float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {"instructions": 0, "blocks_laid": 0, "photos": 0})
    learning_s: float = 0.0  # how long the vision models learnt (on a Pi), waited for or not

    def _add(self, step: str, what: str, seconds: float) -> None:
        row = self.steps.setdefault(step, {})
        row[what] = row.get(what, 0.0) + seconds

    def instruction(self, step: str, action: Action) -> None:
        for what, seconds in self.model.instruction_s(action).items():
            self._add(step, what, seconds)
        data = action.data or {}
        self.counts["instructions"] += 1
        self.counts["blocks_laid"] += int(data.get("placed", 0)) + int(data.get("laid_any", 0))
        self.counts["photos"] += bool(data.get("photo"))

    def result(self, step: str) -> None:
        """The person reads the step's verdict."""
        self._add(step, "reading", self.model.values["read_result_s"])

    def machine(self, step: str, seconds: float) -> None:
        """The person waits while the sensors read."""
        self._add(step, "machine", max(0.0, seconds))

    def learning(self, step: str, seconds: float, on_pi: bool, overlapped_s: float) -> float:
        """The vision models learnt for `seconds` (scaled to a Pi when timed elsewhere) while the person spent
        `overlapped_s` on other instructions; the person waits for the rest. Returns that wait."""
        learn = seconds * (1.0 if on_pi else self.model.values["learning_slowdown_on_pi"])
        waited = max(0.0, learn - max(0.0, overlapped_s))
        self._add(step, "learning", waited)
        self.learning_s += learn
        return waited

    def total_s(self) -> float:
        return sum(sum(r.values()) for r in self.steps.values())

    def summary(self) -> dict[str, Any]:
        per_step = {s: round(sum(r.values()), 1) for s, r in self.steps.items()}
        waits = sum(r.get("machine", 0.0) + r.get("learning", 0.0) for r in self.steps.values())
        total = self.total_s()
        laying = self.counts["blocks_laid"] * self.model.values["lay_block_s"]
        return {"person_min": round(total / 60, 2), "person_s": round(total, 1), "of_which_waiting_s": round(waits, 1),
                "of_which_laying_blocks_s": round(laying, 1), "learning_on_pi_s": round(self.learning_s, 1),
                "per_step_s": per_step, **self.counts}

    def line(self) -> str:
        s = self.summary()
        return (f"about {s['person_min']:.1f} minutes for a person ({s['instructions']} instructions, "
                f"{s['blocks_laid']} blocks laid, {s['photos']} photos, {s['of_which_waiting_s']:.0f} s of waiting)")
