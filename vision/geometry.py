"""Pinhole-camera geometry shared by the synthetic kit renderer and the reader.

Tray coordinates are millimetres: x and y on the tray plane (as tray.json gives them), z up
(the tower grows towards the camera 15 mm a level). A plane at height z maps to the image by a
homography, which is how the reader rectifies the tower's top face at any candidate height.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np


@dataclass(frozen=True)
class Camera:
    """Intrinsics K (3x3) and pose (rvec, tvec: tray mm -> camera frame)."""

    K: np.ndarray
    rvec: np.ndarray
    tvec: np.ndarray

    @cached_property
    def R(self) -> np.ndarray:
        """Rotation matrix (worked out once per camera: a frame's stages ask for it dozens of times)."""
        R = cv2.Rodrigues(np.asarray(self.rvec, dtype=np.float64).reshape(3))[0]
        R.flags.writeable = False
        return R

    @cached_property
    def center(self) -> np.ndarray:
        """Camera position in tray millimetres."""
        C = -self.R.T @ np.asarray(self.tvec, dtype=np.float64).reshape(3)
        C.flags.writeable = False
        return C

    def project(self, pts: np.ndarray) -> np.ndarray:
        """Project (N,3) tray points to (N,2) pixels (no lens distortion)."""
        pts = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
        cam = pts @ self.R.T + np.asarray(self.tvec, dtype=np.float64).reshape(1, 3)
        uv = cam @ np.asarray(self.K, dtype=np.float64).T
        return uv[:, :2] / uv[:, 2:3]

    @cached_property
    def _homographies(self) -> dict:
        """plane_homography's results by height (a frame's stages ask for the same few heights
        dozens of times); the camera is one frame's, so this goes with it."""
        return {}

    @cached_property
    def derived(self) -> dict:
        """Read-only values other modules derive from this camera alone (keyed by them), made once
        per camera: a camera is one frame's."""
        return {}

    def plane_homography(self, z: float) -> np.ndarray:
        """Homography from (x, y) on the horizontal plane at height z to image pixels (read-only)."""
        z = float(z)
        H = self._homographies.get(z)
        if H is None:
            R = self.R
            t = np.asarray(self.tvec, dtype=np.float64).reshape(3)
            M = np.column_stack([R[:, 0], R[:, 1], R[:, 2] * z + t])
            H = np.asarray(self.K, dtype=np.float64) @ M
            H = H / H[2, 2]
            H.flags.writeable = False
            if len(self._homographies) < 256:
                self._homographies[z] = H
        return H


def look_at(K: np.ndarray, eye: np.ndarray, target: np.ndarray, roll_deg: float) -> Camera:
    """A camera at `eye` looking at `target`, rotated `roll_deg` about its optical axis."""
    eye = np.asarray(eye, dtype=np.float64)
    fwd = np.asarray(target, dtype=np.float64) - eye
    fwd /= np.linalg.norm(fwd)
    ref = np.array([0.0, 1.0, 0.0])  # image "up" roughly towards +y (north) before roll
    right = np.cross(fwd, ref)
    if np.linalg.norm(right) < 1e-6:
        right = np.array([1.0, 0.0, 0.0])
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    R0 = np.vstack([right, down, fwd])  # rows: camera x (right), y (down), z (forward) in tray frame
    a = np.deg2rad(roll_deg)
    Rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    R = Rz @ R0
    rvec = cv2.Rodrigues(R)[0].reshape(3)
    tvec = -R @ eye
    return Camera(np.asarray(K, dtype=np.float64), rvec, tvec)


def intrinsics(f: float, width: int, height: int) -> np.ndarray:
    return np.array([[f, 0, (width - 1) / 2.0], [0, f, (height - 1) / 2.0], [0, 0, 1]], dtype=np.float64)


def apply_h(H: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Apply a homography to (N,2) points."""
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    p = np.column_stack([pts, np.ones(len(pts))]) @ np.asarray(H, dtype=np.float64).T
    return p[:, :2] / p[:, 2:3]
