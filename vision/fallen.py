"""Fallen blocks: a block lying on the tray (or the table beside it) outside the tower, with no hand on it.

RULES.md section 8: any block falling from the tower, other than the one in a player's hand, is a
collapse. A single block tipping off the top onto the tray leaves the tray's weight unchanged and
shakes it no more than a clumsy pull, so the camera must see it. Stages, one pure function of
(config, frame):

1. warp the frame onto the tray plane (z = 0) around the tray, `px_per_mm`;
2. block colour: the four block colours are vivid; after white-balancing on the tray (the tray turns
   grey) their Lab chroma is far above the tray's, the table's, skin's and shadows' (`min_chroma`);
   a closing fills the white ovals and glyphs;
3. the tower is masked out: its footprint projected at the tray and at its top (the top of a tall
   tower looks much larger than its base from a camera above it), plus `tower_margin_mm`;
4. each remaining blob must have the size of one block *at tray height*: a block in a player's hand
   is held high and looks larger (the camera is about 60 cm up: at 25 cm a block looks 1.7 times as
   long); blobs against the tower (a block being pulled) are left out, and so are those joined to it
   within `bridge_mm` by what is not bare tray (a pulled block's painted end beyond its white oval,
   `_joined_to_tower`); blobs cut by the picture's edge are kept as `whole=False` (only their width
   can be checked: the caller should see them stay);
5. no hand on it: a ring round the block's outline must be mostly bare tray or bare table (a
   player's hand holding the block differs from both in chromaticity or brightness). The ring
   starts `hand_ring_gap_mm` out: a block standing on its edge shows its dark side faces next to
   its top face. A cast shadow (the tower's, beside which a fallen block often lies) dims the
   tray and shifts its colour a little: where the ring is darker than `background.shadow_below`
   of the tray it must change colour by `background.shadow_chroma` to count as a hand.

All thresholds live in vision/fallen.json (`load_fallen_config`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import cv2
import numpy as np

from vision.geometry import apply_h
from vision.kit import KitError, Tray, _read_json
from vision.top_level import expected_tray, foreground, lab_of
from vision.tray import Registration

DEFAULT_PATH = Path(__file__).with_name("fallen.json")


class FallenConfigError(ValueError):
    """A fallen-block settings file that cannot be used; the message names the setting."""


@dataclass(frozen=True)
class FallenBlock:
    center_mm: tuple[float, float]  # on the tray plane, tray millimetres
    size_mm: tuple[float, float]    # long and short side of the visible block
    confidence: float
    whole: bool = True              # False: cut by the picture's edge (only part of it is seen)


_NUMBERS = ("px_per_mm", "margin_mm", "min_chroma", "skin_max_chroma", "min_lightness", "close_mm", "open_mm", "tower_margin_mm",
            "default_top_mm", "min_area_mm2", "min_partial_area_mm2", "max_area_mm2", "min_long_mm", "max_long_mm", "min_short_mm", "min_aspect",
            "max_short_mm", "hand_ring_mm", "hand_ring_gap_mm", "max_hand_fraction", "table_band_mm", "edge_margin_px",
            "marker_margin_mm", "touch_mm", "partial_confidence")
_BACKGROUND = ("chroma", "dark", "bright")
BRIDGE_MM = 40.0  # `_joined_to_tower`'s reach when a settings file has none
LYING_TOLERANCE, LYING_FILL = 0.15, 0.8  # `_lies_whole`'s, likewise


def fallen_config_from_dict(data: Any, origin: str = "fallen-block settings") -> dict:
    """Validate the settings; a wrong one is named in the error."""
    if not isinstance(data, dict):
        raise FallenConfigError(f"{origin}: expected a JSON object")
    missing = [k for k in _NUMBERS + ("background", "tray_ref_bgr", "skin_hue_deg") if k not in data]
    if missing:
        raise FallenConfigError(f"{origin}: missing setting(s) {missing}")
    out: dict = {}
    for k in _NUMBERS:
        v = data[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
            raise FallenConfigError(f"{origin}: {k} must be a non-negative number, not {v!r}")
        out[k] = float(v)
    bg = data["background"]
    if not isinstance(bg, dict) or any(not isinstance(bg.get(k), (int, float)) or isinstance(bg.get(k), bool) for k in _BACKGROUND):
        raise FallenConfigError(f"{origin}: background must have numbers {list(_BACKGROUND)}")
    out["background"] = {k: float(bg[k]) for k in _BACKGROUND}
    if ("shadow_below" in bg) != ("shadow_chroma" in bg):
        raise FallenConfigError(f"{origin}: background needs both shadow_below and shadow_chroma, or neither")
    for k in ("shadow_below", "shadow_chroma"):
        if k in bg:
            v = bg[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 2:
                raise FallenConfigError(f"{origin}: background.{k} must be a number from 0 to 2, not {v!r}")
            out["background"][k] = float(v)
    ref = data["tray_ref_bgr"]
    if not isinstance(ref, list) or len(ref) != 3 or not all(isinstance(x, (int, float)) and x > 0 for x in ref):
        raise FallenConfigError(f"{origin}: tray_ref_bgr must be three positive numbers (B, G, R)")
    out["tray_ref_bgr"] = [float(x) for x in ref]
    sk = data["skin_hue_deg"]
    if not isinstance(sk, list) or len(sk) != 2 or not all(isinstance(x, (int, float)) and 0 <= x <= 360 for x in sk) or sk[0] > sk[1]:
        raise FallenConfigError(f"{origin}: skin_hue_deg must be [low, high] Lab hue angles in degrees")
    out["skin_hue_deg"] = [float(sk[0]), float(sk[1])]
    bridge = data.get("bridge_mm", BRIDGE_MM)  # (settings written before it: the shipped value)
    if isinstance(bridge, bool) or not isinstance(bridge, (int, float)) or not 0 <= bridge <= 200:
        raise FallenConfigError(f"{origin}: bridge_mm must be a number from 0 to 200, not {bridge!r}")
    out["bridge_mm"] = float(bridge)
    for k, default in (("lying_tolerance", LYING_TOLERANCE), ("lying_fill", LYING_FILL)):
        v = data.get(k, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise FallenConfigError(f"{origin}: {k} must be a number from 0 to 1, not {v!r}")
        out[k] = float(v)
    if out["px_per_mm"] <= 0:
        raise FallenConfigError(f"{origin}: px_per_mm must be positive")
    if out["min_area_mm2"] > out["max_area_mm2"] or out["min_long_mm"] > out["max_long_mm"] or out["min_short_mm"] > out["max_short_mm"]:
        raise FallenConfigError(f"{origin}: a minimum block size is larger than its maximum")
    return out


def load_fallen_config(path: str | Path | None = None) -> dict:
    p = Path(path) if path else DEFAULT_PATH
    try:
        data = _read_json(p, "fallen-block settings file")  # the kit's reader: one set of messages for every JSON file
    except KitError as exc:
        raise FallenConfigError(str(exc)) from None
    return fallen_config_from_dict(data, str(p))


@dataclass(frozen=True)
class _Plane:
    """The tray plane's warp: warp pixel (col, row) <-> tray mm, and which warp pixels the camera sees."""

    A: np.ndarray      # warp px -> tray mm
    size: tuple[int, int]
    seen: np.ndarray   # bool (rows, cols)


