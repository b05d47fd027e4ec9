"""The tower's top level: the geometry of its face and slots, and what lies in each slot.

Stages, each a pure function of (config, inputs):
1. height: the top face's height (searched on the tray plane in `vision.plane_height`; the
   image-space search, the silhouette and the outline fits here remain as config options).
2. slot_patches / glyph_crop / face_image: rectify each slot, its glyph and the whole face.
3. features: glyph (HOG of L and chroma), orientation (seam profiles, stripe uniformity); colour
   and occupancy features are in `vision.patch_features`; the classifiers live in vision.models.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import cv2
import numpy as np

from vision.geometry import apply_h
from vision.patch_features import interpolated, median_along, percentile_along, percentile_places
from vision.kit import Tray
from vision.tray import Registration

ORIENTS = ("x", "y")


@dataclass(frozen=True)
class Segments:
    """Sample points along the slot-boundary lines of one orientation, in tray mm (z = 0)."""

    pts: np.ndarray      # (S, K, 2)
    normal: np.ndarray   # (S, 2) unit normal in the tray plane
    names: tuple[str, ...]  # "long0".."long3", "end{s}{a|b}"


def slot_segments(tray: Tray, orient: str, n: int = 10, inset_mm: float = 3.0) -> Segments:
    """The 4 long boundary lines and 6 block ends of a level with the given orientation."""
    L, W, _ = tray.block_mm
    cx, cy = tray.tower_center
    t_long = np.linspace(-L / 2 + inset_mm, L / 2 - inset_mm, n)
    t_end = np.linspace(-W / 2 + 1.5, W / 2 - 1.5, max(4, n // 2))
    segs, normals, names = [], [], []
    for k in range(4):
        off = (-1.5 + k) * W
        segs.append(np.column_stack([t_long, np.full(n, off)]))
        normals.append((0.0, 1.0))
        names.append(f"long{k}")
    for s in range(3):
        for side, sx in (("a", -L / 2), ("b", L / 2)):
            pts = np.column_stack([np.full(len(t_end), sx), (s - 1) * W + t_end])
            pts = np.vstack([pts, pts[: n - len(t_end)]]) if len(t_end) < n else pts
            segs.append(pts[:n])
            normals.append((1.0, 0.0))
            names.append(f"end{s}{side}")
    P = np.array(segs)  # local coords: u along the long side, v across
    N = np.array(normals)
    if orient == "y":  # long side along y, slots by increasing x: (u, v) -> (v, u)
        P = P[..., ::-1]
        N = N[:, ::-1]
    P = P + np.array([cx, cy])
    return Segments(P, N, tuple(names))


def _boundary_sets() -> list[tuple[tuple[int, ...], list[int]]]:
    """For each non-empty occupancy pattern, the segment indices that must be edges."""
    out = []
    for occ in itertools.product((0, 1), repeat=3):
        if not any(occ):
            continue
        segs = []
        padded = (0,) + occ + (0,)
        for k in range(4):  # line k lies between slot k-1 and slot k
            if padded[k] != padded[k + 1]:
                segs.append(k)
        for s in range(3):
            if occ[s]:
                segs += [4 + 2 * s, 5 + 2 * s]
        out.append((occ, segs))
    return out


BOUNDARY_SETS = _boundary_sets()


def _project_many(cam_K: np.ndarray, R: np.ndarray, t: np.ndarray, pts: np.ndarray, zs: np.ndarray) -> np.ndarray:
    """Project (M,2) tray points at each height in zs -> (Z, M, 2) pixels."""
    base = (np.column_stack([pts, np.ones(len(pts))]) @ np.column_stack([R[:, 0], R[:, 1], t]).T) @ cam_K.T
    dz = cam_K @ R[:, 2]
    hom = base[None, :, :] + zs[:, None, None] * dz[None, None, :]
    return hom[..., :2] / hom[..., 2:3]


def edge_image(img: np.ndarray) -> np.ndarray:
    """A lightly smoothed image the edge probes sample (all three channels, kept 8-bit: the
    probes gather a few thousand pixels, so converting the whole frame to float costs more)."""
    return cv2.blur(img, (3, 3))


def _probe(img_f: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Summed absolute colour difference between pixel positions a and b (..., 2)."""
    h, w = img_f.shape[:2]
    ai = np.rint(a).astype(np.int32)
    bi = np.rint(b).astype(np.int32)
    inside = (ai[..., 0] >= 0) & (ai[..., 0] < w) & (ai[..., 1] >= 0) & (ai[..., 1] < h)
    inside &= (bi[..., 0] >= 0) & (bi[..., 0] < w) & (bi[..., 1] >= 0) & (bi[..., 1] < h)
    ax = np.clip(ai[..., 0], 0, w - 1)
    ay = np.clip(ai[..., 1], 0, h - 1)
    bx = np.clip(bi[..., 0], 0, w - 1)
    by = np.clip(bi[..., 1], 0, h - 1)
    d = np.abs(img_f[ay, ax].astype(np.int16) - img_f[by, bx].astype(np.int16)).sum(axis=-1, dtype=np.int32)
    return np.where(inside, d, 0).astype(np.float32)


def segment_strengths(cfg: Mapping, tray: Tray, reg: Registration, img_f: np.ndarray, orient: str, zs: np.ndarray) -> np.ndarray:
    """(Z, 10) median edge strength of each boundary segment at each height."""
    seg = slot_segments(tray, orient, int(cfg["top"]["samples_per_segment"]))
    d = float(cfg["top"]["probe_mm"])
    S, K, _ = seg.pts.shape
    plus = (seg.pts + d * seg.normal[:, None, :]).reshape(-1, 2)
    minus = (seg.pts - d * seg.normal[:, None, :]).reshape(-1, 2)
    cam = reg.camera
    R, t = cam.R, np.asarray(cam.tvec, dtype=np.float64)
    a = _project_many(cam.K, R, t, plus, zs)
    b = _project_many(cam.K, R, t, minus, zs)
    s = _probe(img_f, a, b).reshape(len(zs), S, K)
    return np.median(s, axis=2)


