"""Recorded twin runs for the detector benchmark: self-playing rounds with sensors at full rate.

Each run is a session folder (see `recording`): a 3-player round of mixed skills with bystanders'
touches and knocks, ended by the tower falling, or after `max_pulls` by a hard push (some runs)
or not at all (the rest: towers that stand to the end are needed for false-alarm counts).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from hardware.sim.players import SkillProfile
from hardware.sim.recording import SessionWriter, TwinRecorder
from hardware.sim.render import Look
from hardware.sim.selfplay import play_round
from hardware.sim.twin import Twin

SKILL_MIX = ("careful", "average", "careless")


def record_run(folder: Path, seed: int, fps: float = 2.0, max_pulls: int = 30, push_at_end: bool = True,
               imu_hz: float = 1000.0, load_sps: float = 320.0) -> dict:
    """Play and record one round; returns a summary (also stored in session.json)."""
    rng = random.Random(seed)
    skills = [SkillProfile.named(rng.choice(SKILL_MIX)) for _ in range(3)]
    wall = time.perf_counter()
    with Twin(seed=seed, n_seats=3) as twin:
        meta = {"seed": seed, "tower": twin.tower_map(), "players": 3,
                "skills": [s.__dict__ for s in skills], "camera_fps": fps}
        writer = SessionWriter(folder, meta, imu_hz, load_sps)
        recorder = TwinRecorder(twin, writer, imu_hz, load_sps, fps, look=Look.random(rng, 0.6))
        try:
            twin.step(0.5, recorder.on_step)  # a quiet start for the detectors' baselines
            result = play_round(twin, skills, seed, max_pulls=max_pulls, push_at_end=push_at_end, on_step=recorder.on_step)
            twin.step(1.0, recorder.on_step)  # the aftermath
            recorder.flush()
            writer.referee_events(result.events)
        finally:
            summary = {
                "pulls": sum(1 for e in twin.truth if e["type"] == "pull"),
                "places": sum(1 for e in twin.truth if e["type"] == "place"),
                "touches": sum(1 for e in twin.truth if e["type"] == "touch"),
                "knocks": sum(1 for e in twin.truth if e["type"] == "knock"),
                "two_hands": sum(1 for e in twin.truth if e["type"] == "two_hands"),
                "collapse_t": twin.collapse_time,
                "sim_s": round(twin.t, 3),
                "wall_s": round(time.perf_counter() - wall, 1),
            }
            writer.close({"summary": summary})
    return summary


def record_runs(out: Path, runs: int, seed: int, fps: float = 2.0, log=print) -> list[dict]:
    """`runs` sessions in out/run-NNN (10-25 pulls each); about two in three end with the tower falling."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    summaries = []
    for i in range(runs):
        run_seed = rng.randrange(1 << 30)
        max_pulls = rng.randint(10, 25)
        push = rng.random() < 0.67
        s = record_run(out / f"run-{i + 1:03d}", run_seed, fps=fps, max_pulls=max_pulls, push_at_end=push)
        s["run"] = f"run-{i + 1:03d}"
        summaries.append(s)
        log(s)
    return summaries
