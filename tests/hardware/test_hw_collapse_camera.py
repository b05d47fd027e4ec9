"""Collapse by sensors + camera (hardware/detectors/camera_confirmed.py): a block the camera sees lying
outside the tower is a collapse after a thud, or once it stays; a block in a moving hand is not."""

import json
from dataclasses import dataclass

import numpy as np
import pytest

from hardware.detectors import SensorDetectors, load_detector_config
from hardware.detectors.bench import CAMERA_ROW, replay, score, KindScore
from hardware.detectors.camera_confirmed import CameraConfirmedCollapse
from hardware.detectors.config import DEFAULT_PATH, detector_config_from_dict
from hardware.recorder import Session
from referee.observations import SensorEvent, SensorEventKind as K
from hw_synthetic import make_session


@dataclass(frozen=True)
class Seen:
    center_mm: tuple[float, float]
    confidence: float = 0.8
    whole: bool = True


class Thuds:
    """Impact source: thuds at fixed times."""

    def __init__(self, *times: float, g: float = 1.0):
        self.times, self.g = times, g

    def first_impact(self, t0, t1, level_g):
        hits = [t for t in self.times if t0 <= t <= t1 and self.g >= level_g]
        return (hits[0], self.g) if hits else None


@pytest.fixture(scope="module")
def cfg():
    return load_detector_config().camera_collapse


def test_a_block_lying_outside_the_tower_after_a_thud_is_a_collapse_at_the_thud(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(10.2))
    ev = det.frame(10.5, [Seen((60.0, 150.0))])
    assert ev is not None and ev.kind is K.COLLAPSE
    assert ev.t == pytest.approx(10.2) and ev.evidence["detected_at"] == pytest.approx(10.5)


def test_a_thud_long_before_the_frame_does_not_confirm_it(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(10.0))
    assert det.frame(10.0 + cfg.candidate_window_s + 0.5, [Seen((60.0, 150.0))]) is None


def test_without_a_thud_the_block_must_stay_where_it_lies(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds())
    assert det.frame(5.0, [Seen((60.0, 150.0))]) is None
    ev = det.frame(5.0 + cfg.persist_s, [Seen((62.0, 151.0))])
    assert ev is not None and ev.t == pytest.approx(5.0) and ev.evidence["lying_since"] == pytest.approx(5.0)


def test_a_block_carried_in_a_hand_moves_between_frames_and_is_not_a_collapse(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds())
    for k in range(6):
        assert det.frame(5.0 + k * cfg.persist_s, [Seen((40.0 + 30 * k, 150.0))]) is None


def test_a_block_seen_once_then_gone_is_forgotten(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds())
    assert det.frame(5.0, [Seen((60.0, 150.0))]) is None
    for k in range(1, 4):
        assert det.frame(5.0 + k * (cfg.max_gap_s + 0.05), []) is None
    assert det.frame(5.0 + 4 * (cfg.max_gap_s + 0.05), [Seen((60.0, 150.0))]) is None


def test_a_hand_passing_over_a_fallen_block_for_a_moment_does_not_reset_it(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds())
    frames = np.arange(5.0, 5.0 + cfg.persist_s + 0.05, 0.1)
    events = [det.frame(t, [] if 5.3 <= t < 5.3 + cfg.max_gap_s - 0.1 else [Seen((60.0, 150.0))]) for t in frames]
    assert events[-1] is not None and all(e is None for e in events[:-1])


def test_a_block_lying_there_before_the_round_is_not_a_collapse(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(3.0))
    det.ignore([Seen((250.0, 40.0))])
    for t in (3.2, 4.2, 5.2):
        assert det.frame(t, [Seen((251.0, 41.0))]) is None


def test_unsure_blocks_are_ignored(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(1.0))
    assert det.frame(1.2, [Seen((60.0, 150.0), confidence=cfg.min_confidence / 2)]) is None


