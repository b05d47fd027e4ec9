"""Recorded twin rounds for `stacko bench detectors --record N`: the twin's simulated players play, the
tray sensors are read through the emulated chips and the real drivers (as on the Pi), and every stream
plus the twin's truth events go to a session folder.

The twin engineer's own recording command (`stacko sim record`, hardware/sim/runs.py) writes richer
sessions (frames, the referee's speech); this one exists so the detector figures can be reproduced through
the real drivers. Both write the collapse truth the same way: a twin "collapse" with no block come off
the tower is `block_shifted` (hardware/sim/recording.py, `blocks_off_the_tower`).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Callable

from hardware.backends import build_devices
from hardware.recorder import SessionWriter


def record_twin_round(folder: Path, seed: int, max_pulls: int = 6, bystander_rate: float = 0.3) -> dict:
    import hardware.sim  # noqa: F401  (picks the offscreen GL before MuJoCo loads)
    from hardware.sim.players import SkillProfile
    from hardware.sim.recording import blocks_off_the_tower, fair_truth
    from hardware.sim.selfplay import play_round
    from hardware.sim.twin import Twin

    rng = random.Random(seed)
    with Twin(seed=seed, n_seats=3) as twin:
        devices = build_devices("sim", twin=twin, quiet_voice=True)
        writer = SessionWriter(folder, "sim", 1000.0, 320.0, extra={"seed": seed, "generator": "hardware/twin_sessions.py"})
        steps = [0]

        def on_step(tw) -> None:
            devices.sensors.poll_load()  # the NAU7802 has no FIFO: every 2 ms physics step
            steps[0] += 1
            if steps[0] % 10 == 0:
                batch, lt, grams = devices.sensors.read_full()
                if len(batch.t):
                    writer.imu(batch.t, batch.accel, batch.gyro)
                if len(lt):
                    writer.load(lt, grams)

        skills = [SkillProfile(care=rng.uniform(0.3, 0.95), touch_rate=bystander_rate, knock_rate=bystander_rate) for _ in range(3)]
        twin.step(0.5, on_step)
        result = play_round(twin, skills, seed, max_pulls=max_pulls, push_at_end=True, on_step=on_step)
        twin.step(1.5, on_step)
        landed = blocks_off_the_tower(twin) if twin.collapsed else []
        for e in fair_truth(twin.truth, landed):
            writer.truth(**e)
        writer.close()
        devices.close()
        return {"session": str(folder), "seed": seed, "pulls": result.pulls, "collapsed": twin.collapsed and bool(landed),
                "sim_s": round(twin.t, 1)}


def record_twin_rounds(root: Path, seeds: range, max_pulls: int = 6, progress: Callable[[dict], None] | None = None) -> list[Path]:
    out = []
    for seed in seeds:
        folder = Path(root) / f"twin-{seed:04d}"
        if (folder / "truth.jsonl").exists() and (folder / "load.npz").exists():
            out.append(folder)  # already recorded
            continue
        info = record_twin_round(folder, seed, max_pulls)
        out.append(folder)
        if progress:
            progress(info)
    return out
