"""Draw what the pipeline saw on a frame: tray, top face and slots, the hand ring, the reading."""

from __future__ import annotations

import cv2
import numpy as np

from vision import top_level as tl
from vision.hands import hand_ring
from vision.reader import FrameResult, Pipeline, height_seen_by


def draw_overlay(p: Pipeline, img: np.ndarray, res: FrameResult) -> np.ndarray:
    img = res.image if res.image is not None else img  # the frame as read: the registration's pixels are its
    out = img.copy()
    reg = res.registration
    tray = p.tray
    for c in tray.markers.values():
        cv2.polylines(out, [np.int32(reg.to_image(c)).reshape(-1, 1, 2)], True, (0, 255, 255), 1, cv2.LINE_AA)
    r = res.reading
    for s in range(3):
        uv = reg.to_image(tl.slot_corners(tray, r.orientation, s + res.first_slot), res.z_top)
        slot = r.slots[s]
        col = (0, 200, 0) if slot.block is not None else (160, 160, 160)
        if slot.confidence < float(p.cfg["decision"]["uncertain_below"]):
            col = (0, 0, 255)
        cv2.polylines(out, [np.int32(uv).reshape(-1, 1, 2)], True, col, 1, cv2.LINE_AA)
        c = uv.mean(axis=0)
        text = slot.block.name if slot.block else "empty"
        cv2.putText(out, text, (int(c[0]) - 20, int(c[1]) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.38, (0, 0, 0), 3, cv2.LINE_AA)
        cv2.putText(out, text, (int(c[0]) - 20, int(c[1]) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.38, (255, 255, 255), 1, cv2.LINE_AA)
    # the hands were found through the markers' own camera
    reg0 = reg if res.markers_registration is None else res.markers_registration
    tray_bgr = tl.tray_color(p.cfg, tray, reg0, img)
    ring = hand_ring(p.cfg, tray, reg0, img, tray_bgr, height_seen_by(reg0, reg, res.z_top), p.background,
                     tl.color_gains(p.cfg, tray_bgr))
    z = ring.z
    uv = reg0.to_image(ring.pts, z)
    for (u, v), f, ok in zip(uv, ring.fg, ring.valid):
        cv2.circle(out, (int(u), int(v)), 1, ((0, 0, 255) if f else (255, 128, 0)) if ok else (128, 128, 128), -1)
    for h in r.hands:
        t = reg0.to_image(np.array([h.tip_mm]), z)[0]
        cv2.drawMarker(out, (int(t[0]), int(t[1])), (255, 0, 255), cv2.MARKER_CROSS, 14, 2)
    label = f"{r.orientation}  z={res.z_top:.0f}mm  hands={len(r.hands)}" + ("  UNSURE" if r.uncertain else "")
    cv2.putText(out, label, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.55, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(out, label, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.55, (255, 255, 255), 1, cv2.LINE_AA)
    return out


def overlay_sheet(tiles: list[np.ndarray], columns: int) -> np.ndarray:
    """Overlays side by side, `columns` a row (each scaled to the first's size, a short last row
    filled with black): a few frames in one picture for the docs or a bug report."""
    if not tiles:
        raise ValueError("no frames to draw")
    h, w = tiles[0].shape[:2]
    cols = max(1, min(int(columns), len(tiles)))
    cells = [t if t.shape[:2] == (h, w) else cv2.resize(t, (w, h), interpolation=cv2.INTER_AREA) for t in tiles]
    cells += [np.zeros_like(cells[0])] * (-len(cells) % cols)
    return np.vstack([np.hstack(cells[i:i + cols]) for i in range(0, len(cells), cols)])
