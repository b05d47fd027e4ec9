"""Painted Wilds for calibration: a kit that shows the Wild rarely (or only under fingers) gets
copies of its own clear blocks repainted as Wilds.

A set has one Wild among 45 blocks, so a calibration kit may show it on no clear top at all
(the twin's 48-photo kit shows it once, under two hands): the colour, occupancy and glyph models
then never see a Wild and read it as empty or as a blue block. The Wild's design is known: the
only black block, its light glyph field painted in the four colours, its W white. A colour
block seen clearly in the kit is repainted so (body black, field in the kit's own four block
colours, ink white), in the photo itself, so every crop calibration cuts from it (jittered
glyph crops, colour and occupancy patches) comes from the same light, camera and blur.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import cv2
import numpy as np

from vision import top_level as tl

COLOURS = ("red", "yellow", "green", "blue")


def fine_homography(cfg: Mapping, tray, reg, z: float, orient: str, slot: int) -> tuple[np.ndarray, tuple[int, int]]:
    """Homography from a fine slot patch (calibration.painted_px_per_mm) to the image, and its size."""
    ppm0 = float(cfg["top"]["patch_px_per_mm"])
    ppm = float(cfg["calibration"].get("painted_px_per_mm", 5.0))
    L, W, _ = tray.block_mm
    S = np.diag([ppm0 / ppm, ppm0 / ppm, 1.0])
    return tl.slot_patch_homography(cfg, tray, reg, z, orient, slot) @ S, (int(round(L * ppm)), int(round(W * ppm)))


def block_parts(patch: np.ndarray, ppm: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A colour block's fine patch split into body, light glyph field and glyph ink (bool masks),
    by each pixel's share of the body's own chroma (the field is light and colourless, the
    body and ink the block's colour; the ink is what the field encloses). None when the block
    shows no enclosed field (a hand, a shadow, a crop off the block)."""
    lab = cv2.cvtColor(patch, cv2.COLOR_BGR2LAB).astype(np.float32)
    ab = lab[..., 1:] - 128.0
    m = max(1, int(round(ppm)))
    ring = np.ones(ab.shape[:2], bool)
    ring[m:-m, m:-m] = False
    ref = np.median(ab[ring], axis=0)
    c2 = float(ref @ ref)
    if c2 < 15.0 ** 2:  # not a colour block
        return None
    share = (ab @ ref) / c2
    pale = (share < 0.5).astype(np.uint8)
    pale[ring] = 0  # the block's edge and the seams beyond it are no field
    n, lab_, stats, _ = cv2.connectedComponentsWithStats(pale, connectivity=8)
    if n < 2:
        return None
    big = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    field = lab_ == big  # the oval: the largest light part (it may reach the block's long sides)
    if field.sum() < 0.15 * field.size:
        return None
    hull = np.zeros(field.shape, np.uint8)
    cv2.fillConvexPoly(hull, cv2.convexHull(np.argwhere(field)[:, ::-1].astype(np.int32)), 1)
    inside = ((hull > 0) & ~field & ~ring).astype(np.uint8)  # the glyph, and body where the oval reaches an edge
    outside = cv2.dilate(1 - hull, np.ones((3, 3), np.uint8)).astype(bool)
    n, lab_ = cv2.connectedComponents(inside, connectivity=8)
    ink = inside.astype(bool) & ~np.isin(lab_, np.unique(lab_[outside & (inside > 0)]))
    if ink.sum() < 0.02 * ink.size:  # the glyph not found whole (it reaches the oval's edge)
        return None
    body = ~field & ~ink
    return body, field, ink


def paint_wild(patch: np.ndarray, parts, quad_bgr: np.ndarray, dark: float, rim_px: int) -> np.ndarray:
    """The fine patch repainted as a Wild, keeping each pixel's shading: body at `dark` of the
    field's brightness, the field's four quarters (round its centre) in quad_bgr (4, 3) inside a
    light rim of rim_px, ink white."""
    body, field, ink = parts
    f = patch.astype(np.float32)
    gray = f.mean(axis=2)
    white = np.median(f[field], axis=0)
    out = f.copy()
    shade_b = gray / max(1.0, float(np.median(gray[body])))
    out[body] = (dark * white)[None] * shade_b[body][:, None]
    shade_f = gray / max(1.0, float(np.median(gray[field])))
    ys, xs = np.nonzero(field)
    cy, cx = ys.mean(), xs.mean()
    yy, xx = np.mgrid[:patch.shape[0], :patch.shape[1]]
    q = (xx >= cx).astype(int) + 2 * (yy >= cy).astype(int)
    inner = field & (cv2.erode((field | ink).astype(np.uint8), np.ones((2 * rim_px + 1, 2 * rim_px + 1), np.uint8)) > 0)
    out[inner] = quad_bgr[q[inner]] * shade_f[inner][:, None]
    out[ink] = white
    return np.clip(out, 0, 255).astype(np.uint8)


def paste(img: np.ndarray, fine: np.ndarray, H: np.ndarray) -> np.ndarray:
    """The image with the fine patch warped back over its slot (edges blended over a pixel)."""
    h, w = img.shape[:2]
    back = cv2.warpPerspective(fine, H, (w, h), flags=cv2.INTER_LINEAR)
    alpha = cv2.warpPerspective(np.ones(fine.shape[:2], np.float32), H, (w, h), flags=cv2.INTER_LINEAR)[..., None]
    return (img * (1 - alpha) + back * alpha).astype(np.uint8)


def body_colours(cfg: Mapping, tray, items: Sequence) -> dict[str, np.ndarray]:
    """Per colour class, the median body colour of the kit's clear blocks under the calibration
    light (BGR times the photo's colour gains). items: (Prepared, z, orient, slot, colour)."""
    ppm = float(cfg["calibration"].get("painted_px_per_mm", 5.0))
    seen: dict[str, list] = {c: [] for c in COLOURS}
    for p, z, orient, slot, colour in items:
        H, size = fine_homography(cfg, tray, p.reg, z, orient, slot)
        patch = cv2.warpPerspective(p.img, H, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
        parts = block_parts(patch, ppm)
        if parts is not None:
            seen[colour].append(np.median(patch[parts[0]].astype(np.float32), axis=0) * tl.color_gains(cfg, p.tray_bgr))
    return {c: np.median(v, axis=0) for c, v in seen.items() if v}


def painted_image(cfg: Mapping, tray, p, z: float, orient: str, slot: int, ref: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """Photo p with its block in `slot` repainted as a Wild, or None when the block's parts are not found."""
    if len(ref) < len(COLOURS):
        return None
    ppm = float(cfg["calibration"].get("painted_px_per_mm", 5.0))
    H, size = fine_homography(cfg, tray, p.reg, z, orient, slot)
    patch = cv2.warpPerspective(p.img, H, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    parts = block_parts(patch, ppm)
    if parts is None:
        return None
    quad = np.array([ref[c] for c in COLOURS], np.float32) / tl.color_gains(cfg, p.tray_bgr)[None]
    cc = cfg["calibration"]
    fine = paint_wild(patch, parts, quad, float(cc.get("painted_wild_dark", 0.12)),
                      int(round(float(cc.get("painted_rim_mm", 0.8)) * ppm)))
    return paste(p.img, fine, H)