def _plane(cfg: Mapping, tray: Tray, reg: Registration, shape) -> _Plane:
    ppm, m = cfg["px_per_mm"], cfg["margin_mm"]
    x0, y0, x1, y1 = tray.extent()
    A = np.array([[1 / ppm, 0, x0 - m], [0, -1 / ppm, y1 + m], [0, 0, 1]])
    size = (int(round((x1 - x0 + 2 * m) * ppm)), int(round((y1 - y0 + 2 * m) * ppm)))
    h, w = shape[:2]
    inside = np.full((h, w), 255, np.uint8)
    e = int(cfg["edge_margin_px"])
    if e:
        inside[:e, :], inside[-e:, :], inside[:, :e], inside[:, -e:] = 0, 0, 0, 0
    seen = cv2.warpPerspective(inside, reg.H @ A, size, flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=0) > 0
    return _Plane(A, size, seen)


def _to_warp(plane: _Plane, pts_mm: np.ndarray) -> np.ndarray:
    return apply_h(np.linalg.inv(plane.A), pts_mm)


def tower_mask(cfg: Mapping, tray: Tray, reg: Registration, plane: _Plane, z_top_mm: float) -> np.ndarray:
    """Warp pixels covered by the tower in the image: its footprint seen at the tray and at its top."""
    cx, cy = tray.tower_center
    h = tray.footprint_half + cfg["tower_margin_mm"]
    sq = np.array([[cx - h, cy - h], [cx + h, cy - h], [cx + h, cy + h], [cx - h, cy + h]])
    pts = []
    for z in np.linspace(0.0, max(z_top_mm, 0.0), 4):
        uv = reg.to_image(sq, float(z))
        pts.append(apply_h(reg.H_inv, uv))  # where that image point lies on the tray plane
    hull = cv2.convexHull(_to_warp(plane, np.concatenate(pts)).astype(np.float32))
    mask = np.zeros(plane.size[::-1], np.uint8)
    cv2.fillConvexPoly(mask, np.rint(hull).astype(np.int32), 1)
    return mask > 0


