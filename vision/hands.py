"""Hands over the tower: arms that come in over the tray's edge and reach the counting zone.

A hand near the tower always belongs to an arm that crosses the edge of the visible tray (a player
sits round the table, half a metre away). So the tray around the tower is rectified at hand
height onto a small grid (a few mm a cell), every cell compared with the bare tray behind it
(colour and brightness; a shadow only darkens the tray and keeps its chromaticity), the tower's
own silhouette and the markers masked out, and the non-tray cells split into connected blobs.
Each place where a blob meets the tray's edge is an arm coming in; its direction (from where it
enters towards the hand) extended out to the seats gives `entry_deg`, and the part of the blob on
that arm's line says whether the hand reaches within one block length of the footprint (or onto
the tower). An arm twice as wide as one arm is two hands side by side.

The fingertip's side is no evidence of the seat (players reach round the tower); the arm's entry
direction is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import cv2
import numpy as np

from referee.observations import HandReading
from vision.geometry import apply_h
from vision.kit import Tray
from vision.tray import Registration

SIDES = ("east", "north", "west", "south")
_K3 = np.ones((3, 3), np.uint8)


@dataclass(frozen=True)
class HandMask:
    """The tray on a grid of cells (row 0 north, column 0 west), as the camera sees it."""

    fg: np.ndarray        # (n, n) bool: not bare tray seen through the cell (and neither tower nor marker)
    known: np.ndarray     # (n, n) bool: bare tray lies behind the cell, so fg means something
    tower: np.ndarray     # (n, n) bool: the tower's silhouette covers the cell
    outside: np.ndarray   # (n, n) bool: beyond the tray sheet or the image: where arms come from
    xy: np.ndarray        # (n, n, 2) where what covers the cell would be at hand height (tray mm)
    z: float              # hand plane height (mm above the tray)
    cell_mm: float


@dataclass(frozen=True)
class Ring:
    """Cells for the overlay: where the grid meets the tray's edge, and the counting zone's edge."""

    pts: np.ndarray      # (N, 2) tray mm
    fg: np.ndarray       # (N,) arm (not tray)
    valid: np.ndarray    # (N,) bare tray behind the cell
    z: float             # plane height


@dataclass(frozen=True)
class ArmEntry:
    """One arm (or two side by side) where it comes in over the tray's edge."""

    entry_mm: tuple[float, float]    # where it crosses the edge, tray mm on the hand plane
    direction: tuple[float, float]   # unit vector from the hand out towards the player
    width_mm: float                  # across the arm
    reach_mm: float                  # nearest approach to the footprint (Chebyshev, mm outside it)
    on_tower: bool                   # the blob touches the tower's silhouette
    tip_mm: tuple[float, float]
    entry_deg: float


def hand_plane_z(cfg: Mapping, z_top: float) -> float:
    return float(z_top) + float(cfg["hands"]["plane_above_top_mm"])


