"""`stacko bench referee`: how fast the engine decides, and how fast a big log replays and verifies."""

from __future__ import annotations

import json
import random
import time

from referee.randomplay import random_game
from referee.script import ScriptRunner


def run_bench(games: int = 2000, matches: int = 1000, seed: int = 1) -> int:
    rng = random.Random(seed)
    # 1. Events per second over random complete games (legal and illegal events).
    scripts = [random_game(rng) for _ in range(games)]
    n_events = sum(len(s) for s in scripts)
    start = time.perf_counter()
    for script in scripts:
        runner = ScriptRunner()
        for data in script:
            runner.feed(data)
    engine_s = time.perf_counter() - start
    # 2. A log of `matches` matches with the referee's recorded decisions: replay and verify.
    log = []
    for i in range(matches):
        events = random_game(rng)
        runner = ScriptRunner()
        log.append([(json.dumps(e), json.dumps(runner.feed(e))) for e in events])
    start = time.perf_counter()
    mismatches = 0
    for match in log:
        runner = ScriptRunner()
        for line, recorded in match:
            if json.dumps(runner.feed_line(line)) != recorded:
                mismatches += 1
    replay_s = time.perf_counter() - start
    result = {
        "games": games,
        "events": n_events,
        "events_per_s": round(n_events / engine_s),
        "replay_matches": matches,
        "replay_events": sum(len(m) for m in log),
        "replay_verify_s": round(replay_s, 3),
        "mismatches": mismatches,
    }
    print(json.dumps(result))
    return 0 if mismatches == 0 else 1


