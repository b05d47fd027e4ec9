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


def _play_pulls(twin: Twin, skill, seed: int, max_pulls: int, max_tries: int | None) -> tuple[int, bool, list[dict]]:
    """Three players of one skill play a round (`selfplay.play_round`: they choose by the referee's
    call, feel for loose blocks, pull and place) until `max_pulls` pulls or the tower falls.
    Returns (pulls tried, fell, one row per pull: level, slot, looseness, drag of the level above)."""
    from hardware.sim.selfplay import play_round

    loose = {(b.level, b.slot): b.looseness for b in twin.world.blocks if b.level}
    play_round(twin, [skill] * 3, seed, max_pulls=max_pulls, max_tries=max_tries)
    rows = [{"level": e["level"], "slot": e["slot"], "loose": round(loose.get((e["level"], e["slot"]), 0.0), 2),
             "drag_mm": e["drag_mm"], "gave_up": False} for e in twin.truth if e["type"] == "pull"]
    rows += [{"level": e["level"], "slot": e["slot"], "loose": round(loose.get((e["level"], e["slot"]), 0.0), 2),
              "drag_mm": None, "gave_up": True} for e in twin.truth if e.get("gave_up")]
    if twin.collapse_block is not None and not any(e["type"] == "pull" and e["t"] >= twin.collapse_time for e in twin.truth):
        level, slot = twin.collapse_block  # it fell while this block was pushed, before it came out
        rows.append({"level": level, "slot": slot, "loose": round(loose.get((level, slot), 0.0), 2), "drag_mm": round(twin.last_pull_drag_mm, 2), "gave_up": False})
    return sum(1 for r in rows if not r["gave_up"]), twin.collapsed, rows


def bench_pulls(seed: int, pulls: int, skills: tuple[str, ...] = ("careful", "average", "careless"),
                heights: tuple[int, ...] = (15, 12, 9), per_tower: int = 8, log=None, config=None,
                max_tries: int | None = None) -> list[dict]:
    """Topple rate per pull and the drag of the level above, per skill: self-play on fresh towers
    (seeds from `seed`, starting heights cycling through `heights`), `per_tower` pulls at most on
    each, until `pulls` pulls were tried for the skill."""
    from dataclasses import replace

    from hardware.sim.players import SkillProfile
    from hardware.sim.world import default_tower_names

    out = []
    for name in skills:
        skill = replace(SkillProfile.named(name), touch_rate=0.0, knock_rate=0.0)
        tried, fell, drags, towers, gave_up = 0, 0, [], 0, 0
        w0, sim = time.perf_counter(), 0.0
        while tried < pulls and towers < 4 * pulls:
            tower_seed = seed * 1000 + towers
            height = heights[towers % len(heights)]
            towers += 1
            with Twin(seed=tower_seed, tower=default_tower_names(tower_seed)[:height], config=config) as twin:
                n, collapsed, rows = _play_pulls(twin, skill, tower_seed, min(per_tower, pulls - tried), max_tries)
                sim += twin.t
            tried += n
            fell += collapsed
            drags += [r["drag_mm"] for r in rows if not r["gave_up"]]
            gave_up += sum(r["gave_up"] for r in rows)
            if log:
                log({"skill": name, "tower_seed": tower_seed, "height": height, "pulls": n, "fell": collapsed,
                     "drag_mm": [r["drag_mm"] for r in rows if not r["gave_up"]],
                     "looseness": [r["loose"] for r in rows if not r["gave_up"]],
                     "blocks": [(r["level"], r["slot"]) for r in rows if not r["gave_up"]], "gave_up": gave_up})
        a = np.array(drags) if drags else np.zeros(1)
        out.append({"bench": "sim_pulls", "skill": name, "pulls": tried, "towers": towers, "collapses": fell, "gave_up": gave_up,
                    "collapses_per_pull": round(fell / max(1, tried), 3),
                    "drag_median_mm": round(float(np.median(a)), 2), "drag_p95_mm": round(float(np.percentile(a, 95)), 2),
                    "drag_max_mm": round(float(a.max()), 2),
                    "sim_s_per_wall_s": round(sim / (time.perf_counter() - w0), 2)})
    return out
