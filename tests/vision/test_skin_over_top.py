"""A hand over the top lies across its blocks in bars of its own colour, and a finger's two
edges look like the seams between blocks. The arm's colour, measured where it crosses the tray,
finds the hand again on the top's face: the seam profiles leave those pixels out, and a slot
the hand covers counts the same in either orientation."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from referee.observations import SlotReading  # noqa: F401 (the reader's own types)
from vision import skin as sk
from vision.hands import HandMask
from vision.kit import Tray
from vision.reader import SlotEvidence, default_config, reading_evidence
from vision.top_level import orientation_features

CFG = default_config()
SC, OC = CFG["skin"], CFG["orientation"]
TRAY = Tray("DICT_4X4_50", {}, (150.0, 150.0), (75.0, 25.0, 15.0))
SKIN_BGR = (110, 150, 205)  # a light-brown hand under the kit's light
BLOCK_BGR = [(40, 40, 200), (40, 180, 40), (200, 90, 30)]  # red, green, blue


def _lab(bgr) -> np.ndarray:
    return cv2.cvtColor(np.uint8([[bgr]]), cv2.COLOR_BGR2Lab).reshape(3).astype(np.float32)


def _face(orient: str = "x") -> np.ndarray:
    """A top of three blocks as `face_image` cuts it at 1 px/mm: 4 mm of margin round 75 mm."""
    m, n = int(OC["margin_mm"]), int(75 + 2 * OC["margin_mm"])
    face = np.full((n, n, 3), 200, np.uint8)
    for s, bgr in enumerate(BLOCK_BGR):
        lo = m + 75 - (s + 1) * 25 if orient == "x" else m + s * 25
        if orient == "x":
            face[lo:lo + 25, m:m + 75] = bgr
            face[lo, m:m + 75] = 60  # the seam's dark line
        else:
            face[m:m + 75, lo:lo + 25] = bgr
            face[m:m + 75, lo] = 60
    return face


def _fingers(face: np.ndarray) -> np.ndarray:
    """Four fingers laid across an "x" top (along the image's columns), 12 mm wide."""
    out = face.copy()
    for c in (14, 32, 50, 68):
        out[6:70, c:c + 12] = SKIN_BGR
    return out


def test_the_arms_colour_marks_the_fingers_on_the_top_and_not_its_blocks():
    face = _fingers(_face())
    mask = sk.skin_mask(SC, face, _lab(SKIN_BGR))
    assert mask is not None
    assert mask[40, 20] and mask[40, 74]  # on two fingers
    assert not mask[40, 8] and not mask[1, 40]  # a block beside them, the tray's margin
    assert not mask[60, 9]


def test_no_hand_over_the_tower_leaves_the_face_as_it_is():
    assert sk.skin_mask(SC, _fingers(_face()), None) is None
    assert sk.skin_mask(SC, _face(), _lab(SKIN_BGR)) is None  # no pixel of the arm's colour


def test_a_face_all_of_the_arms_colour_is_no_hand():
    """An arm colour that matches most of the face is the blocks' or the tray's own colour."""
    face = np.full((83, 83, 3), SKIN_BGR, np.uint8)
    assert sk.skin_mask(SC, face, _lab(SKIN_BGR)) is None


@pytest.mark.parametrize("orient", ["x", "y"])
def test_a_hand_over_one_slot_covers_that_slot(orient):
    face = _face(orient)
    m = int(OC["margin_mm"])
    mask = np.zeros(face.shape[:2], bool)
    if orient == "x":  # slot 0 of an "x" top is the face's bottom band (the image's rows run against y)
        mask[m + 50:m + 75, m:m + 75] = True
    else:  # slot 0 of a "y" top is its left band
        mask[m:m + 75, m:m + 25] = True
    np.testing.assert_allclose(sk.slot_cover(OC, TRAY.block_mm, mask, orient), [1.0, 0.0, 0.0], atol=0.05)
    other = "y" if orient == "x" else "x"
    np.testing.assert_allclose(sk.slot_cover(OC, TRAY.block_mm, mask, other), [1 / 3] * 3, atol=0.05)


def test_fingers_left_out_of_the_seam_profiles_show_the_tops_own_seams():
    """Fingers across an "x" top add column seams; with the hand's pixels left out, the
    profiles are close to those of the top without a hand again."""
    clean, fingers = _face(), _fingers(_face())
    mask = sk.skin_mask(SC, fingers, _lab(SKIN_BGR))
    f0 = orientation_features(CFG, TRAY, clean)
    f_hand = orientation_features(CFG, TRAY, fingers)
    f_left_out = orientation_features(CFG, TRAY, fingers, mask)
    profiles = slice(0, 2 * 2 * (3 + int(OC["profile_bins"])) + 2)  # both channels' profiles and ratios
    assert np.linalg.norm(f_left_out[profiles] - f0[profiles]) < 0.5 * np.linalg.norm(f_hand[profiles] - f0[profiles])
    assert np.array_equal(orientation_features(CFG, TRAY, clean, None), f0)  # no mask: as before


def test_a_covered_slot_counts_the_same_in_either_orientation():
    ev = SlotEvidence(np.array([0.99, 0.99, 0.02]), np.full((3, 5), 0.2), np.full((3, 9), 0.1))
    ev.p_col[:, 0], ev.p_gly[:, 0] = 0.95, 0.95
    plain = reading_evidence(ev, 1.0)
    covered = reading_evidence(ev, 1.0, np.array([1.0, 0.0, 0.0]), 0.7)
    # slot 0 read as a sure block (0.99 * 0.95 * 0.95) now counts 0.7; the others as they read
    assert covered == pytest.approx(plain - (0.99 * 0.9025 + 0.01 - 0.7) * (1 - 0.01 * 0.01 * 0.98), rel=1e-6)
    assert reading_evidence(ev, 1.0, None, 0.7) == plain


def test_the_arms_cells_give_their_colour_only_when_an_arm_reaches_the_tower():
    fg = np.zeros((20, 20), bool)
    fg[2:8, 0:12] = True
    px = np.full((20, 20, 3), 200.0, np.float32)
    px[fg] = SKIN_BGR
    m = HandMask(fg, np.ones_like(fg), np.zeros_like(fg), np.zeros_like(fg), np.zeros_like(fg),
                 np.zeros((20, 20, 2)), 0.0, 5.0, px=px)
    np.testing.assert_allclose(sk.arm_lab(SC, m, ["an arm"]), _lab(SKIN_BGR), atol=1.0)
    assert sk.arm_lab(SC, m, []) is None  # arms that do not reach the tower: no hand over the top


THREE_ALONG_X = "0020.png"  # small kit: red 2, blue 1, yellow 1 along x, no hand


@pytest.fixture
def fingers_across_the_top(calibration, small_kit):
    """The kit's full top along x with a light-brown hand laid over it: its arm comes in over
    the tray from the south, four fingers 13 mm wide lie across the three blocks (along y)."""
    from vision.reader import load_pipeline, read_frame

    pipe = load_pipeline(calibration)
    img = cv2.imread(str(small_kit / "images" / THREE_ALONG_X))
    seen = read_frame(pipe, img)
    assert seen.reading.orientation == "x" and not seen.reading.hands
    cx, cy = pipe.tray.tower_center
    hz = seen.z_top + 20.0  # the hand lies 20 mm over the top

    def drawn(corners_mm):
        pts = seen.registration.to_image(np.asarray(corners_mm, float), hz)
        return np.round(pts).astype(np.int32)
    cv2.fillPoly(img, [drawn([[cx - 40, cy - 60], [cx + 40, cy - 60], [cx + 45, cy - 400], [cx - 45, cy - 400]])],
                 SKIN_BGR, cv2.LINE_AA)
    for x0 in (-34, -16, 2, 20):
        cv2.fillPoly(img, [drawn([[cx + x0, cy - 62], [cx + x0 + 13, cy - 62], [cx + x0 + 13, cy + 30], [cx + x0, cy + 30]])],
                     SKIN_BGR, cv2.LINE_AA)
    return pipe, img


def test_fingers_laid_across_the_top_do_not_turn_its_orientation(fingers_across_the_top):
    from vision.reader import read_frame

    pipe, img = fingers_across_the_top
    reading = read_frame(pipe, img).reading
    assert reading.orientation == "x"
    assert len(reading.hands) == 1
    assert reading.uncertain  # the blocks under the fingers are not named surely
    # every block under the fingers reads empty, and the reading says the hand hides them
    assert "slot 0, 1, 2 reads empty, but a hand covers it" in reading.note


def test_without_the_arms_colour_the_fingers_read_as_the_other_orientation(fingers_across_the_top):
    from vision.reader import read_frame

    pipe, img = fingers_across_the_top
    pipe.cfg["skin"]["chroma_within"] = 0.0  # no pixel is of the arm's colour
    reading = read_frame(pipe, img).reading
    assert reading.orientation == "y"
    assert len(reading.hands) == 1


def test_an_arm_of_no_colour_is_no_skin_to_find():
    """A white sleeve (or a pale hand seen as the tray's white) would mark the glyphs' white
    fields on the top: an arm with hardly any chroma gives no colour."""
    fg = np.zeros((20, 20), bool)
    fg[2:8, 0:12] = True
    px = np.full((20, 20, 3), 120.0, np.float32)
    px[fg] = (235, 236, 234)
    m = HandMask(fg, np.ones_like(fg), np.zeros_like(fg), np.zeros_like(fg), np.zeros_like(fg),
                 np.zeros((20, 20, 2)), 0.0, 5.0, px=px)
    assert sk.arm_lab(SC, m, ["an arm"]) is None
    px[fg] = SKIN_BGR
    assert sk.arm_lab(SC, m, ["an arm"]) is not None


def _empty_and_held():
    from referee.observations import SlotReading
    from referee.blocks import Block

    return (SlotReading(None, 0.95), SlotReading(Block.parse("red-2"), 0.97), SlotReading(None, 0.9))


def test_a_slot_read_empty_under_a_hand_is_reported_as_not_seen(calibration, monkeypatch):
    """Fingers over a block hide its colour and glyph, and the occupancy model reads skin as no
    block, surely: a slot read empty that the arm's skin covers 0.4 of is named in the doubts."""
    import vision.reader as reader

    pipe = reader.load_pipeline(calibration)
    ctx = reader.FrameContext(None, None, None)
    img = np.zeros((4, 4, 3), np.uint8)
    slots = _empty_and_held()
    monkeypatch.setattr(reader, "covered_slots", lambda p, ctx, img, z, orient: np.array([0.5, 0.9, 0.39]))
    assert reader.empties_under_a_hand(pipe, ctx, img, 100.0, "x", 0, slots) == [0]  # not the block, not 0.39
    assert reader.empties_under_a_hand(pipe, ctx, img, 100.0, "x", 1, slots) == []  # a face taken a slot over
    monkeypatch.setattr(reader, "covered_slots", lambda p, ctx, img, z, orient: None)
    assert reader.empties_under_a_hand(pipe, ctx, img, 100.0, "x", 0, slots) == []  # no hand over the top


def test_under_a_hand_a_slot_no_finger_covers_needs_only_the_usual_confidence(calibration):
    """Under a hand a slot read at 0.65 makes the reading unsure (the hand may cover it); where
    the arm's colour shows no skin on that slot, 0.65 is as sure as with no hand."""
    from referee.blocks import Block
    from referee.observations import SlotReading
    from vision.reader import _uncertainty, load_pipeline

    pipe = load_pipeline(calibration)
    slots = (SlotReading(Block.parse("red-2"), 0.65), SlotReading(None, 0.99), SlotReading(None, 0.99))
    hand = ["a hand"]
    assert not _uncertainty(pipe, slots, 0.99)[0]  # no hand: 0.65 is sure
    assert _uncertainty(pipe, slots, 0.99, hand)[0]  # a hand, where it lies not known
    unsure, note = _uncertainty(pipe, slots, 0.99, hand, np.array([0.2, 0.0, 0.0]))
    assert unsure and "slot 0 at 0.65" in note  # skin on that very slot
    assert not _uncertainty(pipe, slots, 0.99, hand, np.array([0.0, 0.6, 0.9]))[0]  # the fingers lie elsewhere
    assert _uncertainty(pipe, slots, 0.65, hand, np.zeros(3))[0]  # the orientation keeps the hands' threshold


def test_under_a_hand_a_block_read_at_three_quarters_is_not_sure(calibration):
    """A finger over half a glyph leaves it read at 0.7-0.8, and one such reading in nine is
    wrong: under a hand with skin on its slot, a block at 0.75 makes the reading unsure; with no
    hand it is sure."""
    from referee.blocks import Block
    from referee.observations import SlotReading
    from vision.reader import _uncertainty, load_pipeline

    pipe = load_pipeline(calibration)
    slots = (SlotReading(Block.parse("blue-3"), 0.75), SlotReading(None, 0.99), SlotReading(Block.parse("red-1"), 0.85))
    assert not _uncertainty(pipe, slots, 0.99)[0]
    unsure, note = _uncertainty(pipe, slots, 0.99, ["a hand"], np.array([0.3, 0.0, 0.3]))
    assert unsure and note == "low confidence: slot 0 at 0.75"  # the block at 0.85 is sure enough
    assert _uncertainty(pipe, slots[1:] + slots[:1], 0.75, ["a hand"], np.zeros(3))[0]  # so is the orientation at 0.75
