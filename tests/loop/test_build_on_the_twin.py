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

    def __init__(self, seed: int, tower, levels: int, frames_per_level: int = 4, unseen: tuple[int, ...] = ()):
        from referee.loop.demo import match_look

        self.seed, self.tower, self.levels, self.per = seed, tower, levels, frames_per_level
        self.unseen = unseen  # levels covered by the next before the camera saw them (hands over the tower)
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
            while self.k in self.unseen:
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


class _TrayScale:
    """The load cell under the tray the camera shows: the tray and the blocks laid, sampled at the
    NAU7802's 320 per second with a little noise, 0.05 s of samples a read."""

    def __init__(self, camera: _LayingCamera, block_g: float, empty_g: float = 0.0):
        import numpy as np

        self.camera, self.block_g, self.empty_g, self.t = camera, block_g, empty_g, 0.0
        self.rng = np.random.default_rng(1)

    def read(self):
        import numpy as np

        t = self.t + np.arange(16) / 320.0
        self.t += 0.05
        g = self.empty_g + 3 * self.camera.k * self.block_g + self.rng.normal(0.0, 0.3, len(t))
        return np.zeros(0), np.zeros((0, 3)), t, g


def test_a_level_laid_over_before_the_camera_saw_it_is_named_by_the_builder_and_the_build_goes_on(tmp_path):
    """Seed 110's level 2 covered by level 3 before the camera read it: the tray weighs six blocks
    more than with level 1, the camera sees level 3's orientation. The builder names level 2's
    three blocks; levels 1 and 3 are read by the camera (level 1's Wild aside). Without the load
    cell the build's reading waits for level 2 for ever."""
    from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET
    from referee.loop.build import BuildConfig, BuildReader
    from referee.loop.demo import DemoOptions, vision_calibration
    from referee.loop.perception import MapGuidedReader
    from referee.loop.run import _read_tower
    from referee.loop.session import RefereeSession
    from referee.loop.tray_weight import TrayWeight
    from referee.tower import random_tower
    from hardware.detectors.config import load_detector_config
    from vision.reader import load_pipeline
    from web_ui.hub import TableHub
    from web_ui.store import MatchStore

    seed, levels = 110, 3
    tower = random_tower(random.Random(seed))
    reader = MapGuidedReader(load_pipeline(vision_calibration(DemoOptions(seed=seed), lambda s: None)))
    load = load_detector_config(None).load

    def build_with(scale: bool):
        camera = _LayingCamera(seed, tower, levels, frames_per_level=12, unseen=(2,))
        laid = lambda: camera.twin is None and camera.k >= levels  # noqa: E731 (the builder's confirm)
        devices = SimpleNamespace(camera=camera, buttons=SimpleNamespace(read=lambda: [SimpleNamespace(button="confirm")] if laid() else []),
                                  sensors=_TrayScale(camera, load.block_g, 420.0) if scale else None)
        session = RefereeSession(MatchStore(tmp_path / f"log{scale}.sqlite"), TableHub(),
                                 SimpleNamespace(say=lambda *a, **k: None), SimpleNamespace(now=lambda: 0.0))
        session.start_match(["Ana", "Ben", "Cy"])
        asked, ticks = [], []

        def tick():
            ticks.append(1)
            q = session.question
            if q is not None:
                level, slot = (int(v) for v in q["id"].split("-")[1:3])
                name = tower[level - 1][slot]
                if (level, slot) not in asked:
                    asked.append((level, slot))
                colour, _, symbol = name.partition("-")
                option = name if name in q["options"] else (colour if colour in q["options"] else symbol)
                session.hub.submit({"action": "answer", "question": q["id"], "option": option})
            return len(ticks) < 600

        build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET], BuildConfig(block_g=load.block_g))
        rows = _read_tower(devices, reader, build, session, tick, lambda s: None, TrayWeight(load))
        return rows, build, asked

    rows, build, asked = build_with(scale=True)
    assert rows == [list(r) for r in tower[:levels]]
    assert build.levels[1].covered and not build.levels[0].covered and not build.levels[2].covered
    assert asked == [(1, 1), (2, 0), (2, 1), (2, 2)]  # level 1's Wild, then level 2's three blocks

    rows, build, _ = build_with(scale=False)
    assert len(build.levels) == 1  # level 1 read, then the reading waits for level 2
