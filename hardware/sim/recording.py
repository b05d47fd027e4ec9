"""Twin runs recorded as session folders (the hardware recorder's format), and read back without MuJoCo.

```
session.json   {"version": 1, "source": "sim", "started": ..., "rates": {"imu_hz": .., "load_sps": ..}, ...}
imu.npz        t (s), accel (N,3) m/s^2, gyro (N,3) deg/s
load.npz       t, grams (N,)
frames/        000001.jpg ... and frames/frames.csv (seq,t,file)
buttons.jsonl  (empty: simulated players press no buttons)
truth.jsonl    {"t": .., "type": "pull"|"place"|"touch"|"knock"|"two_hands"|"push"|"collapse", ...}
events.jsonl   the referee events of the round (CONTRACT section 1 input: `stacko referee script` replays it)
```
The writer appends as it goes (sensor chunks in `*.chunks/`, merged into the .npz files on close),
so a crashed run still leaves its data readable.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
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


class TwinRecorder:
    """Feeds a `SessionWriter` from a running twin: sensors at full rate, frames at `fps`.

    Pass `recorder.on_step` as the `on_step` of twin actions and `twin.step`."""

    def __init__(self, twin, writer: SessionWriter, imu_hz: float = 1000.0, load_sps: float = 320.0,
                 fps: float = 5.0, chunk_s: float = 1.0, look=None):
        self.twin, self.writer = twin, writer
        self.imu_hz, self.load_sps, self.fps, self.chunk_s = imu_hz, load_sps, fps, chunk_s
        self.look = look
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

    def flush(self) -> None:
        t = self.twin.t
        last_imu = int(np.floor(t * self.imu_hz + 1e-9))
        last_load = int(np.floor(t * self.load_sps + 1e-9))
        ti = np.arange(self._next_imu, last_imu + 1) / self.imu_hz
        tl = np.arange(self._next_load, last_load + 1) / self.load_sps
        if len(ti) or len(tl):
            accel, gyro = self.twin.imu.series(ti) if len(ti) else (np.zeros((0, 3)), np.zeros((0, 3)))
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
