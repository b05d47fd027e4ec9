"""Recorded matches: what the referee's senses reported during a twin match, replayed through the
match loop without MuJoCo, the camera or the sensors.

A recording keeps the observations (every top-level reading with its hands, every sensor event,
every button press) with their times, the players' moments (a turn starts; they check the
referee's call against the table; they report a collapse it missed) and the twin's ground truth.
Replaying it runs the same `TableLoop`, `Fuser` and `RefereeSession` as the live match, so a change
to the fusion or the rules can be checked against many matches in seconds (tests/loop).
"""

from __future__ import annotations

import gzip
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from referee.blocks import Block
from referee.observations import ButtonPress, HandReading, SensorEvent, SensorEventKind, SlotReading, TopLevelReading


class RecordingError(ValueError):
    """A recording that cannot be replayed; the message says which file and why."""


# -- encoding ------------------------------------------------------------------------------------
def encode_reading(r: TopLevelReading) -> dict:
    return {"o": r.orientation, "u": int(r.uncertain), "q": r.frame_seq,
            "s": [[s.block.name if s.block else None, round(s.confidence, 3), [[n, round(c, 3)] for n, c in s.candidates]]
                  for s in r.slots],
            "h": [[h.side, [round(v, 1) for v in h.tip_mm], round(h.confidence, 3), h.seat,
                   None if h.entry_deg is None else round(h.entry_deg, 1)] for h in r.hands]}


def decode_reading(t: float, d: dict) -> TopLevelReading:
    slots = tuple(SlotReading(Block.parse(n) if n else None, float(c), tuple((a, float(b)) for a, b in cands))
                  for n, c, cands in d["s"])
    hands = tuple(HandReading(side, (float(tip[0]), float(tip[1])), float(c), seat, entry)
                  for side, tip, c, seat, entry in d["h"])
    return TopLevelReading(d["o"], slots, hands, t, int(d["q"]), bool(d["u"]))


def encode_sensor(e: SensorEvent) -> dict:
    return {"k": e.kind.value, "t": round(e.t, 4), "c": round(e.confidence, 3),
            "e": {k: float(v) for k, v in dict(e.evidence).items()}}


def decode_sensor(t: float, d: dict) -> SensorEvent:
    """`t` is when the loop got the event; the event's own time (e.g. a collapse's impact) may be earlier."""
    return SensorEvent(SensorEventKind(d["k"]), float(d.get("t", t)), float(d["c"]), dict(d["e"]))


class ObservationWriter:
    """Writes one match's observations as gzip JSON lines: a header, then one record per line."""

    def __init__(self, path: str | Path, clock: Any = None):
        self.path = Path(path)
        self.clock = clock  # records are timed when the loop got them (a frame: when it was taken)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: list[list] = []

    def add(self, kind: str, t: float, payload: Any = None) -> None:
        self.records.append([kind, round(float(t), 4), payload])

    def observe(self, kind: str, item: Any) -> None:
        """The table loop's observer: a reading, an unreadable frame, a sensor event, a button press."""
        if kind == "frame" and item is not None:
            self.add("frame", item.t, encode_reading(item))
        elif kind == "unreadable":  # (frame time, the reader's reason): replayed as the same failure
            self.add("unreadable", item[0], item[1])
        elif kind == "sensor":
            self.add("sensor", self.clock.now() if self.clock is not None else item.t, encode_sensor(item))
        elif kind == "button":
            self.add("button", self.clock.now() if self.clock is not None else item.t, item.button)
        elif kind == "spot":
            self.add("spot", self.clock.now() if self.clock is not None else 0.0, item)

    def close(self, header: dict) -> Path:
        with gzip.open(self.path, "wt", encoding="utf-8") as f:
            f.write(json.dumps({"stacko_recorded_match": 1, **header}) + "\n")
            for rec in self.records:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        return self.path


def read_recording(path: str | Path) -> tuple[dict, list[list]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            header = json.loads(f.readline())
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, EOFError, json.JSONDecodeError) as exc:
        raise RecordingError(f"the recorded match {path} cannot be read: {exc}") from None
    if header.get("stacko_recorded_match") != 1:
        raise RecordingError(f"{path} is not a recorded match (no stacko_recorded_match header)")
    return header, records


# -- replay --------------------------------------------------------------------------------------
class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


