"""Detectors on the synthetic fixture signals (noisy), and the detector settings file's validation."""

import json

import pytest

from hardware.detectors import DetectorConfigError, SensorDetectors, load_detector_config
from hardware.detectors.bench import run_detectors, score
from hardware.detectors.config import detector_config_from_dict, DEFAULT_PATH
from hardware.recorder import Session
from referee.observations import SensorEventKind as K
from hw_synthetic import Script, make_session


@pytest.fixture(scope="module")
def cfg():
    return load_detector_config()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    root = tmp_path_factory.mktemp("syn")
    return [Session(make_session(root / f"s{seed}", seed=seed)) for seed in range(3)]


def test_pulls_places_and_collapses_are_found_in_noisy_signals(cfg, sessions):
    scores = None
    for s in sessions:
        scores = score(run_detectors(s, cfg), s.truth(), scores)
    res = {k: v.as_dict() for k, v in scores.items()}
    assert res["lift"]["recall"] >= 0.95 and res["lift"]["precision"] >= 0.95
    assert res["place"]["recall"] >= 0.95 and res["place"]["precision"] >= 0.95
    assert res["collapse"]["recall"] == 1.0 and res["collapse"]["fp"] == 0
    assert res["knock"]["recall"] >= 0.8
    assert res["touch"]["recall"] >= 0.6


def _feed_all(det, s):
    gyro = s.finish()
    det.feed(s.ti, s.acc, s.tl, s.load, gyro=gyro)
    det.flush()
    return [e.kind for e in det.events]


def test_a_clumsy_pull_shaking_the_tray_is_not_a_collapse(cfg):
    s = Script(8.0, seed=5)
    s.pull(1.0, clumsy=True)
    s.ring(1.9, 2.5, 30, 0.06)  # a very hard jolt on top
    kinds = _feed_all(SensorDetectors(cfg), s)
    assert K.COLLAPSE not in kinds and K.LIFT in kinds and K.PLACE in kinds


def test_a_hard_table_knock_is_a_knock_not_a_collapse(cfg):
    s = Script(4.0, seed=6)
    s.knock(1.0)
    s.ring(1.0, 3.0, 40, 0.03)
    kinds = _feed_all(SensorDetectors(cfg), s)
    assert kinds == [K.KNOCK]


def test_speech_shaking_the_table_reports_nothing(cfg):
    s = Script(6.0, seed=7)
    s.speak(1.0, 3.0)
    s.wobble(2.0, 0.5, 0.05)  # the table buzzing hard
    det = SensorDetectors(cfg)
    det.speaking(1.0, 4.0)
    assert _feed_all(det, s) == []


def test_a_collapse_while_speaking_is_still_reported(cfg):
    s = Script(6.0, seed=8)
    s.speak(1.0, 3.0)
    s.collapse(2.0)
    det = SensorDetectors(cfg)
    det.speaking(1.0, 4.0)
    assert _feed_all(det, s) == [K.COLLAPSE]
    ev = det.events[0]
    assert abs(ev.t - 2.0) < 0.05 and ev.evidence["detected_at"] - 2.0 < 0.25


def test_a_lost_imu_still_lets_the_load_cell_report_a_collapse(cfg):
    s = Script(5.0, seed=9)
    s.collapse(2.0)
    s.finish()
    det = SensorDetectors(cfg)
    det.feed(s.ti[:1000], s.acc[:1000], None, None)  # the IMU dies after one second
    det.feed(None, None, s.tl, s.load)
    det.flush()
    assert [e.kind for e in det.events] == [K.COLLAPSE] and det.events[0].evidence["imu"] == 0.0


def test_results_do_not_depend_on_how_the_stream_is_chunked(cfg, sessions):
    s = sessions[0]
    a = [(e.kind, round(e.t, 3)) for e in run_detectors(s, cfg, chunk_s=0.02)]
    b = [(e.kind, round(e.t, 3)) for e in run_detectors(s, cfg, chunk_s=0.13)]
    assert a == b


def test_default_settings_load_and_bad_files_say_what_is_wrong(tmp_path):
    data = json.loads(DEFAULT_PATH.read_text())
    detector_config_from_dict(data)
    bad = tmp_path / "d.json"
    bad.write_text("{not json")
    with pytest.raises(DetectorConfigError, match="not valid JSON"):
        load_detector_config(bad)
    with pytest.raises(DetectorConfigError, match="does not exist"):
        load_detector_config(tmp_path / "missing.json")
    d = json.loads(json.dumps(data))
    d["collapse"]["drop_g"] = 10
    with pytest.raises(DetectorConfigError, match="drop_g"):
        detector_config_from_dict(d)
    d = json.loads(json.dumps(data))
    d["load"]["block_g"] = "heavy"
    with pytest.raises(DetectorConfigError, match="block_g must be a number"):
        detector_config_from_dict(d)
    d = json.loads(json.dumps(data))
    del d["imu"]["impact_g"]
    with pytest.raises(DetectorConfigError, match="missing setting"):
        detector_config_from_dict(d)


