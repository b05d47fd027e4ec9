"""IMU + load cell -> lift, place, touch, knock, collapse (`referee.observations.SensorEvent`).

- lift / place: a settled load step of about one block (load.py).
- collapse: the load (short median + 30 ms mean) falls `drop_g` below the settled level and stays there
  `confirm_s` (longer than a knock's ringing), with an impact on the accelerometer since shortly before
  the drop began. A tower does not free-fall, so there is
  no free-fall test; a clumsy pull shakes the tray as hard as a collapse but loses one block (< 25 g), and
  blocks leaving the tray lose 180-440 g, so the load decides and the impact confirms.
- knock: a short, sharp vibration impulse with no weight step around it (the table, not the tower).
- touch: a burst above the table's background (vibration, or the tray tilting on the gyro) or a hand
  pressing on the tower, reported `touch_confirm_s` later if no lift, place or knock explains it.
While the referee's speaker talks (and `holdoff_margin_s` after) the table buzzes: vibration alone then
starts no touch (a hand pressing on the tower or tilting the tray still does; the load cell and the
gyro's low-passed tilt do not hear the voice), a knock must peak above `speech.knock_g` (louder than any
speech), and the buzz is kept out of the background estimate. Collapses are reported as always (their
evidence is the load).

Feed both streams up to the same time; load samples newer than the IMU data wait for it, unless the IMU
has gone quiet for `imu_stale_s` (lost chip), in which case the load alone decides.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from hardware.detectors.config import DetectorConfig
from hardware.detectors.imu import TiltRate, Vibration, VibrationBuffer
from hardware.detectors.load import LoadTracker
from referee.observations import SensorEvent, SensorEventKind as K


@dataclass
class _Segment:
    start: float
    last_active: float
    peak_vib: float = 0.0
    max_load_dev: float = 0.0
    steps: int = 0
    quiet_before: float = 0.0  # how long the tower had been still before it began


@dataclass
class SensorDetectors:
    cfg: DetectorConfig
    events: list[SensorEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._vib = Vibration(self.cfg.imu.highpass_window_s)
        self._buf = VibrationBuffer(keep_s=max(5.0, 2 * self.cfg.collapse.impact_lookback_s))
        self._tilt = TiltRate(self.cfg.imu.gyro_lowpass_s, self.cfg.imu.gyro_baseline_s)
        self._tiltbuf = VibrationBuffer(keep_s=5.0)
        self._tilt_bg: deque[float] = deque()
        self._tilt_bg_level = 0.0
        self._load = LoadTracker(self.cfg.load, fast_window_s=self.cfg.collapse.fast_window_s)
        self._pending: list[tuple[float, float]] = []
        self._speech: list[tuple[float, float]] = []
        self._seg: _Segment | None = None  # a touch candidate
        self._touch_quiet_until = -np.inf
        self._below_since: float | None = None
        self._armed = True
        self._settled_since: float | None = None
        self._prev_load_t: float | None = None
        self._last_step_t = -np.inf
        self._impulse: _Segment | None = None
        self._knocks: list[float] = []
        self._bg: deque[float] = deque()
        self._bg_level = 0.0
        self._bg_n = 0
        self._last_busy_t = -np.inf  # the last time something moved at the tower (touch-level activity)
        self._early_place: SensorEvent | None = None  # an early place whose settled value is still to come

    # --- inputs ------------------------------------------------------------------------------
    def new_tower(self, level_g: float | None) -> None:
        """A new tower stands on the tray (a round starts): its settled weight, as the build
        weighed it, is the load's reference, and the collapse test is armed. Without this the
        reference comes from the load itself once it has been settled a while (after a collapse,
        `rearm_stable_s`), and a lift in that while goes unreported. None: no weight known."""
        if level_g is None:
            return
        self._load.force_reference(float(level_g))
        self._armed, self._below_since, self._settled_since = True, None, None

    def speaking(self, t0: float, t1: float) -> None:
        """The referee's speaker talks from t0 to t1 (hold-off for touch/knock)."""
        self._speech.append((t0, t1 + self.cfg.speech.holdoff_margin_s))

    def held_off(self, t0: float, t1: float | None = None) -> bool:
        t1 = t0 if t1 is None else t1
        if self._speech and self._speech[0][1] < t0 - 10.0:
            self._speech = [iv for iv in self._speech if iv[1] >= t0 - 10.0]  # long past: forget
        return any(a <= t1 and t0 <= b for a, b in self._speech)

    def feed(self, imu_t=None, accel=None, load_t=None, grams=None, gyro=None) -> list[SensorEvent]:
        """New samples of either stream (numpy arrays; gyro optional, deg/s); returns the events they complete."""
        out: list[SensorEvent] = []
        if imu_t is not None and len(imu_t):
            self._buf.append(np.asarray(imu_t, float), self._vib.process(imu_t, accel))
            if gyro is not None and len(gyro) == len(imu_t):
                self._tiltbuf.append(np.asarray(imu_t, float), self._tilt.process(imu_t, gyro))
        if load_t is not None and len(load_t):
            self._pending.extend(zip(np.asarray(load_t, float).tolist(), np.asarray(grams, float).tolist()))
        latest_imu = self._buf.latest
        keep = []
        for t, g in self._pending:
            imu_ok = latest_imu is not None and t <= latest_imu
            imu_lost = latest_imu is None or (self._pending[-1][0] - latest_imu) > self.cfg.collapse.imu_stale_s
            if imu_ok or imu_lost:
                out += self._on_load(t, g, imu_lost and not imu_ok)
            else:
                keep.append((t, g))
        self._pending = keep
        self.events += out
        return out

    def first_impact(self, t0: float, t1: float, level_g: float) -> tuple[float, float] | None:
        """The first vibration of at least `level_g` between t0 and t1 (the last 5 s are kept), as
        (time, peak g up to t1); None if the tray felt none. The camera's collapse check asks this."""
        hit = self._buf.first_above(t0, t1, level_g)
        return None if hit is None else (hit, self._buf.peak(hit - 1e-9, t1))

    def flush(self) -> list[SensorEvent]:
        """End of stream: close an open activity segment."""
        out: list[SensorEvent] = []
        for t, g in self._pending:
            out += self._on_load(t, g, True)
        self._pending = []
        if self._seg is not None:
            out += self._close_segment(self._seg, self._seg.start + self.cfg.imu.touch_confirm_s)
            self._seg = None
        self.events += out
        return out

    # --- per load sample ---------------------------------------------------------------------
    def _on_load(self, t: float, g: float, imu_lost: bool) -> list[SensorEvent]:
        cfg = self.cfg
        out: list[SensorEvent] = []
        t_prev = self._prev_load_t if self._prev_load_t is not None else t - 0.01
        self._prev_load_t = t
        ref_before = self._load.reference
        step = self._load.update(t, g)
        s = self._load.smoothed

        # collapse: a lasting drop below the settled level, confirmed by an impact
        fast = self._load.fast
        if ref_before is not None and fast is not None and fast < ref_before - cfg.collapse.drop_g:
            if self._below_since is None:
                self._below_since = t
            if self._armed and t - self._below_since >= cfg.collapse.confirm_s:
                ev = self._collapse(t, ref_before - fast, imu_lost)
                if ev is not None:
                    out.append(ev)
        else:
            self._below_since = None
        if not self._armed:
            if self._load.settled:
                self._settled_since = self._settled_since if self._settled_since is not None else t
                if t - self._settled_since >= cfg.collapse.rearm_stable_s:
                    self._armed = True
                    self._load.force_reference(self._load.smoothed)
            else:
                self._settled_since = None

        if step is not None and self._armed and step.kind in ("lift", "place"):
            kind = K.LIFT if step.kind == "lift" else K.PLACE
            evidence = {"delta_g": round(step.delta_g, 2), "detected_at": step.detected_at}
            if kind is K.PLACE:
                evidence["early"] = step.early
            ev = SensorEvent(kind, step.t, 1.0, evidence)
            out.append(ev)
            self._early_place = ev if step.early else None
            self._last_step_t = step.t
            self._seg = None  # the hands' activity so far was this lift/place; what follows is new
        elif step is not None and step.kind in ("place_settled", "place_withdrawn") and self._early_place is not None:
            # the early place's settled value, for the log (no new event: the loop has the place already)
            key = "settled" if step.kind == "place_settled" else "withdrawn"
            self._early_place.evidence[f"{key}_delta_g"] = round(step.delta_g, 2)
            self._early_place.evidence[f"{key}_at"] = step.detected_at
            self._early_place = None

        # sharp impulses -> knock (unless the weight changed: then it was the tower)
        vib = self._buf.peak(t_prev, t)
        speaking = self.held_off(t_prev, t)
        knock_g = max(cfg.imu.knock_accel_g, cfg.speech.knock_g) if speaking else cfg.imu.knock_accel_g
        if vib >= knock_g:
            if self._impulse is None:
                first = self._buf.first_above(t_prev, t, cfg.imu.knock_accel_g)
                self._impulse = _Segment(start=first if first is not None else t, last_active=t)
                self._impulse.quiet_before = t_prev - self._last_busy_t
            self._impulse.last_active = t
            self._impulse.peak_vib = max(self._impulse.peak_vib, vib)
        if self._impulse is not None:
            self._impulse.max_load_dev = max(self._impulse.max_load_dev, abs(s - ref_before) if ref_before is not None else 0.0)
            if t - self._impulse.last_active >= cfg.imu.quiet_s and self._load.settled:
                out += self._close_impulse(self._impulse, t)
                self._impulse = None

        # activity -> touch: a burst above the background, confirmed once nothing else explains it
        vib_threshold = self._vibration_threshold(vib, t - t_prev, speaking)
        ref = self._load.reference
        load_dev = abs(s - ref) if (ref is not None and s is not None) else 0.0
        tilt = self._tiltbuf.peak(t_prev, t)
        tilt_threshold = self._tilt_threshold(tilt, t - t_prev)
        active = (vib >= vib_threshold and not speaking) or tilt >= tilt_threshold or load_dev >= cfg.imu.touch_load_g
        if active and self._impulse is None:
            self._last_busy_t = t
        if active and self._seg is None and t >= self._touch_quiet_until and self._armed:  # not in a collapse's aftermath
            first = None if speaking else self._buf.first_above(t_prev, t, vib_threshold)
            self._seg = _Segment(start=first if first is not None else t, last_active=t)
        if self._seg is not None:
            seg = self._seg
            if active:
                seg.last_active = t
                seg.peak_vib = max(seg.peak_vib, vib)
                seg.max_load_dev = max(seg.max_load_dev, load_dev)
            waited = t - seg.start
            if waited >= cfg.imu.touch_confirm_s and (self._load.settled or waited >= 3 * cfg.imu.touch_confirm_s):
                out += self._close_segment(seg, t)
                self._touch_quiet_until = seg.start + cfg.imu.touch_refractory_s
                self._seg = None
        return out

    def _vibration_threshold(self, vib: float, dt: float, speaking: bool = False) -> float:
        """Activity threshold: the fixed floor, or a multiple of the table's background vibration
        (measured while the speaker is silent)."""
        c = self.cfg.imu
        if not speaking:
            self._bg.append(vib)
        n_keep = max(16, int(c.background_window_s / max(dt, 1e-3)))
        while len(self._bg) > n_keep:
            self._bg.popleft()
        self._bg_n += 1
        if self._bg_n % 16 == 0:
            self._bg_level = self._background(self._bg)
        return max(c.touch_accel_g, c.background_factor * self._bg_level)

    def _background(self, values: deque[float]) -> float:
        if not values:  # the referee has spoken since the start: no quiet table measured yet
            return 0.0
        return float(np.quantile(values, self.cfg.imu.background_quantile))

    def _tilt_threshold(self, tilt: float, dt: float) -> float:
        c = self.cfg.imu
        self._tilt_bg.append(tilt)
        n_keep = max(16, int(c.background_window_s / max(dt, 1e-3)))
        while len(self._tilt_bg) > n_keep:
            self._tilt_bg.popleft()
        if self._bg_n % 16 == 0:
            self._tilt_bg_level = self._background(self._tilt_bg)
        return max(c.touch_gyro_dps, c.background_factor * self._tilt_bg_level)

    def _collapse(self, t: float, drop: float, imu_lost: bool) -> SensorEvent | None:
        c = self.cfg.collapse
        below = self._below_since if self._below_since is not None else t
        impact_t = self._buf.first_above(below - c.impact_lookback_s, t, self.cfg.imu.impact_g)
        if impact_t is None and c.require_impact and not imu_lost:
            return None
        self._armed = False
        self._settled_since = None
        peak = self._buf.peak(below - c.impact_lookback_s, t)
        if self._seg is not None:
            self._seg.steps += 1
        # the collapse time: when the weight began to go (the smoothed drop, less the smoothing delay)
        started = max(below - self._load.fast_delay_s, impact_t if impact_t is not None else -np.inf)
        evidence = {"drop_g": round(drop, 1), "impact_g": round(peak, 3), "detected_at": t, "imu": 0.0 if imu_lost else 1.0}
        if impact_t is not None:
            evidence["impact_t"] = impact_t
        return SensorEvent(K.COLLAPSE, started, 1.0 if impact_t is not None else 0.7, evidence)

    def _close_impulse(self, imp: _Segment, now: float) -> list[SensorEvent]:
        c = self.cfg.imu
        self._knocks.append(imp.start)
        self._knocks = self._knocks[-20:]
        duration = imp.last_active - imp.start
        if not self._armed or not c.knock_min_s <= duration <= c.knock_max_s:
            return []
        if self._last_step_t >= imp.start - c.quiet_s or self._load.reference is None:
            return []  # the weight changed around it: a pull or place, not the table
        if imp.max_load_dev > c.knock_max_load_g + c.knock_inertial_g_per_g * imp.peak_vib:
            return []
        # quiet_before_s: a rap on a still table comes out of the quiet; a thud while hands work at the
        # tower may be a block falling onto the tray (weight unchanged): worth a look by the camera
        evidence = {"peak_g": round(imp.peak_vib, 3), "load_dev_g": round(imp.max_load_dev, 1),
                    "duration_s": round(duration, 3), "detected_at": now, "quiet_before_s": round(min(imp.quiet_before, 10.0), 2)}
        return [SensorEvent(K.KNOCK, imp.start, 1.0, evidence)]

    def _close_segment(self, seg: _Segment, now: float) -> list[SensorEvent]:
        c = self.cfg.imu
        if seg.steps or not self._armed:
            return []
        if self._last_step_t >= seg.start - c.touch_confirm_s:
            return []  # a lift or place: the hands were pulling or placing
        if any(seg.start - c.quiet_s <= k <= now for k in self._knocks) or self._impulse is not None:
            return []  # a knock's ringing
        duration = seg.last_active - seg.start
        evidence = {"peak_g": round(seg.peak_vib, 3), "load_dev_g": round(seg.max_load_dev, 1),
                    "duration_s": round(duration, 3), "detected_at": now}
        if duration >= c.min_touch_s:
            return [SensorEvent(K.TOUCH, seg.start, 1.0, evidence)]
        return []
