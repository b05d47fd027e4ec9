"""Session folders: every raw stream of a match, so any real match can be replayed through the detectors.

Format (the twin writes the same, see docs/hardware.md):
    session.json   {"version": 1, "source": "pi"|"sim"|"replay", "started": "<iso time>",
                    "rates": {"imu_hz": .., "load_sps": ..}, ...}
    imu.npz        t (float64 s), accel (N,3) m/s^2, gyro (N,3) deg/s      (np.savez_compressed)
    load.npz       t, grams (N,)
    frames/        000001.jpg ... and frames.csv (seq,t,file)
    buttons.jsonl  {"t": .., "button": "red"}
    speech.jsonl   {"t": start, "end": end, "text": ..}   (when the referee's speaker talked; optional)
    truth.jsonl    (twin only) {"t": .., "type": "pull"|"place"|"touch"|"knock"|"two_hands"|"collapse", ...}

While recording, IMU and load samples go to numbered chunk files (imu.parts/000001.npz, ...) written as
they fill, so a crash loses at most one chunk; `close()` merges them into imu.npz/load.npz. The reader
also merges chunks left behind by a crash.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

FORMAT_VERSION = 1


class SessionError(ValueError):
    """A session folder that cannot be read, said in words a player understands."""


@dataclass
class Streams:
    """Timestamped IMU and load streams (as recorded)."""

    imu_t: np.ndarray
    accel: np.ndarray
    gyro: np.ndarray
    load_t: np.ndarray
    grams: np.ndarray


class _ChunkedArrays:
    def __init__(self, folder: Path, name: str, fields: tuple[str, ...], chunk: int):
        self.parts = folder / f"{name}.parts"
        self.final = folder / f"{name}.npz"
        self.fields, self.chunk = fields, chunk
        self.buf: dict[str, list[np.ndarray]] = {f: [] for f in fields}
        self.n = 0
        self.written = 0

    def append(self, **arrays: np.ndarray) -> None:
        n = None
        for f in self.fields:
            a = np.asarray(arrays[f], dtype=np.float64)
            if n is None:
                n = len(a)
            elif len(a) != n:
                raise ValueError(f"{f} has {len(a)} rows, expected {n}")
            self.buf[f].append(a)
        self.n += n or 0
        if self.n >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if self.n == 0:
            return
        self.parts.mkdir(exist_ok=True)
        self.written += 1
        tmp = self.parts / f"{self.written:06d}.tmp.npz"
        np.savez_compressed(tmp, **{f: np.concatenate(self.buf[f]) for f in self.fields})
        tmp.rename(self.parts / f"{self.written:06d}.npz")
        self.buf = {f: [] for f in self.fields}
        self.n = 0

    def finish(self) -> None:
        self.flush()
        merged = _merge(self.final, self.parts, self.fields)
        tmp = self.final.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, **merged)
        tmp.rename(self.final)
        if self.parts.exists():
            shutil.rmtree(self.parts)


def _empty(fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {f: (np.zeros(0) if f in ("t", "grams") else np.zeros((0, 3))) for f in fields}


def _merge(final: Path, parts: Path, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    pieces: list[dict[str, np.ndarray]] = []
    if final.exists():
        with np.load(final) as z:
            pieces.append({f: z[f] for f in fields})
    # leftover chunks of a run that did not close: ours (.parts) or the twin recorder's (.chunks)
    for folder in (parts, parts.with_name(parts.name.replace(".parts", ".chunks"))):
        if not folder.is_dir():
            continue
        for p in sorted(folder.glob("[0-9]*.npz")):
            if ".tmp" in p.name:
                continue
            try:
                with np.load(p) as z:
                    pieces.append({f: z[f] for f in fields})
            except (OSError, ValueError, EOFError, zipfile.BadZipFile):
                break  # a chunk cut short by the crash: the data before it is kept
    if not pieces:
        return _empty(fields)
    return {f: np.concatenate([p[f] for p in pieces]) for f in fields}


class SessionWriter:
    """Appending writer for one session folder. Use as a context manager or call `close()`."""

    def __init__(self, folder: str | Path, source: str, imu_hz: float, load_sps: float, chunk_s: float = 2.0,
                 extra: dict[str, Any] | None = None):
        if source not in ("pi", "sim", "replay"):
            raise ValueError("source must be pi, sim or replay")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = {"version": FORMAT_VERSION, "source": source,
                "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "rates": {"imu_hz": imu_hz, "load_sps": load_sps}, **(extra or {})}
        (self.folder / "session.json").write_text(json.dumps(meta, indent=1) + "\n")
        self._imu = _ChunkedArrays(self.folder, "imu", ("t", "accel", "gyro"), max(1, int(imu_hz * chunk_s)))
        self._load = _ChunkedArrays(self.folder, "load", ("t", "grams"), max(1, int(load_sps * chunk_s)))
        self._jsonl: dict[str, Any] = {}
        self._frames_csv = None
        self._frame_seq = 0

    def imu(self, t, accel, gyro) -> None:
        self._imu.append(t=np.atleast_1d(t), accel=np.atleast_2d(accel), gyro=np.atleast_2d(gyro))

    def load(self, t, grams) -> None:
        self._load.append(t=np.atleast_1d(t), grams=np.atleast_1d(grams))

    def _line(self, name: str, obj: dict[str, Any]) -> None:
        f = self._jsonl.get(name)
        if f is None:
            f = self._jsonl[name] = open(self.folder / f"{name}.jsonl", "a", encoding="utf-8")
        f.write(json.dumps(obj) + "\n")
        f.flush()

    def button(self, t: float, button: str) -> None:
        self._line("buttons", {"t": t, "button": button})

    def speech(self, t: float, end: float, text: str = "") -> None:
        self._line("speech", {"t": t, "end": end, "text": text})

    def truth(self, t: float, type: str, **info: Any) -> None:
        self._line("truth", {"t": t, "type": type, **info})

    def frame(self, t: float, image: np.ndarray, seq: int | None = None, quality: int = 90) -> str:
        import cv2

        frames = self.folder / "frames"
        if self._frames_csv is None:
            frames.mkdir(exist_ok=True)
            new = not (frames / "frames.csv").exists()
            self._frames_csv = open(frames / "frames.csv", "a", encoding="utf-8", newline="")
            if new:
                self._frames_csv.write("seq,t,file\n")
        self._frame_seq = seq if seq is not None else self._frame_seq + 1
        name = f"{self._frame_seq:06d}.jpg"
        if not cv2.imwrite(str(frames / name), image, [cv2.IMWRITE_JPEG_QUALITY, quality]):
            raise OSError(f"could not write frame {frames / name}")
        self._frames_csv.write(f"{self._frame_seq},{t!r},{name}\n")
        self._frames_csv.flush()
        return name

    def close(self) -> None:
        self._imu.finish()
        self._load.finish()
        for f in self._jsonl.values():
            f.close()
        if self._frames_csv is not None:
            self._frames_csv.close()

    def __enter__(self) -> "SessionWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Session:
    """Reader for a session folder (also one left behind by a crash)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        meta_path = self.folder / "session.json"
        if not meta_path.is_file():
            raise SessionError(f"{self.folder} is not a recorded session (no session.json)")
        try:
            self.meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SessionError(f"{meta_path} is damaged: {exc}") from exc
        if self.meta.get("version") != FORMAT_VERSION:
            raise SessionError(f"{meta_path}: session format version {self.meta.get('version')!r}, this referee reads {FORMAT_VERSION}")

    def _arrays(self, name: str, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
        try:
            data = _merge(self.folder / f"{name}.npz", self.folder / f"{name}.parts", fields)
        except (OSError, ValueError, KeyError) as exc:
            raise SessionError(f"{self.folder / (name + '.npz')} cannot be read: {exc}") from exc
        order = np.argsort(data["t"], kind="stable")
        return {f: data[f][order] for f in fields}

    def streams(self) -> Streams:
        imu = self._arrays("imu", ("t", "accel", "gyro"))
        load = self._arrays("load", ("t", "grams"))
        return Streams(imu["t"], imu["accel"], imu["gyro"], load["t"], load["grams"])

    def _jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self.folder / f"{name}.jsonl"
        if not path.exists():
            return []
        out = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                if i == len(path.read_text(encoding="utf-8").splitlines()):
                    break  # a last line cut off by a crash
                raise SessionError(f"{path} line {i} is not valid JSON")
        return out

    def buttons(self) -> list[dict[str, Any]]:
        return self._jsonl("buttons")

    def speech(self) -> list[tuple[float, float]]:
        return [(float(s["t"]), float(s["end"])) for s in self._jsonl("speech")]

    def truth(self) -> list[dict[str, Any]]:
        return self._jsonl("truth")

    def frames(self) -> Iterator[tuple[int, float, Path]]:
        csv_path = self.folder / "frames" / "frames.csv"
        if not csv_path.exists():
            return
        with open(csv_path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                yield int(row["seq"]), float(row["t"]), self.folder / "frames" / row["file"]


def is_session(folder: str | Path) -> bool:
    return (Path(folder) / "session.json").is_file()
