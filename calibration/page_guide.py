"""The guided calibration on the status page: the route's instructions and verdicts, and a "Done" button.

Why a guide of its own: a person building the calibration tower has blocks in their hands, not a keyboard,
and the tablet on the table is already where the referee talks to them. The route itself is the terminal's
(`run_guided`); this guide also prints everything, publishes the route as the table state's "calibration"
key, and waits for the table to tap "Done" (a PIN-protected `calibration_next` request naming the open
instruction) instead of Enter. On the twin the twin acts each instruction out and the page only shows it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from calibration.guided import ROUTES, TerminalGuide, route_tower
from calibration.person_time import PersonTimeModel, TimeLedger
from calibration.steps import Action, StepResult
from web_ui.actions import ActionError, check_calibration_next, parse_action
from web_ui.hub import TableHub

RECENT_LINES = 12  # the lines the referee said lately, shown on the card
# the instructions the sensor steps give (calibration/steps.py), for the estimate of the time left
SENSOR_INSTRUCTIONS = {"markers": ("place_sheet",), "imu": ("keep_still",),
                       "loadcell": ("empty_tray", "put_weight", "remove_weight", "put_block", "remove_block")}


class CalibrationHub(TableHub):
    """A TableHub that refuses, when it is tapped, a "Done" for an instruction that is not the open one (or
    that was tapped already), and the match's requests while the table calibrates; the refusal goes back to
    the tablet in words."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._tapped: set[str] = set()
        self._tap_lock = threading.Lock()

    def submit(self, action: Any, source: str = "page") -> dict:
        latest = self.latest()
        calibration = latest["report"].get("calibration") if latest else None
        checked = parse_action(action)
        if checked["action"] != "calibration_next":
            if calibration and not calibration.get("finished"):
                raise ActionError("the referee is calibrating the table: only 'Done' works until it has finished")
            return super().submit(action, source)
        with self._tap_lock:
            check_calibration_next(checked, calibration, checked["step"] in self._tapped)
            result = super().submit(action, source)
            self._tapped.add(checked["step"])
        return result


def estimate_person_s(model: PersonTimeModel, steps: tuple[str, ...], route: str = "quick", seed: int = 0,
                      levels: int | None = None) -> float:
    """The person time the route will take, from the time model (the machine's waits are not in it): the
    sensor steps' instructions, the vision step's photos and blocks, the check's test level, a verdict per step."""
    total = 0.0
    for step in steps:
        total += model.values["read_result_s"]
        for key in SENSOR_INSTRUCTIONS.get(step, ()):
            total += sum(model.instruction_s(Action(key, "")).values())
        if step == "check":
            total += sum(model.instruction_s(Action("build_level", "", data={"placed": 3, "photo": True})).values())
        if step == "vision" and route in ROUTES:
            tower, plan = route_tower(route, seed, levels)
            named = {k for k, _, _ in plan}
            shown: dict[int, int] = {}
            for k, filled, hands in plan:
                data = {"photo": True, "placed": 0 if hands else len(filled) - shown.get(k, 0)}
                shown[k] = len(filled)
                total += sum(model.instruction_s(Action("hands_over" if hands else "build_level", "", data=data)).values())
            laid_any = sum(len([b for b in tower[k - 1] if b]) for k in range(1, len(tower) + 1) if k not in named)
            total += laid_any * model.values["lay_block_s"]
    return total


class PageGuide(TerminalGuide):
    """Prints the route like TerminalGuide and publishes it to `hub` under the state's "calibration" key:
    the step, the open instruction, the verdicts so far and the person time left; waits for "Done" on the page."""

    def __init__(self, rig, interactive: bool, hub: TableHub, out: Callable[[str], None] = print,
                 ask: Callable[[str], str] = input, ledger: TimeLedger | None = None,
                 steps: tuple[str, ...] = (), expected_s: float | None = None, poll_s: float = 0.5):
        super().__init__(rig, interactive, out, ask, ledger)
        self.hub, self.steps, self.expected_s, self.poll_s = hub, tuple(steps), expected_s, poll_s
        self.heading = ""
        self.recent: list[str] = []
        self.results: list[dict] = []
        self.instruction: dict | None = None
        self.finished: bool | None = None  # None while the route runs, then whether it succeeded
        self.count = 0
        self._stop = threading.Event()

    # -- what the page shows -------------------------------------------------------------------
    def person_s(self) -> float:
        """The person time spent so far by the time model (the machine's waits left out, as in the estimate)."""
        return sum(v for row in self.ledger.steps.values() for what, v in row.items() if what not in ("machine", "learning"))

    def state(self) -> dict:
        spent = self.person_s()
        left = None if self.expected_s is None else max(0, round(self.expected_s - spent))
        return {"step": self.step, "step_no": self.steps.index(self.step) + 1 if self.step in self.steps else None,
                "steps": list(self.steps), "heading": self.heading, "instruction": self.instruction,
                "results": list(self.results), "recent": list(self.recent), "person_s": round(spent),
                "person_s_left": left, "twin": self.rig.backend == "sim", "finished": self.finished is not None,
                "ok": self.finished}

    def publish(self, say: list[str]) -> int:
        return self.hub.publish({"calibration": self.state(), "say": say})

    # -- the guide -----------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.out(text)
        line = text.strip()
        if not line:
            return
        if line.startswith("Step "):
            self.heading = line
        self.recent = (self.recent + [line])[-RECENT_LINES:]
        self.publish([line])

    def do(self, action: Action) -> None:
        self.count += 1
        key = f"{self.count}-{action.key}"
        seconds = round(sum(self.ledger.model.instruction_s(action).values()))
        twin = self.rig.backend == "sim"
        self.instruction = {"key": key, "action": action.key, "text": action.text, "seconds": seconds,
                            **({"grams": action.grams} if action.grams else {}),
                            "by": "twin" if twin else ("table" if self.interactive else "nobody")}
        self.out(f"  -> {action.text}")
        t0 = self.rig.clock.now()
        if twin:
            self.publish([action.text])
            self.rig.act(action)
            self.out("     (the twin did it)")
        elif self.interactive:
            self.out("     tap Done on the status page when done")
            self.publish([action.text])
            self.wait_done(key)
        else:
            self.publish([action.text])
        self.record(action)  # after it is done: while it is open, the time left still holds it
        self.acting_s += self.rig.clock.now() - t0
        self.instruction = None
        self.publish([])  # the page drops the instruction and its Done button while the referee measures

    def wait_done(self, key: str, timeout_s: float | None = None) -> bool:
        """Wait until the page taps Done for instruction `key` (True), or `timeout_s` passes / `stop()` (False).
        Taps for other instructions (sent before the page caught up) are dropped."""
        waited = 0.0
        while not self._stop.is_set() and (timeout_s is None or waited < timeout_s):
            action = self.hub.next_action(timeout=self.poll_s)
            waited += self.poll_s
            if action and action.get("action") == "calibration_next" and action.get("step") == key:
                return True
        return False

    def stop(self) -> None:
        self._stop.set()

    def result(self, result: StepResult) -> None:
        self.out(f"  {result.part}: {result.grade.upper()}")
        for line in result.lines:
            self.out(f"     {line}")
        self.results.append({"step": result.part, "ok": result.ok, "grade": result.grade, "lines": list(result.lines)})
        self.publish([f"{result.part}: {result.grade}"])

    def finish(self, ok: bool, text: str) -> None:
        """The route is over: the page shows the verdicts and `text`, and the match's requests work again."""
        self.finished = ok
        self.instruction = None
        self.say(text)