def _pattern_weights(cfg: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """Each occupancy pattern's score as a linear map of the 10 segment strengths: the mean of
    the boundaries it must show, plus `seam_weight` x the mean of its seams, minus a penalty
    per empty slot. Returns (10, P) weights and (P,) offsets."""
    penalty = float(cfg["top"]["pattern_penalty"])
    seam_w = float(cfg["top"]["seam_weight"])
    Wm = np.zeros((10, len(BOUNDARY_SETS)))
    off = np.zeros(len(BOUNDARY_SETS))
    for j, (occ, segs) in enumerate(BOUNDARY_SETS):
        Wm[segs, j] += 1.0 / len(segs)
        seams = [k for k in (1, 2) if occ[k - 1] and occ[k]]
        if seams:
            Wm[seams, j] += seam_w / len(seams)
        off[j] = -penalty * (3 - sum(occ))
    return Wm, off


def _pattern_scores(cfg: Mapping, strengths: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Best occupancy pattern score per height: mean boundary strength minus a small-pattern penalty."""
    Wm, off = _pattern_weights(cfg)
    sc = strengths @ Wm + off  # (Z, P)
    j = np.argmax(sc, axis=1)
    return sc[np.arange(len(sc)), j], [BOUNDARY_SETS[k][0] for k in j]


def slot_frame(tray: Tray, orient: str, slot: int) -> np.ndarray:
    """Homography from a slot's local mm (a along the long side, b across, centred) to tray mm.

    Orientation "x": a -> +x, b -> -y, so a patch looks like the sheet seen from above;
    "y": a -> +y, b -> +x (long side along y)."""
    cx, cy = tray.tower_center
    return _slot_frame(orient, float(cx), float(cy), float((slot - 1) * tray.block_mm[1])).copy()


@functools.lru_cache(maxsize=256)
def _slot_frame(orient: str, cx: float, cy: float, off: float) -> np.ndarray:
    """slot_frame's matrix (read-only), made once per tray slot: a frame's slot_plane products
    ask for the same few."""
    if orient == "x":
        F = np.array([[1, 0, cx], [0, -1, cy + off], [0, 0, 1]], dtype=np.float64)
    else:
        F = np.array([[0, 1, cx + off], [1, 0, cy], [0, 0, 1]], dtype=np.float64)
    F.flags.writeable = False
    return F


def slot_corners(tray: Tray, orient: str, slot: int) -> np.ndarray:
    """A slot's four corners (4, 2) in tray mm, going round the block's outline."""
    L, W, _ = tray.block_mm
    local = np.array([[-L / 2, -W / 2, 1], [L / 2, -W / 2, 1], [L / 2, W / 2, 1], [-L / 2, W / 2, 1]], dtype=np.float64)
    return (local @ slot_frame(tray, orient, slot).T)[:, :2]


def slot_plane(tray: Tray, reg: Registration, z: float, orient: str, slot: int) -> np.ndarray:
    """Homography from a slot's local mm (slot_frame) at height z to image pixels (read-only):
    the product a frame's slot, glyph and patch cuts all start from, made once per camera."""
    cx, cy = tray.tower_center
    key = ("slot_plane", float(z), orient, int(slot), float(cx), float(cy), float(tray.block_mm[1]))
    memo = getattr(reg.camera, "derived", None)  # (a stand-in camera without one: no memo)
    H = None if memo is None else memo.get(key)
    if H is None:
        H = reg.camera.plane_homography(z) @ _slot_frame(orient, float(cx), float(cy), float((slot - 1) * tray.block_mm[1]))
        H.flags.writeable = False
        if memo is not None and len(memo) < 256:
            memo[key] = H
    return H


def slot_patch_homography(cfg: Mapping, tray: Tray, reg: Registration, z: float, orient: str, slot: int) -> np.ndarray:
    """Homography from canonical patch pixels (long side horizontal) to image pixels."""
    L, W, _ = tray.block_mm
    return slot_plane(tray, reg, z, orient, slot) @ _scaled_from(float(cfg["top"]["patch_px_per_mm"]), -L / 2, -W / 2)


@functools.lru_cache(maxsize=64)
def _scaled_from(ppm: float, x0: float, y0: float) -> np.ndarray:
    """The matrix from pixels at ppm of an area whose corner lies at (x0, y0) mm to those mm
    (read-only): the patch and search cuts' own, made once rather than per cut."""
    A = np.array([[1 / ppm, 0, x0], [0, 1 / ppm, y0], [0, 0, 1]])
    A.flags.writeable = False
    return A


def warp_linear(img: np.ndarray, M: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """cv2.warpPerspective as the frame's crops take it: linear, inverse map, border replicated;
    a BGRA frame stays BGRA (for a reader of its first three channels alone)."""
    return cv2.warpPerspective(img, M, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)


def warp_frame(img: np.ndarray, M: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`warp_linear` of the frame, BGR, to BGR. The frame may come as BGRA (`frame_bgra`, once a
    frame): each channel is interpolated alone, so its B, G, R are the BGR warp's very bytes, and
    OpenCV 5 warps four 8-bit channels in about two thirds of the time of three, the alpha
    dropped after (1 us) included."""
    out = warp_linear(img, M, size)
    return cv2.cvtColor(out, cv2.COLOR_BGRA2BGR) if img.ndim == 3 and img.shape[2] == 4 else out


def frame_bgra(img: np.ndarray) -> np.ndarray:
    """The BGR frame as BGRA, for `warp_frame` (and the crops that take it: glyph_ink_offset,
    glyph_crop, slot_patch, face_image): worth it made once for a frame's dozens of crops."""
    return cv2.cvtColor(img, cv2.COLOR_BGR2BGRA)


def glyph_offset(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str, slot: int,
                 jitter: np.ndarray | None = None) -> tuple[float, float]:
    """Where the glyph's ink lies from the slot's centre (glyph_ink_offset), (0, 0) when no ink is
    found there."""
    off = glyph_ink_offset(cfg, tray, reg, img, z, orient, slot, jitter)
    return (0.0, 0.0) if off is None else off


def glyph_ink_offset(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str,
                     slot: int, jitter: np.ndarray | None = None) -> tuple[float, float] | None:
    """Where the glyph's ink lies from the slot's centre (dx along the block, dy across, in mm;
    None when no ink is found, as for a Wild's white W or an empty slot; (0, 0) when the search
    area is no larger than the crop).

    A block lies a few mm off its slot and the found height moves the whole top by a few mm; a
    played tower's top can lie half a slot across. The search area (search_w_mm x search_h_mm
    round the slot's centre) is rectified at locate_px_per_mm and the glyph found in it
    (`glyph_center`); the move is kept within the search area less the crop. `jitter` (3x3,
    slot mm -> slot mm) moves the search area as a block a few mm or degrees off its slot would
    (calibration's augmentation)."""
    gc = cfg["glyph"]
    cw, ch = float(gc["crop_w_mm"]), float(gc["crop_h_mm"])
    sw, sh = max(cw, float(gc.get("search_w_mm", cw))), max(ch, float(gc.get("search_h_mm", ch)))
    if sw <= cw and sh <= ch:
        return 0.0, 0.0
    H = slot_plane(tray, reg, z, orient, slot)
    if jitter is not None:  # (times the identity, H is H)
        H = H @ jitter
    lp = float(gc.get("locate_px_per_mm", 1.0))
    ns = (int(round(sw * lp)), int(round(sh * lp)))
    # (the warp kept as the frame comes, BGRA too: glyph_ink reads the first three channels, so
    # the alpha is not dropped first)
    small = warp_linear(img, H @ _scaled_from(lp, -sw / 2, -sh / 2), ns)
    c = glyph_center(cfg, small, lp)
    if c is None:
        return None
    dx = min(max(c[0] - sw / 2, -(sw - cw) / 2), (sw - cw) / 2)
    dy = min(max(c[1] - sh / 2, -(sh - ch) / 2), (sh - ch) / 2)
    return float(dx), float(dy)


def glyph_crop(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str, slot: int,
               jitter: np.ndarray | None = None, offset: tuple[float, float] | None = None) -> np.ndarray:
    """The glyph area of one slot (crop_w_mm x crop_h_mm), centred on the glyph's ink, rectified
    at warp_px_per_mm and shrunk with area averaging to the feature size (no aliasing).

    A crop fixed on the slot's centre cuts the glyph at its edges (most misread glyphs), so the
    crop is cut round the ink that `glyph_offset` finds (or at `offset`, when the caller has
    found it already)."""
    gc = cfg["glyph"]
    ppm = float(gc["warp_px_per_mm"])
    cw, ch = float(gc["crop_w_mm"]), float(gc["crop_h_mm"])
    H = slot_plane(tray, reg, z, orient, slot)
    if jitter is not None:  # (times the identity, H is H)
        H = H @ jitter
    dx, dy = offset if offset is not None else glyph_offset(cfg, tray, reg, img, z, orient, slot, jitter)
    n = (int(round(cw * ppm)), int(round(ch * ppm)))
    A = np.array([[1 / ppm, 0, dx - cw / 2], [0, 1 / ppm, dy - ch / 2], [0, 0, 1]])
    big = warp_frame(img, H @ A, n)
    return cv2.resize(big, (int(gc["width"]), int(gc["height"])), interpolation=cv2.INTER_AREA)


def _inner_blobs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Areas (k,) and centroids (k, 2) of a mask's blobs that do not touch its border
    (`_inner_blob_list` as arrays)."""
    area, cent = _inner_blob_list(mask)
    return (np.array(area, np.float64), np.array(cent)) if area else _NO_BLOBS


Blobs = tuple[list[int], list[tuple[float, float]]]  # areas (px) and centroids (x, y) of a mask's blobs, in lists


def _inner_blob_list(mask: np.ndarray) -> Blobs:
    """Areas and centroids of a mask's blobs that do not touch its border, as Python numbers (a
    glyph search's lone blob goes on in plain floats: `glyph_center`). (Grana's block decision
    tree: the default algorithm's labels, stats and centroids, in two thirds of its time on a
    glyph's search crop.)

    Most masks searched have none (three in five on the bench), which the labels alone of the
    mask in a frame of ones tell (the frame joins every blob that touches the border, so a
    third label is an inner blob): 8 us, where the labels with their statistics take 19.

    The statistics (a cost per pixel) are then taken of the box round those labels only, a
    pixel wider each way (`_blobs_within`): every blob of the mask that touches its border
    reaches the box's border too, so the box's inner blobs are the mask's, whole (13 against 19
    us a mask, the same values: see there)."""
    framed = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=1)
    n, lab = cv2.connectedComponentsWithAlgorithm(framed, 8, cv2.CV_32S, cv2.CCL_GRANA)
    if n < 3:
        return [], []
    # (label 1 is the frame's, so the inner blobs are labels 2 on, at the framed (x, y) of mask (x - 1, y - 1))
    x, y, bw, bh = cv2.boundingRect((lab >= 2).view(np.uint8))
    return _blobs_within(mask, (x - 2) & ~1, (y - 2) & ~1, x + bw, y + bh)


def _blobs_within(mask: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> Blobs:
    """Areas and centroids (in the mask's pixels) of the blobs of mask[y0:y1, x0:x1] that do not
    touch that box's border, as the statistics of the whole mask give them, in their order.

    Exact, not only close: the area is a count; OpenCV's centroid is the integer sum of the
    blob's x (or y) over its area, one division in double, so the box's centroid times the area
    rounds back to the box's integer sum (far under 2^52), and that plus area x x0 divided by the
    area is the whole mask's very division. The order: Grana's labels follow the first 2x2 block
    of each blob in a raster scan of the blocks, so with x0 and y0 even the box's blocks are the
    mask's and its blobs come in the mask's order (checked on 30,000 random masks, OpenCV on one
    thread and on four)."""
    sub = mask[y0:y1, x0:x1]
    _, _, stats, cent = cv2.connectedComponentsWithStatsWithAlgorithm(sub, 8, cv2.CV_32S, cv2.CCL_GRANA)
    h, wd = sub.shape
    # (a search crop has a few blobs, 3 at the median and 11 at most on the bench: tested in
    # Python they cost a third of NumPy's dozen small calls; 0 is the background)
    areas, xy = [], []
    for k, ((x, y, bw, bh, a), (cx, cy)) in enumerate(zip(stats.tolist(), cent.tolist())):
        if k and x > 0 and y > 0 and x + bw < wd and y + bh < h:
            areas.append(a)
            xy.append(((round(cx * a) + a * x0) / a + 0.5, (round(cy * a) + a * y0) / a + 0.5))
    return areas, xy


def glyph_ink(bgr: np.ndarray, min_px: float = 0.0, field_contrast: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The glyph as blobs: areas (k,) in px and centroids (k, 2) of the dark or coloured parts
    that the light glyph field encloses (that do not touch the crop's border).

    The field is white or cream and the glyph is printed in the block's colour, so the darkest
    of the three channels (high only where all are: light and colourless) split by Otsu
    separates field from ink and block whatever the light; the block round the field touches
    the border, the glyph does not. When the ink found covers under `min_px` (a skip's ring
    blurred into the block round the field), the glyph's counters are taken instead: the field
    the ink encloses (the ring's inside). When those cover under `min_px` too, the ink is looked
    for within the field alone (`_ink_in_field`, with `field_contrast` > 0)."""
    area, cent = _ink_blobs(bgr, min_px, field_contrast)
    return (np.array(area, np.float64), np.array(cent)) if area else _NO_BLOBS


def _ink_blobs(bgr: np.ndarray, min_px: float, field_contrast: float) -> Blobs:
    """glyph_ink's blobs as Python numbers. (The areas are counts, so their sums are exact in any
    order, as NumPy's were.)"""
    # (the channels as views: a BGRA crop's alpha is passed over, and no split is made)
    w = cv2.blur(cv2.min(cv2.min(bgr[..., 0], bgr[..., 1]), bgr[..., 2]), (3, 3))
    _, dark = cv2.threshold(w, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    area, cent = _inner_blob_list(dark)
    if min_px > 0 and sum(area) < min_px:
        light = 1 - dark
        area, cent = _inner_blob_list(light)
        if field_contrast > 0 and sum(area) < min_px:
            a2, c2 = _ink_in_field(w, light, min_px, field_contrast)
            if sum(a2) >= min_px:
                area, cent = a2, c2
    return area, cent


_NO_BLOBS = (np.zeros(0), np.zeros((0, 2)))  # (empty: shared safely)


def _ink_in_field(w: np.ndarray, light: np.ndarray, min_px: float, contrast: float) -> Blobs:
    """The ink blobs within the glyph field, split from the field by a threshold of the field's
    own pixels: areas and centroids (`Blobs`), none when the split is weaker than `contrast`
    grey levels (the two sides' means) or the "ink" is half the field.

    A pale, thin glyph under blur and dim light (a blue Skip's ring, synthetic 9302/0046) is
    lighter than the block round the field by more than it is darker than the field: the whole
    search area's threshold, set between the block and the field, puts it with the field, and
    nothing enclosed is found. The field is the light blob most of the search area's middle
    (an eighth of its side round the centre) lies on, taken with everything it encloses; with no
    light there (an empty slot's block below, a hand) there is no field to look in, and a field
    further out is a neighbour's. `light`: the search area's light pixels (1) as glyph_ink splits it."""
    h, wd = light.shape
    r = max(1, min(h, wd) // 8)
    cy, cx = h // 2, wd // 2
    window = (slice(cy - r, cy + r + 1), slice(cx - r, cx + r + 1))
    if not cv2.countNonZero(light[window]):  # (no light in the middle, told before the labels: 7 in 10 searches here)
        return [], []
    # (Grana's labels are the default algorithm's; the dark pixels' label 0 is counted and passed over)
    _, lab = cv2.connectedComponentsWithAlgorithm(light, 8, cv2.CV_32S, cv2.CCL_GRANA)
    counts = np.bincount(lab[window].ravel())
    k = int(counts[1:].argmax()) + 1
    outline, _ = cv2.findContours((lab == k).view(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    region = np.zeros(light.shape, np.uint8)
    cv2.drawContours(region, outline, -1, 1, thickness=cv2.FILLED)
    inside = region.view(bool)
    vals = w[inside]
    if vals.size < 4 * min_px:
        return [], []
    t, _ = cv2.threshold(vals.reshape(-1, 1), 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    ink = vals <= t
    n_ink = int(np.count_nonzero(ink))
    if n_ink == 0 or n_ink == vals.size:
        return [], []
    total = float(np.add.reduce(vals, dtype=np.float64))
    ink_sum = float(np.add.reduce(vals[ink], dtype=np.float64))
    if (total - ink_sum) / (vals.size - n_ink) - ink_sum / n_ink < contrast:
        return [], []
    # outside the field counts as dark: ink that runs into the field's edge joins it there and is left out
    marked = np.empty(light.shape, np.uint8)  # (np.ones' steps, without its wrapper)
    marked.fill(1)
    marked[inside] = ink
    area, cent = _inner_blob_list(marked)
    return ([], []) if sum(area) > 0.5 * vals.size else (area, cent)


def glyph_center(cfg: Mapping, bgr: np.ndarray, px_per_mm: float = 1.0) -> tuple[float, float] | None:
    """Where the glyph is in a search crop rectified at px_per_mm (x, y in mm from its corner),
    or None when too little ink is enclosed (a Wild's white W, a hand, a wrong height): the centre of
    the ink nearest the crop's centre (a mean shift over the ink blobs with a Gaussian window of
    locate_sigma_mm, so a neighbour's glyph at the crop's edge does not pull it)."""
    min_mm2 = float(cfg["glyph"].get("locate_min_mm2", 8.0))
    area, cent = _ink_blobs(bgr, min_mm2 * px_per_mm ** 2, float(cfg["glyph"].get("field_ink_contrast", 0.0)))
    if not area and min_mm2 > 0:  # (no ink at all: the commonest miss, told without arithmetic)
        return None
    cx, cy = bgr.shape[1] / 2 / px_per_mm, bgr.shape[0] / 2 / px_per_mm
    s2 = 2 * float(cfg["glyph"].get("locate_sigma_mm", 8.0)) ** 2
    if len(area) == 1:  # (one blob, three in four searches with ink: on Python floats, NumPy's IEEE steps)
        a = area[0] / px_per_mm ** 2  # mm2, mm
        if a < min_mm2:
            return None
        return _one_blob_shift((cent[0][0] / px_per_mm, cent[0][1] / px_per_mm), a, cx, cy, s2, 0.3 * min_mm2)
    area, cent = np.array(area, np.float64) / px_per_mm ** 2, np.array(cent).reshape(-1, 2) / px_per_mm  # mm2, mm
    if np.add.reduce(area) < min_mm2:
        return None
    pts = cent.tolist()
    for _ in range(3):
        # (the exponents in plain floats, rounded as NumPy's were: a dozen small calls fewer; exp,
        # the sum and the weighted mean stay NumPy's, whose SIMD exp and BLAS plain floats do not match)
        wgt = np.array([((x - cx) * (x - cx) + (y - cy) * (y - cy)) / -s2 for x, y in pts])
        np.exp(wgt, out=wgt)
        wgt *= area
        total = np.add.reduce(wgt)
        if total < 0.3 * min_mm2:
            return None
        nx, ny = (wgt @ cent / total).tolist()
        if nx == cx and ny == cy:  # a fixed point: the steps left would give it again
            break
        cx, cy = nx, ny
    return cx, cy


def _one_blob_shift(xy: Sequence[float], a: float, cx: float, cy: float, s2: float,
                    least: float) -> tuple[float, float] | None:
    """glyph_center's mean shift over one blob (centroid xy, area a), on Python floats: with one
    blob NumPy's sum is the weight itself and the weighted mean one product and one quotient per
    coordinate, the same IEEE steps (exp stays NumPy's, on the one value); a step that leaves the
    centre where it was is a fixed point, which the steps left would give again."""
    x, y = xy
    for _ in range(3):
        w = float(np.exp(((x - cx) * (x - cx) + (y - cy) * (y - cy)) / -s2)) * a
        if w < least:
            return None
        nx, ny = w * x / w, w * y / w
        if nx == cx and ny == cy:
            break
        cx, cy = nx, ny
    return cx, cy


def jitter_matrix(rng: np.random.Generator, shift_mm: float, deg: float, scale: float) -> np.ndarray:
    """A random small rigid move (plus scale) in slot mm: a block off its slot, a height a little off."""
    a = np.deg2rad(rng.uniform(-deg, deg))
    s = rng.uniform(1 - scale, 1 + scale)
    dx, dy = rng.uniform(-shift_mm, shift_mm, 2)
    return np.array([[s * np.cos(a), -s * np.sin(a), dx], [s * np.sin(a), s * np.cos(a), dy], [0, 0, 1]])


def slot_patches(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str,
                 offsets: Sequence[tuple[float, float]] | None = None, first: int = 0) -> list[np.ndarray]:
    """The three slots of a level rectified (long side horizontal), each cut at its nominal place
    or, with `offsets` (slot mm, as `glyph_offset` gives), round where its block's glyph lies.
    `first`: the slot position the three start at (-1 or 1: the face taken one slot over)."""
    return [slot_patch(cfg, tray, reg, img, z, orient, first + s, None if offsets is None else offsets[s])
            for s in range(3)]


def slot_patch(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str, slot: int,
               offset: tuple[float, float] | None = None) -> np.ndarray:
    """One slot rectified, at its nominal place or moved by `offset` (slot mm)."""
    ppm = float(cfg["top"]["patch_px_per_mm"])
    L, W, _ = tray.block_mm
    size = (int(round(L * ppm)), int(round(W * ppm)))
    Hs = slot_patch_homography(cfg, tray, reg, z, orient, slot)
    if offset is not None:
        dx, dy = offset
        Hs = Hs @ np.array([[1, 0, dx * ppm], [0, 1, dy * ppm], [0, 0, 1]])
    return warp_frame(img, Hs, size)


def moved_slots(cfg: Mapping, offsets: Sequence[tuple[float, float]]) -> list[int]:
    """The slots whose colour patch is cut again round their glyph: those whose glyph lies at
    least top.color_follow_min_mm off the nominal slot (a played top can lie half a slot across,
    and a patch cut at the nominal slot is then half one block, half its neighbour; a move of a
    few mm leaves the patch's colour medians as they are). None when top.color_follows_glyph is off."""
    top = cfg["top"]
    if not top.get("color_follows_glyph"):
        return []
    least = float(top.get("color_follow_min_mm", 0.0))
    return [s for s, (dx, dy) in enumerate(offsets) if (dx, dy) != (0.0, 0.0) and np.hypot(dx, dy) >= least]


def slot_cuts(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str, first: int = 0,
              offsets: Sequence[tuple[float, float]] | None = None
              ) -> tuple[list[np.ndarray], list[tuple[float, float]], dict[int, np.ndarray]]:
    """Where a level's slots are read, as the reader and calibration both cut them: the three
    nominal patches (occupancy), each slot's glyph offset (the glyph crop; `offsets` when the
    caller found them already), and, per slot whose glyph lies off it (`moved_slots`), its
    colour patch cut again round the glyph. `first`: as for slot_patches."""
    nominal = slot_patches(cfg, tray, reg, img, z, orient, first=first)
    if offsets is None:
        offsets = [glyph_offset(cfg, tray, reg, img, z, orient, first + s) for s in range(3)]
    again = {s: slot_patch(cfg, tray, reg, img, z, orient, first + s, offsets[s]) for s in moved_slots(cfg, offsets)}
    return nominal, offsets, again


def tray_samples(tray: Tray, n: int = 48) -> np.ndarray:
    """Points on the bare tray surface between the tower and the markers (for colour constancy)."""
    cx, cy = tray.tower_center
    half = tray.footprint_half
    allc = np.concatenate(list(tray.markers.values()))
    d_mark = np.min(np.linalg.norm(allc - np.array([cx, cy]), axis=1))
    r_in = half * 1.45 + 10
    r_out = max(r_in + 5, d_mark - 8)
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = []
    for r in (r_in, (r_in + r_out) / 2, r_out):
        pts.append(np.column_stack([cx + r * np.cos(ang), cy + r * np.sin(ang)]))
    P = np.concatenate(pts)
    keep = np.ones(len(P), bool)
    for c in tray.markers.values():
        lo, hi = c.min(axis=0) - 6, c.max(axis=0) + 6
        keep &= ~np.all((P >= lo) & (P <= hi), axis=1)
    return P[keep]


def tray_color(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray,
               samples: np.ndarray | None = None) -> np.ndarray:
    """The tray surface's colour in this frame (BGR), robust to hands and shadows on part of it.
    `samples`: tray_samples(tray), when the caller has them already (they are the tray's)."""
    uv = reg.to_image(tray_samples(tray) if samples is None else samples)
    h, w = img.shape[:2]
    ok = (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
    uv = np.rint(uv[ok]).astype(int)
    if len(uv) < 5:
        return np.array(cfg["color"]["tray_ref_bgr"], dtype=np.float32)
    vals = img[uv[:, 1], uv[:, 0]].astype(np.float32)
    bright = vals[:, 0] + vals[:, 1] + vals[:, 2]  # (the sum over the three channels, written out: faster)
    q = float(cfg["color"]["tray_percentile"])
    sel = vals[bright >= percentile_along(bright, q)]
    return median_along(sel, axis=0)


def color_gains(cfg: Mapping, measured_bgr: np.ndarray) -> np.ndarray:
    ref = np.array(cfg["color"]["tray_ref_bgr"], dtype=np.float32)
    return ref / np.maximum(measured_bgr.astype(np.float32), 1.0)


_LAB_SCALE = np.array([100.0 / 255.0, 1.0, 1.0], dtype=np.float32)
_LAB_SHIFT = np.array([0.0, 128.0, 128.0], dtype=np.float32)
# every 8-bit Lab value's float Lab (as v * _LAB_SCALE - _LAB_SHIFT computes it), per channel, for cv2.LUT:
# one table lookup instead of NumPy's broadcast cast, multiply and subtract (four times the time on a face)
_LAB_LUT = (np.arange(256, dtype=np.uint8)[:, None] * _LAB_SCALE - _LAB_SHIFT).reshape(1, 256, 3)


def lab_of(bgr: np.ndarray, gains: np.ndarray | None = None) -> np.ndarray:
    """Lab as float (L 0..100, a and b around 0), through OpenCV's 8-bit table path: in OpenCV 5
    it is some thirty times faster than the float path, and a quarter of an L unit is plenty."""
    x = np.asarray(bgr)
    if x.dtype != np.uint8:
        x = np.clip(x.astype(np.float32) + 0.5, 0, 255).astype(np.uint8)
    if gains is not None:  # saturating per-channel gain in 8 bits
        g = [float(v) for v in np.asarray(gains).reshape(-1)[:3]]
        x = cv2.multiply(x, (g[0], g[1], g[2], 0.0), dtype=cv2.CV_8U)
    lab = cv2.cvtColor(x, cv2.COLOR_BGR2Lab)
    if lab.ndim != 3:  # (what cv2.LUT cannot shape like its input)
        return lab * _LAB_SCALE - _LAB_SHIFT
    return cv2.LUT(lab, _LAB_LUT)


_HOG = {}


def _hog(size: tuple[int, int], cell: int = 8, bins: int = 9, signed: bool = False) -> cv2.HOGDescriptor:
    key = (size, cell, bins, signed)
    if key not in _HOG:
        _HOG[key] = cv2.HOGDescriptor(size, (2 * cell, 2 * cell), (cell, cell), (cell, cell), bins, 1, -1.0,
                                      cv2.HOGDescriptor_L2Hys, 0.2, False, 64, signed)
    return _HOG[key]


def glyph_features(cfg: Mapping, crop_bgr: np.ndarray, gains: np.ndarray | None = None) -> np.ndarray:
    """HOG (signed gradients) of the glyph as a shape against its field: "whiteness", L minus
    chroma, smoothed by blur_px and stretched to the crop's own range.

    The glyph field is light and colourless and the ink is the block's colour, so whiteness
    shows the ink dark on light whatever the block's colour, the light or the camera's contrast
    (yellow ink on cream is invisible in grey but not here); the blur makes the strokes' edges
    alike under softer focus and sensor noise, and signed gradients keep ink-to-field apart
    from field-to-ink. Not rotation invariant: the reader scores the crop and its 180-degree
    turn and keeps the better, so a 2 and a 4 keep their strokes apart. `gains`: the frame's
    white balance for glyphs (`glyph_white_balance`; None: none)."""
    return _whiteness_hog(cfg, _whiteness(crop_bgr, gains))


def glyph_features_turned(cfg: Mapping, crop_bgr: np.ndarray,
                          gains: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """glyph_features of the crop as laid and turned 180 degrees (the pair the reader scores).
    Whiteness is a per-pixel function, so the turned crop's is the whiteness turned; the blur
    and what follows run on each (OpenCV's blur of a turned image is not its blur turned, to
    the last bit). Both HOGs come from one call on the two side by side (`_whiteness_hogs`)."""
    w = _whiteness(crop_bgr, gains)
    return _whiteness_hogs(cfg, w, cv2.flip(w, -1))


def glyph_features_turned_many(cfg: Mapping, crops: Sequence[np.ndarray],
                               gains: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """glyph_features_turned of each crop, to the last bit, in fewer calls: the whiteness of all
    in one pass (it is per pixel), every crop turned in one flip of them all (the stack turned is
    the crops turned, last first), all blurred in one call and every HOG in one call, each crop
    and its turn side by side as `_whiteness_hogs` lays two (a face's three crops 150 -> 130 us,
    eight 405 -> 320; the one blur, ~12 us more off three).

    The one blur: each crop and each turn lies in the stack with its own reflect-101 border rows
    above and below (`_blur_rows`), as deep as the kernel reaches, so each of its rows is blurred
    from the same rows as the crop alone is (the columns' borders are the stack's own, each
    crop's); a separable filter's row is a function of those rows alone."""
    gc = cfg["glyph"]
    wd, h = size = (int(gc["width"]), int(gc["height"]))
    if len(crops) < 2 or any(c.shape[:2] != (h, wd) for c in crops):
        return [glyph_features_turned(cfg, c, gains) for c in crops]
    n = len(crops)
    w = _whiteness(np.concatenate(crops, axis=0), gains)
    both = np.concatenate([w, cv2.flip(w, -1)], axis=0)  # the crops, then their turns last first
    blur = float(gc.get("blur_px", 0.0))
    hp, top = h, 0
    if blur > 0:
        rows, top = _blur_rows(h, 2 * n, blur)
        both = cv2.GaussianBlur(both.take(rows, axis=0), (0, 0), blur)
        hp = h + 2 * top
    step = wd + 2
    u8 = np.empty((h, 2 * n * step - 2), np.uint8)
    x = 0
    for i in range(n):
        for k in (i, 2 * n - 1 - i):  # (the crop, then its turn)
            cv2.normalize(both[k * hp + top: k * hp + top + h], u8[:, x:x + wd], 0, 255, cv2.NORM_MINMAX, cv2.CV_8U)
            x += step
    # each one's reflect-101 border on its right, the next one's on its left: every gap's two
    # columns in one copy (`_gap_columns`), not two a gap
    to, of = _gap_columns(wd, 2 * n)
    u8[:, to] = u8[:, of]
    cell = int(gc["cell"])
    hog = _hog(size, cell, int(gc.get("bins", 9)), bool(gc.get("signed", False)))
    f = hog.compute(u8, (cell, cell), (0, 0), tuple((k * step, 0) for k in range(2 * n))).reshape(2 * n, -1)
    return [(f[2 * i], f[2 * i + 1]) for i in range(n)]


@functools.lru_cache(maxsize=32)
def _gap_columns(wd: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """For m images wd wide laid side by side two columns apart: the gaps' columns and the
    columns each takes (the left one's column two before the gap, the right one's second:
    reflect-101 borders), as read-only index arrays."""
    step = wd + 2
    gaps = range(wd, m * step - 2, step)
    to = np.array([c for x in gaps for c in (x, x + 1)], np.intp)
    of = np.array([c for x in gaps for c in (x - 2, x + 3)], np.intp)
    to.flags.writeable = of.flags.writeable = False
    return to, of


@functools.lru_cache(maxsize=32)
def _blur_rows(h: int, m: int, sigma: float) -> tuple[np.ndarray, int]:
    """The rows of m images of h rows stacked, each with `top` rows of its reflect-101 border
    above and below (as cv2.GaussianBlur reads beyond an image's edge), and `top`: deeper than a
    float image's Gaussian kernel of `sigma` reaches (OpenCV's kernel: 4 sigma each way). Read-only."""
    top = int(math.ceil(4 * sigma)) + 1
    rows = np.array([k * h + cv2.borderInterpolate(j, h, cv2.BORDER_REFLECT_101)
                     for k in range(m) for j in range(-top, h + top)], np.intp)
    rows.flags.writeable = False
    return rows, top


def _whiteness(crop_bgr: np.ndarray, gains: np.ndarray | None = None) -> np.ndarray:
    """L minus chroma of each pixel (float32), white-balanced by `gains` when given
    (glyph_white_balance)."""
    lab = lab_of(crop_bgr, gains)
    # (chroma as the root of a*a + b*b: a and b are whole numbers of at most 128 in size, so the
    # sum is exact in float32 and its correctly rounded root is np.hypot's value, checked on all
    # 65,536 pairs; the squares of all three channels in one call: half hypot's time)
    sq = lab * lab
    w = sq[..., 1] + sq[..., 2]
    np.sqrt(w, out=w)
    return np.subtract(lab[..., 0], w, out=w)


def colour_cast(gains: np.ndarray) -> float:
    """How far a light's colour lies from the calibration's: the largest colour-constancy gain
    over the smallest (1 in the calibration's own light)."""
    g = np.asarray(gains, np.float32).reshape(-1)[:3]
    return float(g.max()) / max(float(g.min()), 1e-6)


def tray_clear(cfg: Mapping, tray_bgr: np.ndarray) -> bool:
    """Whether the tray's colour, as measured, is clipped in at most one channel
    (glyph.white_balance_clip): whether it can say what colour the light is."""
    t = np.asarray(tray_bgr, np.float32).reshape(-1)[:3]
    return int(np.count_nonzero(t >= float(cfg["glyph"].get("white_balance_clip", 250.0)))) <= 1


def glyph_white_balance(cfg: Mapping, tray_bgr: np.ndarray) -> np.ndarray | None:
    """The gains a frame's glyphs are read under (`glyph_features`): the colour constancy
    (`color_gains`) when the tray shows a cast (`colour_cast`) past glyph.white_balance_above
    and at most one of its channels is clipped (glyph.white_balance_clip); else
    None, the crop as it is.

    Why: the field is white only in white light. Under a lamp warmer than the calibration's
    (blue down by a third, red up by a fifth) the field turns cream and a blue block's ink
    loses its chroma, so the two meet in whiteness: on four unseen kits so lit, 22 of the 27
    visible slots lost were blue blocks' glyphs read as other glyphs or none. The tray's own
    colour says what the light did; undone, the field is white again. Within the casts the
    calibration kit showed, the glyph model learnt the glyphs as they are, and the gains' own
    noise costs more than it mends. A tray clipped in two or three channels says nothing of the
    light's colour (the twin's over-lit frames: balanced by it, blue 1s read as 2s); one clipped
    channel still says the cast's direction (a warm lamp clips the red first)."""
    above = cfg["glyph"].get("white_balance_above")
    if above is None or not tray_clear(cfg, tray_bgr):
        return None
    g = color_gains(cfg, np.asarray(tray_bgr, np.float32).reshape(-1)[:3])
    return g if colour_cast(g) >= float(above) else None


def _whiteness_hog(cfg: Mapping, w: np.ndarray) -> np.ndarray:
    """glyph_features from the crop's whiteness: blurred, stretched to 8 bits, HOG."""
    gc = cfg["glyph"]
    size = (int(gc["width"]), int(gc["height"]))
    blur = float(gc.get("blur_px", 0.0))
    if blur > 0:
        w = cv2.GaussianBlur(w, (0, 0), blur)
    u8 = cv2.normalize(w, None, 0, 255, cv2.NORM_MINMAX, cv2.CV_8U)
    hog = _hog(size, int(gc["cell"]), int(gc.get("bins", 9)), bool(gc.get("signed", False)))
    return hog.compute(u8).reshape(-1).astype(np.float32)


def _whiteness_hogs(cfg: Mapping, w: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_whiteness_hog of two crops' whiteness, the HOGs in one call: the two 8-bit images lie
    side by side, each with the column its reflected border gives the gradient at its inner
    edge, so each window's descriptor is the crop's own to the last bit (one HOG call costs
    about 13 us, mostly its set-up; two windows in one, about 22)."""
    gc = cfg["glyph"]
    size = (int(gc["width"]), int(gc["height"]))
    h, wd = w.shape
    if (wd, h) != size or w2.shape != w.shape:
        return _whiteness_hog(cfg, w), _whiteness_hog(cfg, w2)
    blur = float(gc.get("blur_px", 0.0))
    if blur > 0:
        w, w2 = cv2.GaussianBlur(w, (0, 0), blur), cv2.GaussianBlur(w2, (0, 0), blur)
    u8 = np.empty((h, 2 * wd + 2), np.uint8)
    cv2.normalize(w, u8[:, :wd], 0, 255, cv2.NORM_MINMAX, cv2.CV_8U)
    cv2.normalize(w2, u8[:, wd + 2:], 0, 255, cv2.NORM_MINMAX, cv2.CV_8U)
    u8[:, wd] = u8[:, wd - 2]  # (the first one's reflect-101 border on its right, the second's on its left)
    u8[:, wd + 1] = u8[:, wd + 3]
    cell = int(gc["cell"])
    hog = _hog(size, cell, int(gc.get("bins", 9)), bool(gc.get("signed", False)))
    both = hog.compute(u8, (cell, cell), (0, 0), ((0, 0), (wd + 2, 0))).reshape(2, -1)
    return both[0], both[1]


def expected_tray(bg, reg: Registration, uv: np.ndarray, tray_bgr: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """Bare-tray colour behind each image point: from the learnt tray model, else the tray median."""
    if bg is None:
        return np.broadcast_to(np.asarray(tray_bgr, np.float32), uv.shape[:-1] + (3,))
    exp = bg.expected(reg, uv, 1.0 / gains)
    bad = ~np.isfinite(exp).all(axis=-1)
    if bad.any():
        exp = exp.copy()
        exp[bad] = tray_bgr
    return exp


def not_tray_colour(th: Mapping, px: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Is each colour px (..., 3) not the bare tray's ref (..., 3)? Its chromaticity (L1 distance
    over `chroma`) or brightness (ratio under `dark` or over `bright`) differs. With `shadow_below`
    and `shadow_chroma` in `th`, a pixel darker than `shadow_below` of the tray needs the larger
    chromaticity change `shadow_chroma`: a cast shadow dims the tray and shifts its colour a little
    (the room's light is not the lamp's), a hand changes it. The sums over the three channels are
    written out: NumPy's reduction over a last axis of three costs ten times the arithmetic."""
    return not_tray_colours(th, px, (ref,))[0]


def not_tray_colours(th: Mapping, px: np.ndarray, refs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """not_tray_colour of the same pixels against each reference (each broadcasting against px),
    the pixels' own terms worked out once. (Many pixels, _PLANAR_FROM or more: each colour's
    channels as planes, whose arithmetic runs on whole rows; the same steps, a third to a half
    of the time on a few thousand colours.)"""
    if np.size(px) >= 3 * _PLANAR_FROM:
        return _not_tray_planar(th, px, refs)
    px = px + 1.0
    s_px = px[..., 0] + px[..., 1] + px[..., 2]
    q_px = px / s_px[..., None]
    out = []
    for ref in refs:
        ref = ref + 1.0
        s_ref = ref[..., 0] + ref[..., 1] + ref[..., 2]
        d = q_px - ref / s_ref[..., None]
        np.abs(d, out=d)
        dist = d[..., 0] + d[..., 1] + d[..., 2]
        ratio = s_px / s_ref
        chroma = float(th["chroma"])
        if "shadow_below" in th:
            chroma = np.where(ratio < float(th["shadow_below"]), float(th["shadow_chroma"]), chroma)
        out.append((dist > chroma) | (ratio < float(th["dark"])) | (ratio > float(th["bright"])))
    return out


_PLANAR_FROM = 2500  # colours: below, the planes' extra copies cost more than they save


def _not_tray_planar(th: Mapping, px: np.ndarray, refs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """not_tray_colours with the colours as channel planes ((3, ...), each padded to the
    arrays' most dimensions so that they broadcast as the colours did): the same float32 steps
    elementwise, on contiguous rows instead of every third value."""
    nd = max([np.ndim(px)] + [np.ndim(r) for r in refs])
    px = _planes_plus_one(px, nd)
    s_px = px[0] + px[1]
    s_px += px[2]
    q_px = np.divide(px, s_px, out=px)
    out = []
    for ref in refs:
        ref = _planes_plus_one(ref, nd)
        s_ref = ref[0] + ref[1]
        s_ref += ref[2]
        d = np.subtract(q_px, np.divide(ref, s_ref, out=ref))
        np.abs(d, out=d)
        dist = d[0] + d[1]
        dist += d[2]
        ratio = s_px / s_ref
        chroma = float(th["chroma"])
        if "shadow_below" in th:
            chroma = np.where(ratio < float(th["shadow_below"]), float(th["shadow_chroma"]), chroma)
        far = dist > chroma
        far |= ratio < float(th["dark"])
        far |= ratio > float(th["bright"])
        out.append(far)
    return out


def _planes_plus_one(a: np.ndarray, nd: int) -> np.ndarray:
    """(3, ...) channel planes of a + 1.0 (a (..., 3) padded to nd dimensions), in a's + 1.0 dtype."""
    a = np.asarray(a)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    out = np.empty((3,) + a.shape[:-1], np.result_type(a, 1.0))
    np.add(a.transpose((a.ndim - 1,) + tuple(range(a.ndim - 1))), 1.0, out=out)  # (np.moveaxis's view, without its wrapper)
    return out


def foreground(th: Mapping, img: np.ndarray, tray_bgr: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Is the pixel at each (..., 2) position not bare tray? (chromaticity or brightness differs)

    `th` holds the thresholds: chroma (L1 chromaticity distance), dark and bright (brightness
    ratios to the tray; a shadow stays above `dark`)."""
    h, w = img.shape[:2]
    x = np.clip(np.rint(uv[..., 0]).astype(np.int32), 0, w - 1)
    y = np.clip(np.rint(uv[..., 1]).astype(np.int32), 0, h - 1)
    fg = not_tray_colour(th, img[y, x].astype(np.float32), np.asarray(tray_bgr, dtype=np.float32))
    inside = (uv[..., 0] >= 0) & (uv[..., 0] < w) & (uv[..., 1] >= 0) & (uv[..., 1] < h)
    return fg & inside


def silhouette_height(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray,
                      bg=None, gains: np.ndarray | None = None) -> float:
    """The tower's height from where its silhouette ends, as a median over rays up each side.

    A ray follows a point of the footprint's side straight up. At the top face's height the
    point just inside the side is tower and the point just outside is bare tray (on the sides
    facing away from the camera, whose top edge is the silhouette). Hands spoil a few rays; the
    median over all rays shrugs them off.
    """
    sc = cfg["silhouette"]
    half = tray.footprint_half
    cx, cy = tray.tower_center
    level = tray.block_mm[2]
    zs = np.arange(level * 0.5, level * int(cfg["top"]["max_levels"]) + 1e-6, float(sc["step_mm"]))
    ts = np.linspace(-half * 0.8, half * 0.8, int(sc["rays_per_side"]))
    inset, outset = float(sc["inset_mm"]), float(sc["outset_mm"])
    pin, pout, ray_side = [], [], []
    for k, (nx, ny) in enumerate(((1, 0), (-1, 0), (0, 1), (0, -1))):
        for t in ts:
            base = np.array([cx + nx * half - ny * t, cy + ny * half + nx * t])
            pin.append(base - inset * np.array([nx, ny]))
            pout.append(base + outset * np.array([nx, ny]))
            ray_side.append(k)
    pin, pout = np.array(pin), np.array(pout)
    cam = reg.camera
    t = np.asarray(cam.tvec, dtype=np.float64)
    uv_in = _project_many(cam.K, cam.R, t, pin, zs)
    uv_out = _project_many(cam.K, cam.R, t, pout, zs)
    g = gains if gains is not None else np.ones(3, np.float32)
    fg_in = foreground(sc, img, expected_tray(bg, reg, uv_in, tray_bgr, g), uv_in)
    # the ray must be mostly tower from the tray up to z (a glyph may look like the tray for a while)
    run = np.cumsum(fg_in, axis=0) / np.arange(1, len(zs) + 1)[:, None]
    edge = fg_in & ~foreground(sc, img, expected_tray(bg, reg, uv_out, tray_bgr, g), uv_out) & (run >= float(sc["min_run_fraction"]))  # (Z, P)
    # only the sides whose top edge moves outwards in the image as z grows bound the silhouette
    move = uv_in[-1] - uv_in[0]
    outward = uv_out[0] - uv_in[0]
    informative = (move * outward).sum(axis=1) > 0
    has = edge.any(axis=0)
    # the test holds on an interval around the true height (inset = outset): take its middle
    last = len(zs) - 1 - np.argmax(edge[::-1], axis=0)
    first = last.copy()
    for p in np.nonzero(has)[0]:
        while first[p] > 0 and edge[first[p] - 1, p]:
            first[p] -= 1
    heights = np.where(has, (zs[first] + zs[last]) / 2, np.nan)
    use = heights[informative & has]
    if len(use) < int(sc["min_rays"]):
        use = heights[has]
    if len(use) == 0:
        return float("nan")
    return float(np.median(use))


def face_homography(cfg: Mapping, tray: Tray, reg: Registration, z: float) -> tuple[np.ndarray, int]:
    """Homography from face-image pixels (x east to the right, y north up) to image pixels."""
    ppm = float(cfg["orientation"]["px_per_mm"])
    m = float(cfg["orientation"]["margin_mm"])
    half = tray.footprint_half
    cx, cy = tray.tower_center
    size = int(round((2 * half + 2 * m) * ppm))
    A = np.array([[1 / ppm, 0, cx - half - m], [0, -1 / ppm, cy + half + m], [0, 0, 1]])
    return reg.camera.plane_homography(z) @ A, size


def face_image(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float) -> np.ndarray:
    Hf, size = face_homography(cfg, tray, reg, z)
    return warp_frame(img, Hf, (size, size))


def orientation_features(cfg: Mapping, tray: Tray, face_bgr: np.ndarray,
                         skin: np.ndarray | None = None) -> np.ndarray:
    """Where the long seams run: gradient profiles across rows and columns of the top face.

    For orientation "x" the seams between the three blocks are rows of the face image; for "y"
    they are columns. Profiles are pooled into bins a few mm wide so a block a little off its
    slot still lands in the right bin. Rotating the face by 90 degrees swaps the two halves.
    `skin`: the face's pixels a hand covers (`vision.skin.skin_mask`), left out of the profiles
    (each row's and column's mean over the pixels left): a finger's two edges are seams too.
    """
    oc = cfg["orientation"]
    ppm = float(oc["px_per_mm"])
    m = float(oc["margin_mm"])
    W = tray.block_mm[1]
    lab = lab_of(face_bgr)
    # (the features as Python floats, each its float64 value, made float32 in one call at the end:
    # what concatenating the pieces in float64 and casting gave, without a NumPy call a piece)
    feats = []
    n = face_bgr.shape[0]
    lo, hi = int((m + 4) * ppm), int(n - (m + 4) * ppm)
    bins = int(oc["profile_bins"])
    gx3 = np.abs(cv2.Sobel(lab, cv2.CV_32F, 1, 0, ksize=3))
    gy3 = np.abs(cv2.Sobel(lab, cv2.CV_32F, 0, 1, ksize=3))
    kept = None if skin is None else (~skin).astype(np.float32)
    if kept is not None:  # (the pixels left per row, column and face: the same for both channel groups, counted once)
        row_n = np.maximum(np.add.reduce(kept[:, lo:hi], axis=1), 1.0)
        col_n = np.maximum(np.add.reduce(kept[lo:hi, :], axis=0), 1.0)
        kept_n = max(float(np.add.reduce(kept, axis=None)), 1.0)
    r = int(round(float(oc["seam_window_mm"]) * ppm))
    seam_at = [int(round((m + k * W) * ppm)) for k in (1, 2)]
    for ch in ((0,), (1, 2)):
        gx = gx3[..., 0] if len(ch) == 1 else gx3[..., 1] + gx3[..., 2]
        gy = gy3[..., 0] if len(ch) == 1 else gy3[..., 1] + gy3[..., 2]
        if kept is None:
            # (means written as sum / count: what np.mean computes, without its per-call overhead)
            rows = np.add.reduce(gy[:, lo:hi], axis=1) / (hi - lo)  # seams of an "x" level
            cols = np.add.reduce(gx[lo:hi, :], axis=0) / (hi - lo)  # seams of a "y" level
        else:
            gx, gy = gx * kept, gy * kept
            rows = np.add.reduce(gy[:, lo:hi], axis=1) / row_n
            cols = np.add.reduce(gx[lo:hi, :], axis=0) / col_n
        both = np.concatenate([rows, cols])
        s = both.copy()  # (np.sort's own copy and sort, without its wrapper)
        s.sort()
        scale = float(_median_sorted(s)) + 1.0
        # the two profiles as the rows of one array: each step below once for both
        both = (both / scale).reshape(2, -1)
        peaks = [np.maximum.reduce(both[:, max(0, c - r): c + r + 1], axis=1).tolist() for c in seam_at]
        pooled = cv2.resize(both, (bins, 2), interpolation=cv2.INTER_AREA).tolist()  # (each row alone, as a row's own resize)
        for i in range(2):
            seam = [peaks[0][i], peaks[1][i]]
            feats += seam
            feats.append(sum(seam) / len(seam))
            feats += pooled[i]
        count = gy.size if kept is None else kept_n
        feats.append(float(np.log((np.add.reduce(gy, axis=None) / count + 1)
                                  / (np.add.reduce(gx, axis=None) / count + 1))))
    feats += _stripe_uniformity(lab, m, W, ppm).tolist()
    if float(oc.get("continuity_window_mm", 0.0)) > 0:
        feats += seam_continuity(oc, W, gx3[..., 0] + gx3[..., 1] + gx3[..., 2],
                                 gy3[..., 0] + gy3[..., 1] + gy3[..., 2]).tolist()
    return np.array(feats, np.float32)


def seam_continuity(oc: Mapping, W: float, gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """How unbroken each orientation's two inner seam lines are, from a face's gradients.

    The top level's inner lines (between its slots, `W` apart) are edges along their whole
    length wherever they bound a top block: a seam between two blocks or the step down beside
    one. The level below lies across them, and its seams show only where no top block covers
    them: they stop at the top block's side. So with one or two blocks on top both
    orientations show seams, but only the top's run unbroken through all three thirds (the
    thirds are the other orientation's slots). Per line, the step across it at each third is
    a low percentile along that third (a glyph oval's curved flank near the line does not
    count; the line must be straight), taken at one shared offset within continuity_window_mm
    (a height a little off moves the whole line), and the line's strength is its weakest
    third. Returns, per orientation ("x" then "y"), its stronger and weaker line, then the
    difference of the stronger lines; all over the face's median gradient."""
    ppm = float(oc["px_per_mm"])
    m = float(oc["margin_mm"])
    r = max(1, int(round(float(oc["continuity_window_mm"]) * ppm)))
    q = float(oc["continuity_percentile"])
    inset = float(oc["continuity_inset_mm"])
    n = gy.shape[0]
    thirds, span, kth, centres, rows, cols = _seam_bands(n, m, W, ppm, r, q, inset)
    out = []
    both = np.concatenate([gx.reshape(-1), gy.reshape(-1)])  # (the median's values below, too)
    at = _seam_pixels(n, m, W, ppm, r, q, inset) if gx.shape == gy.shape == (n, n) else None
    if at is not None:
        # both orientations' lines at once, (orientation, line, offset, third, along): gy's rows, then
        # gx's columns, in one take from the two in a row (their values as the gathers of each gave)
        low = both.take(at)  # (a sort of short rows, faster than a partition; in place: the take is a copy already)
        low.sort(axis=4)
        low = low[..., kth]
        lines = np.maximum.reduce(np.minimum.reduce(low, axis=3), axis=2)  # weakest third, best offset
        out = [sorted(v, reverse=True) for v in lines.tolist()]
    else:
        for grad in (gy, gx.T):  # rows of gy are "x" lines; rows of gx transposed are "y" lines
            lines = []
            for c in centres:
                rows = grad[max(0, c - r): min(n, c + r + 1)]
                band = np.stack([rows[:, a:a + span] for a, _ in thirds])  # (3, offsets, span)
                low = np.partition(band, kth, axis=2)[..., kth]  # (3, offsets)
                lines.append(float(low.min(axis=0).max()))
            out.append(sorted(lines, reverse=True))
    scale = float(median_along(both)) + 1.0  # (a long 1-D median: from its middle's values)
    (x1, x2), (y1, y2) = out
    return np.array([x1, x2, y1, y2, x1 - y1]) / scale


@functools.lru_cache(maxsize=64)
def _seam_bands(n: int, m: float, W: float, ppm: float, r: int, q: float, inset: float):
    """seam_continuity's geometry for a face n pixels wide, worked out once: the thirds, their
    common span, the percentile's rank, the two lines' centres, and the lines' rows (2, 2r+1)
    and the thirds' columns (3, span) as index arrays (read-only; None when a band leaves the face)."""
    thirds = [(int(round((m + s * W + inset) * ppm)), int(round((m + (s + 1) * W - inset) * ppm))) for s in range(3)]
    span = min(b - a for a, b in thirds)
    kth = min(span - 1, max(0, int(round(q / 100.0 * (span - 1)))))  # the percentile as one partition
    centres = [int(round((m + k * W) * ppm)) for k in (1, 2)]
    rows = cols = None
    if all(c - r >= 0 and c + r + 1 <= n for c in centres) and all(a + span <= n for a, _ in thirds):
        rows = np.array([np.arange(c - r, c + r + 1) for c in centres])
        cols = np.array([np.arange(a, a + span) for a, _ in thirds])
        rows.flags.writeable = cols.flags.writeable = False
    return thirds, span, kth, centres, rows, cols


@functools.lru_cache(maxsize=64)
def _seam_pixels(n: int, m: float, W: float, ppm: float, r: int, q: float, inset: float) -> np.ndarray | None:
    """seam_continuity's bands as indices into an n x n face's gx then gy in a row (read-only,
    (orientation, line, offset, third, along)): the "x" lines from gy's rows, the "y" lines from gx's
    columns; None when a band leaves the face (_seam_bands)."""
    *_, rows, cols = _seam_bands(n, m, W, ppm, r, q, inset)
    if rows is None:
        return None
    R = rows[:, :, None, None]  # (line, offset, 1, 1)
    C = cols[None, None]  # (1, 1, third, along)
    at = np.stack(np.broadcast_arrays(n * n + R * n + C, C * n + R)).astype(np.intp)
    at.flags.writeable = False
    return at


def _stripe_uniformity(lab: np.ndarray, m: float, W: float, ppm: float) -> np.ndarray:
    """How evenly coloured each slot's long edges are, for both orientations.

    A top block is one colour along its whole length; a stripe across the real orientation (or
    over an empty slot, showing the level below) crosses seams and other blocks. Sorted per
    orientation so the features do not depend on which slots are filled.
    """
    a0, a1, spans, rows = _stripes(lab.shape[0], m, W, ppm)
    at = _stripe_pixels(lab.shape[0], m, W, ppm) if lab.shape[1] == lab.shape[0] else None
    if at is not None:
        # colour along each stripe (its mean across), every stripe's pixels in one take, "x"
        # slots' rows then "y" slots' columns (2, 6, k, length, 3): a stripe's k values summed in
        # turn over an outer axis, as the two gathers' sums took them (22 -> 13 us)
        k = rows.shape[1]
        band = (np.add.reduce(lab.reshape(-1, 3).take(at, axis=0), axis=2) / k).reshape(12, a1 - a0, 3)
    elif rows is not None:
        # colour along each stripe (its mean across): every stripe at once, "x" slots' then "y" slots'
        k = rows.shape[1]
        band = np.concatenate([np.add.reduce(lab[rows, a0:a1], axis=1) / k,
                               np.add.reduce(lab[a0:a1][:, rows], axis=2).transpose(1, 0, 2) / k])  # (12, length, 3)
    else:
        stripes = []
        for img in (lab, np.transpose(lab, (1, 0, 2))):  # rows = "x" slots, then "y"
            for a, b in spans:
                part = img[a:b, a0:a1]
                stripes.append(np.add.reduce(part, axis=0) / part.shape[0])  # (its mean)
        band = np.array(stripes)  # (12, length, 3)
    # each stripe's channels along its length: the medians and deviations run along it
    bt = band.transpose(0, 2, 1)  # (12, 3, length)
    s = bt.copy(order="K")  # (np.sort's own copy and sort, without its wrapper)
    s.sort(axis=2)
    dev = np.abs(bt - _median_sorted(s)[..., None])
    dev = dev[:, 0] + dev[:, 1] + dev[:, 2]  # (the sum over the three channels, written out: faster)
    dev.sort(axis=1)  # (the median and the 80th percentile from one sort)
    med, p80 = _median_sorted(dev), _percentile_sorted(dev, 80)
    stats = np.empty((len(dev), 2), np.result_type(med, p80))  # (12, 2): np.stack's array, without its wrapper
    stats[:, 0], stats[:, 1] = med, p80
    vals = np.add.reduce(stats.reshape(2, 3, 2, 2), axis=2) / 2  # (orientation, slot, statistic): the two edges averaged
    vals.sort(axis=1)  # each orientation's statistic over its slots, sorted
    out = vals.transpose(0, 2, 1).reshape(12)  # x_mad, x_p80, y_mad, y_p80 (3 each)
    x_mad, x_p80, y_mad, y_p80 = out[:3], out[3:6], out[6:9], out[9:]
    scale = float(np.add.reduce(out) / 12) + 1.0
    return np.concatenate([out / scale,
                           [(x_p80[0] - y_p80[0]) / scale, (x_mad[0] - y_mad[0]) / scale,
                            (np.add.reduce(x_p80[:2]) / 2 - np.add.reduce(y_p80[:2]) / 2) / scale]])


@functools.lru_cache(maxsize=64)
def _stripes(n: int, m: float, W: float, ppm: float):
    """_stripe_uniformity's stripes on a face n pixels wide, worked out once: the span along them
    (a0, a1), each stripe's rows (a, b), "x" slots' two long edges in turn ("y" slots' are the
    same columns), and those rows as one read-only index array (6, width) when all are as wide
    (else None)."""
    a0, a1 = int(round((m + 4) * ppm)), int(round(n - (m + 4) * ppm))
    spans = [(int(round(lo * ppm)), int(round(hi * ppm))) for s in range(3)
             for lo, hi in ((m + s * W + 2, m + s * W + 6), (m + s * W + W - 6, m + s * W + W - 2))]
    rows = None
    if len({b - a for a, b in spans}) == 1 and spans[0][1] > spans[0][0]:
        rows = np.array([np.arange(a, b) for a, b in spans])
        rows.flags.writeable = False
    return a0, a1, spans, rows


@functools.lru_cache(maxsize=64)
def _stripe_pixels(n: int, m: float, W: float, ppm: float) -> np.ndarray | None:
    """The pixels of _stripes' stripes on an n x n face, as indices into its pixels in a row
    (read-only, (2, 6, k, length)): the "x" slots' k rows, then the "y" slots' k columns, along
    the span. None when the stripes are not all as wide, or k is 8 or more (NumPy sums 8 or more
    along an inner axis pairwise: kept to the two gathers' own layout there)."""
    a0, a1, _, rows = _stripes(n, m, W, ppm)
    if rows is None or rows.shape[1] >= 8:
        return None
    along = np.broadcast_to(np.arange(a0, a1), rows.shape + (a1 - a0,))
    across = np.broadcast_to(rows[..., None], along.shape)
    at = np.stack([across * n + along, along * n + across]).astype(np.intp)
    at.flags.writeable = False
    return at


def _median_sorted(s: np.ndarray) -> np.ndarray:
    """median_along(x) from x sorted along its last axis: its two middle values, the same
    arithmetic. (NumPy's SIMD sort of rows of a few dozen floats takes a fraction of the time
    of a partition at two places.)"""
    n = s.shape[-1]
    return (s[..., (n - 1) // 2] + s[..., n // 2]) / 2


def _percentile_sorted(s: np.ndarray, q: float) -> np.ndarray:
    """percentile_along(x, q) from x sorted along its last axis: the same two values, the same
    interpolation arithmetic."""
    lo, hi, t = percentile_places(s.shape[-1], q)
    return interpolated(s[..., lo], s[..., hi], t)


def outline_score(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, zs: np.ndarray) -> np.ndarray:
    """How well the tower's 75 mm square outline sits on image edges, for each candidate height.

    The face is rectified at each height; rows and columns of gradient energy (averaged along the
    whole side, so glyphs and a hand barely matter) must peak where the square's sides are. At a
    wrong height the rectified square is scaled and shifted and the peaks move off. A level just
    below the top fits almost as well, which is fine: only the alignment matters for reading.
    """
    ac = cfg["align"]
    ppm = float(ac["px_per_mm"])
    m = float(ac["margin_mm"])
    half = tray.footprint_half
    cx, cy = tray.tower_center
    n = int(round((2 * half + 2 * m) * ppm))
    A = np.array([[1 / ppm, 0, cx - half - m], [0, -1 / ppm, cy + half + m], [0, 0, 1]])
    lo, hi = int(round((m + 5) * ppm)), int(round((m + 2 * half - 5) * ppm))
    pos = [int(round(m * ppm)), int(round((m + 2 * half) * ppm))]
    win = max(1, int(round(float(ac["window_mm"]) * ppm)))
    # one gradient-magnitude image (all colour channels) for the tower's region, warped per height
    corners = []
    for z in (float(zs.min()), float(zs.max())):
        corners.append(apply_h(reg.camera.plane_homography(z) @ A, np.array([[0, 0], [n, 0], [n, n], [0, n]], float)))
    c = np.concatenate(corners)
    h, w = img.shape[:2]
    x0, y0 = (max(0, int(v) - 3) for v in c.min(axis=0))
    x1, y1 = (min(lim, int(v) + 4) for v, lim in zip(c.max(axis=0), (w, h)))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return np.zeros(len(zs))
    roi = img[y0:y1, x0:x1].astype(np.float32)
    mag = (np.abs(cv2.Sobel(roi, cv2.CV_32F, 1, 0, ksize=3)) + np.abs(cv2.Sobel(roi, cv2.CV_32F, 0, 1, ksize=3))).sum(axis=2)
    T = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], dtype=np.float64)
    out = np.empty(len(zs))
    for i, z in enumerate(zs):
        g = cv2.warpPerspective(mag, T @ reg.camera.plane_homography(float(z)) @ A, (n, n),
                                flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_CONSTANT)
        rows = g[:, lo:hi].mean(axis=1)
        cols = g[lo:hi, :].mean(axis=0)
        scale = float(median_along(np.concatenate([rows, cols]))) + 1.0
        sc = 0.0
        for prof in (rows, cols):
            for p in pos:
                sc += float(prof[max(0, p - win - 1): p + win + 1].max())
        out[i] = sc / (4 * scale)
    return out


def align_height(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z_hint: float) -> float:
    """The height (near the silhouette's) at which the tower's square outline fits image edges best."""
    ac = cfg["align"]
    level = tray.block_mm[2]
    zmax = level * int(cfg["top"]["max_levels"])
    w = float(ac["search_mm"])
    if not np.isfinite(z_hint):
        z_hint = zmax / 2
        w = zmax / 2
    coarse = np.arange(max(level, z_hint - w), min(zmax, z_hint + w) + 1e-6, float(ac["coarse_step_mm"]))
    sc = outline_score(cfg, tray, reg, img, coarse)
    prior = float(ac["prior_per_mm"]) * np.abs(coarse - z_hint)
    z0 = float(coarse[int(np.argmax(sc - prior))])
    fine = np.arange(z0 - float(ac["coarse_step_mm"]) / 2, z0 + float(ac["coarse_step_mm"]) / 2 + 1e-6, float(ac["fine_step_mm"]))
    sf = outline_score(cfg, tray, reg, img, fine) - float(ac["prior_per_mm"]) * np.abs(fine - z_hint)
    return float(fine[int(np.argmax(sf))])


def outline_probe_score(cfg: Mapping, tray: Tray, reg: Registration, img_f: np.ndarray, zs: np.ndarray) -> np.ndarray:
    """The square outline's edge fit at every candidate height at once, by point probes.

    Along each side of the 75 mm square, the colour step across the side (probe_mm each way)
    is taken at its best within window_mm of where the side should be, averaged along the side,
    and compared with the steps a few mm inside and outside it (texture, glyphs): a sharp
    outline where the square lies, not just a busy area."""
    ac = cfg["align"]
    half = tray.footprint_half
    cx, cy = tray.tower_center
    n = int(ac["probes_per_side"])
    t = np.linspace(-0.8 * half, 0.8 * half, n)
    win = float(ac["window_mm"])
    offs = np.arange(-win, win + 1e-6, 0.5)
    off_ref = np.array([-float(ac["reference_mm"]), float(ac["reference_mm"])])
    d = float(cfg["top"]["probe_mm"])
    cam = reg.camera
    n_off = len(offs) + len(off_ref)
    all_offs = np.concatenate([offs, off_ref])
    P, N = [], []
    for nx, ny in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        nrm = np.array([nx, ny], dtype=np.float64)
        tan = np.array([-ny, nx], dtype=np.float64)
        base = np.array([cx, cy]) + half * nrm + t[:, None] * tan  # (n, 2)
        P.append((base[None, :, :] + all_offs[:, None, None] * nrm).reshape(-1, 2))
        N.append(np.broadcast_to(nrm, (n_off * n, 2)))
    P, N = np.concatenate(P), np.concatenate(N)
    tv = np.asarray(cam.tvec, dtype=np.float64)
    a = _project_many(cam.K, cam.R, tv, P + d * N, zs)
    b = _project_many(cam.K, cam.R, tv, P - d * N, zs)
    step = _probe(img_f, a, b).reshape(len(zs), 4, n_off, n)
    sides = step[:, :, :len(offs)].max(axis=2).mean(axis=2)  # (Z, 4) each side's edge
    # a top face shows all its sides; the tower's base hides the ones facing away from the
    # camera behind the tower, so the second-weakest side counts as well as the mean
    w2 = float(ac["second_weakest_weight"])
    on_v = (1 - w2) * sides.mean(axis=1) + w2 * np.sort(sides, axis=1)[:, 1]
    ref_v = step[:, :, len(offs):].mean(axis=(1, 2, 3))
    return on_v / (ref_v + float(ac["reference_floor"]))


def face_foreground(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, zs: np.ndarray, tray_bgr: np.ndarray,
                    bg=None, gains: np.ndarray | None = None) -> np.ndarray:
    """The fraction of a band just inside the square's sides that is not bare tray, per height.

    At the top's true height that band is blocks (or, over an empty slot, the level below); a
    height far too high for a near camera blows the square up past the tower onto the tray."""
    ac = cfg["align"]
    half = tray.footprint_half
    cx, cy = tray.tower_center
    t = np.linspace(-0.8 * half, 0.8 * half, int(ac["probes_per_side"]))
    inset = float(ac["band_inset_mm"])
    pts = []
    for nx, ny in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        nrm = np.array([nx, ny], dtype=np.float64)
        tan = np.array([-ny, nx], dtype=np.float64)
        pts.append(np.array([cx, cy]) + (half - inset) * nrm + t[:, None] * tan)
    P = np.concatenate(pts)
    cam = reg.camera
    uv = _project_many(cam.K, cam.R, np.asarray(cam.tvec, dtype=np.float64), P, zs)
    g = gains if gains is not None else np.ones(3, np.float32)
    fg = foreground(cfg["silhouette"], img, expected_tray(bg, reg, uv, tray_bgr, g), uv)
    return fg.mean(axis=1)


def height_scores(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, img_f: np.ndarray, zs: np.ndarray,
                  tray_bgr: np.ndarray | None = None, bg=None, gains: np.ndarray | None = None) -> np.ndarray:
    """How well the top face fits at each candidate height: the square outline's edge fit plus
    the best slot-boundary pattern (either orientation, any occupancy), each scaled by its best
    value over the candidates so neither dominates by its units. The outline alone also fits the
    glyph ovals' edges at a wrong height; the slot seams and block ends do not."""
    w = float(cfg["align"]["pattern_weight"])
    if str(cfg["align"].get("outline", "probe")) == "warp":
        out = outline_score(cfg, tray, reg, img, zs)
    else:
        out = outline_probe_score(cfg, tray, reg, img_f, zs)
    out = out / (float(out.max()) + 1e-9)
    if w <= 0:
        return out
    pat = np.max([_pattern_scores(cfg, segment_strengths(cfg, tray, reg, img_f, o, zs))[0] for o in ORIENTS], axis=0)
    pat = np.maximum(pat, 0.0) / (float(pat.max()) + 1e-9)
    sc = out + w * pat
    if tray_bgr is not None:
        fg = face_foreground(cfg, tray, reg, img, zs, tray_bgr, bg, gains)
        sc = sc * np.clip(fg / float(cfg["align"]["band_foreground"]), 0.0, 1.0)
    return sc


def fit_height(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray | None = None,
               bg=None, gains: np.ndarray | None = None, z_lo: float = 0.0, z_hi: float = np.inf) -> float:
    """The top face's height over the whole range: coarse candidates, then a fine search round the best."""
    ac = cfg["align"]
    level = tray.block_mm[2]
    # the top cannot be near the camera: the whole tray would not be in view
    zmax = min(level * float(cfg["top"]["max_levels"]), float(ac["max_camera_fraction"]) * float(reg.camera.center[2]))
    img_f = edge_image(img)
    lo, hi = max(level * 0.5, z_lo), min(zmax, z_hi)
    if hi <= lo:
        lo, hi = level * 0.5, zmax
    coarse = np.arange(lo, hi + 1e-6, float(ac["coarse_step_mm"]))
    sc = height_scores(cfg, tray, reg, img, img_f, coarse, tray_bgr, bg, gains)
    # the top is the highest structure that fits well: the tower's base and lower levels show
    # outline edges too, so take the highest local maximum within a fraction of the best
    alpha = float(ac["highest_within"])
    peaks = [i for i in range(len(sc)) if sc[i] >= alpha * sc.max()
             and sc[i] >= (sc[i - 1] if i > 0 else -np.inf) and sc[i] >= (sc[i + 1] if i + 1 < len(sc) else -np.inf)]
    z0 = float(coarse[max(peaks) if peaks else int(np.argmax(sc))])
    fine = fine_heights(cfg, tray, z0)
    return float(fine[int(np.argmax(height_scores(cfg, tray, reg, img, img_f, fine, tray_bgr, bg, gains)))])


def fine_heights(cfg: Mapping, tray: Tray, z0: float) -> np.ndarray:
    """The fine search's heights round coarse candidate z0: a coarse step either side, from half
    a level up. (Both height searches use it: this one and plane_height's, which imports this
    module.)"""
    ac = cfg["align"]
    step = float(ac["coarse_step_mm"])
    return np.arange(max(tray.block_mm[2] * 0.5, z0 - step), z0 + step + 1e-6, float(ac["fine_step_mm"]))


def slot_tray_fraction(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z: float, orient: str,
                       tray_bgr: np.ndarray, bg=None, gains: np.ndarray | None = None, first: int = 0,
                       count: int = 3) -> np.ndarray:
    """Per slot, how much of it looks like the bare tray behind it (the first level's empty slots
    show the tray, which a wooden tray's colour can pass for a yellow block in the models).
    `first`: as for slot_patches; `count`: of the three slots from there, the first this many."""
    L, W, _ = tray.block_mm
    cx, cy = tray.tower_center
    pts = _tray_check_points(float(L), float(W), orient, float(cx), float(cy), int(first))
    if count < 3:  # (each slot's points are a third of the rows, in turn)
        pts = pts[:len(pts) // 3 * count]
    cam = reg.camera
    R, K = cam.R, cam.K
    # the slots' points at once, tray mm -> image (_project_many's steps at the one height)
    M = np.array(R)  # (R's first two columns and the translation: column_stack's matrix, without its wrapper)
    M[:, 2] = np.asarray(cam.tvec, dtype=np.float64).reshape(3)
    hom = (pts @ M.T) @ K.T
    hom += z * (K @ R[:, 2])
    uv = hom[:, :2] / hom[:, 2:3]
    h, w = img.shape[:2]
    inside = np.logical_and.reduce((uv >= 0) & (uv < (w, h)), axis=1).reshape(count, -1)
    if bg is None:  # (foreground's steps against the one tray colour, not a broadcast copy per point)
        xy = np.rint(uv).astype(np.int32)
        np.maximum(xy, 0, out=xy)  # (np.clip's values; its wrapper with a tuple of bounds costs 6 us more)
        np.minimum(xy, np.array((w - 1, h - 1), np.int32), out=xy)
        fg = not_tray_colour(cfg["silhouette"], img[xy[:, 1], xy[:, 0]].astype(np.float32),
                             np.asarray(tray_bgr, dtype=np.float32)).reshape(count, -1)
    else:
        uv = uv.reshape(count, -1, 2)
        fg = foreground(cfg["silhouette"], img,
                        expected_tray(bg, reg, uv, tray_bgr, gains if gains is not None else np.ones(3, np.float32)), uv)
    return (~fg & inside).sum(axis=1) / np.maximum(1, inside.sum(axis=1))


@functools.lru_cache(maxsize=32)
def _tray_check_points(L: float, W: float, orient: str, cx: float, cy: float, first: int) -> np.ndarray:
    """slot_tray_fraction's points, 9 along by 3 across each of the three slots from `first`, in
    tray mm with a column of ones (81, 3), read-only: made once per face place, not per call
    (with the fewer steps round it, 136 -> 52 us a call)."""
    a = np.linspace(-L / 2 + 6, L / 2 - 6, 9)
    b = np.linspace(-W / 2 + 4, W / 2 - 4, 3)
    A, B = np.meshgrid(a, b)
    local = np.column_stack([A.ravel(), B.ravel(), np.ones(A.size)])
    xy = np.stack([(local @ _slot_frame(orient, cx, cy, float((first + slot - 1) * W)).T)[:, :2] for slot in range(3)])
    pts = np.column_stack([xy.reshape(-1, 2), np.ones(len(xy) * len(local))])
    pts.flags.writeable = False
    return pts
