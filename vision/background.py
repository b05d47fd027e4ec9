"""The tray's own surface, learnt at calibration: what bare tray looks like at every millimetre.

Wood grain, printed outlines and the markers' white borders are part of the tray, not hands or
blocks. Calibration warps every kit image onto the tray plane (in the reference light) and keeps
the per-pixel median; at run time a pixel is compared with the tray point behind it, rescaled to
the frame's light. Without a model, the tray's single median colour stands in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from vision.geometry import apply_h
from vision.kit import Tray
from vision.tray import Registration


@dataclass(frozen=True)
class TrayBackground:
    bgr: np.ndarray   # (H, W, 3) float32, reference light
    ppm: float        # model pixels per mm
    x0: float         # tray mm of model column 0
    y1: float         # tray mm of model row 0 (north edge; rows go south)
    valid: np.ndarray = field(init=False, repr=False, compare=False)  # (H, W) bool: the model covers the pixel

    def __post_init__(self) -> None:
        object.__setattr__(self, "valid", np.isfinite(self.bgr).all(axis=-1))  # once per load, not per frame

    def expected(self, reg: Registration, uv: np.ndarray, light: np.ndarray) -> np.ndarray:
        """Bare-tray colour behind image points uv (..., 2), in this frame's light (BGR gains 1/light)."""
        shape = uv.shape[:-1]
        g = apply_h(reg.H_inv, uv.reshape(-1, 2))
        col = np.rint((g[:, 0] - self.x0) * self.ppm).astype(np.int32)
        row = np.rint((self.y1 - g[:, 1]) * self.ppm).astype(np.int32)
        h, w = self.bgr.shape[:2]
        inside = (col >= 0) & (col < w) & (row >= 0) & (row < h)
        out = np.empty((len(g), 3), np.float32)
        out[:] = np.nan
        out[inside] = self.bgr[row[inside], col[inside]]
        return (out * light).reshape(*shape, 3)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, bgr=self.bgr.astype(np.float16), ppm=self.ppm, x0=self.x0, y1=self.y1)

    @classmethod
    def load(cls, path: Path) -> "TrayBackground":
        with np.load(path, allow_pickle=False) as d:
            return cls(d["bgr"].astype(np.float32), float(d["ppm"]), float(d["x0"]), float(d["y1"]))


def learn_background(tray: Tray, samples: list[tuple[np.ndarray, Registration, np.ndarray]], ppm: float,
                     margin_mm: float = 25.0) -> TrayBackground:
    """Per-pixel median of the kit's images on the tray plane; samples are (image, registration, gains)."""
    x0, y0, x1, y1 = tray.extent()
    x0, y0, x1, y1 = x0 - margin_mm, y0 - margin_mm, x1 + margin_mm, y1 + margin_mm
    w, h = int(round((x1 - x0) * ppm)), int(round((y1 - y0) * ppm))
    A = np.array([[1 / ppm, 0, x0], [0, -1 / ppm, y1], [0, 0, 1]])
    stack = []
    for img, reg, gains in samples:
        warped = cv2.warpPerspective(img, reg.H @ A, (w, h), flags=cv2.INTER_AREA | cv2.WARP_INVERSE_MAP,
                                     borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))
        valid = cv2.warpPerspective(np.full(img.shape[:2], 255, np.uint8), reg.H @ A, (w, h),
                                    flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP)
        x = warped.astype(np.float32) * gains
        x[valid == 0] = np.nan
        stack.append(x)
    med = np.nanmedian(np.stack(stack), axis=0) if stack else np.full((h, w, 3), np.nan, np.float32)
    return TrayBackground(med.astype(np.float32), ppm, x0, y1)
