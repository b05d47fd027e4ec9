"""Twin runs recorded as session folders (the hardware recorder's format), and read back without MuJoCo.

```
session.json   {"version": 1, "source": "sim", "started": ..., "rates": {"imu_hz": .., "load_sps": ..}, ...}
imu.npz        t (s), accel (N,3) m/s^2, gyro (N,3) deg/s
load.npz       t, grams (N,)
frames/        000001.jpg ... and frames/frames.csv (seq,t,file)
buttons.jsonl  (empty: simulated players press no buttons)
speech.jsonl   {"t": start, "end": end, "text": ..}: when the simulated referee spoke (SpeakerShake), if enabled
truth.jsonl    {"t": .., "type": "pull"|"place"|"touch"|"knock"|"two_hands"|"push"|"collapse"|"block_shifted", ...}
events.jsonl   the referee events of the round (CONTRACT section 1 input: `stacko referee script` replays it)
```
The writer appends as it goes (sensor chunks in `*.chunks/`, merged into the .npz files on close),
so a crashed run still leaves its data readable.

Collapse truth (RULES.md section 8, "any block falls from the tower"): the twin marks a collapse as soon
as any block drops 10 mm or tips 30 degrees, which includes a block that slides off the top and stays
hanging on the tower's edge. At the end of a run the recorder asks where the moved blocks came to rest
(`blocks_off_the_tower`): the twin's collapse stays a `collapse` (with `landed`: those blocks) only if a
block of the map (not the one in hand) rests touching the table, or touching the tray while it came from
level 2 or higher, or is a bottom-level block tipped over; otherwise it is written as `block_shifted`
(`twin_type: "collapse"`), which a fair referee does not call a collapse.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SESSION_VERSION = 1


class SessionError(ValueError):
    """A session folder that cannot be read; the message says what is wrong."""


class SessionWriter:
    """Appending writer for one session folder."""

    def __init__(self, folder: Path | str, meta: dict, imu_hz: float, load_sps: float):
        self.folder = Path(folder)
        (self.folder / "frames").mkdir(parents=True, exist_ok=True)
        (self.folder / "imu.chunks").mkdir(exist_ok=True)
        (self.folder / "load.chunks").mkdir(exist_ok=True)
        self.meta = {
            "version": SESSION_VERSION,
            "source": "sim",
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "rates": {"imu_hz": imu_hz, "load_sps": load_sps},
            **meta,
        }
        self._write_meta()
        self._truth = open(self.folder / "truth.jsonl", "a", encoding="utf-8")
        (self.folder / "buttons.jsonl").touch()
        self._frames_csv = open(self.folder / "frames" / "frames.csv", "a", newline="", encoding="utf-8")
        self._frames = csv.writer(self._frames_csv)
        if self._frames_csv.tell() == 0:
            self._frames.writerow(["seq", "t", "file"])
        self._chunk = 0
        self._seq = 0

    def _write_meta(self) -> None:
        (self.folder / "session.json").write_text(json.dumps(self.meta, indent=1) + "\n", encoding="utf-8")

    def sensors(self, t_imu: np.ndarray, accel: np.ndarray, gyro: np.ndarray, t_load: np.ndarray, grams: np.ndarray) -> None:
        self._chunk += 1
        np.savez(self.folder / "imu.chunks" / f"{self._chunk:06d}.npz", t=t_imu, accel=accel, gyro=gyro)
        np.savez(self.folder / "load.chunks" / f"{self._chunk:06d}.npz", t=t_load, grams=grams)

    def frame(self, t: float, bgr: np.ndarray, quality: int = 90) -> None:
        import cv2

        self._seq += 1
        name = f"{self._seq:06d}.jpg"
        if not cv2.imwrite(str(self.folder / "frames" / name), bgr, [cv2.IMWRITE_JPEG_QUALITY, quality]):
            raise OSError(f"could not write frame {name} in {self.folder}")
        self._frames.writerow([self._seq, f"{t:.4f}", name])
        self._frames_csv.flush()

    def truth(self, events: list[dict]) -> None:
        for ev in events:
            self._truth.write(json.dumps(ev) + "\n")
        self._truth.flush()

    def rewrite_truth(self, events: list[dict]) -> None:
        """Replace the truth written so far (the collapse's label is only known once blocks rest)."""
        self._truth.close()
        with open(self.folder / "truth.jsonl", "w", encoding="utf-8") as f:
            for ev in events:
                f.write(json.dumps(ev) + "\n")
        self._truth = open(self.folder / "truth.jsonl", "a", encoding="utf-8")

    def speech(self, t: float, end: float, text: str) -> None:
        with open(self.folder / "speech.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"t": round(t, 4), "end": round(end, 4), "text": text}) + "\n")

    def referee_events(self, events: list[dict]) -> None:
        with open(self.folder / "events.jsonl", "w", encoding="utf-8") as f:
            for ev in events:
                f.write(json.dumps(ev) + "\n")

    def close(self, extra_meta: dict | None = None) -> None:
        self._truth.close()
        self._frames_csv.close()
        for name, keys in (("imu", ("t", "accel", "gyro")), ("load", ("t", "grams"))):
            merged = _merge_chunks(self.folder / f"{name}.chunks", keys)
            np.savez_compressed(self.folder / f"{name}.npz", **merged)
            for p in sorted((self.folder / f"{name}.chunks").glob("*.npz")):
                p.unlink()
            (self.folder / f"{name}.chunks").rmdir()
        if extra_meta:
            self.meta.update(extra_meta)
            self._write_meta()


def _merge_chunks(folder: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    parts = [np.load(p) for p in sorted(folder.glob("*.npz"))]
    if not parts:
        return {"t": np.zeros(0), **{k: np.zeros((0, 3)) if k in ("accel", "gyro") else np.zeros(0) for k in keys if k != "t"}}
    return {k: np.concatenate([p[k] for p in parts]) for k in keys}


FELL_ONTO = ("table", "tray")  # geoms a fallen block comes to rest on (world.py names)
TIPPED_DEG = 30.0  # a bottom-level block tilted more than this has fallen over (the twin's own tilt test)


def blocks_off_the_tower(twin) -> list[str]:
    """Names of the map's blocks (not the one in hand) that rest where only a fallen block can: on the
    table, on the tray when they came from level 2 or higher, (bottom level) tipped over, or anywhere
    beyond the tray's edge (the twin's hard pushes can fling blocks far off the table)."""
    import mujoco

    m, d = twin.model, twin.data
    half_tray = twin.config.layout.tray_mm / 2000.0
    tray_xy = d.xpos[twin.world.tray_body][:2]
    ground = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, n): n for n in FELL_ONTO}
    by_geom = {b.geom_id: b for b in twin.world.blocks if b.level is not None and b is not twin.in_hand}
    out: dict[int, str] = {}
    for c in d.contact[: d.ncon]:
        for g_block, g_other in ((c.geom1, c.geom2), (c.geom2, c.geom1)):
            b = by_geom.get(int(g_block))
            where = ground.get(int(g_other))
            if b is None or where is None:
                continue
            if where == "table" or b.level >= 2:
                out[b.index] = b.name
    for b in by_geom.values():
        if np.max(np.abs(d.xpos[b.body_id][:2] - tray_xy)) > half_tray:
            out[b.index] = b.name
        if b.level == 1:
            z = d.xmat[b.body_id].reshape(3, 3)[2, 2]
            if math.degrees(math.acos(min(1.0, abs(float(z))))) > TIPPED_DEG:
                out[b.index] = b.name
    return sorted(out.values())


def fair_truth(truth: list[dict], landed: list[str]) -> list[dict]:
    """The twin's truth with its collapse relabelled `block_shifted` when no block came off the tower."""
    out = []
    for ev in truth:
        if ev.get("type") == "collapse":
            ev = {**ev, "landed": landed} if landed else {**ev, "type": "block_shifted", "twin_type": "collapse"}
        out.append(ev)
    return out


@dataclass(frozen=True)
class SpeakerShake:
    """The referee's speaker on the table: after each pull, place or collapse it talks for a while and
    shakes the tray (added to the recorded accelerometer; the twin's physics has no speaker). Lets the
    bench check that speech is not taken for a touch, a knock or a collapse."""

    delay_s: tuple[float, float] = (0.2, 0.5)      # from the event to the first word
    duration_s: tuple[float, float] = (0.8, 2.0)
    accel_g: tuple[float, float] = (0.02, 0.3)     # peak vibration, per utterance
    tones_hz: tuple[float, float] = (80.0, 450.0)  # the table's response to the voice
    syllable_hz: float = 4.0
    words: tuple[str, ...] = ("pull", "place", "two_hands", "collapse")


class _Speech:
    def __init__(self, shake: SpeakerShake, seed: int):
        self.shake, self.rng = shake, random.Random(seed)
        self.spans: list[tuple[float, float, float, tuple]] = []  # (start, end, amplitude m/s^2, tones)

    def after(self, ev: dict) -> tuple[float, float, str] | None:
        if ev.get("type") not in self.shake.words:
            return None
        r, sh = self.rng, self.shake
        start = float(ev["t"]) + r.uniform(*sh.delay_s)
        if self.spans and start < self.spans[-1][1]:
            start = self.spans[-1][1] + 0.1  # one sentence after the other
        end = start + r.uniform(*sh.duration_s)
        tones = tuple((r.uniform(*sh.tones_hz), r.uniform(0, 2 * math.pi), r.choice((0, 1, 2))) for _ in range(3))
        self.spans.append((start, end, r.uniform(*sh.accel_g) * 9.81, tones))
        return start, end, f"{ev['type']} announced"

    def say(self, t: float, text: str) -> tuple[float, float, str]:
        """Speech at t (a bystander run's referee talking between turns), after any sentence under way."""
        start = max(t, self.spans[-1][1] + 0.1) if self.spans else t
        end = start + self.rng.uniform(*self.shake.duration_s)
        r = self.rng
        tones = tuple((r.uniform(*self.shake.tones_hz), r.uniform(0, 2 * math.pi), r.choice((0, 1, 2))) for _ in range(3))
        self.spans.append((start, end, r.uniform(*self.shake.accel_g) * 9.81, tones))
        return start, end, text

    def accel(self, t: np.ndarray) -> np.ndarray:
        out = np.zeros((len(t), 3))
        for a, b, amp, tones in self.spans:
            m = (t >= a) & (t < b)
            if not m.any():
                continue
            tt = t[m]
            env = 0.5 * (1 - np.cos(2 * np.pi * self.shake.syllable_hz * (tt - a)))
            for f, ph, axis in tones:
                out[m, axis] += amp / 3 * env * np.sin(2 * np.pi * f * tt + ph)
        return out


class TwinRecorder:
    """Feeds a `SessionWriter` from a running twin: sensors at full rate, frames at `fps`; with `speaker`,
    the referee's speech shaking the table (speech.jsonl, and added to the accelerometer).

    Pass `recorder.on_step` as the `on_step` of twin actions and `twin.step`."""

    def __init__(self, twin, writer: SessionWriter, imu_hz: float = 1000.0, load_sps: float = 320.0,
                 fps: float = 5.0, chunk_s: float = 1.0, look=None, speaker: SpeakerShake | None = None,
                 seed: int = 0):
        self.twin, self.writer = twin, writer
        self.imu_hz, self.load_sps, self.fps, self.chunk_s = imu_hz, load_sps, fps, chunk_s
        self.look = look
        self._speech = _Speech(speaker, seed) if speaker is not None else None
        self._next_imu = int(np.floor(twin.t * imu_hz)) + 1
        self._next_load = int(np.floor(twin.t * load_sps)) + 1
        self._next_frame = twin.t
        self._last_flush = twin.t
        self._truth_written = 0

    def on_step(self, twin) -> None:
        if self.fps > 0 and twin.t >= self._next_frame:
            self.writer.frame(twin.t, twin.render("top", self.look))
            self._next_frame += 1.0 / self.fps
        if twin.t - self._last_flush >= self.chunk_s:
            self.flush()

    def say(self, t: float, text: str = "the referee talks") -> None:
        """The referee speaks from t (needs a `speaker`): written to speech.jsonl and shaking the table."""
        if self._speech is None:
            raise ValueError("this recorder has no speaker")
        self.writer.speech(*self._speech.say(t, text))

    def flush(self) -> None:
        t = self.twin.t
        last_imu = int(np.floor(t * self.imu_hz + 1e-9))
        last_load = int(np.floor(t * self.load_sps + 1e-9))
        ti = np.arange(self._next_imu, last_imu + 1) / self.imu_hz
        tl = np.arange(self._next_load, last_load + 1) / self.load_sps
        if self._speech is not None:
            for ev in self.twin.truth[self._truth_written :]:
                said = self._speech.after(ev)
                if said is not None:
                    self.writer.speech(*said)
        if len(ti) or len(tl):
            accel, gyro = self.twin.imu.series(ti) if len(ti) else (np.zeros((0, 3)), np.zeros((0, 3)))
            if self._speech is not None and len(ti):
                accel = accel + self._speech.accel(ti)
            grams = self.twin.load.series(tl) if len(tl) else np.zeros(0)
            self.writer.sensors(ti, accel, gyro, tl, grams)
        self._next_imu, self._next_load = last_imu + 1, last_load + 1
        self._last_flush = t
        self.writer.truth(self.twin.truth[self._truth_written :])
        self._truth_written = len(self.twin.truth)


@dataclass
class Session:
    """A recorded session in memory (numpy and JSON only)."""

    folder: Path
    meta: dict
    imu_t: np.ndarray
    accel: np.ndarray
    gyro: np.ndarray
    load_t: np.ndarray
    grams: np.ndarray
    frames: list[tuple[int, float, str]] = field(default_factory=list)
    truth: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)

    def frame(self, i: int):
        """The i-th frame as a BGR image (OpenCV is imported only here)."""
        import cv2

        seq, t, name = self.frames[i]
        img = cv2.imread(str(self.folder / "frames" / name))
        if img is None:
            raise SessionError(f"frame {name} of {self.folder} cannot be read")
        return img

    def of_type(self, kind: str) -> list[dict]:
        return [e for e in self.truth if e.get("type") == kind]


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SessionError(f"{path.name} line {n} is not valid JSON: {exc.msg}") from None
    return out


