"""Tray registration: ArUco markers -> homography (image <-> tray mm) -> camera pose.

The tower top sits up to ~30 cm above the tray plane, so a plane homography is not enough: the
camera (focal length from calibration, principal point at the image centre) is recovered with
solvePnP so any height z can be projected (Camera.plane_homography(z)). Hidden markers are
fine: three markers give twelve corners, and with the focal length known from calibration even
one marker's four corners place the camera (two hands over the tray often leave only one corner
of the sheet in view; the top-face search then corrects the loose tilt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping

import cv2
import numpy as np

from vision.geometry import Camera, apply_h, intrinsics
from vision.kit import Tray


class TrayNotFound(RuntimeError):
    """The tray's markers could not be seen well enough; the message is for players."""


@dataclass(frozen=True)
class Registration:
    H: np.ndarray  # tray mm (z = 0) -> image px
    camera: Camera
    marker_ids: tuple[int, ...]
    reprojection_px: float

    @property
    def H_inv(self) -> np.ndarray:
        return np.linalg.inv(self.H)

    def to_image(self, pts_mm: np.ndarray, z: float = 0.0) -> np.ndarray:
        return apply_h(self.camera.plane_homography(z), pts_mm)


@dataclass(frozen=True)
class MarkerFinder:
    """The tray's marker detectors: a fast one for every frame, and a thorough one (every
    threshold window) for frames where the fast one finds fewer than `thorough_below` of the
    tray's markers: a hand over a corner, or blur that the one fast window does not bridge."""
    fast: cv2.aruco.ArucoDetector
    thorough: cv2.aruco.ArucoDetector
    thorough_below: int


def _aruco_detector(a: Mapping, win_min: int, win_max: int, win_step: int) -> cv2.aruco.ArucoDetector:
    p = cv2.aruco.DetectorParameters()
    p.adaptiveThreshWinSizeMin = win_min
    p.adaptiveThreshWinSizeMax = win_max
    p.adaptiveThreshWinSizeStep = win_step
    # outlines shorter than this fraction of the frame's larger side are not looked at as markers
    # (noise makes hundreds of small quads; the kits' smallest marker is 0.19)
    p.minMarkerPerimeterRate = float(a.get("min_perimeter_rate", 0.03))
    # A blurred marker's white cells bleed into their black neighbours: reading only each cell's
    # middle (OpenCV's default skips 13% of the cell at each edge) decodes them again.
    p.perspectiveRemoveIgnoredMarginPerCell = float(a.get("cell_margin", 0.13))
    if a.get("subpix", True):
        p.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    return cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50), p)


def make_detector(cfg: Mapping) -> MarkerFinder:
    """The marker detectors with the threshold windows from the config."""
    a = cfg.get("aruco", {})
    fast = _aruco_detector(a, int(a.get("win_min", 5)), int(a.get("win_max", 21)), int(a.get("win_step", 16)))
    tw = a.get("thorough_windows", [3, 23, 10])
    return MarkerFinder(fast, _aruco_detector(a, int(tw[0]), int(tw[1]), int(tw[2])), int(a.get("thorough_below", 0)))


def _detect(detector: cv2.aruco.ArucoDetector, gray: np.ndarray) -> dict[int, np.ndarray]:
    corners, ids, _ = detector.detectMarkers(gray)
    out: dict[int, np.ndarray] = {}
    if ids is None:
        return out
    for c, i in zip(corners, ids.reshape(-1)):
        out.setdefault(int(i), c.reshape(4, 2).astype(np.float64))
    return out


def detect_markers(finder: MarkerFinder, gray: np.ndarray, wanted: Collection[int] = ()) -> dict[int, np.ndarray]:
    """Marker corners by id. When the fast detector finds fewer than `thorough_below` of the
    `wanted` ids, the thorough one looks again and adds what it finds (the fast corners stay)."""
    found = _detect(finder.fast, gray)
    if sum(i in found for i in wanted) < finder.thorough_below:
        for i, c in _detect(finder.thorough, gray).items():
            found.setdefault(i, c)
    return found


