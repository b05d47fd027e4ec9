"""The referee's senses, polled: sensors -> detectors, camera -> vision, buttons and page -> session.

The same loop runs on a Pi (real devices, real clock) and on the digital twin (emulated chips,
simulated clock): it only sees the devices' interfaces. Each poll reads whatever is new, turns it
into observations, fuses them into referee events and hands those to the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from referee.events import IllegalEvent, parse_event
from referee.loop.camera_watch import CameraWatch
from referee.loop.fusion import NOBODY, OTHER_BLOCK, FusedEvent, Fuser, Question
from referee.loop.pulled_from import PullFrames, settle_which_spot
from referee.loop.session import RefereeSession
from referee.observations import ButtonPress, SensorEvent, TopLevelReading
from referee.tower import Tower


class TopReader(Protocol):
    """The vision pipeline as the loop sees it (vision/reader.py implements it)."""

    def read(self, image: np.ndarray, t: float, seq: int, z_hint_mm: float | None = None,
             top_names: list[str | None] | None = None) -> TopLevelReading: ...


class SensorStream(Protocol):
    """New IMU and load samples since the last call: (imu_t, accel, load_t, grams); arrays may be empty."""

    def read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


class Detectors(Protocol):
    def feed(self, imu_t=None, accel=None, load_t=None, grams=None, gyro=None) -> list[SensorEvent]: ...

    def speaking(self, t0: float, t1: float) -> None: ...


@dataclass
class LoopStats:
    frames: int = 0
    unreadable_frames: int = 0
    sensor_events: list[SensorEvent] = field(default_factory=list)
    fused: list[FusedEvent] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    refused: list[tuple[dict, str]] = field(default_factory=list)


class SensorTraces:
    """The last few seconds of the tray's sensors, kept so a collapse is logged with its traces."""

    def __init__(self, keep_s: float = 4.0, max_points: int = 400):
        self.keep_s, self.max_points = keep_s, max_points
        self.load: list[tuple[float, float]] = []
        self.accel: list[tuple[float, float]] = []

    def add(self, imu_t, accel, load_t, grams) -> None:
        if len(imu_t):
            mag = np.linalg.norm(np.asarray(accel, float), axis=1)
            self.accel += list(zip(np.asarray(imu_t, float).tolist(), mag.tolist()))
        if len(load_t):
            self.load += list(zip(np.asarray(load_t, float).tolist(), np.asarray(grams, float).tolist()))
        for series in (self.load, self.accel):
            if series:
                cut = series[-1][0] - self.keep_s
                while series and series[0][0] < cut:
                    series.pop(0)

    def around(self, t_event: float) -> dict:
        def pack(series, unit):
            step = max(1, len(series) // self.max_points)
            pts = series[::step]
            return {"t": [round(a, 4) for a, _ in pts], "v": [round(b, 3) for _, b in pts], "unit": unit}

        return {"traces": {"load_g": pack(self.load, "g"), "accel_ms2": pack(self.accel, "m/s^2")},
                "t_event": round(t_event, 4)}


class TableLoop:
    LEVEL_MM = 15.0

    def __init__(
        self,
        session: RefereeSession,
        fuser: Fuser,
        reader: TopReader | None,
        camera: Any | None,
        sensors: SensorStream | None,
        detectors: Detectors | None,
        clock: Any,
        frame_period_s: float = 0.1,
        busy_frame_period_s: float | None = None,
        buttons: Any | None = None,
        speaker: Any | None = None,
        on_question: Callable[[Question], str | list[dict] | None] | None = None,
        on_frame: Callable[[Any, TopLevelReading | None], None] | None = None,
        observer: Callable[[str, Any], None] | None = None,
        fallen: Any | None = None,
        spot_source: Callable[[Question], tuple[str | None, dict]] | None = None,
        blind_after_s: float | None = 5.0,
    ):
        self.session = session
        self.fuser = fuser
        self.reader = reader
        self.camera = camera
        self.sensors = sensors
        self.detectors = detectors
        self.clock = clock
        self.frame_period_s = frame_period_s
        self.busy_frame_period_s = busy_frame_period_s or frame_period_s  # while a pull is under way
        self.buttons = buttons
        self.speaker = speaker
        self.on_question = on_question
        self.on_frame = on_frame
        self.observer = observer  # sees every observation (referee.loop.recorded writes them down)
        self.spot_source = spot_source  # replays: where the live camera saw a pulled block stick out
        self.fallen = fallen  # FallenWatch: blocks lying beside the tower (a collapse the sensors cannot call)
        self.next_frame_t = clock.now()
        # an unreadable frame goes to the console once per reason; a run of them `blind_after_s`
        # long (frame time) is told to the table, and so is its end (`camera_watch`)
        self.camera_watch = CameraWatch(session, blind_after_s)
        self.stats = LoopStats()
        self._spoken_upto = 0
        self.traces = SensorTraces()
        self._asked: tuple[str, float] | None = None
        self.open_questions: dict[str, Question] = {}  # asked on the page, by id
        self.pull_frames = PullFrames()  # frames of the pull under way: where the block stuck out
        self.early_qids: set[str] = set()  # questions whose call was announced before their answer
        self.deferred: list[Question] = []  # questions about play after such a call, asked once it is answered
        self._last_image = None
        self.session.on_answer = self._on_answer
        self.session.on_collapse_report = self.report_collapse

    # -- one poll -------------------------------------------------------------------------------
    def poll(self) -> None:
        if self.deferred and self.session.early is None:
            self._ask_deferred()
        rnd = self.session.round
        if rnd is None or rnd.over:
            self._page()  # an Undo of the call that ended the round (a knock taken for a collapse)
            return
        self._sensors()
        now = self.clock.now()
        if self.camera is not None and now >= self.next_frame_t:
            busy = self.fuser.pull is not None
            self.next_frame_t = now + (self.busy_frame_period_s if busy else self.frame_period_s)
            self._frame()
        self._buttons()
        self._page()
        self.session.tick()

    def _sensors(self) -> None:
        if self.sensors is None or self.detectors is None:
            return
        if self.speaker is not None:  # the referee's own voice shakes the table: hold-off
            intervals = self.speaker.intervals()
            for t0, t1 in intervals[self._spoken_upto:]:
                self.detectors.speaking(t0, t1)
            self._spoken_upto = len(intervals)
        gyro = None
        if hasattr(self.sensors, "read_full"):  # the touch detector also uses the gyro
            batch, load_t, grams = self.sensors.read_full()
            imu_t, accel, gyro = batch.t, batch.accel, batch.gyro
        else:
            imu_t, accel, load_t, grams = self.sensors.read()
        self.traces.add(imu_t, accel, load_t, grams)
        events = self.detectors.feed(imu_t=imu_t, accel=accel, load_t=load_t, grams=grams, gyro=gyro)
        for ev in events:
            self.stats.sensor_events.append(ev)
            if self.observer is not None:
                self.observer("sensor", ev)
            if self.fallen is not None:
                self.fallen.sensor_event(ev)
            self._submit_all(self.fuser.on_sensor(ev, self.session.play_round))

    def _frame(self) -> None:
        frame = self.camera.read()
        rnd = self.session.play_round
        z_hint = rnd.tower.top_level * self.LEVEL_MM if rnd is not None else None
        top_names = rnd.tower.names()[-1] if rnd is not None and rnd.tower.top_level else None
        reading: TopLevelReading | None = None
        if self.reader is not None:
            try:
                reading = self.reader.read(frame.image, frame.t, frame.seq, z_hint, top_names)
            except Exception as exc:  # an unreadable frame is reported and skipped, never fatal
                self.stats.unreadable_frames += 1
                reason = str(exc) or type(exc).__name__
                if self.observer is not None:
                    self.observer("unreadable", (frame.t, reason))
                self.camera_watch.unreadable(frame.t, frame.seq, reason)
            else:
                self.camera_watch.readable(frame.t)
        self.stats.frames += 1
        if self.observer is not None and reading is not None:
            self.observer("frame", reading)
        if self.on_frame is not None:
            self.on_frame(frame, reading)
        self._last_image = frame.image
        if self.fuser.pull is not None or (reading is not None and reading.hands):
            self.pull_frames.add(frame.t, frame.image)
        if reading is not None:  # uncertain readings still show the hands
            self.fuser.asking_about_the_place = self._asking_about_the_place()
            self._submit_all(self.fuser.on_frame(reading, self.session.play_round))
        now_rnd = self.session.play_round
        if self.fallen is not None and now_rnd is not None and not now_rnd.over:
            seen = self.fallen.frame(frame.t, frame.image, now_rnd.tower.place_level(), self.session.round_no, self.clock.now())
            if seen is not None:
                self.stats.sensor_events.append(seen)
                if self.observer is not None:
                    self.observer("sensor", seen)
                self._submit_all(self.fuser.on_sensor(seen, self.session.play_round))
        if self.fuser.pull is None and not (reading is not None and reading.hands):
            self.pull_frames.clear()

    def _page(self) -> None:
        """Requests from the page; after an Undo the fuser starts afresh from what the camera sees."""
        for report in self.session.poll_page():
            if isinstance(report, dict) and "undone" in report:
                self.fuser.reset()
                self.open_questions.clear()
                self.deferred.clear()

    def _buttons(self) -> None:
        if self.buttons is None:
            return
        for press in self.buttons.read():
            if self.observer is not None:
                self.observer("button", press)
            self.handle_button(press)

    def handle_button(self, press: ButtonPress) -> None:
        rnd = self.session.round
        if rnd is None or rnd.over:
            return
        if press.button in ("red", "yellow", "green", "blue"):
            self.session.name_color(press.button)

    # -- results --------------------------------------------------------------------------------
    def _submit_all(self, outputs) -> dict:
        """Each event submitted, each question asked, in order; the last event's report ({}: none)."""
        report: dict = {}
        for out in outputs:
            if isinstance(out, Question):
                self._ask(out)
                continue
            report = self._submit(out)
        return report

    def _ask(self, question: Question) -> None:
        """Put the fuser's question on the page (and the speaker); a player may answer it there,
        with the buttons, or (on the twin) `on_question` answers as a player would. Which of two
        identical blocks was pulled is first looked for in the frames of the pull."""
        if self._settle_from_frames(question):
            return
        if question.context.get("preferred") in question.options:
            # The frames do not show it, and only one of the places is a legal pull: the referee
            # gives the player the benefit of the doubt rather than stop the game to ask.
            self._answer_itself(question, question.context["preferred"],
                                {"source": "referee: the legal one of the places that hold this block",
                                 "other_places": [o for o in question.options if o != question.context["preferred"]]})
            return
        self._put_to_table(question)

    def _put_to_table(self, question: Question) -> None:
        """The question goes on the page. When every answer to "which of its places?" leads to the
        same decision, the call is announced first, at once; the answer then logs the events."""
        if self.session.early is not None:
            # The last call was announced before its question was answered: play judged since is
            # held, and so is a question about it (the map it was read against may be the other).
            self.deferred.append(question)
            return
        now = self.clock.now()
        if self._asked is not None and self._asked[0] == question.text and now - self._asked[1] < 5.0:
            return  # asked a moment ago and still waiting for the answer: not again
        self._asked = (question.text, now)
        self.stats.questions.append(question)
        qid = f"q{len(self.stats.questions)}"
        self.open_questions = {qid: question}  # a newer question replaces an unanswered one
        labels = self._labels(question)
        text = question.text
        early = self._same_decision(question)
        if early is not None:
            lines, provisional, option, urgent = early
            self.early_qids.add(qid)
            self.session.announce_early(qid, lines, provisional, option, urgent=urgent)
            who = question.context.get("player")
            if who and " was pulled: " in text:  # the call has moved on to the next player: name the puller
                text = text.replace(" was pulled: ", f" did {who} pull: ", 1)
        self.session.ask(qid, text, list(question.options), labels)
        reply = self.on_question(question) if self.on_question is not None else None
        if isinstance(reply, str):
            self.session.answer(qid, reply, source="player")
        elif reply:  # the player told the referee the events outright
            self.told_outright(qid, reply)

    def told_outright(self, qid: str, events: list[dict]) -> None:
        """Instead of picking an answer to question `qid`, a player told the referee the turn's events."""
        question = self.open_questions.pop(qid, None)
        early = self.session.withdraw_early(qid)
        self.session.clear_question(qid)
        for event in events:
            self._submit(FusedEvent(event, {"source": "answer to the referee's question"}))
        if early is not None:  # the play held since its call: judged after the turn told
            told = next((f"{e.get('level')}/{e.get('slot')}" for e in events if e.get("event") == "pull"), None)
            self.session.settle_early(early, told if question is not None and told in question.options else None)

    def _asking_about_the_place(self) -> bool:
        """A question about the last place is on the page and the map the senses compare with does
        not hold that place yet (not an early call's): the block on top is the one asked about."""
        q = self.session.question
        if q is None or q["id"] not in self.open_questions or q["id"] in self.early_qids:
            return False
        return self.open_questions[q["id"]].kind in ("which_block", "which_spot", "where_placed")

    def _same_decision(self, question: Question) -> tuple[list[str], Any, str, bool] | None:
        """Which of its places a block was pulled from, when every place leads the rules engine to
        the same decision (the same next turn, call, direction, waiting_for, fouls, end): the lines
        to announce at once, the round as one answer makes it, that answer, and whether it is urgent.
        None when any answer decides differently (e.g. one place is a level foul), or the decision
        waits for a color (the buttons name it for the round as logged)."""
        s = self.session
        rnd = s.round
        if question.kind != "which_spot" or len(question.options) < 2 or s.early is not None or s.held \
                or rnd is None or rnd.over or rnd.waiting_for is not None or rnd.hand is not None:
            return None
        outcomes = []
        for option in question.options:
            try:
                outs = self.fuser.answer(question, option, rnd)
            except (ValueError, KeyError, AttributeError):
                return None
            if not outs or not all(isinstance(o, FusedEvent) for o in outs):
                return None
            after, said, fouls = rnd, [], []
            try:
                for out in outs:
                    after = after.apply(parse_event(out.event))
                    report = after.report()
                    said.append(list(report["say"]))
                    fouls += report["fouls"]
            except IllegalEvent:
                return None
            report = after.report()
            decision = (report["turn"], report["direction"], report["call"], report["waiting_for"], fouls,
                        report["over"], report["winner"], report["loser"], after.hand is None, said[-1])
            outcomes.append((option, after, decision, [line for lines in said for line in lines]))
        first = outcomes[0][2]
        if any(o[2] != first for o in outcomes[1:]) or first[3] is not None or not first[-1]:
            return None
        lines = [line for line in outcomes[0][3] if all(line in o[3] for o in outcomes[1:])]
        preferred = question.context.get("preferred")
        option, provisional = next(((o, r) for o, r, _, _ in outcomes if o == preferred), outcomes[0][:2])
        return lines, provisional, option, bool(first[4]) or first[5]

    def _ask_deferred(self) -> None:
        """Questions about play made after a call announced before its answer: asked now that it is
        answered. Read against the round as the first answer made it; if the answer was the other
        place, the remaining block's place is the one the answer left."""
        swap = self.session.early_swap
        questions, self.deferred = self.deferred, []
        for q in questions:
            if q.kind == "which_spot" and swap:
                ctx = dict(q.context)
                if ctx.get("preferred") in swap:
                    ctx["preferred"] = swap[ctx["preferred"]]
                q = Question(q.text, tuple(swap.get(o, o) for o in q.options), ctx, q.kind)
            self._put_to_table(q)

    def _labels(self, question: Question) -> list[str] | None:
        """Buttons for places of several blocks say which block each holds ("blue 1, level 13, slot 1")."""
        rnd = self.session.play_round
        if question.kind != "which_spot" or question.context.get("block") or rnd is None:
            return None  # the session words each option itself
        labels = []
        for option in question.options:
            level, slot = (int(v) for v in option.split("/"))
            block = rnd.tower.at(level, slot)
            labels.append(f"{block.spoken()}, level {level}, slot {slot}" if block is not None else option)
        return labels

    def _settle_from_frames(self, question: Question) -> bool:
        rnd = self.session.play_round
        if rnd is None or self._last_image is None:
            return False
        if question.kind == "which_block":
            return self._which_block_from_frames(question, rnd)
        if question.kind != "which_spot" or question.context.get("rivals_checked"):
            return False
        option, evidence = self._where_it_came_out(question, rnd)
        rivals = self.fuser.rival_places(question, rnd.tower, option)
        if rivals:
            # The glyph was read doubtfully and the frames cannot tell its place from that of a block
            # it may be: the table is asked among them all (never the benefit of the doubt).
            self.pull_frames.clear()
            self._ask(self.fuser.which_of(question, ((option,) if option else question.options) + rivals, rnd.tower))
            return True
        along = question.context.get("pushed_along")
        if option is not None and along is not None and Tower.orientation(int(option.split("/")[0])) != along:
            # What stuck out and where the fingertips pushed disagree: the table is asked.
            self.pull_frames.clear()
            self._ask(self.fuser.which_of(question, question.options, rnd.tower))
            return True
        if option is None and along is not None:
            # The frames do not show it; the fingertips pushed the block out along one direction, and
            # only one of the places is on a level of that direction.
            matching = [o for o in question.options if Tower.orientation(int(o.split("/")[0])) == along]
            preferred = question.context.get("preferred")
            if len(matching) == 1 and preferred is not None and matching[0] != preferred:
                # The fingertips point at the place that would be a foul: no benefit of the doubt, and
                # no foul called on the hand's evidence alone: the table is asked.
                self.pull_frames.clear()
                self._ask(self.fuser.which_of(question, question.options, rnd.tower))
                return True
            if len(matching) == 1:
                self.pull_frames.clear()
                self._answer_itself(question, matching[0], {"source": "hand: the fingertips pushed the block out along "
                                                                      f"the {along} levels' blocks", "pushed_along": along})
                return True
        if option is None:
            return False
        self.pull_frames.clear()
        self._answer_itself(question, option, {"source": "camera: where the block stuck out", **evidence})
        return True

    def _where_it_came_out(self, question: Question, rnd) -> tuple[str | None, dict]:
        """Which of the question's places ("level/slot") the pull's frames show the block sticking
        out of (None: not clear)."""
        lift_t = question.context.get("lift_t")
        frames = self.pull_frames.before(lift_t + 0.2 if lift_t is not None else None)
        if self.spot_source is not None:  # a replay: what the live camera saw
            return self.spot_source(question)
        option, evidence = settle_which_spot(question, getattr(self.reader, "pipeline", None), self._last_image,
                                             frames, rnd.tower.top_level)
        if self.observer is not None:
            self.observer("spot", {"options": list(question.options), "block": question.context.get("block"),
                                   "option": option, "evidence": evidence})
        return option, evidence

    def _which_block_from_frames(self, question: Question, rnd) -> bool:
        """A block on top read doubtfully among a few candidates: where the pull's frames show a block
        sticking out of the tower names it, through the map (each candidate's places are scored)."""
        tower = rnd.tower
        names = set(question.options) - {OTHER_BLOCK}
        if len(names) > self.fuser.config.which_block_from_frames_max:
            return False  # "which block was it, of all?": too many places to tell apart from the frames
        places = tuple(f"{lv}/{s}" for lv, s, b in tower.positions() if b.name in names and lv < tower.top_level)
        if len(places) < 2:
            return False
        probe = Question(question.text, places, {**question.context, "block": None}, kind="which_spot")
        option, evidence = self._where_it_came_out(probe, rnd)
        if option is None:
            return False
        level, slot = (int(v) for v in option.split("/"))
        block = tower.at(level, slot).name
        self.pull_frames.clear()
        evidence = {"source": "camera: where the block stuck out", "block_read_as": list(question.options), **evidence}
        self._answer_itself(question, block, evidence, spot=option)
        return True

    def _answer_itself(self, question: Question, option: str, evidence: dict, spot: str | None = None) -> None:
        """The referee settles its own question (no one is asked); the evidence says how. `spot`:
        the place the frames showed, which also answers "which of its two places?" if that follows."""
        for out in self.fuser.answer(question, option, self.session.play_round):
            if isinstance(out, Question) and out.kind == "which_spot" and spot in out.options:
                self._answer_itself(out, spot, evidence)
                continue
            if isinstance(out, FusedEvent):
                out.evidence.pop("answered", None)
                out.evidence.pop("question", None)
                out.evidence.update(evidence)
                if question.context.get("after_answer") is not None:
                    out.evidence["answer"] = question.context["after_answer"]  # the table named the block
            self._submit_all([out])

    def _on_answer(self, qid: str, option: str) -> list[tuple[dict, dict]]:
        """The table answered question `qid`: the events it settles (the session logs and applies
        them), or a follow-up question (which block, which of two places) put on the page."""
        question = self.open_questions.pop(qid, None)
        rnd = self.session.play_round
        if question is None or rnd is None:
            raise ValueError("the referee no longer waits for that answer")
        if question.kind == "who_touched":
            return self._who_touched(question, option)
        self._asked = None
        if qid in self.early_qids:
            self.early_qids.discard(qid)  # the fuser has moved on to the next player's pull: it stays
        else:
            self.fuser.reset_pull()
        events: list[tuple[dict, dict]] = []
        for out in self.fuser.answer(question, option, rnd):
            if isinstance(out, Question):
                # A follow-up ("which of its two places?"): if the referee settles it itself, the turn
                # was still partly the table's answer, and its evidence says so.
                self._ask(Question(out.text, out.options, {**out.context, "after_answer": option}, out.kind))
            else:
                events.append((out.event, out.evidence))
        return events

    def _who_touched(self, question: Question, option: str) -> list[tuple[dict, dict]]:
        """After a collapse no hand was seen at: the table says who was touching the tower. The call
        stands if that is whom it blamed (or nobody was); else it is taken back and made again with
        that player's touch (RULES.md 8: the player touching the tower loses)."""
        rnd = self.session.round  # (the session checked that the option is one of the question's)
        if option == NOBODY or rnd.outcome is None or rnd.outcome.loser == option:
            return []
        evidence = {"t": question.context.get("t"), "why": "the table said this player was touching the tower"}
        undone = self.session.undo_last(source="answer: who was touching the tower", reason="the table named who touched it")
        if not undone.get("ok"):
            raise ValueError(undone.get("error", "the collapse could not be taken back"))
        return [({"event": "touch", "player": option}, evidence), ({"event": "collapse"}, evidence)]

    def report_collapse(self, evidence: dict) -> dict:
        """The table says the tower fell (a collapse entered on the page; on the twin, a player's
        report): blamed as a fall the sensors felt (`Fuser.collapse_reported`: a pull under way
        names its player, or the table is asked who was touching). Returns the collapse's report."""
        rnd = self.session.play_round
        if rnd is None or rnd.over:
            return self.session.submit({"event": "collapse"}, evidence)  # (the engine says why not)
        return self._submit_all(self.fuser.collapse_reported(self.clock.now(), rnd, dict(evidence)))

    def _submit(self, fused: FusedEvent) -> dict:
        if fused.event.get("event") == "collapse":  # the page plots what the sensors felt
            fused = FusedEvent(fused.event, {**fused.evidence, **self.traces.around(self.clock.now())}, fused.released_at)
        self.stats.fused.append(fused)
        report = self.session.submit(fused.event, fused.evidence, released_at=fused.released_at)
        if not report.get("ok"):
            self.stats.refused.append((fused.event, report.get("error", "")))
        return report
