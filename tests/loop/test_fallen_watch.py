"""A block lying beside the tower after a thud is a collapse; one lying there from the start is not."""

from types import SimpleNamespace

import vision.fallen
from hardware.detectors.config import load_detector_config
from referee.loop.fallen_watch import FallenWatch
from referee.observations import SensorEvent, SensorEventKind


class Tray:
    block_mm = (75.0, 25.0, 15.0)


class Sensors:
    """The tray felt a thud at `thud_t` (or never)."""

    def __init__(self):
        self.thud_t = None

    def first_impact(self, t0, t1, level_g):
        return (self.thud_t, 1.2) if self.thud_t is not None and t0 <= self.thud_t <= t1 else None


def block(x, y):
    return SimpleNamespace(center_mm=(x, y), confidence=0.9, whole=True)


def watch_with(monkeypatch, seen):
    monkeypatch.setattr(vision.fallen, "fallen_blocks_in_frame", lambda cfg, p, image, z: seen["now"])
    sensors = Sensors()
    watch = FallenWatch(SimpleNamespace(tray=Tray()), sensors, load_detector_config().camera_collapse, fallen_cfg={})
    return watch, sensors


def test_a_block_lying_there_when_the_round_starts_is_no_collapse(monkeypatch):
    seen = {"now": (block(300, 120),)}  # a spare block beside the tray's corner
    watch, _ = watch_with(monkeypatch, seen)
    for i in range(10):
        assert watch.frame(i * 0.5, None, 15, 1, i * 0.5) is None


def test_a_block_appearing_beside_the_tower_after_a_thud_is_a_collapse_at_the_thud(monkeypatch):
    seen = {"now": ()}
    watch, sensors = watch_with(monkeypatch, seen)
    assert watch.frame(0.0, None, 15, 1, 0.0) is None
    sensors.thud_t = 3.0
    seen["now"] = (block(160, 240),)
    ev = watch.frame(3.1, None, 15, 1, 3.1)
    assert ev is not None and ev.kind is SensorEventKind.COLLAPSE and ev.t == 3.0


def test_without_a_thud_the_camera_looks_about_once_a_second(monkeypatch):
    seen = {"now": ()}
    watch, _ = watch_with(monkeypatch, seen)
    for i in range(31):
        watch.frame(i / 15, None, 15, 1, i / 15)  # 2 s of frames at 15 a second
    assert watch.checks == 3


def test_the_block_in_a_players_hand_seen_beside_the_tower_is_not_a_fallen_block(monkeypatch):
    seen = {"now": ()}
    watch, sensors = watch_with(monkeypatch, seen)
    watch.frame(0.0, None, 15, 1, 0.0)
    watch.sensor_event(SensorEvent(SensorEventKind.LIFT, 2.9))  # the load cell: a block is in hand
    sensors.thud_t = 3.0  # the jolt of the block coming out
    seen["now"] = (SimpleNamespace(center_mm=(268.0, 144.0), confidence=0.9, whole=True),)  # carried past the tower
    assert watch.frame(3.1, None, 15, 1, 3.1) is None


def test_the_tower_is_masked_up_to_the_level_the_next_block_goes_on(monkeypatch):
    """What lies against the tower is not judged, and the tower is taken to reach as high as a block
    being laid: on a top not yet full that is the top itself, not a level above it. Twin seed 118:
    Cy's block slid off a 19-level top with one block on it and lay on the tray 15 mm from the
    tower; masked as if the tower reached level 20, it touched the mask and was passed over."""
    from tests.loop.test_table_loop import TOWER, make_loop, run

    heights = []
    monkeypatch.setattr(vision.fallen, "fallen_blocks_in_frame", lambda cfg, p, image, z: heights.append(z) or ())
    sensors = Sensors()
    # four full levels: the next block starts level 5; a fifth level begun: it goes on level 5 too
    for tower, top in ((TOWER, ["red-skip", "green-reverse", "blue-draw2"]), (TOWER + [[None, "yellow-1", None]], [None, "yellow-1", None])):
        watch = FallenWatch(SimpleNamespace(tray=Tray()), sensors, load_detector_config().camera_collapse, fallen_cfg={})
        clock, session, loop, _ = make_loop([(0.0, top, "x", [])], [], tower=tower, fallen=watch)
        assert session.round is not None
        heights.clear()
        run(clock, loop, 0.3)
        assert heights and set(heights) == {5 * 15.0}
