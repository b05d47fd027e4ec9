"""Session folders: written in chunks as they go, readable after a crash, and the replay/bench commands."""

import json
import subprocess
import sys

import numpy as np
import pytest

from hardware.recorder import Session, SessionError, SessionWriter
from hw_synthetic import make_session


def test_round_trip_of_every_stream(tmp_path):
    with SessionWriter(tmp_path / "s", "pi", 1000, 320, chunk_s=0.01) as w:
        for k in range(5):
            t = np.arange(10) * 0.001 + k * 0.01
            w.imu(t, np.tile([0, 0, 9.81], (10, 1)), np.zeros((10, 3)))
            w.load(t[:3], [100.0, 101.0, 102.0])
        w.button(0.02, "red")
        w.speech(0.01, 0.5, "Ana: pull a red block")
        w.frame(0.03, np.zeros((8, 8, 3), np.uint8))
    s = Session(tmp_path / "s")
    st = s.streams()
    assert st.imu_t.shape == (50,) and st.accel.shape == (50, 3) and st.grams.shape == (15,)
    assert np.all(np.diff(st.imu_t) > 0)
    assert s.buttons() == [{"t": 0.02, "button": "red"}]
    assert s.speech() == [(0.01, 0.5)]
    assert [(seq, t) for seq, t, _ in s.frames()] == [(1, 0.03)]
    meta = json.loads((tmp_path / "s" / "session.json").read_text())
    assert meta["version"] == 1 and meta["source"] == "pi" and meta["rates"] == {"imu_hz": 1000, "load_sps": 320}
    assert not (tmp_path / "s" / "imu.parts").exists()
    with np.load(tmp_path / "s" / "imu.npz") as z:
        assert set(z.files) == {"t", "accel", "gyro"} and z["t"].dtype == np.float64


def test_a_crash_loses_at_most_the_last_chunk(tmp_path):
    w = SessionWriter(tmp_path / "s", "sim", 100, 10, chunk_s=0.1)  # chunks of 10 IMU samples
    for k in range(25):
        w.imu([k * 0.01], [[0, 0, 9.81]], [[0, 0, 0]])
    w.button(0.1, "uno")
    # no close(): the process died here
    (tmp_path / "s" / "buttons.jsonl").open("a").write('{"t": 0.2, "butt')  # a line cut in half
    s = Session(tmp_path / "s")
    assert len(s.streams().imu_t) == 20
    assert s.buttons() == [{"t": 0.1, "button": "uno"}]


def test_unreadable_sessions_say_why(tmp_path):
    with pytest.raises(SessionError, match="not a recorded session"):
        Session(tmp_path)
    (tmp_path / "session.json").write_text("{broken")
    with pytest.raises(SessionError, match="damaged"):
        Session(tmp_path)
    (tmp_path / "session.json").write_text('{"version": 7}')
    with pytest.raises(SessionError, match="version 7"):
        Session(tmp_path)


def _stacko(*args):
    return subprocess.run([sys.executable, "-m", "referee.cli", *args], capture_output=True, text=True, timeout=120)


def test_replay_and_bench_commands_on_recorded_sessions(tmp_path):
    make_session(tmp_path / "runs" / "a", seed=11, pulls=3, touches=1, knocks=1, speech=1)
    r = _stacko("replay", str(tmp_path / "runs" / "a"))
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["event"] for e in events].count("lift") == 3 and events[-1]["event"] == "collapse"
    r = _stacko("bench", "detectors", "--sessions", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stderr
    rows = {d.get("detector"): d for d in map(json.loads, r.stdout.splitlines())}
    assert rows["lift"]["truth"] == 3 and rows["collapse"]["recall"] == 1.0
    assert rows[None]["sessions"] == 1
    r = _stacko("bench", "detectors", "--sessions", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no recorded sessions" in r.stderr


def test_the_twin_recorders_leftover_chunks_are_read_too(tmp_path):
    SessionWriter(tmp_path / "s", "sim", 100, 10)  # session.json only, then a crash
    (tmp_path / "s" / "imu.chunks").mkdir()
    np.savez(tmp_path / "s" / "imu.chunks" / "000001.npz", t=np.arange(5) * 0.01, accel=np.zeros((5, 3)), gyro=np.zeros((5, 3)))
    (tmp_path / "s" / "imu.chunks" / "000002.npz").write_bytes(b"PK\x03\x04 cut short")
    assert len(Session(tmp_path / "s").streams().imu_t) == 5