def _marker_mask(cfg: Mapping, tray: Tray, plane: _Plane) -> np.ndarray:
    mask = np.zeros(plane.size[::-1], np.uint8)
    mm = cfg["marker_margin_mm"]
    for c in tray.markers.values():
        lo, hi = np.asarray(c).min(axis=0) - mm, np.asarray(c).max(axis=0) + mm
        box = _to_warp(plane, np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]]))
        cv2.fillConvexPoly(mask, np.rint(box).astype(np.int32), 1)
    return mask > 0


def _tray_mask(tray: Tray, plane: _Plane) -> np.ndarray:
    x0, y0, x1, y1 = tray.extent()
    box = _to_warp(plane, np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]))
    mask = np.zeros(plane.size[::-1], np.uint8)
    cv2.fillConvexPoly(mask, np.rint(box).astype(np.int32), 1)
    return mask > 0


def block_color_mask(cfg: Mapping, warp_bgr: np.ndarray, tray_bgr: np.ndarray) -> np.ndarray:
    """Vivid block colour after white-balancing on the tray (the tray turns grey)."""
    gains = np.asarray(cfg["tray_ref_bgr"], np.float32) / np.maximum(np.asarray(tray_bgr, np.float32), 1.0)
    lab = lab_of(warp_bgr, gains)
    a, b = lab[..., 1], lab[..., 2]
    chroma = cv2.magnitude(a, b)
    vivid = (chroma >= cfg["min_chroma"]) & (lab[..., 0] >= cfg["min_lightness"])
    dull = vivid & (chroma < cfg["skin_max_chroma"])  # skin and wood are orange and dull: look at their hue
    if dull.any():
        hue = np.degrees(np.arctan2(b[dull], a[dull])) % 360.0
        lo, hi = cfg["skin_hue_deg"]
        skin = (hue >= lo) & (hue <= hi)
        idx = np.nonzero(dull)
        vivid[idx[0][skin], idx[1][skin]] = False
    return vivid


def _kernel(mm: float, ppm: float) -> np.ndarray:
    k = max(1, int(round(mm * ppm)))
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))


