"""`stacko run` over a recorded table (the replay backend): the build read from the recording's
frames and load cell, then the round started on the tower read. The recording is made here from
the twin, as a table's camera and load cell would have recorded a builder laying the levels."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hardware.sim")  # picks the offscreen GL before MuJoCo loads

PLAYERS = ["Ana", "Ben", "Cy"]


def _record_build(folder: Path, seed: int, tower, levels: int, unseen: tuple[int, ...]) -> float:
    """Write a session as the table's recorder does: a frame every 0.05 s of the levels as they are
    laid (`unseen`: covered before the camera saw them), the load cell at 320 per second weighing
    the tray and the blocks laid, the IMU at rest, and "confirm" pressed after the last level.
    Returns the recording's length in seconds."""
    from hardware.detectors.config import load_detector_config
    from hardware.recorder import SessionWriter
    from hardware.sim.build_scene import LayingCamera, WeighedTray
    from referee.loop.demo import match_look

    camera = LayingCamera(seed, tower, levels, frames_per_level=12, unseen=unseen, look=match_look(seed))
    scale = WeighedTray(camera, load_detector_config(None).load.block_g, 400.0, seed=seed)  # 0.05 s a read
    t = 0.0
    with SessionWriter(folder, "sim", imu_hz=100.0, load_sps=320.0) as w:
        while (frame := camera.read()) is not None:
            w.load(*scale.read()[2:])
            ti = t + np.arange(5) / 100.0
            w.imu(ti, np.tile([0.0, 0.0, 1.0], (len(ti), 1)), np.zeros((len(ti), 3)))
            w.frame(t, frame.image)
            t += 0.05
        w.button(t + 0.1, "confirm")
        for _ in range(10):  # the tray after the build: the tower stands
            w.load(*scale.read()[2:])
        w.imu(t + np.arange(50) / 100.0, np.tile([0.0, 0.0, 1.0], (50, 1)), np.zeros((50, 3)))
    return t + 0.5


def _run(tmp_path, monkeypatch, seed: int, levels: int, unseen: tuple[int, ...] = ()):
    from referee.loop.demo import DemoOptions, vision_calibration
    from referee.loop.run import RunOptions, run_table
    from referee.tower import random_tower
    from web_ui.store import MatchStore

    tower = random_tower(random.Random(seed))
    session = tmp_path / "session"
    length = _record_build(session, seed, tower, levels, unseen)
    monkeypatch.setenv("STACKO_CALIBRATION_DIR", str(tmp_path / "calibration"))  # this table's: none but the camera's
    log = tmp_path / "log.sqlite"
    said: list[str] = []
    rc = run_table(RunOptions(backend="replay", players=PLAYERS, log=str(log), serve=False, session_dir=str(session),
                              vision_dir=str(vision_calibration(DemoOptions(seed=seed), lambda s: None)),
                              max_seconds=length + 0.5, poll_s=0.025), echo=said.append)
    with MatchStore(log) as store:
        match = store.latest_match_id()
        setups = [e.event for e in store.events(match) if e.event.get("event") == "setup"]
    return rc, tower, setups, said


def test_stacko_run_reads_a_recorded_build_and_starts_the_round_on_that_tower(tmp_path, monkeypatch):
    rc, tower, setups, said = _run(tmp_path, monkeypatch, seed=101, levels=3)
    assert rc == 0
    assert [s["tower"] for s in setups] == [[list(r) for r in tower[:3]]]
    assert setups[0]["players"] == PLAYERS
    assert [line for line in said if line.startswith("Level ")] == [
        f"Level {k}: " + ", ".join(tower[k - 1]) for k in (1, 2, 3)]


def test_stacko_run_asks_for_a_level_the_recording_shows_covered_before_the_camera_saw_it(tmp_path, monkeypatch):
    """Level 2 never seen: the replayed load cell tells it, the page asks whether it was laid, and
    the build waits for the answer (none comes in a replay): level 3 is not taken meanwhile, and
    no round starts."""
    rc, tower, setups, said = _run(tmp_path, monkeypatch, seed=101, levels=3, unseen=(2,))
    assert rc == 0
    assert "Level 2: covered before the camera saw it? The builder is asked on the page." in said
    assert not any(line.startswith("Level 3") for line in said)
    assert setups == []