def hand_mask(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
              bg=None, gains: np.ndarray | None = None) -> HandMask:
    """Rectify the tray onto a grid and mark the cells where the camera sees something else."""
    hc = cfg["hands"]
    g = float(hc["cell_mm"])
    cx, cy = tray.tower_center
    x0, y0, x1, y1 = tray.extent()
    margin = float(hc["tray_margin_mm"])
    half = max(abs(x0 - cx), abs(x1 - cx), abs(y0 - cy), abs(y1 - cy)) + margin + 2 * g
    n = int(math.ceil(2 * half / g))
    A = np.array([[g, 0, cx - half + g / 2], [0, -g, cy + half - g / 2], [0, 0, 1]])  # cell -> tray mm
    z = hand_plane_z(cfg, z_top)
    M = reg.H @ A  # cell (on the tray plane) -> image px
    M = M / M[2, 2]
    h, w = img.shape[:2]
    warped = cv2.warpPerspective(img, M, (n, n), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                 borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
    jj, ii = np.meshgrid(np.arange(n, dtype=np.float64), np.arange(n, dtype=np.float64))
    cells = np.stack([jj.ravel(), ii.ravel()], axis=1)
    uv = apply_h(M, cells)
    in_img = ((uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)).reshape(n, n)
    ground = apply_h(A, cells).reshape(n, n, 2)
    on_sheet = ((ground[..., 0] > x0 - margin) & (ground[..., 0] < x1 + margin)
                & (ground[..., 1] > y0 - margin) & (ground[..., 1] < y1 + margin))
    outside = ~(on_sheet & in_img)
    marker = np.zeros((n, n), bool)
    pad = float(hc["marker_pad_mm"])
    for c in tray.markers.values():
        lo, hi = c.min(axis=0) - pad, c.max(axis=0) + pad
        marker |= (ground[..., 0] >= lo[0]) & (ground[..., 0] <= hi[0]) & (ground[..., 1] >= lo[1]) & (ground[..., 1] <= hi[1])
    # where something seen against a tray cell would be if it were at hand height
    Hz_inv = np.linalg.inv(reg.camera.plane_homography(z))
    xy = apply_h(Hz_inv @ M, cells).reshape(n, n, 2)
    G = A
    gains = gains if gains is not None else np.ones(3, np.float32)
    if bg is not None:  # the learnt tray surface behind every cell, in this frame's light
        B = np.array([[bg.ppm, 0, -bg.x0 * bg.ppm], [0, -bg.ppm, bg.y1 * bg.ppm], [0, 0, 1]]) @ G
        exp = cv2.warpPerspective(bg.bgr, B / B[2, 2], (n, n), flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                                  borderMode=cv2.BORDER_CONSTANT, borderValue=(np.nan, np.nan, np.nan))
        exp /= np.asarray(gains, np.float32)
        missing = ~np.isfinite(exp).all(axis=-1)
        exp[missing] = np.asarray(tray_bgr, np.float32)
    else:
        exp = np.broadcast_to(np.asarray(tray_bgr, np.float32), (n, n, 3))
    tower = _tower_cells(hc, tray, reg, M, z_top, n)
    known = ~outside & ~marker & ~tower
    fg = _not_tray(hc, warped, exp, known, ground) & known
    k = int(hc["open_cells"])
    if k > 1:
        fg = cv2.morphologyEx(fg.astype(np.uint8), cv2.MORPH_OPEN, np.ones((k, k), np.uint8)).astype(bool)
    return HandMask(fg, known, tower, outside, xy, z, g)


def colour_change(px: np.ndarray, ref: np.ndarray, known: np.ndarray, xy: np.ndarray, trim: float,
                  rounds: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(chroma, shift) of each cell against the bare tray behind it, room light taken out.

    Log colour difference per channel, minus a plane across the tray fitted to the known cells
    (robustly: most of the tray is bare): that removes a light gradient and a colour cast the
    global gains missed. What remains: `shift`, the mean log brightness change (a shadow makes it
    negative, keeping the colour), and `chroma`, the mean absolute change of colour."""
    d = np.log(px + 4.0) - np.log(ref + 4.0)
    sel = known.ravel()
    D = d.reshape(-1, 3)
    X = np.column_stack([np.ones(len(D)), (xy.reshape(-1, 2) - xy.reshape(-1, 2).mean(axis=0)) / 100.0])
    if sel.sum() >= 30:
        coef = np.zeros((3, 3))
        coef[0] = np.median(D[sel], axis=0)
        for _ in range(rounds):
            res = D - X @ coef
            inl = sel & (np.abs(res).max(axis=1) < trim)
            if inl.sum() < 30:
                break
            coef = np.linalg.lstsq(X[inl], D[inl], rcond=None)[0]
        d = (D - X @ coef).reshape(d.shape)
    shift = d.mean(axis=-1)
    return np.abs(d - shift[..., None]).mean(axis=-1), shift


def _not_tray(hc: Mapping, px: np.ndarray, ref: np.ndarray, known: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Cells whose colour is not the tray's behind them.

    In log colour a shadow (or dimmer light) shifts all three channels alike, so what is left
    after removing the mean shift is the colour change: skin, sleeves, blocks. Very light skin
    on pale wood is brighter and less yellow; dark skin much darker than any shadow. Skin the
    colour of the tray in its own shadow is the case this cannot tell apart."""
    chroma, shift = colour_change(px, ref, known, xy, float(hc["fit_trim"]))
    # in a shadow the light's colour changes too (the lamp is gone, the room's light stays):
    # a darker cell needs a larger colour change to count
    need = np.where(shift < math.log(float(hc["shadow_below"])), float(hc["shadow_chroma"]), float(hc["chroma"]))
    return (chroma > need) | (shift < math.log(float(hc["dark"]))) | (shift > math.log(float(hc["bright"])))


def _tower_cells(hc: Mapping, tray: Tray, reg: Registration, M: np.ndarray, z_top: float, n: int) -> np.ndarray:
    """Cells through which the camera sees the tower (its whole box, floor to top face)."""
    cx, cy = tray.tower_center
    r = tray.footprint_half + float(hc["tower_pad_mm"])
    sq = np.array([[cx - r, cy - r], [cx + r, cy - r], [cx + r, cy + r], [cx - r, cy + r]])
    uv = np.concatenate([reg.to_image(sq, 0.0), reg.to_image(sq, max(0.0, float(z_top)))])
    cells = apply_h(np.linalg.inv(M), uv)
    hull = cv2.convexHull(np.round(cells * 16).astype(np.int32))
    mask = np.zeros((n, n), np.uint8)
    cv2.fillConvexPoly(mask, hull, 1, cv2.LINE_8, 4)
    return mask.astype(bool)


def arm_entries(cfg: Mapping, tray: Tray, m: HandMask) -> list[ArmEntry]:
    """Every arm that comes in over the tray's edge, with how far in its hand reaches."""
    hc = cfg["hands"]
    g = m.cell_mm
    cx, cy = tray.tower_center
    c = np.array([cx, cy])
    fg8 = m.fg.astype(np.uint8)
    ncomp, lab, stats, _ = cv2.connectedComponentsWithStats(fg8, connectivity=8)
    # the band of known cells next to where arms come from (off the sheet, or a marker they cover)
    unknown = (~m.known & ~m.tower).astype(np.uint8)
    edge = cv2.dilate(unknown, _K3, iterations=int(hc["edge_cells"])).astype(bool) & m.known
    near_tower = cv2.dilate(m.tower.astype(np.uint8), _K3, iterations=2).astype(bool)
    cheb = np.abs(m.xy - c).max(axis=-1) - tray.footprint_half
    min_area = float(hc["min_area_mm2"]) / (g * g)
    out: list[ArmEntry] = []
    for k in range(1, ncomp):
        if stats[k, cv2.CC_STAT_AREA] < min_area:
            continue
        comp = lab == k
        ent = comp & edge
        if not ent.any():
            continue  # not connected to an arm from outside (tower sides, stray blocks, noise)
        # separate entries: pieces of the edge band this blob touches, small gaps bridged
        nrun, rl = cv2.connectedComponents(cv2.dilate(ent.astype(np.uint8), _K3, iterations=int(hc["merge_gap_cells"])),
                                           connectivity=8)
        rl = np.where(ent, rl, 0)
        pts = m.xy[comp]
        runs = []
        for r in range(1, nrun):
            e = m.xy[rl == r]
            if len(e) * g < float(hc["min_entry_mm"]):
                continue
            runs.append(e)
        runs = _merge_close(runs, float(hc["same_arm_mm"]))
        if not runs:
            continue
        lines = []
        for e in runs:
            E = e.mean(axis=0)
            near = pts[np.linalg.norm(pts - E, axis=1) < float(hc["direction_mm"])]
            d = E - near.mean(axis=0)
            if np.linalg.norm(d) < float(hc["direction_min_mm"]):
                d = E - c  # too little arm in view to say which way it points: towards the tower
            u = d / (np.linalg.norm(d) + 1e-9)
            lines.append((E, u, e))
        # each blob cell belongs to the arm whose line passes nearest
        dist = np.stack([np.abs((pts - E) @ np.array([-u[1], u[0]])) + np.maximum(0, (pts - E) @ u)
                         for E, u, _ in lines])
        owner = dist.argmin(axis=0)
        cheb_c, tower_c = cheb[comp], near_tower[comp]
        for j, (E, u, e) in enumerate(lines):
            mine = owner == j
            perp = np.array([-u[1], u[0]])
            across = (e - E) @ perp
            width = float(across.max() - across.min() + g)
            reach = float(cheb_c[mine].min())
            ti = np.argmin(cheb_c[mine])
            tip = pts[mine][ti]
            out.append(ArmEntry((float(E[0]), float(E[1])), (float(u[0]), float(u[1])), width, reach,
                                bool(tower_c[mine].any()), (float(tip[0]), float(tip[1])),
                                _entry_deg(E - c, u, float(hc["seat_radius_mm"]))))
    return out


def _merge_close(runs: list[np.ndarray], gap_mm: float) -> list[np.ndarray]:
    """Join entries closer than `gap_mm`: one arm whose edge crossing a marker or a gap split."""
    runs = list(runs)
    merged = True
    while merged and len(runs) > 1:
        merged = False
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                dmin = np.sqrt(((runs[i][:, None, :] - runs[j][None, :, :]) ** 2).sum(-1)).min()
                if dmin < gap_mm:
                    runs[i] = np.concatenate([runs[i], runs.pop(j)])
                    merged = True
                    break
            if merged:
                break
    return runs


def _entry_deg(e: np.ndarray, u: np.ndarray, radius: float) -> float:
    """Angle (degrees from +x) from the tower to where the arm's line reaches the seats' circle."""
    b = float(e @ u)
    cc = float(e @ e) - radius * radius
    t = -b + math.sqrt(max(0.0, b * b - cc))
    p = e + max(0.0, t) * u
    return math.degrees(math.atan2(p[1], p[0])) % 360.0


def find_hands(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
               bg=None, gains: np.ndarray | None = None) -> tuple[HandReading, ...]:
    """The hands within one block length of the tower's footprint, each with where its arm comes from."""
    hc = cfg["hands"]
    m = hand_mask(cfg, tray, reg, img, tray_bgr, z_top, bg, gains)
    hands: list[HandReading] = []
    for a in arm_entries(cfg, tray, m):
        if not (a.on_tower or a.reach_mm <= float(hc["reach_mm"])):
            continue
        count = 2 if a.width_mm >= float(hc["two_arm_width_mm"]) else 1
        conf = float(min(1.0, a.width_mm / float(hc["two_arm_width_mm"]) * 2)) if count == 1 else 0.6
        side = side_of(a.entry_deg)
        for _ in range(count):
            hands.append(HandReading(side=side, tip_mm=a.tip_mm, confidence=round(conf, 3), entry_deg=round(a.entry_deg, 1)))
    return tuple(hands)


def side_of(deg: float) -> str:
    """The tray side (east +x, north +y, west, south) in the direction `deg` from the tower."""
    return SIDES[int(((deg + 45.0) % 360.0) // 90.0)]


def hand_ring(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
              bg=None, gains: np.ndarray | None = None) -> Ring:
    """For the overlay: the grid's cells at the tray's edge and on the counting zone's edge."""
    m = hand_mask(cfg, tray, reg, img, tray_bgr, z_top, bg, gains)
    cx, cy = tray.tower_center
    cheb = np.abs(m.xy - np.array([cx, cy])).max(axis=-1) - tray.footprint_half
    unknown = (~m.known & ~m.tower).astype(np.uint8)
    edge = cv2.dilate(unknown, _K3).astype(bool) & m.known
    zone = np.abs(cheb - float(cfg["hands"]["reach_mm"])) < m.cell_mm / 2
    sel = edge | zone
    return Ring(m.xy[sel], m.fg[sel], m.known[sel], m.z)


def _runs(fg: np.ndarray, arc: np.ndarray, gap: float, perimeter: float) -> list[tuple[float, float, int]]:
    """Runs of True along a closed ring as (start, end, samples), small gaps bridged, wrap-around joined."""
    idx = np.nonzero(fg)[0]
    if len(idx) == 0:
        return []
    if len(idx) == len(fg):
        return [(0.0, perimeter, len(fg))]
    runs = []
    start = prev = idx[0]
    for i in idx[1:]:
        if arc[i] - arc[prev] > gap + 1e-9:
            runs.append([arc[start], arc[prev], prev - start + 1])
            start = i
        prev = i
    runs.append([arc[start], arc[prev], prev - start + 1])
    if len(runs) > 1 and (perimeter - runs[-1][1]) + runs[0][0] <= gap + 1e-9:
        last = runs.pop()
        runs[0] = [last[0] - perimeter, runs[0][1], runs[0][2] + last[2]]
    return [(float(a), float(b), int(n)) for a, b, n in runs]
