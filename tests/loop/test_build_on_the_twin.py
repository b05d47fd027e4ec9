"""The build at a real table (`stacko run`'s reading of the tower), played on the twin: the real
vision reads each level as it is laid, and the builder names on the page what it cannot."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

pytest.importorskip("hardware.sim")  # picks the offscreen GL before MuJoCo loads


class _LayingCamera:
    """The match's overhead camera over a tower laid level by level: a few frames of each level
    as it stands (`levels` of the tower), then nothing."""

    def __init__(self, seed: int, tower, levels: int, frames_per_level: int = 4):
        from referee.loop.demo import match_look

        self.seed, self.tower, self.levels, self.per = seed, tower, levels, frames_per_level
        self.look = match_look(seed)
        self.k, self.shown, self.twin, self.seq = 0, frames_per_level, None, 0

    def read(self):
        from hardware.sim.twin import Twin

        if self.shown >= self.per:
            if self.twin is not None:
                self.twin.close()
                self.twin = None
            if self.k >= self.levels:
                return None
            self.k += 1
            self.twin = Twin(self.seed * 100 + self.k, self.tower[: self.k], n_seats=3)
            self.shown = 0
        self.twin.step(0.05)
        self.shown += 1
        self.seq += 1
        return SimpleNamespace(image=self.twin.render("top", look=self.look), t=self.twin.t, seq=self.seq)


def test_a_wild_the_camera_cannot_name_is_named_by_the_builder_and_the_build_goes_on(tmp_path):
    """Twin seed 110: the Wild in the middle of level 1 reads empty at 0.0 on every frame. Before,
    the level was never taken and the build's reading stalled there."""
    from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET
    from referee.loop.build import BuildReader
    from referee.loop.demo import DemoOptions, vision_calibration
    from referee.loop.perception import MapGuidedReader
    from referee.loop.run import _read_tower
    from referee.loop.session import RefereeSession
    from referee.tower import random_tower
    from vision.reader import load_pipeline
    from web_ui.hub import TableHub
    from web_ui.store import MatchStore

    seed, levels = 110, 2
    tower = random_tower(random.Random(seed))
    assert tower[0][1] == "wild"
    reader = MapGuidedReader(load_pipeline(vision_calibration(DemoOptions(seed=seed), lambda s: None)))
    camera = _LayingCamera(seed, tower, levels)

    def presses():
        """The builder presses confirm once the levels are laid (and again, while the page asks)."""
        laid = camera.k >= levels and camera.twin is None
        return [SimpleNamespace(button="confirm")] if laid else []

    devices = SimpleNamespace(camera=camera, buttons=SimpleNamespace(read=presses))
    session = RefereeSession(MatchStore(tmp_path / "log.sqlite"), TableHub(), SimpleNamespace(say=lambda *a, **k: None),
                             SimpleNamespace(now=lambda: 0.0))
    session.start_match(["Ana", "Ben", "Cy"])
    asked, ticks = [], []

    def builder_taps():
        """The builder answers from the tower in front of them: the block, its colour, its symbol."""
        q = session.question
        level, slot = (int(v) for v in q["id"].split("-")[1:3])
        name = tower[level - 1][slot]
        if q["id"] not in asked:
            asked.append(q["id"])
        colour, _, symbol = name.partition("-")
        option = name if name in q["options"] else (colour if colour in q["options"] else symbol)
        session.hub.submit({"action": "answer", "question": q["id"], "option": option})

    def tick():
        ticks.append(1)
        if session.question is not None:
            builder_taps()
        return len(ticks) < 400

    rows = _read_tower(devices, reader, BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET]), session, tick, lambda s: None)
    assert rows == [list(r) for r in tower[:levels]]
    assert asked == ["build-1-1"]  # the Wild, and nothing else
