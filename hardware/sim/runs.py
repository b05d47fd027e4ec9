"""Recorded twin runs for the detector benchmark: self-playing rounds with sensors at full rate.

Each run is a session folder (see `recording`): a 3-player round of mixed skills with bystanders'
touches and knocks, ended by the tower falling, or after `max_pulls` by a hard push (some runs)
or not at all (the rest: towers that stand to the end are needed for false-alarm counts). The referee's
speech shakes the table after each pull and place (`SpeakerShake`, speech.jsonl), and the collapse truth
says whether a block really came off the tower (`recording.blocks_off_the_tower`, after the blocks rest).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from hardware.sim.players import SkillProfile
from hardware.sim.recording import SessionWriter, SpeakerShake, TwinRecorder, blocks_off_the_tower, fair_truth
from hardware.sim.render import Look
from hardware.sim.selfplay import play_round
from hardware.sim.twin import Twin

SKILL_MIX = ("careful", "average", "careless")


AFTERMATH_S = 1.5  # after the round: falling blocks come to rest before the truth asks where they lie


def record_run(folder: Path, seed: int, fps: float = 2.0, max_pulls: int = 30, push_at_end: bool = True,
               imu_hz: float = 1000.0, load_sps: float = 320.0, speaker: SpeakerShake | None = SpeakerShake()) -> dict:
    """Play and record one round; returns a summary (also stored in session.json)."""
    rng = random.Random(seed)
    skills = [SkillProfile.named(rng.choice(SKILL_MIX)) for _ in range(3)]
    wall = time.perf_counter()
    with Twin(seed=seed, n_seats=3) as twin:
        meta = {"seed": seed, "tower": twin.tower_map(), "players": 3,
                "skills": [s.__dict__ for s in skills], "camera_fps": fps,
                "speaker": speaker.__dict__ if speaker is not None else None}
        writer = SessionWriter(folder, meta, imu_hz, load_sps)
        recorder = TwinRecorder(twin, writer, imu_hz, load_sps, fps, look=Look.random(rng, 0.6), speaker=speaker, seed=seed)
        landed: list[str] = []
        try:
            twin.step(0.5, recorder.on_step)  # a quiet start for the detectors' baselines
            result = play_round(twin, skills, seed, max_pulls=max_pulls, push_at_end=push_at_end, on_step=recorder.on_step)
            twin.step(AFTERMATH_S, recorder.on_step)  # the aftermath
            recorder.flush()
            landed = blocks_off_the_tower(twin) if twin.collapsed else []
            writer.rewrite_truth(fair_truth(twin.truth, landed))
            writer.referee_events(result.events)
        finally:
            summary = {
                "pulls": sum(1 for e in twin.truth if e["type"] == "pull"),
                "places": sum(1 for e in twin.truth if e["type"] == "place"),
                "touches": sum(1 for e in twin.truth if e["type"] == "touch"),
                "knocks": sum(1 for e in twin.truth if e["type"] == "knock"),
                "two_hands": sum(1 for e in twin.truth if e["type"] == "two_hands"),
                "collapse_t": twin.collapse_time if not twin.collapsed or landed else None,
                "block_shifted_t": twin.collapse_time if twin.collapsed and not landed else None,
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


def record_bystander_run(folder: Path, seed: int, seconds: float = 40.0, fps: float = 5.0, push_at_end: bool = False,
                         imu_hz: float = 1000.0, load_sps: float = 320.0, speaker: SpeakerShake = SpeakerShake()) -> dict:
    """A standing tower nobody pulls from, with bystanders knocking on the table and touching the tower
    while the referee talks now and then (the false-alarm cases: knocks, touches, speech), optionally
    pushed over at the end. Knocks and touches come from the twin (truth), speech from the recorder."""
    rng = random.Random(seed)
    wall = time.perf_counter()
    with Twin(seed=seed, n_seats=3) as twin:
        meta = {"seed": seed, "tower": twin.tower_map(), "players": 3, "kind": "bystanders", "camera_fps": fps,
                "speaker": speaker.__dict__}
        writer = SessionWriter(folder, meta, imu_hz, load_sps)
        recorder = TwinRecorder(twin, writer, imu_hz, load_sps, fps, look=Look.random(rng, 0.6), speaker=speaker, seed=seed)
        landed: list[str] = []
        try:
            twin.step(0.5, recorder.on_step)
            while twin.t < seconds and not twin.collapsed:
                if rng.random() < 0.4:
                    recorder.say(twin.t + rng.uniform(0.0, 0.5))
                what = rng.random()
                if what < 0.5:
                    twin.knock(rng.randrange(3), strength=rng.uniform(0.4, 1.5), on_step=recorder.on_step)
                elif what < 0.8:
                    twin.touch(rng.randrange(3), strength=rng.uniform(0.2, 0.8), on_step=recorder.on_step)
                twin.step(rng.uniform(0.8, 2.5), recorder.on_step)
            if push_at_end and not twin.collapsed:
                twin.push(force=rng.uniform(14.0, 25.0), seat=rng.randrange(3), on_step=recorder.on_step)
            twin.step(AFTERMATH_S, recorder.on_step)
            recorder.flush()
            landed = blocks_off_the_tower(twin) if twin.collapsed else []
            writer.rewrite_truth(fair_truth(twin.truth, landed))
        finally:
            summary = {"pulls": 0, "places": 0,
                       "touches": sum(1 for e in twin.truth if e["type"] == "touch"),
                       "knocks": sum(1 for e in twin.truth if e["type"] == "knock"), "two_hands": 0,
                       "collapse_t": twin.collapse_time if not twin.collapsed or landed else None,
                       "block_shifted_t": twin.collapse_time if twin.collapsed and not landed else None,
                       "sim_s": round(twin.t, 3), "wall_s": round(time.perf_counter() - wall, 1)}
            writer.close({"summary": summary})
    return summary


def main(argv: list[str] | None = None) -> int:
    """`python -m hardware.sim.runs bystanders OUT --runs N --seed S`: bystander runs (the false-alarm set)."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m hardware.sim.runs", description=main.__doc__)
    ap.add_argument("kind", choices=("bystanders",))
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--fps", type=float, default=5.0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    for i in range(args.runs):
        folder = Path(args.out) / f"bystanders-{i + 1:03d}"
        s = record_bystander_run(folder, rng.randrange(1 << 30), args.seconds, args.fps, push_at_end=rng.random() < 0.5)
        print(json.dumps({"run": folder.name, **s}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