def correspondences(tray: Tray, found: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    ids = tuple(sorted(i for i in found if i in tray.markers))
    if not ids:
        return np.empty((0, 2)), np.empty((0, 2)), ()
    obj = np.concatenate([tray.markers[i] for i in ids])
    img = np.concatenate([found[i] for i in ids])
    return obj, img, ids


def _lined_up(cfg: Mapping, obj: np.ndarray, img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The marker corners that agree on one tray plane. A hand over part of a marker can leave it
    readable but pull one of its corners several pixels off, which would tilt the camera found;
    a corner that the others place `corner_outlier_px` away is left out (all of them are kept
    when fewer than two markers' worth would remain)."""
    tol = float(cfg.get("tray", {}).get("corner_outlier_px", 0.0))
    if tol <= 0 or len(obj) <= 8:
        return obj, img
    H, _ = cv2.findHomography(obj, img, 0)
    if H is not None and np.max(np.linalg.norm(apply_h(H, obj) - img, axis=1)) <= tol:
        return obj, img  # every corner fits: nothing to leave out
    _, inl = cv2.findHomography(obj, img, cv2.RANSAC, tol)
    keep = inl is not None and 8 <= int(inl.sum()) < len(obj)
    return (obj[inl.ravel() > 0], img[inl.ravel() > 0]) if keep else (obj, img)


def focal_from_homography(H: np.ndarray, width: int, height: int) -> float | None:
    """Zhang's orthogonality constraint with a known principal point; None when ill-conditioned."""
    T = np.array([[1, 0, -(width - 1) / 2.0], [0, 1, -(height - 1) / 2.0], [0, 0, 1]])
    Hc = T @ H
    a1, b1, c1 = Hc[:, 0]
    a2, b2, c2 = Hc[:, 1]
    ests = []
    if abs(c1 * c2) > 1e-12:
        f2 = -(a1 * a2 + b1 * b2) / (c1 * c2)
        if f2 > 0:
            ests.append(f2)
    if abs(c2 * c2 - c1 * c1) > 1e-12:
        f2 = (a1 * a1 + b1 * b1 - a2 * a2 - b2 * b2) / (c2 * c2 - c1 * c1)
        if f2 > 0:
            ests.append(f2)
    if not ests:
        return None
    return float(np.sqrt(np.median(ests)))


def register(cfg: Mapping, tray: Tray, gray: np.ndarray, detector: MarkerFinder | None = None) -> Registration:
    """Find the tray in a grayscale frame; raise TrayNotFound with a reason players understand."""
    det = detector or make_detector(cfg)
    found = detect_markers(det, gray, tray.markers)
    obj, img, ids = correspondences(tray, found)
    min_markers = int(cfg.get("tray", {}).get("min_markers", 1))
    if len(ids) < min_markers:
        seen = f"only {len(ids)} of the tray's {len(tray.markers)} markers" if ids else "none of the tray's markers"
        raise TrayNotFound(f"cannot find the tray: {seen} are visible (uncover the tray corners)")
    obj, img = _lined_up(cfg, obj, img)
    H, _ = cv2.findHomography(obj, img, 0)
    if H is None:
        raise TrayNotFound("cannot find the tray: its markers do not line up")
    h, w = gray.shape[:2]
    f = float(cfg.get("camera", {}).get("focal_px") or 0)
    if f and cfg.get("camera", {}).get("width"):
        f *= w / float(cfg["camera"]["width"])  # the same camera at another resolution
    f = f or (focal_from_homography(H, w, h) or 0.9 * w)
    K = intrinsics(f, w, h)
    obj3 = np.column_stack([obj, np.zeros(len(obj))]).astype(np.float64)
    ok, rvec, tvec = cv2.solvePnP(obj3, img.astype(np.float64), K, None, flags=cv2.SOLVEPNP_IPPE)
    if not ok:
        raise TrayNotFound("cannot find the tray: the camera pose does not fit its markers")
    rvec, tvec = cv2.solvePnPRefineLM(obj3, img.astype(np.float64), K, None, rvec, tvec)
    cam = Camera(K, rvec.reshape(3), tvec.reshape(3))
    err = float(np.sqrt(np.mean(np.sum((cam.project(obj3) - img) ** 2, axis=1))))
    if cam.center[2] <= 0:
        raise TrayNotFound("cannot find the tray: the markers seem to be seen from below")
    max_err = float(cfg.get("tray", {}).get("max_reprojection_px", 6.0))
    if err > max_err:
        raise TrayNotFound(f"cannot find the tray: its markers are {err:.1f} px off (is the sheet flat and the right one?)")
    return Registration(H / H[2, 2], cam, ids, err)


def calibrate_focal(tray: Tray, views: list[np.ndarray], width: int, height: int, default: float) -> tuple[float, float]:
    """Focal length over many views of the markers (fixed principal point, no distortion).

    `views` are (obj_mm, img_px) corner arrays per image. Returns (focal, rms px); falls back to
    the median per-view estimate, then to `default`.
    """
    obj = [np.column_stack([o, np.zeros(len(o))]).astype(np.float32) for o, _ in views if len(o) >= 8]
    img = [i.astype(np.float32) for o, i in views if len(o) >= 8]
    if len(obj) >= 3:
        K0 = intrinsics(default, width, height)
        flags = (cv2.CALIB_USE_INTRINSIC_GUESS | cv2.CALIB_FIX_PRINCIPAL_POINT | cv2.CALIB_FIX_ASPECT_RATIO
                 | cv2.CALIB_ZERO_TANGENT_DIST | cv2.CALIB_FIX_K1 | cv2.CALIB_FIX_K2 | cv2.CALIB_FIX_K3)
        try:
            rms, K, *_ = cv2.calibrateCamera(obj, img, (width, height), K0, np.zeros(5), flags=flags)
            f = float(K[0, 0])
            if 0.2 * width < f < 10 * width:
                return f, float(rms)
        except cv2.error:
            pass
    ests = []
    for o, i in views:
        if len(o) >= 8:
            H, _ = cv2.findHomography(o, i, 0)
            if H is not None:
                fe = focal_from_homography(H, width, height)
                if fe:
                    ests.append(fe)
    if ests:
        return float(np.median(ests)), float("nan")
    return default, float("nan")
