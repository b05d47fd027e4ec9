"""A patterned table round the tray is no hand: in play the referee remembers what each part of
the table looks like, so a check cloth's squares stop showing as arms while a real arm still does."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision import top_level as tl
from vision.hands import find_hands
from vision.reader import default_config
from vision.synthkit import SynthOptions, default_tray, render_sample
from vision.table_memory import TableMemory
from vision.tray import make_detector, register

TRAY = default_tray()
CORNERS = np.array([[8.0, 8.0], [272.0, 8.0], [272.0, 272.0], [8.0, 272.0]])
H0 = np.eye(3)


def _frame(value: int, shape=(48, 64, 3)) -> np.ndarray:
    return np.full(shape, value, np.uint8)


def test_nothing_is_remembered_before_enough_snapshots():
    mem = TableMemory(CORNERS, every_s=0.0, min_frames=3)
    for t in range(3):
        assert mem.reference(H0, (48, 64, 3)) is None
        mem.learn(_frame(100), H0, float(t))
    assert mem.reference(H0, (48, 64, 3)) is not None


def test_snapshots_are_taken_at_most_every_interval_of_frame_time():
    mem = TableMemory(CORNERS, every_s=0.5)
    assert mem.learn(_frame(10), H0, 0.0)
    assert not mem.learn(_frame(10), H0, 0.3)
    assert mem.learn(_frame(10), H0, 0.6)
    assert mem.learn(_frame(10), H0, 0.1)  # the clock started again (a new world, a replay)
    assert not mem.learn(_frame(10), H0, 0.2)


def test_a_hand_passing_through_is_outvoted_by_the_table():
    mem = TableMemory(CORNERS, every_s=0.0, scale=1.0)
    for t, v in enumerate((100, 100, 30, 100, 100)):  # one snapshot with something dark over the table
        mem.learn(_frame(v), H0, float(t))
    ref = mem.reference(H0, (48, 64, 3))
    assert ref is not None and int(ref.image.max()) == int(ref.image.min()) == 100


def test_a_camera_that_moves_starts_the_memory_afresh():
    mem = TableMemory(CORNERS, every_s=0.0, moved_px=3.0, min_frames=1)
    mem.learn(_frame(100), H0, 0.0)
    bumped = np.array([[1.0, 0, 10.0], [0, 1.0, 0], [0, 0, 1.0]])
    assert mem.reference(bumped, (48, 64, 3)) is None  # the remembered table lies elsewhere now
    mem.learn(_frame(50), bumped, 1.0)
    ref = mem.reference(bumped, (48, 64, 3))
    assert ref is not None and int(ref.image.max()) == 50  # only what the moved camera has seen


def test_a_frame_of_another_size_is_not_compared_with_the_memory():
    mem = TableMemory(CORNERS, every_s=0.0, min_frames=1)
    mem.learn(_frame(100), H0, 0.0)
    assert mem.reference(H0, (96, 128, 3)) is None


@pytest.mark.parametrize("kw", [{"frames": 0}, {"min_frames": 5, "frames": 3}, {"scale": 0.0}, {"every_s": -1.0}])
def test_a_memory_that_cannot_work_is_refused(kw):
    with pytest.raises(ValueError):
        TableMemory(CORNERS, **kw)


def _cloth_scene(seed: int, hands: tuple[float, float, float]):
    opt = SynthOptions(hand_probs=hands, hide_marker_prob=0.0, table="cloth")
    img, meta = render_sample(np.random.default_rng(seed), TRAY, opt, focal=600.0)
    return cv2.cvtColor(img, cv2.COLOR_RGB2BGR), meta


def _hands(img, levels: int, ref=None):
    cfg = {**default_config(), "camera": {"focal_px": 600.0, "width": 640}}
    reg = register(cfg, TRAY, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), make_detector(cfg))
    tray_bgr = tl.tray_color(cfg, TRAY, reg, img)
    hands = find_hands(cfg, TRAY, reg, img, tray_bgr, levels * 15.0, None, tl.color_gains(cfg, tray_bgr), None, ref)
    return hands, reg


def test_a_check_cloth_shows_no_hands_once_the_table_is_remembered():
    clear, meta = _cloth_scene(22, (1, 0, 0))  # the same scene with nobody at the tower
    levels = meta["extra"]["levels"]
    phantoms, reg = _hands(clear, levels)
    assert len(phantoms) >= 1  # the cloth's squares read as arms when the table is one colour
    mem = TableMemory(CORNERS, min_frames=1)
    mem.learn(clear, reg.H, 0.0)
    assert _hands(clear, levels, mem.reference(reg.H, clear.shape))[0] == ()


@pytest.mark.parametrize("seed", [1, 3, 22])
def test_a_real_hand_on_a_check_cloth_is_still_seen_with_the_table_remembered(seed):
    clear, meta = _cloth_scene(seed, (1, 0, 0))
    with_hand, meta_hand = _cloth_scene(seed, (0, 1, 0))
    assert meta_hand["label"]["hands"] == 1
    _, reg = _hands(clear, meta["extra"]["levels"])
    mem = TableMemory(CORNERS, min_frames=1)
    mem.learn(clear, reg.H, 0.0)
    hands, _ = _hands(with_hand, meta["extra"]["levels"], mem.reference(reg.H, clear.shape))
    assert len(hands) == 1


@pytest.mark.parametrize("gain", [0.7, 1.3])
def test_a_room_light_that_changes_after_the_table_was_remembered_makes_no_phantom_arm(gain):
    clear, meta = _cloth_scene(22, (1, 0, 0))
    with_hand, _ = _cloth_scene(22, (0, 1, 0))
    levels = meta["extra"]["levels"]
    _, reg = _hands(clear, levels)
    mem = TableMemory(CORNERS, min_frames=1)
    mem.learn(clear, reg.H, 0.0)
    ref = mem.reference(reg.H, clear.shape)

    def relit(img):
        return np.clip(img.astype(np.float32) * gain, 0, 255).astype(np.uint8)

    assert _hands(relit(clear), levels, ref)[0] == ()
    assert len(_hands(relit(with_hand), levels, ref)[0]) == 1
