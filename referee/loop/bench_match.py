"""`stacko bench match`: whole matches on the twin, measured against the twin's ground truth.

Per turn: did the referee log the pull (player, level, slot, block) and the place the twin really
made, on its own (no player had to tell it)? And how long from the hand letting go of the block to
the referee's announcement (median, p95). Long runs: this is a benchmark, not a test.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return round(v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))], 3)


SKILLS = ("careful", "average", "careless")


def _one(opts):
    from referee.loop.demo import run_demo

    return run_demo(opts)


def run_bench(matches: int = 3, seed: int = 1, players: int = 3, max_turns: int = 60, skill: str = "average",
              out: str | None = None, record: str | None = None, workers: int = 1, table: str = "plain") -> dict:
    """`skill` "mixed" cycles careful, average, careless over the matches; `record` writes each
    match's observations to that folder (tests/loop/recorded replays them); `workers` > 1 plays
    matches in parallel processes; `table` the twin table's top (hardware.sim.world.TABLES)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from referee.loop.demo import DemoOptions

    rows = []
    latencies: list[float] = []
    folder = Path(tempfile.mkdtemp(prefix="stacko-bench-match-"))
    plan = []
    for i in range(matches):
        sk = SKILLS[i % 3] if skill == "mixed" else skill
        rec = str(Path(record) / f"match-s{seed + i:03d}-{sk}.jsonl.gz") if record else None
        plan.append(DemoOptions(players=players, seed=seed + i, fast=True, serve=False, quiet=True,
                                log=str(folder / f"match-{i}.sqlite"), max_turns=max_turns, skill=sk, record_to=rec,
                                voice_dir=str(folder / f"voice-{i}"), table=table))
    if workers > 1:
        from referee.loop.demo import vision_calibration

        vision_calibration(plan[0], print)  # made once here, not by each worker at the same time
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
        results = pool.map(_one, plan)
    else:
        pool, results = None, map(_one, plan)
    for i, r in enumerate(results):
        agree = sum(c.agree for c in r.checks)
        alone = sum(c.agree and c.how == "seen" for c in r.checks)
        rows.append({"seed": seed + i, "skill": plan[i].skill, "turns": len(r.checks), "agree": agree, "seen_alone": alone, "questions": r.questions,
                     "missed_turns": r.missed_turns, "desynced_turns": r.desynced_turns, "refused": r.refused, "build_errors": r.build_errors,
                     "winner": r.winner, "loser": r.loser, "truth_loser": r.truth_loser,
                     "sim_s": round(r.sim_s, 1), "wall_s": round(r.wall_s, 1)})
        latencies += r.release_latency_s
        print(json.dumps(rows[-1]), flush=True)
    if pool is not None:
        pool.shutdown()
    turns = sum(r["turns"] for r in rows)
    summary = {
        "matches": matches,
        "turns": turns,
        "turn_agreement": round(sum(r["agree"] for r in rows) / turns, 4) if turns else None,
        "seen_alone": round(sum(r["seen_alone"] for r in rows) / turns, 4) if turns else None,
        "questions": sum(r["questions"] for r in rows),
        "missed_turns": sum(r["missed_turns"] for r in rows),
        "desynced_turns": sum(r["desynced_turns"] for r in rows),
        # RULES.md 8 as the twin played it: the matches whose tower fell, and those whose loser the referee named right
        "collapses": sum(r["truth_loser"] is not None for r in rows),
        "collapses_blamed_right": sum(r["truth_loser"] is not None and r["loser"] == r["truth_loser"] for r in rows),
        "release_to_announce_s": {"median": _pct(latencies, 0.5), "p95": _pct(latencies, 0.95), "n": len(latencies)},
        "sim_s_per_wall_s": round(sum(r["sim_s"] for r in rows) / max(1e-9, sum(r["wall_s"] for r in rows)), 3),
    }
    if out:
        Path(out).write_text(json.dumps({"summary": summary, "matches": rows}, indent=1))
    print(json.dumps(summary))
    return summary