def test_a_block_cut_by_the_picture_edge_counts_after_a_thud_only_if_configured(cfg):
    from dataclasses import replace

    edge = [Seen((150.0, -20.0), whole=False)]
    on = CameraConfirmedCollapse(replace(cfg, partial_after_thud=True), Thuds(2.0))
    off = CameraConfirmedCollapse(replace(cfg, partial_after_thud=False), Thuds(2.0))
    assert on.frame(2.3, edge) is not None
    assert off.frame(2.3, edge) is None
    assert off.frame(2.3 + cfg.persist_s, edge) is not None  # ... once it stays


def test_the_sensors_collapse_passes_through_once_and_ends_the_round(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(1.0))
    sensor = SensorEvent(K.COLLAPSE, 1.0, 1.0, {"detected_at": 1.1})
    assert det.sensor_event(SensorEvent(K.KNOCK, 0.5)) is None
    assert det.sensor_event(sensor) is sensor
    assert det.sensor_event(sensor) is None
    assert det.frame(1.5, [Seen((60.0, 150.0))]) is None
    assert det.events == [sensor]
    det.reset()
    assert det.frame(1.6, [Seen((60.0, 150.0))]) is not None


def test_the_sensors_say_when_the_tray_first_felt_an_impact():
    sd = SensorDetectors(load_detector_config())
    t = np.arange(0, 2.0, 0.001)
    acc = np.tile([0.0, 0.0, 9.80665], (len(t), 1))
    acc[1200:1210, 2] += 5.0  # a 0.5 g thud at 1.2 s
    sd.feed(t, acc, np.arange(0, 2.0, 1 / 320), np.full(640, 1000.0))
    hit = sd.first_impact(0.5, 2.0, 0.15)
    assert hit is not None and hit[0] == pytest.approx(1.2, abs=0.01) and hit[1] >= 0.3
    assert sd.first_impact(0.5, 1.1, 0.15) is None


def test_a_table_file_written_before_the_camera_section_still_loads():
    data = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    del data["camera_collapse"]
    cfg = detector_config_from_dict(data)
    assert cfg.camera_collapse == load_detector_config().camera_collapse


def test_a_bad_camera_setting_is_named(tmp_path):
    from hardware.detectors import DetectorConfigError

    data = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    data["camera_collapse"]["persist_s"] = "soon"
    with pytest.raises(DetectorConfigError, match="camera_collapse.persist_s"):
        detector_config_from_dict(data)


def test_replaying_a_session_with_frames_gives_the_fused_row(tmp_path):
    """The bench's replay: sensors fed up to each frame's time, then the frame's fallen blocks."""
    cfg = load_detector_config()
    s = Session(make_session(tmp_path / "s", seed=1))
    truth = s.truth()
    collapse_t = next(float(x["t"]) for x in truth if x["type"] == "collapse")
    frames = [(i, t, tmp_path / f"{i}.jpg") for i, t in enumerate(np.arange(0.5, collapse_t + 3, 0.5))]
    s.frames = lambda: iter(frames)
    asked = []

    def check(t, path):
        asked.append(t)
        return (Seen((60.0, 150.0)),) if t > collapse_t else ()

    events, fused = replay(s, cfg, frame_check=check)
    assert asked and all(b > a for a, b in zip(asked, asked[1:]))
    assert [e.kind for e in fused] == [K.COLLAPSE]
    sc = score(fused, truth, {CAMERA_ROW: KindScore(CAMERA_ROW)})[CAMERA_ROW]
    assert sc.tp == 1 and sc.fp == 0


def test_replaying_a_session_the_camera_alone_calls_a_block_that_stays(tmp_path):
    """No weight left the tray (no sensor collapse), but from 6 s on a block lies outside the tower."""
    cfg = load_detector_config()
    s = Session(make_session(tmp_path / "quiet", seed=2, collapse=False))
    frames = [(i, t, tmp_path / f"{i}.jpg") for i, t in enumerate(np.arange(0.5, 12.0, 0.5))]
    s.frames = lambda: iter(frames)
    events, fused = replay(s, cfg, frame_check=lambda t, path: (Seen((60.0, 150.0)),) if t >= 6.0 else ())
    assert not [e for e in events if e.kind is K.COLLAPSE]
    assert len(fused) == 1 and fused[0].evidence["camera_t"] >= 6.0