def find_fallen_blocks(cfg: Mapping, tray: Tray, reg: Registration, image: np.ndarray, tray_bgr: np.ndarray,
                       background=None, gains: np.ndarray | None = None,
                       z_top_mm: float | None = None) -> tuple[FallenBlock, ...]:
    """Blocks lying outside the tower's footprint with no hand on them, in this frame.

    `tray`, `reg`, `tray_bgr` (and optionally the learnt tray `background` with the pipeline's colour
    `gains`) are the vision pipeline's; `z_top_mm` is the height of the tower's top (the referee's map
    knows it; default `default_top_mm`)."""
    if image is None or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError("the camera frame is not a colour image")
    ppm = cfg["px_per_mm"]
    plane = _plane(cfg, tray, reg, image.shape)
    warp = cv2.warpPerspective(image, reg.H @ plane.A, plane.size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))
    colour = block_color_mask(cfg, warp, tray_bgr).astype(np.uint8)
    colour = cv2.morphologyEx(colour, cv2.MORPH_CLOSE, _kernel(cfg["close_mm"], ppm))
    colour = cv2.morphologyEx(colour, cv2.MORPH_OPEN, _kernel(cfg["open_mm"], ppm)) > 0
    tower = tower_mask(cfg, tray, reg, plane, cfg["default_top_mm"] if z_top_mm is None else z_top_mm)
    markers = _marker_mask(cfg, tray, plane)  # black-and-white squares fringe with colour in a JPEG
    candidates = colour & ~tower & plane.seen & ~markers
    n, labels, stats, _ = cv2.connectedComponentsWithStats(candidates.astype(np.uint8), connectivity=8)
    if n <= 1:
        return ()
    near = _kernel(cfg["touch_mm"], ppm)
    by_tower = cv2.dilate(tower.astype(np.uint8), near) > 0
    by_foot = cv2.dilate(tower_mask(cfg, tray, reg, plane, 0.0).astype(np.uint8), near) > 0  # the tower's own base
    by_edge = cv2.dilate((~plane.seen).astype(np.uint8), near) > 0
    gap_k = _kernel(2 * cfg["hand_ring_gap_mm"], ppm)
    ring_k = _kernel(2 * (cfg["hand_ring_gap_mm"] + cfg["hand_ring_mm"]), ppm)
    table_bgr = _table_colour(cfg, tray, plane, warp)
    found = []
    for i in range(1, n):
        area_mm2 = stats[i, cv2.CC_STAT_AREA] / ppm ** 2
        if not cfg["min_partial_area_mm2"] <= area_mm2 <= cfg["max_area_mm2"]:
            continue
        x, y, w, h = stats[i, :4]
        pad = int(np.ceil(2 * (cfg["hand_ring_gap_mm"] + cfg["hand_ring_mm"]) * ppm)) + 2
        ys, xs = slice(max(0, y - pad), y + h + pad), slice(max(0, x - pad), x + w + pad)
        blob = labels[ys, xs] == i
        whole = not (blob & by_edge[ys, xs]).any()
        pts = np.column_stack(np.nonzero(blob)[::-1]).astype(np.float32)
        (_, _), (rw, rh), _ = cv2.minAreaRect(pts)
        long_mm, short_mm = max(rw, rh) / ppm, min(rw, rh) / ppm
        beside = False
        if (blob & by_tower[ys, xs]).any():
            hull_mm2 = float(cv2.contourArea(cv2.convexHull(pts))) / ppm ** 2  # (its white oval inside)
            beside = whole and not (blob & by_foot[ys, xs]).any() and _lies_whole(cfg, tray, long_mm, short_mm, hull_mm2)
            if not beside:
                continue  # against the tower: a block being pulled, or the tower leaning - not judged here
        if not (long_mm <= cfg["max_long_mm"] and cfg["min_short_mm"] <= short_mm <= cfg["max_short_mm"]):
            continue
        if whole and (long_mm < cfg["min_long_mm"] or area_mm2 < cfg["min_area_mm2"] or long_mm < cfg["min_aspect"] * short_mm):
            continue  # (only part of a block cut by the picture's edge may be smaller, or squarer)
        body = np.zeros(blob.shape, np.uint8)  # the block's outline, with its white oval and glyph
        cv2.fillConvexPoly(body, cv2.convexHull(pts.astype(np.int32)), 1)
        body = body > 0
        near_body = cv2.dilate(body.astype(np.uint8), gap_k) > 0
        ring = (cv2.dilate(body.astype(np.uint8), ring_k) > 0) & ~near_body & plane.seen[ys, xs] & ~markers[ys, xs] & ~colour[ys, xs]
        ry, rx = np.nonzero(ring)
        if len(ry) == 0:
            continue
        ring_px = np.column_stack([rx + xs.start, ry + ys.start]).astype(np.float64)
        hand = float(_not_background(cfg, tray, reg, plane, warp, ring_px, tray_bgr, table_bgr, background, gains).mean())
        if hand > cfg["max_hand_fraction"]:
            continue  # a hand holds it
        if not beside and _joined_to_tower(cfg, tray, reg, plane, warp, labels == i, tower, colour | markers, tray_bgr,
                                           table_bgr, background, gains):
            continue  # joined to it by what is not bare tray: a pulled block's end beyond its white oval
        cyx = np.nonzero(blob)
        c_mm = apply_h(plane.A, np.array([[xs.start + cyx[1].mean(), ys.start + cyx[0].mean()]]))[0]
        fill = area_mm2 / max(long_mm * short_mm, 1.0)
        conf = float(np.clip(min(fill, 1.0) * (1.0 - 0.5 * hand / max(cfg["max_hand_fraction"], 1e-6)), 0.0, 1.0))
        found.append(FallenBlock((round(float(c_mm[0]), 1), round(float(c_mm[1]), 1)),
                                 (round(long_mm, 1), round(short_mm, 1)), round(conf * (1.0 if whole else cfg["partial_confidence"]), 3), whole))
    return tuple(found)