class _Feed:
    """The recorded observations as the loop's camera, reader, sensors, detectors and buttons."""

    def __init__(self, clock: _Clock, records: list[list]):
        self.clock = clock
        self.frames = [(t, k, p) for k, t, p in records if k in ("frame", "unreadable")]
        self.sensor_events = [(t, decode_sensor(t, p)) for k, t, p in records if k == "sensor"]
        self.presses = [ButtonPress(p, t) for k, t, p in records if k == "button"]
        self.fi = self.si = self.bi = 0

    # camera + reader: the loop asks for a frame when its period is up; the recorded reading due is returned
    def read_frame(self):
        due = None
        while self.fi < len(self.frames) and self.frames[self.fi][0] <= self.clock.now() + 1e-9:
            due = self.frames[self.fi]
            self.fi += 1
        return due

    def feed(self, **_) -> list[SensorEvent]:
        out = []
        while self.si < len(self.sensor_events) and self.sensor_events[self.si][0] <= self.clock.now() + 1e-9:
            out.append(self.sensor_events[self.si][1])
            self.si += 1
        return out

    def speaking(self, t0: float, t1: float) -> None:
        """The recorded sensor events already had the speaker's hold-off applied."""

    def read_buttons(self) -> list[ButtonPress]:
        out = []
        while self.bi < len(self.presses) and self.presses[self.bi].t <= self.clock.now() + 1e-9:
            out.append(self.presses[self.bi])
            self.bi += 1
        return out


class _ReplayCamera:
    def __init__(self, feed: _Feed):
        self.feed, self.pending = feed, None

    def read(self):
        self.pending = self.feed.read_frame()
        t = self.pending[0] if self.pending else self.feed.clock.now()
        return SimpleNamespace(image=np.zeros((1, 1, 3), np.uint8), t=t, seq=-1)


class _ReplayReader:
    def __init__(self, camera: _ReplayCamera):
        self.camera = camera

    def read(self, image, t, seq, z_hint_mm=None, top_names=None) -> TopLevelReading:
        if self.camera.pending is None:
            raise ValueError("no recorded frame at this moment")
        t, kind, payload = self.camera.pending
        if kind == "unreadable":
            raise ValueError(payload)  # as the live reader failed on it
        return decode_reading(t, payload)


@dataclass
class ReplayResult:
    header: dict
    checks: list = field(default_factory=list)
    questions: int = 0
    missed_turns: int = 0
    desynced_turns: int = 0
    winner: str | None = None
    loser: str | None = None
    fouls: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    release_latency_s: list[float] = field(default_factory=list)  # the twin's release -> the referee's place
    early_calls: int = 0  # turns whose call was announced before the table answered the referee's question


def replay_recording(path: str | Path, fusion_settings: str | Path | None = None,
                     answer_delay_s: float = 0.0) -> ReplayResult:
    """Replay a recorded match through the match loop; per-turn checks against the twin's truth.

    `answer_delay_s`: the players answer the referee's questions this long after they are asked
    (0: at once, as the live twin did); they always answer before they check the referee's map."""
    from referee.loop.demo import compare_with_truth, missing_events, truth_option
    from referee.loop.fusion import Fuser, FusionConfig, SeatingPlan
    from referee.loop.session import RefereeSession
    from referee.loop.table_loop import TableLoop
    from referee.loop.wiring import default_settings
    from web_ui.store import MatchStore

    header, records = read_recording(path)
    names = list(header["players"])
    truth = list(header["truth"])
    clock = _Clock()
    feed = _Feed(clock, records)
    camera = _ReplayCamera(feed)
    with tempfile.TemporaryDirectory(prefix="stacko-replay-") as tmp:
        store = MatchStore(Path(tmp) / "replay.sqlite")
        session = RefereeSession(store, None, None, clock, echo=lambda s: None)
        config = FusionConfig.from_file(fusion_settings or default_settings("fusion.json"))
        fuser = Fuser(SeatingPlan.evenly(len(names)), config, twin_footprint())
        state = {"turn_from": 0}

        later: list[tuple[float, str, Any]] = []  # answers the players give after answer_delay_s

        def answer(question):
            part = truth[state["turn_from"]:]
            reply = truth_option(question, part) or missing_events(session.play_round, part, names)
            if answer_delay_s <= 0 or session.question is None:
                return reply
            later.append((clock.t + answer_delay_s, session.question["id"], reply))
            return None

        def deliver(upto: float) -> None:
            while later and later[0][0] <= upto + 1e-9:
                _, qid, reply = later.pop(0)
                if session.question is None or session.question["id"] != qid:
                    continue  # withdrawn or replaced meanwhile
                if isinstance(reply, str):
                    session.answer(qid, reply, source="player")
                elif reply:
                    loop.told_outright(qid, reply)

        buttons = SimpleNamespace(read=feed.read_buttons)
        spots = [p for k, t, p in records if k == "spot"]

        def spot_source(question):
            """What the live camera saw of this pull (the frames themselves are not recorded)."""
            for i, seen in enumerate(spots):
                if seen["options"] == list(question.options) and seen.get("block") == question.context.get("block"):
                    spots.pop(i)
                    return seen["option"], dict(seen.get("evidence") or {})
            return None, {}

        loop = TableLoop(session, fuser, _ReplayReader(camera), camera, SimpleNamespace(read=_no_samples), feed, clock,
                         frame_period_s=float(header["frame_period_s"]), busy_frame_period_s=float(header["busy_frame_period_s"]),
                         buttons=buttons, on_question=answer, spot_source=spot_source)
        session.start_match(names, header.get("options"))
        session.start_round(header["setup_tower"])
        result = ReplayResult(header)
        # Step through the recorded moments in time order; the loop reads a frame exactly when one
        # was recorded (its own frame pacing decided that live).
        times = sorted({float(r[1]) for r in records})
        moments = sorted(((t, k, p) for k, t, p in records if k in ("turn", "check", "collapse_report")), key=lambda m: m[0])
        frame_times = {float(t) for k, t, _ in records if k in ("frame", "unreadable")}
        mi = 0
        for t in times:
            if session.over:
                break
            clock.t = t
            deliver(t)
            while mi < len(moments) and moments[mi][0] <= t + 1e-9:
                _, kind, payload = moments[mi]
                mi += 1
                if kind == "check":
                    deliver(float("inf"))  # the players answer the referee before they check its map
                if kind == "turn":
                    state["turn_from"] = int(payload["from"])
                elif kind == "check":
                    _player_check(session, fuser, payload, truth, names, result)
                elif kind == "collapse_report" and not session.over:
                    loop.report_collapse({"source": "player report"})
            loop.next_frame_t = t if t in frame_times else float("inf")
            loop.poll()
        result.questions = len(loop.stats.questions)
        rnd = session.round
        if rnd is not None and rnd.outcome is not None:
            result.winner, result.loser = rnd.outcome.winner, rnd.outcome.loser
        turns = [{"pull": None, "events": truth[a:b]} for a, b in header["turn_spans"]]
        result.checks = compare_with_truth(store, session.match_id, turns, names)
        result.events = [e.event for e in store.iter_events(session.match_id)]
        result.early_calls = sum(e.event["event"] == "place" and "announced_before_the_answer" in (e.evidence or {})
                                 for e in store.events(session.match_id))
        from referee.loop.demo import release_latencies

        result.release_latency_s = release_latencies(truth, session.stats.timeline)
        store.close()
    return result