def test_while_a_block_is_in_hand_a_doubtful_fallen_block_may_be_that_block(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(20.1))
    det.sensor_event(SensorEvent(K.LIFT, 20.0))
    unsure = cfg.min_confidence + 0.5 * (cfg.in_hand_min_confidence - cfg.min_confidence)
    assert det.frame(20.4, [Seen((60.0, 150.0), confidence=unsure)]) is None
    ev = det.frame(20.6, [Seen((60.0, 150.0), confidence=cfg.in_hand_min_confidence + 0.05)])
    assert ev is not None and ev.t == pytest.approx(20.1)


def test_once_the_block_is_placed_a_doubtful_fallen_block_counts_again(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(30.5))
    det.sensor_event(SensorEvent(K.LIFT, 28.0))
    det.sensor_event(SensorEvent(K.PLACE, 30.0))
    unsure = cfg.min_confidence + 0.5 * (cfg.in_hand_min_confidence - cfg.min_confidence)
    assert det.frame(30.7, [Seen((60.0, 150.0), confidence=unsure)]) is not None


def test_while_a_block_is_in_hand_a_doubtful_block_lying_still_is_a_fallen_one_and_a_moving_one_is_not(cfg):
    unsure = cfg.min_confidence + 0.5 * (cfg.in_hand_min_confidence - cfg.min_confidence)
    still = CameraConfirmedCollapse(cfg, Thuds(40.0))
    still.sensor_event(SensorEvent(K.LIFT, 39.5))
    assert still.frame(40.2, [Seen((60.0, 150.0), confidence=unsure)]) is None
    ev = still.frame(40.2 + cfg.in_hand_still_s, [Seen((61.0, 150.0), confidence=unsure)])
    assert ev is not None and ev.t == pytest.approx(40.0)
    carried = CameraConfirmedCollapse(cfg, Thuds(40.0))
    carried.sensor_event(SensorEvent(K.LIFT, 39.5))
    for k in range(4):  # carried towards the top: 40 mm further each frame
        assert carried.frame(40.2 + 0.2 * k, [Seen((60.0 + 40 * k, 150.0), confidence=unsure)]) is None


def test_a_doubtful_block_after_a_thud_counts_once_it_lies_still_on_a_second_frame(cfg):
    """A block seen 0.3-0.4 sure may be one in a player's hand at the end of a pull, before the load cell
    has felt the lift: it moves between frames; a block that fell lies still."""
    det = CameraConfirmedCollapse(cfg, Thuds(10.2))
    doubtful = cfg.sure_confidence - 0.2
    assert det.frame(10.4, [Seen((60.0, 150.0), doubtful)]) is None
    assert det.frame(10.6, [Seen((110.0, 170.0), doubtful)]) is None  # moved: in a hand
    ev = det.frame(10.8, [Seen((111.0, 171.0), doubtful)])
    assert ev is not None and ev.t == pytest.approx(10.2)


def test_a_block_already_lying_there_before_the_thud_did_not_fall_in_it(cfg):
    """A block end sticking out of the tower, in its shadow, can look like a block lying beside it: seen
    there before a thud (a pull's, a place's), the thud does not make it a fallen block."""
    det = CameraConfirmedCollapse(cfg, Thuds(12.65))
    assert det.frame(12.1, [Seen((233.0, 185.0), 0.45)]) is None
    assert det.frame(12.3, [Seen((233.0, 185.0), 0.45)]) is None
    assert det.frame(12.7, [Seen((233.0, 185.0), 0.45)]) is None
    assert det.frame(12.7 + 0.2, [Seen((233.0, 185.0), 0.45)]) is None


def test_a_sure_block_after_a_thud_is_a_collapse_on_the_first_frame(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(7.70))
    ev = det.frame(7.9, [Seen((59.4, 184.6), 0.96)])
    assert ev is not None and ev.t == pytest.approx(7.70) and ev.evidence["detected_at"] == pytest.approx(7.9)


