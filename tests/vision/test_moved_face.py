"""A tall top seen from aside: the camera centre the markers imply is a few millimetres off, and
at the top's height that puts the face millimetres off its blocks, where no height lines its
outline up and a lower level wins the height search. The face moved a few millimetres on its own
plane (a camera centre moved with the tray plane kept) finds the top, and the reading decides
whether it is kept (reader._better_focal)."""

from __future__ import annotations

import json
from dataclasses import replace

import cv2
import numpy as np
import pytest

from vision import plane_height as ph
from vision.geometry import apply_h
from vision.reader import FrameContext, frame_context, load_pipeline, read_frame, read_top, slot_readings, straighten

BLUE_DRAW_TWO_ON_EIGHTEEN_LEVELS = "0010.png"  # small kit: a lone blue Draw Two at an end, no hand


def _names(slots) -> list:
    return [None if s.block is None else str(s.block) for s in slots]


@pytest.fixture
def tall_top(calibration, small_kit):
    labels = json.loads((small_kit / "labels.json").read_text())
    truth = json.loads((small_kit / "truth.json").read_text())
    n = BLUE_DRAW_TWO_ON_EIGHTEEN_LEVELS
    assert labels[n]["slots"] == ["blue-draw2", None, None] and labels[n]["hands"] == 0 and truth[n]["levels"] == 18
    pipe = load_pipeline(calibration)
    img = cv2.imread(str(small_kit / "images" / n))
    assert _names(read_frame(pipe, img).reading.slots) == labels[n]["slots"]
    img = straighten(pipe, img)
    return pipe, img, frame_context(pipe, img)


def _camera_off_by(pipe, img, ctx, d: np.ndarray):
    """The registration whose camera centre shows the top's face moved by -d (mm) on its plane,
    the tray plane kept: a camera centre the markers placed a few mm off."""
    reg = ctx.registration
    cs = ph.coarse_search(pipe.cfg, pipe.tray, reg, img, ctx.tray_bgr, pipe.background, ctx.gains, 0.0, np.inf,
                          pipe.height_probes, False)
    C = np.asarray(reg.camera.center, np.float64)
    z = float(cs.zs[cs.chosen])
    k = C[2] / (C[2] - z)
    return replace(reg, camera=ph.camera_through(reg.H, np.array([*(C[:2] + k * d / (k - 1)), C[2]])))


def _read(pipe, img, ctx, reg, z):
    return _names(slot_readings(pipe, read_top(pipe, FrameContext(reg, ctx.tray_bgr, ctx.gains, {}), img, z)[1]))


def test_a_face_five_mm_off_loses_the_top_and_the_moved_face_finds_it(tall_top):
    pipe, img, ctx = tall_top
    off = _camera_off_by(pipe, img, ctx, np.array([0.0, -5.0]))
    cs = ph.coarse_search(pipe.cfg, pipe.tray, off, img, ctx.tray_bgr, pipe.background, ctx.gains, 0.0, np.inf,
                          pipe.height_probes, False)
    z, reg = ph.refine_candidate(pipe.cfg, pipe.tray, off, img.shape, cs, cs.chosen, ctx.tray_bgr, pipe.background,
                                 ctx.gains, False)
    assert z < 150.0 and _read(pipe, img, ctx, reg, z) == [None, None, None]  # a low level won: no block read
    moved = ph.moved_face(pipe.cfg, pipe.tray, off, cs, ctx.tray_bgr, pipe.background, ctx.gains)
    assert moved is not None
    z2, reg2 = moved
    assert abs(z2 - 18 * 15.0) < 15.0  # the top's own height, within a level
    assert _read(pipe, img, ctx, reg2, z2) == ["blue-draw2", None, None]
    # the tray plane is where the markers put it
    pts = np.array([[0.0, 0.0], [120.0, 40.0], [200.0, 210.0]])
    assert np.abs(reg2.to_image(pts) - apply_h(off.H, pts)).max() < 1e-6


def test_with_the_move_off_there_is_no_moved_face(tall_top):
    pipe, img, ctx = tall_top
    pipe.cfg["align"]["shift_mm"] = 0.0
    off = _camera_off_by(pipe, img, ctx, np.array([0.0, -5.0]))
    cs = ph.coarse_search(pipe.cfg, pipe.tray, off, img, ctx.tray_bgr, pipe.background, ctx.gains, 0.0, np.inf,
                          pipe.height_probes, False)
    assert ph.moved_face(pipe.cfg, pipe.tray, off, cs, ctx.tray_bgr, pipe.background, ctx.gains) is None


def test_a_face_where_the_camera_puts_it_needs_no_move(tall_top):
    pipe, img, ctx = tall_top
    cs = ph.coarse_search(pipe.cfg, pipe.tray, ctx.registration, img, ctx.tray_bgr, pipe.background, ctx.gains,
                          0.0, np.inf, pipe.height_probes, False)
    moved = ph.moved_face(pipe.cfg, pipe.tray, ctx.registration, cs, ctx.tray_bgr, pipe.background, ctx.gains)
    assert moved is None or np.linalg.norm(moved[1].camera.center[:2] - ctx.registration.camera.center[:2]) < 15.0


@pytest.mark.parametrize("shift", [(0.0, 0.0, 0.0), (6.0, -4.0, 0.0), (0.0, 0.0, 25.0), (-30.0, 12.0, -40.0)])
def test_the_camera_through_a_centre_keeps_the_tray_plane_and_sits_there(tall_top, shift):
    _, _, ctx = tall_top
    reg = ctx.registration
    C = np.asarray(reg.camera.center, np.float64) + np.array(shift)
    cam = ph.camera_through(reg.H, C)
    pts = np.array([[0.0, 0.0], [75.0, 30.0], [210.0, 190.0]])
    assert np.abs(cam.project(np.column_stack([pts, np.zeros(3)])) - apply_h(reg.H, pts)).max() < 1e-6
    assert np.abs(cam.center - C).max() < 1e-6
    depth = (cam.R @ np.array([105.0, 105.0, 0.0]) + np.asarray(cam.tvec).reshape(3))[2]
    assert depth > 0  # the tray lies in front of it
    assert cam.K[0, 0] > 0 and cam.K[1, 1] > 0


def test_the_shifted_nadir_moves_the_lifted_face_by_the_shift():
    C = np.array([110.0, 240.0, 470.0])
    zs = np.array([120.0, 200.0, 260.0])
    d = np.array([4.0, -3.0])
    N = ph._shifted_nadirs(C, zs, d)
    p = np.array([95.0, 100.0])
    for z, n in zip(zs, N):
        k = C[2] / (C[2] - z)
        assert np.allclose(n + k * (p - n), C[:2] + k * (p + d - C[:2]))
