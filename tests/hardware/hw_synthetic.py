"""TEST FIXTURE: a small synthetic tray-signal generator (not the twin), with noise, for detector tests.

It writes sessions in the recorder format with truth.jsonl: pulls (a touch, the block leaving, carrying,
placing with an overshoot; some clumsy with a jolt), touches (a pressing hand, wobble), table knocks
(ringing, inertial load ringing), speech (a buzzing table), and a collapse (several impacts and 180-440 g
leaving the tray). Numbers are plausible, not measured; the twin's sessions are the real benchmark.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hardware.recorder import SessionWriter

G = 9.80665
IMU_HZ, LOAD_SPS = 1000.0, 320.0


def _bump(t, t0, dur, amp):
    """A smooth raised-cosine bump from t0 lasting dur."""
    x = np.clip((t - t0) / dur, 0, 1)
    return amp * 0.5 * (1 - np.cos(2 * np.pi * x)) * ((t >= t0) & (t <= t0 + dur))


def _ramp(t, t0, dur, amp):
    return amp * np.clip((t - t0) / max(dur, 1e-3), 0, 1)


def _ring(t, t0, freq, decay, amp, phase=0.0):
    dt = t - t0
    return np.where(dt >= 0, amp * np.exp(-np.maximum(dt, 0) / decay) * np.sin(2 * np.pi * freq * dt + phase), 0.0)


class Script:
    def __init__(self, duration: float, seed: int):
        self.rng = np.random.default_rng(seed)
        self.ti = np.arange(0, duration, 1 / IMU_HZ)
        self.tl = np.arange(0, duration, 1 / LOAD_SPS) + 0.0007
        self.acc = np.zeros((len(self.ti), 3))
        self.load = np.full(len(self.tl), 250.0 + 45 * 17.0)
        self.truth: list[dict] = []
        self.speech: list[tuple[float, float]] = []
        self.mass = 1.0  # kg on the load cell, for inertial ringing

    def wobble(self, t0, dur, amp_g):
        f = self.rng.uniform(5, 12)
        env = _bump(self.ti, t0, dur, 1.0)
        for k in range(3):
            self.acc[:, k] += amp_g * G * env * np.sin(2 * np.pi * (f + 3 * k) * self.ti + self.rng.uniform(0, 6))
        self.acc += env[:, None] * self.rng.normal(0, amp_g * G * 0.5, self.acc.shape)

    def press(self, t0, dur, grams):
        self.load += _bump(self.tl, t0, dur, grams) * (1 + 0.1 * np.sin(2 * np.pi * 7 * self.tl))

    def ring(self, t0, amp_g, freq, decay, inertial=True):
        ph = self.rng.uniform(0, 6)
        for k, w in enumerate((0.4, 0.4, 1.0)):
            self.acc[:, k] += _ring(self.ti, t0, freq * (1 + 0.1 * k), decay, amp_g * G * w, ph + k)
        if inertial:
            # load cell sees m * a_z, low-passed by the ADC's filter
            self.load += _ring(self.tl, t0 + 0.004, freq, decay * 1.3, self.mass * 1000 * amp_g * 0.6, ph + 2)

    def pull(self, t0, clumsy=False):
        r = self.rng
        touch = r.uniform(0.4, 1.2)
        self.wobble(t0, touch + 0.2, r.uniform(0.01, 0.03))
        self.press(t0, touch, r.uniform(2, 12))
        tp = t0 + touch + r.uniform(0.0, 0.2)
        slide = r.uniform(0.04, 0.15)
        self.load -= _ramp(self.tl, tp - slide / 2, slide, 17.0 + r.normal(0, 0.5))
        self.truth.append({"t": float(tp), "type": "pull"})
        if clumsy:
            self.ring(tp, r.uniform(0.2, 0.7), r.uniform(20, 40), 0.05)
            self.truth[-1]["clumsy"] = True
        carry = r.uniform(0.8, 2.0)
        tpl = tp + carry
        self.wobble(tpl - 0.1, 0.5, r.uniform(0.01, 0.04))
        self.load += _ramp(self.tl, tpl - 0.05, 0.1, 17.0) + _bump(self.tl, tpl - 0.05, r.uniform(0.15, 0.4), r.uniform(5, 30))
        self.truth.append({"t": float(tpl), "type": "place"})
        return tpl + 0.6

    def touch(self, t0):
        dur = self.rng.uniform(0.3, 1.5)
        self.wobble(t0, dur, self.rng.uniform(0.015, 0.05))
        self.press(t0, dur, self.rng.uniform(8, 40))
        self.truth.append({"t": float(t0), "type": "touch"})
        return t0 + dur

    def knock(self, t0):
        self.ring(t0, self.rng.uniform(0.8, 3.0), self.rng.uniform(30, 80), self.rng.uniform(0.02, 0.05))  # as strong as the twin's knocks
        self.truth.append({"t": float(t0), "type": "knock"})
        return t0 + 0.2

    def speak(self, t0, dur):
        env = ((self.ti >= t0) & (self.ti <= t0 + dur)).astype(float)
        f = self.rng.uniform(120, 260)
        syl = 0.5 * (1 + np.sin(2 * np.pi * 4 * self.ti))
        self.acc[:, 2] += env * syl * self.rng.uniform(0.01, 0.05) * G * np.sin(2 * np.pi * f * self.ti)
        envl = ((self.tl >= t0) & (self.tl <= t0 + dur)).astype(float)
        self.load += envl * self.rng.normal(0, 1.5, len(self.tl))
        self.speech.append((float(t0), float(t0 + dur)))
        return t0 + dur

    def collapse(self, t0):
        r = self.rng
        n = r.integers(3, 10)
        times = np.sort(t0 + np.concatenate([[0.0], r.uniform(0.02, 0.6, n - 1)]))
        for ti in times:
            self.ring(ti, r.uniform(0.3, 3.0), r.uniform(25, 90), r.uniform(0.01, 0.04), inertial=True)
        lost = r.uniform(183, 438)
        start = t0 + r.uniform(0.0, 0.05)
        self.load -= _bump(self.tl, t0 - 0.05, 0.1, r.uniform(0, 40))  # the tower rocking on its edge
        self.load -= _ramp(self.tl, start, r.uniform(0.03, 0.12), lost)
        self.truth.append({"t": float(t0), "type": "collapse", "lost_g": float(lost)})
        return t0 + 1.0

    def finish(self):
        r = self.rng
        self.acc[:, 2] += G
        self.acc += r.normal(0, 0.004 * G, self.acc.shape)
        self.load += r.normal(0, 0.15, len(self.load)) + 0.5 * np.sin(2 * np.pi * self.tl / 40.0)
        gyro = r.normal(0, 0.1, self.acc.shape)
        return gyro

    def write(self, folder: Path):
        gyro = self.finish()
        with SessionWriter(folder, "sim", IMU_HZ, LOAD_SPS, extra={"generator": "tests/hardware/hw_synthetic.py"}) as w:
            for a in range(0, len(self.ti), 2000):
                w.imu(self.ti[a:a + 2000], self.acc[a:a + 2000], gyro[a:a + 2000])
            w.load(self.tl, self.load)
            for tr in sorted(self.truth, key=lambda d: d["t"]):
                w.truth(**tr)
            for a, b in self.speech:
                w.speech(a, b)
        return folder


def make_session(folder: Path, seed: int = 0, pulls: int = 6, touches: int = 4, knocks: int = 4, speech: int = 2,
                 collapse: bool = True) -> Path:
    """One synthetic session: the events in random order, a collapse at the end."""
    rng = np.random.default_rng(seed)
    kinds = ["pull"] * pulls + ["touch"] * touches + ["knock"] * knocks + ["speech"] * speech
    rng.shuffle(kinds)
    duration = 2.0 + sum({"pull": 5.0, "touch": 3.0, "knock": 2.0, "speech": 4.5}[k] for k in kinds) + 4.0
    s = Script(duration, seed)
    t = 1.5
    for k in kinds:
        if k == "pull":
            t = s.pull(t, clumsy=bool(rng.random() < 0.3))
        elif k == "touch":
            t = s.touch(t)
        elif k == "knock":
            t = s.knock(t)
        else:
            t = s.speak(t, rng.uniform(1.0, 2.5))
        t += rng.uniform(1.0, 1.8)
    if collapse:
        s.collapse(t)
    return s.write(folder)
