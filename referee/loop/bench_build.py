"""`stacko bench build`: the table's build read on the twin, as `stacko run` reads it.

The real vision reads a tower the builder lays level by level (`hardware.sim.build_scene`), the
load cell weighs the tray, and a builder who knows the blocks answers the page's questions
(whether a level was laid unseen, and the blocks the camera could not name). Some
levels can be laid unseen (covered by the next before the camera saw them). Per seed: whether
the map that comes back is the tower laid, which levels were found covered, and what was asked.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace


@dataclass
class BuildResult:
    seed: int
    right: bool             # the map is the tower laid, block for block
    levels_read: int
    covered: list[int]      # levels found laid unseen (and confirmed by the builder)
    confirmed: list[list]   # [level, "yes"/"no"]: asked whether a level the camera had not read was laid
    asked: list[list[int]]  # (level, slot) the builder was asked about, in order
    seconds: float


def build_once(seed: int, levels: int, unseen: tuple[int, ...] = (), frames_per_level: int = 12,
               weighed: bool = True, resting_hand_g: float = 0.0, max_ticks: int = 4000,
               workdir: str | Path | None = None, load_cell_silent_from: int | None = None) -> BuildResult:
    """One build of `levels` levels of seed's tower, read by `stacko run`'s build loop. `weighed`:
    with the load cell (else the camera alone); `resting_hand_g`: a hand that heavy rests on the
    tray away from the tower through the second half of each level's frames;
    `load_cell_silent_from`: the load cell stops answering once that level is laid."""
    from hardware.detectors.config import load_detector_config
    from hardware.sim.build_scene import LayingCamera, WeighedTray
    from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET
    from referee.loop.build import BuildConfig, BuildReader
    from referee.loop.demo import DemoOptions, match_look, vision_calibration
    from referee.loop.perception import MapGuidedReader
    from referee.loop.run import _read_tower
    from referee.loop.session import RefereeSession
    from referee.loop.tray_weight import TrayWeight
    from referee.tower import random_tower
    from vision.reader import load_pipeline
    from web_ui.hub import TableHub
    from web_ui.store import MatchStore

    t0 = time.perf_counter()
    tower = random_tower(random.Random(seed))
    load = load_detector_config(None).load
    reader = MapGuidedReader(load_pipeline(vision_calibration(DemoOptions(seed=seed), lambda s: None)))
    camera = LayingCamera(seed, tower, levels, frames_per_level, unseen, look=match_look(seed))
    scale = WeighedTray(camera, load.block_g, 420.0, resting_hand_g=resting_hand_g,
                        silent_from_level=load_cell_silent_from) if weighed else None
    devices = SimpleNamespace(camera=camera, sensors=scale,
                              buttons=SimpleNamespace(read=lambda: [SimpleNamespace(button="confirm")] if camera.done else []))
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        session = RefereeSession(MatchStore(Path(tmp) / "log.sqlite"), TableHub(),
                                 SimpleNamespace(say=lambda *a, **k: None), SimpleNamespace(now=lambda: 0.0))
        session.start_match(["Ana", "Ben", "Cy"])
        asked: list[list[int]] = []
        confirmed: list[list] = []  # [level, answer]: asked whether a level the camera had not read was laid
        ticks = [0]
        seen: list = [None]  # the questions on the page, each answered once

        def tick() -> bool:
            """The builder answers each question from the tower in front of them."""
            ticks[0] += 1
            q = session.question
            if q is not None and q is seen[-1]:
                return ticks[0] < max_ticks  # (answered already: the page takes it on the next round)
            seen.append(q)
            if q is not None and q["id"].startswith("covered-"):
                level = int(q["id"].split("-")[1])
                laid = level <= (scale.laid_levels() if scale is not None else camera.k)  # the builder knows
                confirmed.append([level, "yes" if laid else "no"])
                session.hub.submit({"action": "answer", "question": q["id"], "option": "yes" if laid else "no"})
            elif q is not None:
                level, slot = (int(v) for v in q["id"].split("-")[1:3])
                if [level, slot] not in asked:  # (its colour, then its symbol: one block)
                    asked.append([level, slot])
                name = tower[level - 1][slot]
                colour, _, symbol = name.partition("-")
                option = name if name in q["options"] else (colour if colour in q["options"] else symbol)
                session.hub.submit({"action": "answer", "question": q["id"], "option": option})
            return ticks[0] < max_ticks

        build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET], BuildConfig(block_g=load.block_g))
        try:
            rows = _read_tower(devices, reader, build, session, tick, lambda s: None, TrayWeight(load) if weighed else None)
        finally:
            camera.close()
            session.store.close()
    return BuildResult(seed, rows == [list(r) for r in tower[:levels]], len(build.levels),
                       [lv.level for lv in build.levels if lv.covered], confirmed, asked, round(time.perf_counter() - t0, 1))


def run_bench(seeds: range, levels: int, unseen: tuple[int, ...], weighed: bool = True, out: str | None = None,
              resting_hand_g: float = 0.0, frames_per_level: int = 12, echo=print,
              load_cell_silent_from: int | None = None) -> list[BuildResult]:
    results = []
    for seed in seeds:
        r = build_once(seed, levels, unseen, frames_per_level, weighed=weighed, resting_hand_g=resting_hand_g,
                       load_cell_silent_from=load_cell_silent_from)
        results.append(r)
        echo(json.dumps(asdict(r)))
    summary = {"builds": len(results), "right": sum(r.right for r in results),
               "covered_found_exactly": sum(r.covered == sorted(set(unseen) - {levels}) for r in results),
               "questions": sum(len(r.asked) + len(r.confirmed) for r in results),
               "claims_denied": sum(a == "no" for r in results for _, a in r.confirmed),
               "levels": levels, "unseen": list(unseen),
               "load_cell": weighed, "resting_hand_g": resting_hand_g, "frames_per_level": frames_per_level,
               "load_cell_silent_from_level": load_cell_silent_from if weighed else None}
    echo(json.dumps(summary))
    if out:
        Path(out).write_text(json.dumps({"summary": summary, "builds": [asdict(r) for r in results]}, indent=1) + "\n")
    return results