def _lies_whole(cfg: Mapping, tray: Tray, long_mm: float, short_mm: float, hull_mm2: float) -> bool:
    """Whether a blob is one whole block lying on the tray, as the tray plane shows it: a block's
    length and its width or height within `lying_tolerance` (relative), its convex hull filling
    `lying_fill` of its rectangle (0 tolerance: never).

    A tall tower's top, seen from above, covers the tray round its foot, so the tower's mask (the
    footprint seen at the tray and at the top) reaches well beyond the foot, and a block that slid
    off the top and lay beside the foot touched it and was passed over (twin run 911-005: a blue 4
    off a 17-level top, 77 x 26 mm, lying 10 mm from the mask's edge). On the tray plane a block
    lying on the tray shows its own size; anything of the tower seen there lies higher, so shows
    larger (the top of that tower 1.9 times), and a block being pulled out of a level near the
    foot touches the foot itself, which stays not judged."""
    tol = float(cfg.get("lying_tolerance", LYING_TOLERANCE))
    if tol <= 0:
        return False
    L, W, H = (float(v) for v in tray.block_mm)
    lo, hi = 1.0 - tol, 1.0 + tol
    return (lo * L <= long_mm <= hi * L and lo * min(W, H) <= short_mm <= hi * max(W, H)
            and hull_mm2 >= float(cfg.get("lying_fill", LYING_FILL)) * long_mm * short_mm)


def _joined_to_tower(cfg: Mapping, tray: Tray, reg: Registration, plane: _Plane, warp: np.ndarray, blob: np.ndarray,
                     tower: np.ndarray, coloured: np.ndarray, tray_bgr: np.ndarray, table_bgr: np.ndarray | None,
                     background, gains) -> bool:
    """Whether the blob (a full-size mask) reaches the tower through pixels that are not bare tray or
    table (`_not_background`) within `bridge_mm` of it (0: never).

    A block being pulled out of a level's middle sticks out of the tower end first: beyond the
    tower's mask its white oval shows, then the block's painted end. The paint alone is a blob a
    few mm off the tower, the size of part of a block; after the pull's jolt, with the sensors' lift
    not yet reported, it was called a collapse (twin run 901-001: a green 3 at 2.5 s, 0.64 sure,
    its end 29 mm out). A block that fell lies on bare tray all round unless it lies against the
    tower, which is not judged either."""
    bridge = float(cfg.get("bridge_mm", BRIDGE_MM)) * cfg["px_per_mm"]
    if bridge <= 0:
        return False
    ys, xs = np.nonzero(blob)
    H, W = blob.shape
    y0, y1 = max(0, int(ys.min() - bridge)), min(H, int(ys.max() + bridge) + 1)
    x0, x1 = max(0, int(xs.min() - bridge)), min(W, int(xs.max() + bridge) + 1)
    win_tower = tower[y0:y1, x0:x1]
    if not win_tower.any():
        return False
    gy, gx = np.mgrid[y0:y1, x0:x1]
    px = np.column_stack([gx.ravel(), gy.ravel()]).astype(np.float64)
    other = _not_background(cfg, tray, reg, plane, warp, px, tray_bgr, table_bgr, background, gains).reshape(gy.shape)
    joined = ((other | coloured[y0:y1, x0:x1] | blob[y0:y1, x0:x1]) & plane.seen[y0:y1, x0:x1]) | win_tower
    _, lab = cv2.connectedComponents(joined.astype(np.uint8), connectivity=8)
    mine = np.unique(lab[blob[y0:y1, x0:x1] & joined])
    return bool(np.isin(lab[win_tower], mine[mine > 0]).any())


