"""Which of two identical blocks was pulled: the camera saw where it stuck out of the tower."""

import cv2
import numpy as np

from referee.loop.fusion import Question
from vision import protrusion as pr
from vision.geometry import intrinsics, look_at
from vision.kit import load_tray
from vision.tray import Registration

TRAY = load_tray("calibration/twin/vision/tray.json")
CAMERA = look_at(intrinsics(560.0, 640, 480), np.array([*TRAY.tower_center, 620.0]), np.array([*TRAY.tower_center, 0.0]), 0.0)
REG = Registration(CAMERA.plane_homography(0.0), CAMERA, (0, 1, 2, 3), 0.0)
RED = (40, 40, 200)
TOP = 12


def frame_with_block_out(level: int, slot: int, out_mm: float) -> np.ndarray:
    """The tray, the tower from above, and a red block pushed `out_mm` out of (level, slot)."""
    img = np.full((480, 640, 3), (150, 200, 225), np.uint8)
    hull = pr.tower_silhouette(TRAY, REG, 0.0, TOP * 15.0).astype(np.int32)
    cv2.fillConvexPoly(img, hull, (60, 140, 60))
    centre, axis, _ = pr._slot_axis(TRAY, level, slot)
    normal = np.array([-axis[1], axis[0]])
    half_len, half_w = 37.5, 12.5
    end = centre + axis * (half_len + out_mm)
    start = centre + axis * (half_len - 5)
    quad = np.array([start + normal * half_w, end + normal * half_w, end - normal * half_w, start - normal * half_w])
    cv2.fillConvexPoly(img, np.round(REG.to_image(quad, level * 15.0)).astype(np.int32), RED)
    return img


def red_chroma() -> np.ndarray:
    lab = cv2.cvtColor(np.uint8([[RED]]), cv2.COLOR_BGR2LAB)[0, 0].astype(float)
    return lab[1:] - 128.0


def scores_for(frames, places):
    return pr.score_places(pr.load_config(), TRAY, REG, frames, places, TOP, red_chroma())


def test_a_block_sticking_out_at_its_slot_is_told_from_its_twin_in_another_slot():
    frames = [frame_with_block_out(4, 0, d) for d in (15, 30, 45)]
    cfg = pr.load_config()
    assert pr.which_place(cfg, scores_for(frames, [(4, 0), (8, 2)])) == (4, 0)
    assert pr.which_place(cfg, scores_for(frames, [(4, 0), (7, 1)])) == (4, 0)  # the other direction


def test_the_same_slot_on_another_level_of_the_same_direction_is_not_guessed():
    frames = [frame_with_block_out(4, 0, d) for d in (15, 30, 45)]
    assert pr.which_place(pr.load_config(), scores_for(frames, [(4, 0), (10, 0)])) is None


def test_frames_with_nothing_sticking_out_settle_nothing():
    frames = [frame_with_block_out(4, 0, -10)]  # still inside the tower
    assert pr.which_place(pr.load_config(), scores_for(frames, [(4, 0), (8, 2)])) is None


def test_the_loop_settles_the_question_from_the_frames_and_evidence_says_so(monkeypatch):
    import vision.tray
    from referee.loop.pulled_from import settle_which_spot

    class Pipeline:  # what the loop's reader carries: the tray and the registration's settings
        tray = TRAY
        cfg: dict = {}
        detector = None

    monkeypatch.setattr(vision.tray, "register", lambda cfg, tray, gray, detector: REG)
    pulling = frame_with_block_out(4, 0, 30)
    on_top = pulling.copy()  # later: the red 3 lies on top, in the middle of a new level
    centre, axis, _ = pr._slot_axis(TRAY, TOP + 1, 1)
    normal = np.array([-axis[1], axis[0]])
    quad = np.array([centre + axis * 37 + normal * 12, centre - axis * 37 + normal * 12,
                     centre - axis * 37 - normal * 12, centre + axis * 37 - normal * 12])
    cv2.fillConvexPoly(on_top, np.round(REG.to_image(quad, (TOP + 1) * 15.0)).astype(np.int32), RED)
    q = Question("Which red 3 was pulled: level 4, slot 0 or level 8, slot 2?", ("4/0", "8/2"),
                 {"level": TOP + 1, "slot": 1, "block": "red-3"}, kind="which_spot")
    option, evidence = settle_which_spot(q, Pipeline(), on_top, [pulling], TOP)
    assert option == "4/0"
    assert evidence["stick_out_scores"]["4/0"] > evidence["stick_out_scores"]["8/2"]