def _read_stream(folder: Path, name: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    path = folder / f"{name}.npz"
    if path.exists():
        try:
            with np.load(path) as z:
                return {k: z[k] for k in keys}
        except (OSError, KeyError, ValueError) as exc:
            raise SessionError(f"{path} is damaged or incomplete ({exc})") from None
    chunks = folder / f"{name}.chunks"
    if chunks.is_dir():  # a run that did not close cleanly
        return _merge_chunks(chunks, keys)
    raise SessionError(f"{folder} has no {name}.npz: is it a session folder?")


def read_session(folder: Path | str) -> Session:
    """Read a session folder written by the twin (or the hardware recorder)."""
    folder = Path(folder)
    meta_path = folder / "session.json"
    if not meta_path.exists():
        raise SessionError(f"{folder} is not a session folder (no session.json)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SessionError(f"{meta_path} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    if meta.get("version") != SESSION_VERSION:
        raise SessionError(f"{folder} is a version {meta.get('version')!r} session; this reader knows version {SESSION_VERSION}")
    imu = _read_stream(folder, "imu", ("t", "accel", "gyro"))
    load = _read_stream(folder, "load", ("t", "grams"))
    frames = []
    for csv_path in (folder / "frames" / "frames.csv", folder / "frames.csv"):
        if csv_path.exists():
            with open(csv_path, newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    frames.append((int(row["seq"]), float(row["t"]), row["file"]))
            break
    return Session(folder, meta, imu["t"], imu["accel"], imu["gyro"], load["t"], load["grams"], frames,
                   _read_jsonl(folder / "truth.jsonl"), _read_jsonl(folder / "events.jsonl"))


def list_sessions(root: Path | str) -> list[Path]:
    """Session folders under `root` (itself, or any folder below it)."""
    root = Path(root)
    if (root / "session.json").exists():
        return [root]
    return sorted(p.parent for p in root.rglob("session.json"))