def fallen_blocks_in_frame(cfg: Mapping, pipeline, image: np.ndarray, z_top_mm: float | None = None) -> tuple[FallenBlock, ...]:
    """The same, from a frame alone with vision's pipeline (`vision.reader.Pipeline`): registers the
    tray (raises `vision.tray.TrayNotFound` with a message for players) and measures its colour. A
    caller that has already registered the frame (the top reading does) calls `find_fallen_blocks`."""
    from vision.top_level import color_gains, tray_color
    from vision.tray import register

    if image is None or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError("the camera frame is not a colour image")
    from vision.reader import straighten

    p = pipeline
    image = straighten(p, image)  # through the camera's lens, as the reader sees frames
    reg = register(p.cfg, p.tray, cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), p.detector)
    tray_bgr = tray_color(p.cfg, p.tray, reg, image)
    return find_fallen_blocks(cfg, p.tray, reg, image, tray_bgr, p.background, color_gains(p.cfg, tray_bgr), z_top_mm)


def _table_colour(cfg: Mapping, tray: Tray, plane: _Plane, warp: np.ndarray) -> np.ndarray | None:
    """The table's colour: the median of a band round the tray (None if the camera sees too little of it)."""
    x0, y0, x1, y1 = tray.extent()
    d = cfg["table_band_mm"]
    outer = np.zeros(plane.size[::-1], np.uint8)
    box = _to_warp(plane, np.array([[x0 - d, y0 - d], [x1 + d, y0 - d], [x1 + d, y1 + d], [x0 - d, y1 + d]]))
    cv2.fillConvexPoly(outer, np.rint(box).astype(np.int32), 1)
    zone = (outer > 0) & ~_tray_mask(tray, plane) & plane.seen
    if zone.sum() < 20:
        return None
    return np.median(warp[zone].astype(np.float32), axis=0)


def _not_background(cfg: Mapping, tray: Tray, reg: Registration, plane: _Plane, warp: np.ndarray, px: np.ndarray,
                    tray_bgr: np.ndarray, table_bgr: np.ndarray | None, background, gains) -> np.ndarray:
    """For warp pixels `px` (N, 2): neither bare tray (on the tray) nor bare table (beyond it) - a hand.

    Uses vision's own test (top_level.foreground: chromaticity or brightness differs; a shadow only
    darkens) against the learnt tray model if there is one, else the tray's colour; beyond the tray,
    against the table's colour too."""
    th = cfg["background"]
    if background is not None:
        uv_img = apply_h(reg.H @ plane.A, px)
        ref = expected_tray(background, reg, uv_img, tray_bgr, gains if gains is not None else np.ones(3, np.float32))
    else:
        ref = np.asarray(tray_bgr, np.float32)
    not_tray = foreground(th, warp, ref, px)
    if table_bgr is None:
        return not_tray
    x0, y0, x1, y1 = tray.extent()
    mm = apply_h(plane.A, px)
    on_tray = (mm[:, 0] >= x0) & (mm[:, 0] <= x1) & (mm[:, 1] >= y0) & (mm[:, 1] <= y1)
    return not_tray & (on_tray | foreground(th, warp, table_bgr, px))