def test_the_tower_falling_as_a_block_comes_out_is_a_collapse_the_pulled_block_alone_is_not():
    """The twin marks a collapse when the block being pulled drops onto the hand; that alone is the pull.
    When other blocks came to rest off the tower too (`landed`), the tower fell: it is scored."""
    from hardware.detectors.bench import not_the_pulled_block
    pull = {"t": 13.1, "type": "pull", "seat": 1, "level": 9, "slot": 2, "block": "yellow-2", "t_start": 12.4}
    drop = {"t": 12.9, "type": "collapse", "fallen": 1, "blocks": ["yellow-2"], "landed": ["yellow-2"]}
    fell = {**drop, "landed": ["yellow-2", "green-3", "blue-1", "red-4"]}
    assert not_the_pulled_block([pull, drop])[1]["type"] == "pulled_block_drop"
    assert not_the_pulled_block([pull, fell])[1]["type"] == "collapse"


# The detector bench's frame check masks the tower up to the level the next block goes on, as the
# live loop's fallen-block watch does: one level higher on a top not yet full hides a block that
# slid off it onto the tray beside the tower (twin seed 118).

FULL = [["red-1", "red-2", "red-3"]] * 15


def _placed(*levels: int) -> list[dict]:
    """The truth's places of blue 4s on these levels, each level's slots filled in order."""
    used: dict[int, int] = {}
    out = []
    for lv in levels:
        out.append({"type": "place", "level": lv, "slot": used.get(lv, 0), "block": "blue-4"})
        used[lv] = used.get(lv, 0) + 1
    return out


def test_on_a_full_top_the_next_block_goes_on_a_new_level():
    from hardware.detectors.bench import place_level_at

    assert place_level_at(FULL, []) == 16
    assert place_level_at(FULL, _placed(16, 16, 16)) == 17


def test_while_the_top_holds_fewer_than_three_blocks_the_next_one_goes_on_it():
    from hardware.detectors.bench import place_level_at

    assert place_level_at(FULL, _placed(16)) == 16
    assert place_level_at(FULL, _placed(16, 16, 16, 17)) == 17
    assert place_level_at(FULL[:-1] + [["red-1", None, None]], []) == 15


def test_the_twin_frame_check_masks_the_tower_to_the_place_level(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from hardware.detectors import bench

    checker = bench.twin_frame_checker.__new__(bench.twin_frame_checker)
    checker.pipeline = SimpleNamespace(tray=SimpleNamespace(block_mm=(75.0, 25.0, 15.0)))
    checker.frames, checker.seconds = 0, 0.0
    heights = []
    monkeypatch.setattr(checker, "fallen", lambda path, z: heights.append(z) or ())
    session = SimpleNamespace(meta={"tower": FULL}, truth=lambda: [{"type": "place", "t": 5.0, "level": 16, "slot": 1, "block": "blue-4"}])
    check = checker(session)
    check(1.0, tmp_path / "a.png")  # the start: the top is full
    check(6.0, tmp_path / "b.png")  # one block laid on level 16: the next goes there too
    assert heights == [16 * 15.0, 16 * 15.0]


# The thud a block fell in: a player's jolts come before a fall too. Twin run 911-005: the blue 4 slid
# off the top as it was placed and was first seen at 21.9 s; the first thud of the window was a jolt
# at 20.9 s, while the block was still in hand, and the collapse was dated 0.7 s early.

def test_a_block_first_seen_after_an_empty_frame_fell_in_the_thud_after_that_frame(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(20.9, 21.85))
    assert det.frame(21.7, []) is None  # nothing lies there yet
    ev = det.frame(21.9, [Seen((170.0, 57.0), confidence=0.9)])
    assert ev is not None and ev.t == pytest.approx(21.85)


def test_with_no_thud_after_the_empty_frame_the_windows_first_thud_stands(cfg):
    det = CameraConfirmedCollapse(cfg, Thuds(20.9))
    assert det.frame(21.7, []) is None
    ev = det.frame(21.9, [Seen((170.0, 57.0), confidence=0.9)])
    assert ev is not None and ev.t == pytest.approx(20.9)
