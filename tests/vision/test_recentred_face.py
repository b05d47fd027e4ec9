"""A block's glyph lies at its centre: a face found a few millimetres off its blocks, so far that
it misses one, is moved onto the glyphs of the blocks it did read, and the missed block is read.
A face on its blocks is left where it is. The moved face may read a little less surely than the
face found (decision.recentre_gain is negative): the block it finds costs evidence where the face
found read that slot as surely empty."""

from __future__ import annotations

import json
from dataclasses import replace

import cv2
import numpy as np
import pytest

from vision.geometry import Camera
from vision.reader import (FrameContext, as_read, default_config, frame_context, load_pipeline, read_frame,
                           reading_evidence, recentred_face, slot_evidence, slot_readings)

RED_SKIP_AND_RED_FOUR = "0017.png"  # small kit: red Skip, an empty slot, red 4, along y


def _names(slots) -> list:
    return [None if s.block is None else str(s.block) for s in slots]


@pytest.fixture
def read_right(calibration, small_kit):
    labels = json.loads((small_kit / "labels.json").read_text())
    truth = labels[RED_SKIP_AND_RED_FOUR]
    assert truth["slots"] == ["red-skip", None, "red-4"] and truth["orientation"] == "y" and truth["hands"] == 0
    pipe = load_pipeline(calibration)
    res = read_frame(pipe, cv2.imread(str(small_kit / "images" / RED_SKIP_AND_RED_FOUR)))
    assert _names(res.reading.slots) == truth["slots"] and res.reading.orientation == "y"
    return pipe, res


def _face_moved_along_the_blocks(pipe, res, mm: float) -> tuple[FrameContext, object]:
    """The context and evidence of the face `mm` along the blocks (tray y) from where it was found."""
    ctx0 = frame_context(pipe, res.image)
    cam = res.registration.camera
    off = Camera(cam.K, cam.rvec, np.asarray(cam.tvec, np.float64).reshape(3) + cam.R @ np.array([0.0, mm, 0.0]))
    ctx = FrameContext(replace(res.registration, camera=off), ctx0.tray_bgr, ctx0.gains, {})
    return ctx, slot_evidence(pipe, ctx, res.image, res.z_top, "y", res.first_slot)


@pytest.mark.parametrize("mm", [12.0, -12.0])
def test_a_face_a_sixth_of_a_block_off_misses_a_block_and_is_moved_back_onto_the_glyphs(read_right, mm):
    pipe, res = read_right
    ctx, off = _face_moved_along_the_blocks(pipe, res, mm)
    assert _names(slot_readings(pipe, off)) == ["red-skip", None, None]  # the red 4 is missed off its place
    moved = recentred_face(pipe, ctx, res.image, res.z_top, "y", res.first_slot, off)
    assert moved is not None
    ctx2, ev2 = moved
    assert _names(slot_readings(pipe, ev2)) == ["red-skip", None, "red-4"]
    # moved back by about the offset given (the ink says where the block is: at most the search
    # area less the crop, 9 mm, along a block)
    back = ctx2.registration.camera.center - ctx.registration.camera.center
    assert abs(back[1] - mm) < 6.0 and abs(back[0]) < 4.0


def test_a_face_on_its_blocks_is_left_where_it_is(read_right):
    pipe, res = read_right
    ctx, ev = _face_moved_along_the_blocks(pipe, res, 0.0)
    assert recentred_face(pipe, ctx, res.image, res.z_top, "y", res.first_slot, ev) is None


def test_with_recentring_off_the_face_that_misses_a_block_stays(read_right):
    pipe, res = read_right
    pipe.cfg["decision"]["recentre_mm"] = 0.0
    ctx, off = _face_moved_along_the_blocks(pipe, res, 12.0)
    assert recentred_face(pipe, ctx, res.image, res.z_top, "y", res.first_slot, off) is None


def _evidence_gain(pipe, ctx, res, off) -> float:
    """How much more evidence the face moved back onto the glyphs has than the face off them."""
    ctx2, ev2 = recentred_face(pipe, ctx, res.image, res.z_top, "y", res.first_slot, off)
    w = float(pipe.cfg["decision"].get("orientation_empty_weight", 1.0))
    return reading_evidence(as_read(pipe, ev2), w) - reading_evidence(as_read(pipe, off), w)


def test_the_moved_face_is_kept_when_it_reads_no_worse_than_the_gain_allows(read_right):
    pipe, res = read_right
    ctx, off = _face_moved_along_the_blocks(pipe, res, 12.0)
    pipe.cfg["decision"]["recentre_gain"] = -10.0  # (any evidence: to measure it)
    gain = _evidence_gain(pipe, ctx, res, off)
    pipe.cfg["decision"]["recentre_gain"] = gain - 0.05
    assert recentred_face(pipe, ctx, res.image, res.z_top, "y", res.first_slot, off) is not None
    pipe.cfg["decision"]["recentre_gain"] = gain + 0.05
    assert recentred_face(pipe, ctx, res.image, res.z_top, "y", res.first_slot, off) is None


def test_a_face_that_finds_the_missed_block_may_read_a_little_less_surely():
    # on tall tops seen from aside the face moved onto the glyphs held every block but read up
    # to 0.1 less than the face found (synthetic fam20/same 0068: 0.055), whose slot read surely
    # empty on the level below's ends; at -0.2 a face was moved a slot over (docs/vision.md)
    decision = default_config()["decision"]
    assert -0.2 <= decision["recentre_gain"] < 0 and decision["recentre_min_gain"] >= 1
