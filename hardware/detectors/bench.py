"""Precision, recall and latency of each detector against truth.jsonl over recorded sessions.

Matching: each truth event may match one detection of its kind whose estimated time `t` is within the
kind's window around it; a detection that matches nothing is a false alarm. Latency is when the detector
*said* it (`evidence["detected_at"]`) minus the truth time. Touch detections that fall during a pull or
place (a player feeling for a loose block) are counted apart, not as false alarms, and said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from hardware.detectors.config import DetectorConfig
from hardware.detectors.fusion import SensorDetectors
from hardware.recorder import Session
from referee.observations import SensorEvent

TRUTH_FOR = {"lift": ("pull",), "place": ("place",), "touch": ("touch",), "knock": ("knock",), "collapse": ("collapse",),
             "collapse_off_tray": ("collapse",)}
WINDOW_S = {"lift": (-0.75, 0.75), "place": (-0.75, 0.75), "touch": (-0.3, 0.6), "knock": (-0.3, 0.3), "collapse": (-0.3, 1.0),
            "collapse_off_tray": (-0.3, 1.0)}
# "collapse_off_tray" scores the collapse detector on the collapses the issue describes: blocks leaving the
# tray (a lasting loss of weight). The twin also calls a collapse one block tipping off the top onto the tray:
# the weight stays, and to the tray sensors that is a thud like a clumsy pull's - the camera has to see it.
# Which collapses lost weight is read from the load cell at rest, long before and after (a physical fact the
# detector must find quickly, not its own output). Detections near the other collapses are not false alarms.
OFF_TRAY_G = 50.0  # the one block in hand plus two more
GAVE_UP_S = 2.0  # the longest a player feels a block before giving up on it
BENIGN_TOUCH_S = 1.0  # touches during a pull (from its start), or this close to a place/two-hands event, are that hand


def run_detectors(session: Session, cfg: DetectorConfig, chunk_s: float = 0.02) -> list[SensorEvent]:
    """Replay a session through the detectors in chunks, as the live loop would feed them."""
    return replay(session, cfg, chunk_s)[0]


FrameCheck = Callable[[float, Path], tuple]  # (frame time, image file) -> the fallen blocks it shows


def replay(session: Session, cfg: DetectorConfig, chunk_s: float = 0.02,
           frame_check: FrameCheck | None = None) -> tuple[list[SensorEvent], list[SensorEvent]]:
    """Replay a session as the live loop would: the sensors in chunks and, with `frame_check`, each
    camera frame once the sensors have been fed up to its time. Returns (sensor events, the collapses
    of sensors + camera)."""
    from hardware.detectors.camera_confirmed import CameraConfirmedCollapse

    st = session.streams()
    det = SensorDetectors(cfg)
    cam = CameraConfirmedCollapse(cfg.camera_collapse, det) if cfg.camera_collapse is not None else None
    frames = list(session.frames()) if frame_check is not None and cam is not None else []
    k = 0
    for a, b in session.speech():
        det.speaking(a, b)
    starts = [x[0] for x in (st.imu_t, st.load_t) if len(x)]
    ends = [x[-1] for x in (st.imu_t, st.load_t) if len(x)]
    if not starts:
        return [], []
    t0, t_end = min(starts), max(ends)
    edges = np.arange(t0, t_end + chunk_s, chunk_s)
    ii = np.searchsorted(st.imu_t, edges, side="right")
    li = np.searchsorted(st.load_t, edges, side="right")
    i_prev = l_prev = 0
    for edge, i, l in zip(edges, ii, li):
        new = det.feed(st.imu_t[i_prev:i], st.accel[i_prev:i], st.load_t[l_prev:l], st.grams[l_prev:l], gyro=st.gyro[i_prev:i])
        i_prev, l_prev = i, l
        if cam is not None:
            for ev in new:
                cam.sensor_event(ev)
            while k < len(frames) and frames[k][1] <= edge:
                _, ft, path = frames[k]
                k += 1
                if not cam.collapsed:
                    cam.frame(ft, frame_check(ft, path))
    for ev in det.flush():
        if cam is not None:
            cam.sensor_event(ev)
    return det.events, (cam.events if cam is not None else [])


CAMERA_ROW = "collapse+camera"  # the sensors' collapses plus the camera's fallen blocks (camera_confirmed.py)


@dataclass
class KindScore:
    kind: str
    notes: dict = field(default_factory=dict)  # extra figures for the row (the camera's time per frame)
    truth: int = 0
    tp: int = 0
    fp: int = 0
    benign: int = 0
    latencies: list[float] = field(default_factory=list)
    timing_errors: list[float] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)  # detected_at minus the detector's own event time
    impact_latencies: list[float] = field(default_factory=list)  # collapse: from the first impact after the truth time
    settled_latencies: list[float] = field(default_factory=list)  # place: when the weight settled (the place before early places)
    early: int = 0       # place: detections called early (on the quick signal)
    withdrawn: int = 0   # place: early places the settled weight withdrew (the block was still in hand)
    misses: list[tuple[str, float]] = field(default_factory=list)        # (session, truth time)
    false_alarms: list[tuple[str, float]] = field(default_factory=list)  # (session, detection time)

    @property
    def fn(self) -> int:
        return self.truth - self.tp

    def as_dict(self) -> dict:
        p = self.tp / (self.tp + self.fp) if self.tp + self.fp else None
        r = self.tp / self.truth if self.truth else None
        f1 = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
        lat = np.array(self.latencies) * 1000
        err = np.abs(np.array(self.timing_errors)) * 1000
        return {"detector": self.kind, "truth": self.truth, "tp": self.tp, "fp": self.fp, "fn": self.fn,
                "precision": _r(p), "recall": _r(r), "f1": _r(f1),
                "latency_ms_median": _r(float(np.median(lat)) if len(lat) else None, 1),
                "latency_ms_p95": _r(float(np.percentile(lat, 95)) if len(lat) else None, 1),
                "time_error_ms_median": _r(float(np.median(err)) if len(err) else None, 1),
                "delay_after_event_ms_median": _r(float(np.median(self.delays)) * 1000 if self.delays else None, 1),
                **({"latency_from_impact_ms_median": _r(float(np.median(self.impact_latencies)) * 1000, 1) if self.impact_latencies else None,
                    "latency_from_impact_ms_p95": _r(float(np.percentile(self.impact_latencies, 95)) * 1000, 1) if self.impact_latencies else None}
                   if self.kind.startswith("collapse") else {}),
                **({"touch_during_pull_not_counted": self.benign} if self.kind == "touch" else {}),
                **({"early": self.early, "early_withdrawn": self.withdrawn,
                    "settled_latency_ms_median": _r(float(np.median(self.settled_latencies)) * 1000, 1) if self.settled_latencies else None,
                    "settled_latency_ms_p95": _r(float(np.percentile(self.settled_latencies, 95)) * 1000, 1) if self.settled_latencies else None}
                   if self.kind == "place" else {}),
                **self.notes}


def _r(x, nd=4):
    return None if x is None else round(x, nd)


def score(events: Iterable[SensorEvent], truth: list[dict], scores: dict[str, KindScore] | None = None,
          label: str = "", impact_after: Callable[[float], float | None] | None = None,
          weight_lost: Callable[[float], float] | None = None) -> dict[str, KindScore]:
    """`impact_after(t)`: when the accelerometer first felt an impact after truth time t (the twin's
    collapse time is when the blocks began to move; the issue's latency is measured from the impact)."""
    scores = scores if scores is not None else {k: KindScore(k) for k in TRUTH_FOR}
    truth = not_the_pulled_block(truth)
    events = sorted(events, key=lambda e: e.t)
    hands = [(float(x.get("t_start", x["t"])) - BENIGN_TOUCH_S, float(x["t"]) + BENIGN_TOUCH_S)
             for x in truth if x.get("type") in ("pull", "place", "two_hands")]
    collapse_t = min((float(x["t"]) for x in truth if x.get("type") == "collapse"), default=None)
    for kind, sc in scores.items():
        types = TRUTH_FOR.get(kind, ("collapse",))
        # after the first collapse the round is over: later truth (a pull finishing as the tower falls) is not scored
        wanted = sorted(float(x["t"]) for x in truth if x.get("type") in types
                        and (collapse_t is None or x.get("type") == "collapse" or float(x["t"]) < collapse_t))
        det_kind = "collapse" if kind.startswith("collapse") else kind
        dets = [e for e in events if e.kind.value == det_kind and (collapse_t is None or det_kind == "collapse" or e.t < collapse_t)]
        lo, hi = WINDOW_S.get(kind, WINDOW_S["collapse"])
        if kind == "lift" and collapse_t is not None:
            # a pull still under way when the tower fell: neither scored nor a false alarm
            open_pulls = [float(x["t"]) for x in truth if x.get("type") == "pull"
                          and float(x.get("t_start", x["t"])) <= collapse_t <= float(x["t"])]
            dets = [e for e in dets if not any(p + lo <= e.t <= p + hi for p in open_pulls)]
        if kind == "collapse_off_tray":
            lost = weight_lost or (lambda t: OFF_TRAY_G)
            single = [float(x["t"]) for x in truth if x.get("type") == "collapse" and lost(float(x["t"])) < OFF_TRAY_G]
            wanted = sorted(float(x["t"]) for x in truth if x.get("type") == "collapse" and lost(float(x["t"])) >= OFF_TRAY_G)
            dets = [e for e in dets if not any(st + lo <= e.t <= st + hi for st in single)]
        sc.truth += len(wanted)
        # a pull may leave the tray's weight any time from the hand's arrival (t_start) to the block being out
        starts = {float(x["t"]): float(x["t_start"]) for x in truth if x.get("type") == "pull" and "t_start" in x}
        # a player who gives up on a block touched it from the hand's arrival (after the previous event,
        # at most GAVE_UP_S before) until letting go, which is the time the twin records
        times = sorted(float(x["t"]) for x in truth)
        gave_up = {float(x["t"]): max([t for t in times if t < float(x["t"])] + [float(x["t"]) - GAVE_UP_S])
                   for x in truth if x.get("type") == "touch" and x.get("gave_up")}
        def window(tt: float) -> tuple[float, float]:
            if kind == "lift" and tt in starts:
                return min(tt + lo, starts[tt] - 0.2), tt + hi
            if kind == "touch" and tt in gave_up:
                return max(gave_up[tt], tt - GAVE_UP_S), tt + hi
            return tt + lo, tt + hi
        pairs = sorted((abs(e.t - tt), i, j) for i, tt in enumerate(wanted) for j, e in enumerate(dets)
                       if window(tt)[0] <= e.t <= window(tt)[1])
        t_used, d_used = set(), set()
        for _, i, j in pairs:  # closest pairs first
            if i in t_used or j in d_used:
                continue
            t_used.add(i)
            d_used.add(j)
            tt, e = wanted[i], dets[j]
            sc.tp += 1
            sc.latencies.append(float(e.evidence.get("detected_at", e.t)) - tt)
            if kind.startswith("collapse") and impact_after is not None:
                hit = impact_after(tt)
                sc.impact_latencies.append(float(e.evidence.get("detected_at", e.t)) - (hit if hit is not None else tt))
            if kind == "place":
                settled = e.evidence.get("settled_at", None if e.evidence.get("early") else e.evidence.get("detected_at"))
                if settled is not None:
                    sc.settled_latencies.append(float(settled) - tt)
            sc.timing_errors.append(e.t - tt)
            sc.delays.append(float(e.evidence.get("detected_at", e.t)) - e.t)
        if kind == "place":
            sc.early += sum(1 for e in dets if e.evidence.get("early"))
            sc.withdrawn += sum(1 for e in dets if "withdrawn_at" in e.evidence)
        sc.misses += [(label, tt) for i, tt in enumerate(wanted) if i not in t_used]
        for j, e in enumerate(dets):
            if j in d_used:
                continue
            if kind == "touch" and any(a <= e.t <= b for a, b in hands):
                sc.benign += 1
            else:
                sc.fp += 1
                sc.false_alarms.append((label, e.t))
    return scores


def weight_loss_finder(load_t: np.ndarray, grams: np.ndarray) -> Callable[[float], float]:
    """Grams the tray lost in a collapse at t: the load at rest before (median over t-1.0..t-0.2) minus
    after (t+1.5..t+2.5, or the session's last half second if it ends sooner)."""

    def lost(t: float) -> float:
        before = grams[(load_t >= t - 1.0) & (load_t < t - 0.2)]
        after_mask = (load_t >= t + 1.5) & (load_t < t + 2.5)
        if after_mask.sum() < 10:
            after_mask = load_t >= max(t + 0.3, load_t[-1] - 0.5) if len(load_t) else after_mask
        after = grams[after_mask]
        if len(before) == 0 or len(after) == 0:
            return OFF_TRAY_G  # cannot tell: count it
        return float(np.median(before) - np.median(after))

    return lost


def not_the_pulled_block(truth: list[dict]) -> list[dict]:
    """The twin marks a collapse when any block drops 10 mm, including the block a player is pulling out
    of a high level (it drops onto the hand). Such a 'collapse' whose only fallen block is the block of a
    pull in progress is a pull, not a collapse: it is relabelled `pulled_block_drop` (not scored) - unless
    other blocks came to rest off the tower (`landed`, recorded since the truth criterion): then the tower
    fell as the block came out."""
    pulls = [x for x in truth if x.get("type") == "pull"]
    out = []
    for x in truth:
        if x.get("type") == "collapse" and x.get("blocks") and len(x["blocks"]) == 1 and len(x.get("landed") or []) <= 1:
            t = float(x["t"])
            if any(p.get("block") == x["blocks"][0] and float(p.get("t_start", p["t"])) - 0.1 <= t <= float(p["t"]) + 0.5
                   for p in pulls):
                x = {**x, "type": "pulled_block_drop"}
        out.append(x)
    return out


IMPACT_G = 0.3  # what counts as the impact when measuring collapse latency (blocks hitting tray or table)


def impact_finder(imu_t: np.ndarray, accel: np.ndarray, within_s: float = 1.0) -> Callable[[float], float | None]:
    from hardware.detectors.imu import Vibration

    vib = Vibration(0.05).process(imu_t, accel) if len(imu_t) else np.zeros(0)

    def impact_after(t: float) -> float | None:
        m = np.flatnonzero((imu_t >= t - 0.05) & (imu_t <= t + within_s) & (vib >= IMPACT_G))
        return float(imu_t[m[0]]) if len(m) else None

    return impact_after


def find_sessions(root: str | Path) -> list[Path]:
    root = Path(root)
    if (root / "session.json").is_file():
        return [root]
    import os

    found = []
    for dirpath, _dirs, files in os.walk(root, followlinks=True):  # sets may be gathered with symlinks
        if "session.json" in files and "truth.jsonl" in files:
            found.append(Path(dirpath))
    return sorted(found)


def bench(sessions: list[Path], cfg: DetectorConfig, camera: bool = True) -> tuple[dict[str, KindScore], int]:
    """Score every detector over the sessions; with `camera` (and frames recorded, and the twin's vision
    calibration), also the collapse detector of sensors + camera (row `CAMERA_ROW`)."""
    scores = {k: KindScore(k) for k in TRUTH_FOR}
    checker = None
    if camera:
        try:
            checker = twin_frame_checker()
        except Exception as exc:  # noqa: BLE001 - the sensor rows still stand without the camera's
            import sys

            print(f"bench detectors: no {CAMERA_ROW} row: the twin's vision calibration cannot be used ({exc})", file=sys.stderr)
    fused = {CAMERA_ROW: KindScore(CAMERA_ROW)}
    camera_called: list[SensorEvent] = []
    frame_gaps: list[float] = []
    speech_s = 0.0
    seconds = 0.0
    for folder in sessions:
        s = Session(folder)
        check = checker(s) if checker is not None and any(True for _ in s.frames()) else None
        if check is not None:
            frame_gaps += np.diff([ft for _, ft, _ in s.frames()]).tolist()
        speech_s += sum(b - a for a, b in s.speech())
        events, collapses = replay(s, cfg, frame_check=check)
        st = s.streams()
        label = _label(folder, sessions)
        hits, lost = impact_finder(st.imu_t, st.accel), weight_loss_finder(st.load_t, st.grams)
        score(events, s.truth(), scores, label, hits, lost)
        if check is not None:
            score(collapses, s.truth(), fused, label, hits, lost)
            camera_called += [e for e in collapses if "camera_t" in e.evidence]
        if len(st.load_t):
            seconds += float(st.load_t[-1] - st.load_t[0])
    if checker is not None and checker.frames:
        after_thud = [float(e.evidence["detected_at"]) - float(e.evidence["impact_t"]) for e in camera_called if "impact_t" in e.evidence]
        fused[CAMERA_ROW].notes = {
            "camera_frames": checker.frames,
            "frame_interval_ms_median": round(float(np.median(frame_gaps)) * 1000, 1) if frame_gaps else None, "camera_ms_per_frame": round(1000 * checker.seconds / checker.frames, 1),
            "called_by_camera": len(camera_called), "called_by_camera_after_a_thud": len(after_thud),
            "camera_delay_after_thud_ms_median": round(float(np.median(after_thud)) * 1000, 1) if after_thud else None,
            "camera_delay_after_thud_ms_max": round(float(np.max(after_thud)) * 1000, 1) if after_thud else None}
        scores.update(fused)
    scores["knock"].notes = {**scores["knock"].notes, "speech_s": round(speech_s, 1)}  # how long the referee talked
    return scores, int(seconds)


def _label(folder: Path, sessions: list[Path]) -> str:
    """The session's name, with its parent's when several sets hold runs of the same name."""
    names = [p.name for p in sessions]
    return f"{folder.parent.name}/{folder.name}" if names.count(folder.name) > 1 else folder.name


TWIN_VISION = Path(__file__).resolve().parents[2] / "calibration" / "twin" / "vision"  # the shipped twin calibration


def place_level_at(start_map: list, changes: Iterable[dict]) -> int:
    """The level the next block goes on (`Tower.place_level`, the engine's own rule), from the tower
    as a session's map starts it (names per level, bottom first) and the truth's pulls and places
    since. The fallen-block check masks the tower up to there, as the live loop's watch does
    (`FallenWatch.frame`); one level higher on a top not yet full hides a block that slid off it
    onto the tray beside the tower."""
    from referee.blocks import Block
    from referee.tower import Tower

    tower = Tower.build([[Block.parse(n) if n else None for n in row] for row in start_map])
    for e in changes:
        if e["type"] == "pull":
            tower = tower.without(int(e["level"]), int(e["slot"]))
        elif e["type"] == "place":
            tower = tower.with_block(int(e["level"]), int(e["slot"]), Block.parse(e["block"]))
    return tower.place_level()


class twin_frame_checker:
    """Per session, a frame check with the twin's vision calibration: the fallen blocks in a recorded
    frame (vision/fallen.py), the tower's top taken from the session's map (what the referee's own map
    knows: the levels at the start and every block placed since). Counts frames and time spent."""

    def __init__(self, vision_dir: Path = TWIN_VISION, fallen_cfg: Path | None = None):
        from vision.fallen import load_fallen_config
        from vision.reader import load_pipeline

        self.pipeline = load_pipeline(vision_dir)
        self.cfg = load_fallen_config(fallen_cfg)
        self.frames, self.seconds = 0, 0.0

    def __call__(self, session: Session) -> FrameCheck:
        import bisect
        import functools
        import time

        start_map = session.meta.get("tower") or [["red-1"] * 3] * 18  # (no map recorded: 18 full levels)
        changes = sorted((x for x in session.truth() if x.get("type") in ("pull", "place") and "level" in x),
                         key=lambda x: float(x["t"]))
        times = [float(x["t"]) for x in changes]
        block_h = float(self.pipeline.tray.block_mm[2])

        @functools.cache
        def level_after(n: int) -> int:  # (the map replayed once per change, not once per frame)
            return place_level_at(start_map, changes[:n])

        def check(t: float, path: Path) -> tuple:
            level = level_after(bisect.bisect_right(times, t))
            start = time.perf_counter()
            try:
                return self.fallen(path, level * block_h)
            finally:
                self.frames += 1
                self.seconds += time.perf_counter() - start

        return check

    def fallen(self, path: Path, z_top_mm: float) -> tuple:
        import cv2

        from vision.fallen import fallen_blocks_in_frame
        from vision.tray import TrayNotFound

        image = cv2.imread(str(path))
        if image is None:
            return ()  # an unreadable frame shows nothing
        try:
            return fallen_blocks_in_frame(self.cfg, self.pipeline, image, z_top_mm)
        except TrayNotFound:
            return ()
