"""`stacko bench sim`: how fast the twin runs, and whether an untouched tower stands.

Measures simulated seconds per wall second with the sensors computed at full rate (IMU 1 kHz,
load cell 320 SPS), for a still tower and for play (pulls and places), milliseconds per rendered
frame, and (with --stand S) that an untouched tower raises no truth event and moves under 1 mm.
"""

from __future__ import annotations

import time

import numpy as np

from hardware.sim.render import Look
from hardware.sim.twin import Twin


class _SensorPump:
    """Compute the sensor streams at full rate as the twin steps (what a recorder or driver does)."""

    def __init__(self, twin: Twin, imu_hz: float = 1000.0, load_sps: float = 320.0):
        self.twin, self.imu_hz, self.load_sps = twin, imu_hz, load_sps
        self.i, self.l, self.samples = int(twin.t * imu_hz) + 1, int(twin.t * load_sps) + 1, 0

    def __call__(self, twin: Twin) -> None:
        if twin._steps % 50:
            return
        last_i, last_l = int(twin.t * self.imu_hz), int(twin.t * self.load_sps)
        if last_i >= self.i:
            twin.imu.series(np.arange(self.i, last_i + 1) / self.imu_hz)
            self.samples += last_i + 1 - self.i
        if last_l >= self.l:
            twin.load.series(np.arange(self.l, last_l + 1) / self.load_sps)
        self.i, self.l = last_i + 1, last_l + 1


def bench_physics(seed: int, still_s: float, turns: int) -> dict:
    with Twin(seed=seed) as twin:
        pump = _SensorPump(twin)
        t0, w0, c0 = twin.t, time.perf_counter(), time.process_time()
        twin.step(still_s, pump)
        still = (twin.t - t0) / (time.perf_counter() - w0)
        still_cpu = (twin.t - t0) / (time.process_time() - c0)
        t0, w0, c0 = twin.t, time.perf_counter(), time.process_time()
        plan = [(5, 1), (8, 0), (10, 1), (6, 2), (3, 1), (12, 1)]
        done = 0
        for level, slot in plan[:turns]:
            if twin.collapsed:
                break
            twin.pull(done % 3, level, slot, on_step=pump)
            if twin.in_hand is None:
                break
            top = twin.tower_map()[-1]
            place = (len(twin.tower_map()) + 1, 1) if all(top) else (len(twin.tower_map()), top.index(None))
            twin.place(*place, seat=done % 3, on_step=pump)
            done += 1
        play = (twin.t - t0) / (time.perf_counter() - w0)
        play_cpu = (twin.t - t0) / (time.process_time() - c0)
        return {"bench": "sim_physics", "still_sim_s_per_wall_s": round(still, 2), "play_sim_s_per_wall_s": round(play, 2),
                "still_sim_s_per_cpu_s": round(still_cpu, 2), "play_sim_s_per_cpu_s": round(play_cpu, 2),
                "turns": done, "collapsed": twin.collapsed, "imu_samples": pump.samples}


def bench_render(seed: int, frames: int) -> dict:
    out = {"bench": "sim_render", "frames": frames}
    with Twin(seed=seed, settle_s=0.05) as twin:
        twin.render("top")  # context creation is not a frame
        for label, look, cam in (("top_shadows", Look.nominal(), "top"),
                                 ("top_no_shadows", Look(shadows=False), "top"),
                                 ("side", Look.nominal(), "side")):
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(frames):
                twin.render(cam, look)
            out[f"ms_per_frame_{label}"] = round(1000 * (time.perf_counter() - w0) / frames, 1)
            out[f"cpu_ms_per_frame_{label}"] = round(1000 * (time.process_time() - c0) / frames, 1)
    return out


def bench_stand(seed: int, seconds: float) -> dict:
    with Twin(seed=seed) as twin:
        p0 = np.array([twin.data.xpos[b.body_id] for b in twin.world.blocks])
        w0 = time.perf_counter()
        twin.step(seconds)
        wall = time.perf_counter() - w0
        ring = float(twin.trace.force[-2500:].std() / 9.81 * 1000)
        p1 = np.array([twin.data.xpos[b.body_id] for b in twin.world.blocks])
        return {"bench": "sim_stand", "sim_s": seconds, "wall_s": round(wall, 1), "max_move_mm": round(float(np.abs(p1 - p0).max() * 1000), 4),
                "events": [e["type"] for e in twin.truth], "load_hum_g_rms": round(ring, 2), "stood": not twin.truth and float(np.abs(p1 - p0).max()) < 0.001}


def bench_pushes(seed: int, towers: int, force: float = 20.0) -> dict:
    """The issue's check: every hard-pushed tower falls (fresh towers, pushed from rotating seats)."""
    fell = 0
    for k in range(towers):
        with Twin(seed=seed * 1000 + k, settle_s=0.2) as twin:
            twin.push(force=force, seat=k % 3)
            twin.step(1.0)
            fell += twin.collapsed
    return {"bench": "sim_pushes", "towers": towers, "force_n": force, "fell": fell, "all_fell": fell == towers}
