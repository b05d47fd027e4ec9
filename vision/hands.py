"""Hands over the tower: count the arms that cross a ring around the tower's footprint.

Each hand reaches in from outside, so every hand near the tower crosses a square ring drawn a
little outside the counting zone (footprint + one block length), at about hand height. Runs of
non-tray pixels along the ring are arms; an arm counts when it also reaches the zone's edge;
a run as wide as two arms is two overlapping hands. Skin of any tone differs from the tray in
chromaticity or brightness (a shadow only darkens the tray, it keeps its chromaticity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from referee.observations import HandReading
from vision.geometry import apply_h
from vision.kit import Tray
from vision.top_level import expected_tray, foreground
from vision.tray import Registration

SIDES = ("east", "north", "west", "south")


def _square_ring(tray: Tray, dist: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Points (N,2) round the square at `dist` mm outside the footprint, and their arc length."""
    cx, cy = tray.tower_center
    h = tray.footprint_half + dist
    corners = np.array([[cx + h, cy - h], [cx + h, cy + h], [cx - h, cy + h], [cx - h, cy - h], [cx + h, cy - h]])
    pts, arc = [], []
    s0 = 0.0
    for a, b in zip(corners[:-1], corners[1:]):
        n = max(2, int(np.linalg.norm(b - a) / step))
        t = np.arange(n) / n
        pts.append(a + np.outer(t, b - a))
        arc.append(s0 + t * np.linalg.norm(b - a))
        s0 += float(np.linalg.norm(b - a))
    return np.concatenate(pts), np.concatenate(arc)


def _ring_validity(tray: Tray, reg: Registration, pts: np.ndarray, z: float, img_shape, markers: bool = True) -> np.ndarray:
    """Which ring samples have bare tray behind them (inside the image, on the tray, off the markers)?"""
    uv = reg.to_image(pts, z)
    h, w = img_shape[:2]
    ok = (uv[:, 0] >= 0) & (uv[:, 1] >= 0) & (uv[:, 0] < w) & (uv[:, 1] < h)
    ground = apply_h(np.linalg.inv(reg.H), uv)
    x0, y0, x1, y1 = tray.extent()
    ok &= (ground[:, 0] > x0) & (ground[:, 0] < x1) & (ground[:, 1] > y0) & (ground[:, 1] < y1)
    for c in (tray.markers.values() if markers else ()):
        lo, hi = c.min(axis=0) - 4, c.max(axis=0) + 4
        ok &= ~np.all((ground >= lo) & (ground <= hi), axis=1)
    return ok


def _fill_unknown(fg: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Give each unknown sample the value of the nearest known one round the ring."""
    if valid.all() or not valid.any():
        return fg & valid
    n = len(fg)
    idx = np.nonzero(valid)[0]
    pos = np.arange(n)
    # circular nearest known index: search sorted known positions, compare both neighbours
    ext = np.concatenate([idx - n, idx, idx + n])
    j = np.clip(np.searchsorted(ext, pos), 1, len(ext) - 1)
    left, right = ext[j - 1], ext[j]
    near = np.where(pos - left <= right - pos, left, right) % n
    return fg[near]


@dataclass(frozen=True)
class Ring:
    pts: np.ndarray      # (N, 2) tray mm
    arc: np.ndarray      # (N,) mm along the ring
    fg: np.ndarray       # (N,) arm (not tray) at each sample, unknowns filled
    valid: np.ndarray    # (N,) bare tray behind the sample
    dist: float          # mm outside the footprint
    z: float             # plane height


def hand_ring(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
              bg=None, gains: np.ndarray | None = None) -> Ring:
    """The ring round the tower at hand height, shrunk until bare tray lies behind most of it."""
    hc = cfg["hands"]
    z = z_top + float(hc["plane_above_top_mm"])
    step = float(hc["ring_step_mm"])
    dist = float(hc["zone_mm"]) + float(hc["ring_margin_mm"])
    need = float(hc["ring_valid_fraction"])
    # the largest ring (5 mm steps) with bare tray behind enough of it, checked in one go
    rings = [(d, *_square_ring(tray, d, step * 2)) for d in np.arange(dist, float(hc["min_ring_mm"]) - 1e-6, -5.0)]
    valid_all = _ring_validity(tray, reg, np.concatenate([r[1] for r in rings]), z, img.shape)
    k = 0
    for d, p, _ in rings:
        if valid_all[k:k + len(p)].mean() >= need:
            dist = float(d)
            break
        k += len(p)
    else:
        dist = float(rings[-1][0])
    pts, arc = _square_ring(tray, dist, step)
    valid = _ring_validity(tray, reg, pts, z, img.shape)
    g = gains if gains is not None else np.ones(3, np.float32)
    uv = reg.to_image(pts, z)
    fg = foreground(hc, img, expected_tray(bg, reg, uv, tray_bgr, g), uv)
    # (markers stay excluded even with a background model: a few px of misregistration on
    # black-and-white squares look like arms)
    return Ring(pts, arc, _fill_unknown(fg, valid), valid, dist, z)


def find_hands(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
               bg=None, gains: np.ndarray | None = None) -> tuple[HandReading, ...]:
    hc = cfg["hands"]
    ring = hand_ring(cfg, tray, reg, img, tray_bgr, z_top, bg, gains)
    pts, arc, dist, z = ring.pts, ring.arc, ring.dist, ring.z
    step = float(hc["ring_step_mm"])
    inner_d = min(float(hc["zone_mm"]), dist - 8.0)
    runs = _runs(ring.fg, arc, float(hc["merge_gap_mm"]), arc[-1] + step)
    cx, cy = tray.tower_center
    hands: list[HandReading] = []
    for a, b, n in runs:
        width = (b - a)
        if width < float(hc["min_run_mm"]):
            continue
        mid = (a + b) / 2.0
        i_mid = int(np.argmin(np.abs(arc - (mid % arc[-1]))))
        p = pts[i_mid]
        # does this arm reach the zone? probe from the ring inwards to the zone's edge
        d = p - np.array([cx, cy])
        u = d / (np.abs(d).max() + 1e-9)
        probe_r = tray.footprint_half + np.linspace(inner_d, dist, 5)
        probes = np.array([cx, cy]) + np.outer(probe_r, u)
        puv = reg.to_image(probes, z)
        reach = foreground(hc, img, expected_tray(bg, reg, puv, tray_bgr, gains if gains is not None else np.ones(3, np.float32)), puv)
        if not reach[0] and not reach[1]:
            continue
        side = _side(d)
        count = 2 if width >= float(hc["two_arm_width_mm"]) else 1
        tip = tuple(float(v) for v in (np.array([cx, cy]) + u * (tray.footprint_half + inner_d)))
        conf = float(min(1.0, width / (2 * float(hc["min_run_mm"]))))
        for _ in range(count):
            hands.append(HandReading(side=side, tip_mm=tip, confidence=conf))
    return tuple(hands)


def _side(d: np.ndarray) -> str:
    if abs(d[0]) >= abs(d[1]):
        return "east" if d[0] > 0 else "west"
    return "north" if d[1] > 0 else "south"


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
