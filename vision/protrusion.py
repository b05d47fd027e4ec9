"""Which of the map's places a pulled block came from, seen where it sticks out of the tower.

From overhead the camera cannot see a block's level, so when the map holds the placed block twice
the referee would have to ask. But while a block is pushed or pinched out it sticks out of the
tower's side at its slot's offset and at its level's height: two places of the same block stick
out in different places of the image (another side, another offset, or, for the same slot of
another level, another perspective scale). Each stage is a pure function of (config, image);
thresholds live in vision/protrusion.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import cv2
import numpy as np

from vision.kit import Tray
from vision.tray import Registration

DEFAULT_CONFIG = Path(__file__).with_name("protrusion.json")


def load_config(path: str | Path | None = None) -> dict:
    return json.loads(Path(path or DEFAULT_CONFIG).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PlaceScore:
    """How much of the block's colour showed where a block at `place` would stick out."""

    place: tuple[int, int]  # (level, slot)
    score: float            # best fraction of visible samples in the block's colour, over the frames
    visible: int            # samples not hidden behind the tower in the frame that scored best


def _slot_axis(tray: Tray, level: int, slot: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The slot's centre (x, y), its long axis (unit), and its cross offset direction."""
    cx, cy = tray.tower_center
    w = float(tray.block_mm[1])
    if level % 2 == 1:  # odd levels lie along x, slots by increasing y
        return np.array([cx, cy + (slot - 1) * w]), np.array([1.0, 0.0]), 0.0
    return np.array([cx + (slot - 1) * w, cy]), np.array([0.0, 1.0]), 0.0


def stick_out_points(cfg: Mapping, tray: Tray, level: int, slot: int) -> np.ndarray:
    """(N, 2) tray-mm points beyond both ends of the slot, where its block shows while it comes out."""
    centre, axis, _ = _slot_axis(tray, level, slot)
    half_len = float(tray.block_mm[0]) / 2.0
    half_w = float(tray.block_mm[1]) / 2.0 * float(cfg["width_fraction"])
    out = np.arange(float(cfg["from_mm"]), float(cfg["to_mm"]) + 1e-9, float(cfg["step_mm"]))
    across = np.linspace(-half_w, half_w, int(cfg["across_samples"]))
    normal = np.array([-axis[1], axis[0]])
    pts = []
    for sign in (1.0, -1.0):
        for d in out:
            for a in across:
                pts.append(centre + axis * sign * (half_len + d) + normal * a)
    return np.array(pts)


def tower_silhouette(tray: Tray, reg: Registration, z_low: float, z_top: float) -> np.ndarray:
    """The image polygon the tower covers between two heights (its footprint's corners at both)."""
    cx, cy = tray.tower_center
    h = tray.footprint_half
    corners = np.array([[cx - h, cy - h], [cx + h, cy - h], [cx + h, cy + h], [cx - h, cy + h]])
    uv = np.vstack([reg.to_image(corners, z_low), reg.to_image(corners, z_top)]).astype(np.float32)
    return cv2.convexHull(uv)


def block_chroma(cfg: Mapping, image: np.ndarray, reg: Registration, tray: Tray, level: int, slot: int) -> np.ndarray | None:
    """The (a, b) colour of the block lying at (level, slot), from its top face (glyph's white left out)."""
    centre, axis, _ = _slot_axis(tray, level, slot)
    normal = np.array([-axis[1], axis[0]])
    half_len, half_w = float(tray.block_mm[0]) / 2.0 * 0.8, float(tray.block_mm[1]) / 2.0 * 0.6
    grid = [centre + axis * u + normal * v for u in np.linspace(-half_len, half_len, 9) for v in np.linspace(-half_w, half_w, 3)]
    lab = _lab_at(image, reg.to_image(np.array(grid), level * float(tray.block_mm[2])))
    if lab is None:
        return None
    chroma = np.hypot(lab[:, 1], lab[:, 2])
    coloured = lab[chroma >= float(cfg["min_chroma"])]
    if len(coloured) < 3:
        return None
    return np.median(coloured[:, 1:], axis=0)


def _lab_at(image: np.ndarray, uv: np.ndarray) -> np.ndarray | None:
    h, w = image.shape[:2]
    px = np.round(uv).astype(int)
    ok = (px[:, 0] >= 0) & (px[:, 1] >= 0) & (px[:, 0] < w) & (px[:, 1] < h)
    if not ok.any():
        return None
    bgr = image[px[ok, 1], px[ok, 0]].reshape(-1, 1, 3)
    lab = cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB).reshape(-1, 3).astype(np.float32)
    lab[:, 1:] -= 128.0
    return lab


def place_score(cfg: Mapping, tray: Tray, reg: Registration, image: np.ndarray, level: int, slot: int,
                top_level: int, chroma_ab: np.ndarray) -> tuple[float, int]:
    """Fraction of the visible stick-out samples of (level, slot) in the block's colour, and how many were visible."""
    z = (level - 0.5) * float(tray.block_mm[2])
    pts = stick_out_points(cfg, tray, level, slot)
    uv = reg.to_image(pts, z)
    hull = tower_silhouette(tray, reg, 0.0, top_level * float(tray.block_mm[2]))
    margin = float(cfg["silhouette_margin_px"])
    visible = np.array([cv2.pointPolygonTest(hull, (float(u), float(v)), True) < -margin for u, v in uv])
    h, w = image.shape[:2]
    visible &= (uv[:, 0] >= 0) & (uv[:, 1] >= 0) & (uv[:, 0] < w) & (uv[:, 1] < h)
    if visible.sum() < int(cfg["min_visible"]):
        return 0.0, int(visible.sum())
    lab = _lab_at(image, uv[visible])
    if lab is None:
        return 0.0, 0
    chroma = np.hypot(lab[:, 1], lab[:, 2])
    near = np.hypot(lab[:, 1] - chroma_ab[0], lab[:, 2] - chroma_ab[1]) <= float(cfg["max_ab_distance"])
    match = near & (chroma >= float(cfg["min_chroma"]))
    return float(match.mean()), int(visible.sum())


def score_places(cfg: Mapping, tray: Tray, reg: Registration, frames: Sequence[np.ndarray],
                 places: Sequence[tuple[int, int]], top_level: int, chroma_ab: np.ndarray) -> list[PlaceScore]:
    """Each candidate place's best showing over the frames of the pull."""
    out = []
    for level, slot in places:
        best, seen = 0.0, 0
        for image in frames:
            s, n = place_score(cfg, tray, reg, image, level, slot, top_level, chroma_ab)
            if s > best:
                best, seen = s, n
        out.append(PlaceScore((level, slot), round(best, 3), seen))
    return out


def which_place(cfg: Mapping, scores: Sequence[PlaceScore]) -> tuple[int, int] | None:
    """The place the block clearly came from, or None when the frames do not tell them apart.

    What sticks out tells the side (levels alternate) and the slot's offset well, the height only
    poorly (a block sticking out a little at one level looks like one sticking out further lower
    down), so two candidates of the same slot on levels of the same direction are never split.
    """
    ranked = sorted(scores, key=lambda s: -s.score)
    if not ranked or ranked[0].score < float(cfg["min_score"]):
        return None
    best = ranked[0].place
    if any(s.place[1] == best[1] and s.place[0] % 2 == best[0] % 2 for s in ranked[1:]):
        return None
    runner_up = ranked[1].score if len(ranked) > 1 else 0.0
    if ranked[0].score < float(cfg["min_ratio"]) * runner_up:
        return None
    return best