# --- the early place: the loop announces a place within 0.3 s of the release ---------------------
def _lift_and_place(seed: int, place_t: float = 3.0, duration: float = 6.0):
    """A block lifted at 1.0 s (slid out in 0.1 s) and put back on top at `place_t`, with noise."""
    from hw_synthetic import _ramp

    s = Script(duration, seed=seed)
    s.load -= _ramp(s.tl, 0.95, 0.1, 17.0)
    s.load += _ramp(s.tl, place_t - 0.02, 0.04, 17.0)
    s.load += s.rng.normal(0, 0.8, len(s.tl))
    return s


def test_a_place_is_reported_soon_after_the_block_is_let_go_and_its_settled_weight_follows(cfg):
    s = _lift_and_place(seed=21)
    det = SensorDetectors(cfg)
    assert _feed_all(det, s) == [K.LIFT, K.PLACE]
    place = det.events[1].evidence
    assert place["early"] is True
    assert place["detected_at"] - 3.0 <= 0.15  # the settled level alone came ~0.26 s after the release
    assert abs(place["settled_delta_g"] - 17.0) < 2.0 and place["settled_at"] > place["detected_at"]
    assert "withdrawn_at" not in place


def test_without_the_early_place_the_place_waits_for_the_settled_weight(cfg):
    import dataclasses

    late = dataclasses.replace(cfg, load=dataclasses.replace(cfg.load, early_place_s=0.0))
    det = SensorDetectors(late)
    assert _feed_all(det, _lift_and_place(seed=21)) == [K.LIFT, K.PLACE]
    assert det.events[1].evidence["detected_at"] - 3.0 >= 0.2 and det.events[1].evidence["early"] is False


def test_a_block_set_down_and_taken_up_again_withdraws_the_early_place_and_the_real_place_still_counts(cfg):
    from hw_synthetic import _ramp

    s = _lift_and_place(seed=22, place_t=5.0, duration=8.0)
    s.load += _ramp(s.tl, 2.98, 0.04, 17.0) - _ramp(s.tl, 3.12, 0.04, 17.0)  # resting on the top for 0.12 s only
    det = SensorDetectors(cfg)
    assert _feed_all(det, s) == [K.LIFT, K.PLACE, K.PLACE]
    first, second = det.events[1].evidence, det.events[2].evidence
    assert "withdrawn_at" in first and "settled_at" not in first
    assert second["detected_at"] - 5.0 <= 0.15 and "settled_at" in second


def test_a_table_file_written_before_the_early_place_takes_the_default_settings():
    data = json.loads(DEFAULT_PATH.read_text())
    del data["load"]["early_place_s"], data["load"]["early_place_band_g"]
    cfg = detector_config_from_dict(data)
    assert cfg.load.early_place_s == json.loads(DEFAULT_PATH.read_text())["load"]["early_place_s"]


# --- the referee's own voice buzzes the table, but hands and knocks still count -----------------
def test_a_hand_pressing_on_the_tower_while_the_referee_speaks_is_still_a_touch(cfg):
    s = Script(6.0, seed=11)
    s.speak(1.0, 3.0)
    s.touch(2.0)
    det = SensorDetectors(cfg)
    det.speaking(1.0, 4.0)
    assert _feed_all(det, s) == [K.TOUCH]


def test_a_knock_louder_than_the_voice_while_speaking_is_still_a_knock(cfg):
    s = Script(6.0, seed=12)
    s.speak(1.0, 3.0)
    s.knock(2.0)
    det = SensorDetectors(cfg)
    det.speaking(1.0, 4.0)
    assert _feed_all(det, s) == [K.KNOCK]


def test_a_referee_speaking_from_the_first_sample_does_not_stop_the_detectors(cfg):
    s = Script(4.0, seed=13)
    s.speak(0.0, 3.0)
    s.touch(1.5)
    det = SensorDetectors(cfg)
    det.speaking(0.0, 3.0)
    assert _feed_all(det, s) == [K.TOUCH]


def _next_round(seed: int, start: float):
    """A new tower's first seconds, `start` seconds into the stream: a pull begins at once."""
    s = Script(3.0, seed=seed)
    s.pull(0.05)
    gyro = s.finish()
    return s.ti + start, s.acc, s.tl + start, s.load, gyro


def test_a_pull_at_once_after_a_new_tower_is_weighed_is_a_lift_when_the_round_starts_from_its_weight(cfg):
    """After a collapse the detectors wait for the load to settle a while before they trust it
    again; the build has weighed the new tower already, so the round starts from that weight and
    a pull straight away is reported."""
    def after_a_collapse():
        det = SensorDetectors(cfg)
        s = Script(4.0, seed=11)
        s.collapse(1.0)
        gyro = s.finish()
        det.feed(s.ti, s.acc, s.tl, s.load, gyro=gyro)
        return det

    ti, acc, tl, load, gyro = _next_round(12, 60.0)
    told = after_a_collapse()
    told.new_tower(float(load[:50].mean()))  # the build's settled weight
    told.feed(ti, acc, tl, load, gyro=gyro)
    told.flush()
    untold = after_a_collapse()
    untold.feed(ti, acc, tl, load, gyro=gyro)
    untold.flush()
    assert [e.kind for e in told.events][:1] == [K.COLLAPSE] and K.LIFT in [e.kind for e in told.events]
    assert K.LIFT not in [e.kind for e in untold.events]