def replay_figures(paths, answer_delay_s: float = 0.0) -> dict:
    """Issue #6's figures over recorded matches, replayed with the current fusion: turns, turns logged
    right, turns called with no question ("seen"), questions put to the table, wrong calls (a turn the
    referee logged on its own unlike the truth), calls announced before their question's answer,
    release to announcement median and p95 (seconds; a replay answers questions at once unless
    `answer_delay_s`, so an asked turn counts until its question, or its answer that long after)."""
    results = [replay_recording(p, answer_delay_s=answer_delay_s) for p in paths]
    checks = [c for r in results for c in r.checks]
    lat = sorted(x for r in results for x in r.release_latency_s)
    return {
        "matches": len(results), "turns": len(checks), "right": sum(c.agree for c in checks),
        "alone": sum(c.how == "seen" and c.agree for c in checks),
        "questions": sum(r.questions for r in results),
        "wrong_calls": sum(c.how == "seen" and bool(c.logged) and not c.agree for c in checks),
        "announced_before_the_answer": sum(r.early_calls for r in results),
        "release_to_call_median_s": lat[len(lat) // 2] if lat else None,
        "release_to_call_p95_s": lat[int(0.95 * len(lat))] if lat else None,
    }


def twin_footprint():
    """Where the twin's tower stands on its tray (the recordings are twin matches)."""
    from referee.loop.fusion import Footprint

    tray = json.loads((Path(__file__).resolve().parents[2] / "calibration" / "twin" / "vision" / "tray.json").read_text())
    length, width = float(tray["block_mm"][0]), float(tray["block_mm"][1])
    return Footprint(tuple(float(v) for v in tray["tower_center_mm"]), max(length, 3 * width) / 2.0)


def _no_samples():
    return np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros(0)


def _player_check(session, fuser, payload: dict, truth: list[dict], names: list[str], result: ReplayResult) -> None:
    """The players compare the referee's map with the table after a turn, and tell it what it missed."""
    from referee.loop.demo import players_tell

    rnd = session.play_round
    if rnd is None or rnd.over:
        return
    if any(e["type"] == "collapse" for e in truth[:payload["truth_upto"]]):
        return  # the tower is down: the players report the fall, not the turn (demo.referee_caught_up)
    if rnd.hand is None and rnd.tower.names() == payload["table"]:
        return
    result.missed_turns += 1
    fuser.reset()
    if players_tell(session, truth[payload["turn_from"]:payload["truth_upto"]], names) == "desynced":
        result.desynced_turns += 1
