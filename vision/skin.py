"""Skin over the top face: the arm's own colour, measured where it crosses the tray, found
again on the top.

A hand over the top lies across the blocks in bars of its own colour, and its fingers' edges
read as seams: the face pattern (`top_level.orientation_features`) and the slots' reading took
them for the other orientation's blocks (the twin's photos with a hand over the top: the
orientation right on 226 of 242 with one hand, 47 of 63 with two). The hand mask sees an arm
only against the tray and the table; the colour of its cells there is this frame's skin, in
this light. Pixels of the face within reach of that colour are the hand: the seam profiles
leave them out, and the share of a slot they cover counts the same in either orientation.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import cv2
import numpy as np

from vision.hands import HandMask, _readonly


def arm_lab(sc: Mapping, m: HandMask, counted: Sequence) -> np.ndarray | None:
    """The arms' colour this frame (8-bit Lab, the median of the mask's arm cells), or None when
    no counted arm reaches the tower (`counted`: hands.counted_arms) or too few cells show it
    (`skin.least_cells`): with no hand over the top there is nothing to leave out. Also None for
    an arm of hardly any colour (chroma under `skin.least_chroma`): a white or grey sleeve, or a
    pale hand seen as the tray's own white, whose "skin" would be the glyphs' white fields and the
    blocks' shadows (5 readings of the kits changed, one orientation set right)."""
    if not counted or m.px is None:
        return None
    px = m.px.reshape(-1, 3).take(np.flatnonzero(m.fg & m.known), axis=0)  # (take: faster than indexing)
    if len(px) < int(sc.get("least_cells", 8)):
        return None
    # (the cells as one row of pixels: OpenCV converts an image row by row, and a column of
    # single pixels costs twice the time)
    lab = cv2.cvtColor(np.clip(px, 0, 255).astype(np.uint8).reshape(1, -1, 3), cv2.COLOR_BGR2Lab)
    arm = _median_columns(lab.reshape(-1, 3))
    if float(np.hypot(arm[1] - 128.0, arm[2] - 128.0)) < float(sc.get("least_chroma", 0.0)):
        return None
    return arm


def _median_columns(a: np.ndarray) -> np.ndarray:
    """np.median(a, axis=0) of an (N >= 1, 3) uint8 array, as float32 (the values `_median_u8` gives
    from histograms: order statistics of whole numbers, and the mean of two of them, are exact in
    float32), from one partition of its three columns (two thirds of the histograms' time)."""
    n = a.shape[0]
    h = n // 2
    p = a.T.copy()
    p.partition(h, axis=1)
    hi = p[:, h].astype(np.float32)
    if n % 2:
        return hi
    return (p[:, :h].max(axis=1).astype(np.float32) + hi) / 2


def skin_mask(sc: Mapping, face_bgr: np.ndarray, arm: np.ndarray | None) -> np.ndarray | None:
    """The face's pixels of the arm's colour (chroma within `skin.chroma_within` of the arm's in
    8-bit a and b, lightness within `skin.lightness_within`: the hand over the top is nearer the
    lamp than its arm), grown by `skin.dilate_px` to take in the fingers' edges. None when none
    is, or when more than `skin.face_share_most` of the face is (then the colour is the blocks'
    or the tray's, not a hand's)."""
    if arm is None:
        return None
    lab = cv2.cvtColor(face_bgr, cv2.COLOR_BGR2Lab)
    m = _of_colour(sc, lab, arm) if lab.dtype == np.uint8 else _of_colour_float(sc, lab, arm)
    k = int(sc.get("dilate_px", 0))
    if k > 0:
        m = cv2.dilate(m.view(np.uint8), np.ones((2 * k + 1, 2 * k + 1), np.uint8)).view(bool)
    n = cv2.countNonZero(m.view(np.uint8))  # (m.any(), and m.mean() as this count over the size)
    if not n or n / m.size > float(sc["face_share_most"]):
        return None
    return m


_LEVELS = _readonly(np.arange(256, dtype=np.float32))  # the 8-bit levels as the float32 test takes them


def _of_colour(sc: Mapping, lab: np.ndarray, arm: np.ndarray) -> np.ndarray:
    """`_of_colour_float` of an 8-bit Lab image, the same test on every value, looked up: the
    test (the same float32 steps) is made once for each lightness level and for each (a, b)
    pair within reach of the arm's chroma, not once a pixel, and each pixel's (a, b) bytes are
    read as one uint16 index (an eighth off `skin_mask` inside a frame). An (a, b) pair two
    levels beyond the chroma radius in a or in b is out of it (hypot(x, y) >= |x|)."""
    cw, lw = float(sc["chroma_within"]), float(sc["lightness_within"])
    light = np.abs(_LEVELS - arm[0]) < lw
    near = np.zeros((256, 256), bool)  # [b, a]: the index a + 256 b
    if all(math.isfinite(float(v)) for v in arm[1:3]):
        a0, a1 = max(0, math.floor(float(arm[1]) - cw) - 2), min(256, math.ceil(float(arm[1]) + cw) + 3)
        b0, b1 = max(0, math.floor(float(arm[2]) - cw) - 2), min(256, math.ceil(float(arm[2]) + cw) + 3)
        if a0 < a1 and b0 < b1:
            near[b0:b1, a0:a1] = np.hypot(_LEVELS[None, a0:a1] - arm[1], _LEVELS[b0:b1, None] - arm[2]) < cw
    flat = np.ascontiguousarray(lab).reshape(-1)
    ab = np.ndarray((flat.size // 3,), "<u2", flat, 1, (3,))  # each pixel's bytes a, b
    m = near.reshape(-1)[ab]
    m &= light[flat[0::3]]
    return m.reshape(lab.shape[:2])


def _of_colour_float(sc: Mapping, lab: np.ndarray, arm: np.ndarray) -> np.ndarray:
    """The pixels of a Lab image (bool) whose chroma lies within `skin.chroma_within` of the
    arm's and lightness within `skin.lightness_within` of its."""
    lab = lab.astype(np.float32)
    chroma = np.hypot(lab[..., 1] - arm[1], lab[..., 2] - arm[2])
    return (chroma < float(sc["chroma_within"])) & (np.abs(lab[..., 0] - arm[0]) < float(sc["lightness_within"]))


def slot_cover(oc: Mapping, block_mm: Sequence[float], mask: np.ndarray, orient: str) -> np.ndarray:
    """The share of each of the orientation's three slots (slot 0 first) that `mask` covers, on
    a face image as `top_level.face_image` cuts it (`oc`: the orientation config, its margin and
    pixels per mm): an "x" slot is a band of rows, slot 0 at the bottom (the image's rows run
    against the tray's y); a "y" slot a band of columns, slot 0 on the left."""
    ppm, m = float(oc["px_per_mm"]), float(oc["margin_mm"])
    length, width = float(block_mm[0]), float(block_mm[1])
    a0, a1 = int(round(m * ppm)), int(round((m + length) * ppm))
    out = []
    for s in range(3):
        lo = m + (length - (s + 1) * width if orient == "x" else s * width)
        b0, b1 = int(round(lo * ppm)), int(round((lo + width) * ppm))
        band = mask[b0:b1, a0:a1] if orient == "x" else mask[a0:a1, b0:b1]
        if not band.size:
            out.append(0.0)
        elif band.dtype == bool:  # (its mean is its count over its size, without mean's float copy)
            out.append(np.count_nonzero(band) / band.size)
        else:
            out.append(float(band.mean()))
    return np.array(out)
