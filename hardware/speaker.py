"""The referee's voice: espeak-ng behind a queue that never talks over itself.

- One utterance at a time; urgent ones (fouls, the end of a round) jump the queue.
- Muting drops speech (the status page still shows every announcement).
- Every utterance's time interval on the shared clock is kept and announced to listeners, so the
  detectors hold off while the speaker shakes the table, and the recorder writes speech.jsonl.

Voices: `EspeakVoice` plays through the sound card and blocks while speaking (the Pi); `WavVoice` writes
each utterance to a WAV file with `espeak-ng -w` and returns at once, the utterance then occupying
its duration of *clock* time, so the twin and tests run faster than real time with realistic intervals.
"""

from __future__ import annotations

import heapq
import itertools
import shutil
import subprocess
import threading
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from hardware.clock import Clock
from hardware.errors import DeviceMissing

URGENT, NORMAL = 0, 1


def _espeak() -> str:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise DeviceMissing("speaker", "espeak-ng", "the speech program espeak-ng is not installed",
                            "sudo apt install espeak-ng (deploy/dev-setup.sh and the Pi install do it)")
    return exe


class Voice(Protocol):
    realtime: bool  # True: speak() blocks for the utterance; False: it returns the duration to occupy

    def speak(self, text: str) -> float:
        """Say `text`; return its duration in seconds."""


class EspeakVoice:
    realtime = True

    def __init__(self, voice: str = "en", words_per_minute: int = 160, device: str | None = None):
        self.exe = _espeak()
        self.args = ["-v", voice, "-s", str(words_per_minute)]
        self.device = device

    def speak(self, text: str) -> float:
        import time

        t0 = time.monotonic()
        cmd = [self.exe, *self.args, "--stdout", text] if self.device else [self.exe, *self.args, text]
        if self.device:
            p1 = subprocess.Popen(cmd, stdout=subprocess.PIPE)
            p2 = subprocess.run(["aplay", "-q", "-D", self.device], stdin=p1.stdout, capture_output=True)
            p1.wait()
            failed, err = p2.returncode != 0, p2.stderr.decode(errors="replace")
        else:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            failed, err = r.returncode != 0, r.stderr
        if failed:
            raise DeviceMissing("speaker", self.device or "the default sound output", f"espeak-ng could not play: {err.strip()[:200]}",
                                "that the speaker is plugged in and selected (raspi-config > System > Audio)")
        return time.monotonic() - t0


def wav_duration(path: str | Path) -> float:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / float(w.getframerate())


class WavVoice:
    """Writes each utterance to folder/NNNN.wav (tests, headless machines, the twin)."""

    realtime = False

    def __init__(self, folder: str | Path, voice: str = "en", words_per_minute: int = 160):
        self.exe = _espeak()
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.args = ["-v", voice, "-s", str(words_per_minute)]
        self._n = itertools.count(1)
        self.files: list[Path] = []

    def speak(self, text: str) -> float:
        path = self.folder / f"{next(self._n):04d}.wav"
        r = subprocess.run([self.exe, *self.args, "-w", str(path), text], capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not path.exists():
            raise DeviceMissing("speaker", str(path), f"espeak-ng could not write the WAV file: {r.stderr.strip()[:200]}",
                                "that espeak-ng works: espeak-ng -w /tmp/t.wav hello")
        self.files.append(path)
        return wav_duration(path)


@dataclass(frozen=True)
class Utterance:
    text: str
    urgent: bool
    t0: float
    t1: float


class Speaker:
    """The queue. With a realtime voice a worker thread speaks; otherwise utterances are laid out on the
    clock: one starts when the previous has ended (`pump()`, called by `say()` and `speaking`)."""

    def __init__(self, voice: Voice, clock: Clock, muted: bool = False, max_pending: int = 8):
        self.voice, self.clock, self.muted, self.max_pending = voice, clock, muted, max_pending
        self._queue: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._lock = threading.Condition()
        self._busy_until = -float("inf")
        self._busy = False
        self.spoken: list[Utterance] = []
        self._intervals: list[tuple[float, float]] = []  # append-only, known from the start of each utterance
        self.dropped: list[str] = []
        self.errors: list[str] = []
        self.listeners: list[Callable[[Utterance], None]] = []
        self._closed = False
        self._thread: threading.Thread | None = None
        if voice.realtime:
            self._thread = threading.Thread(target=self._worker, name="speaker", daemon=True)
            self._thread.start()

    def say(self, text: str, urgent: bool = False) -> None:
        if self.muted or not text.strip():
            return
        with self._lock:
            heapq.heappush(self._queue, (URGENT if urgent else NORMAL, next(self._seq), text))
            normal = [q for q in self._queue if q[0] == NORMAL]
            if len(normal) > self.max_pending:  # a backlog of stale turn announcements: drop the oldest
                oldest = min(normal, key=lambda q: q[1])
                self._queue.remove(oldest)
                heapq.heapify(self._queue)
                self.dropped.append(oldest[2])
            self._lock.notify()
        if self._thread is None:
            self.pump()

    def pump(self) -> None:
        """Virtual voices: start every utterance whose turn has come by now."""
        if self._thread is not None:
            return
        while True:
            with self._lock:
                now = self.clock.now()
                if not self._queue or now < self._busy_until:
                    return
                prio, _, text = heapq.heappop(self._queue)
            t0 = max(now, self._busy_until)
            try:
                dur = self.voice.speak(text)
            except DeviceMissing as exc:
                self.errors.append(str(exc))
                continue
            self._busy_until = t0 + dur
            self._intervals.append((t0, t0 + dur))
            self._done(Utterance(text, prio == URGENT, t0, t0 + dur))

    def _worker(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                prio, _, text = heapq.heappop(self._queue)
                self._busy = True
            t0 = self.clock.now()
            estimate = t0 + 0.25 + len(text.split()) * 60.0 / 160.0  # hold-off starts now, not when done
            with self._lock:
                self._intervals.append((t0, estimate))
            try:
                self.voice.speak(text)
            except DeviceMissing as exc:
                self.errors.append(str(exc))
            finally:
                with self._lock:
                    self._busy = False
            t1 = self.clock.now()
            if t1 > estimate:
                with self._lock:
                    self._intervals.append((estimate, t1))
            self._done(Utterance(text, prio == URGENT, t0, t1))

    def _done(self, u: Utterance) -> None:
        self.spoken.append(u)
        for listener in self.listeners:
            listener(u)

    @property
    def speaking(self) -> bool:
        """True while an utterance is being spoken (detectors hold off)."""
        self.pump()
        with self._lock:
            return self._busy or self.clock.now() < self._busy_until

    def intervals(self) -> list[tuple[float, float]]:
        """Speaking intervals, append-only: an utterance's interval appears when it starts (a realtime
        voice's end is estimated, and extended by a further interval if it ran longer)."""
        self.pump()
        with self._lock:
            return list(self._intervals)

    def pending(self) -> list[str]:
        with self._lock:
            return [q[2] for q in sorted(self._queue)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
