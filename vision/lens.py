"""The camera's lens: radial distortion learnt at calibration, and frames straightened with it.

Every later stage treats the camera as a pinhole: the tray is a homography, the top face a square
on a plane. A real lens bends straight lines (the Pi camera modules' wide lenses most at the
frame's corners, where the tray's markers are), so a homography fitted to the four markers is
pixels off, the tray reads as "not found" and faces land off their slots. Calibration fits the
radial distortion from the kit's marker corners (`fit_lens`); the reader straightens each frame
once (`Lens.straighten`, one remap), so nothing after it needs to know about lenses. A kit whose
photos show no distortion keeps none, and its frames are not touched (no cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import cv2
import numpy as np

from vision.frame_errors import UnreadableFrame
from vision.geometry import intrinsics

# calibrateCamera's coefficient order is (k1, k2, p1, p2, k3): only k1 and k2 are learnt (the
# principal point stays at the frame's centre, tangential terms and k3 at zero): a kit's four
# markers per photo pin down two radial terms, not more
_RADIAL_FLAGS = (cv2.CALIB_USE_INTRINSIC_GUESS | cv2.CALIB_FIX_PRINCIPAL_POINT | cv2.CALIB_FIX_ASPECT_RATIO
                 | cv2.CALIB_ZERO_TANGENT_DIST | cv2.CALIB_FIX_K3)
_PINHOLE_FLAGS = _RADIAL_FLAGS | cv2.CALIB_FIX_K1 | cv2.CALIB_FIX_K2


@dataclass(frozen=True)
class LensFit:
    """What calibration learnt of the lens: the focal length with (k1, k2), and the marker corners'
    fit (rms px) with them and with a pinhole alone."""

    focal_px: float
    radial: tuple[float, float]
    rms_px: float
    pinhole_focal_px: float
    pinhole_rms_px: float

    def keeps_distortion(self, min_gain_px: float, min_ratio: float) -> bool:
        """Whether the radial terms are worth a remap per frame: they fit the corners at least
        `min_gain_px` better and to at most `min_ratio` of the pinhole's error. Corner noise alone
        (a lens with no distortion) gains a few hundredths of a pixel."""
        gain = self.pinhole_rms_px - self.rms_px
        return gain >= min_gain_px and self.rms_px <= min_ratio * self.pinhole_rms_px


def _calibrate(obj: list[np.ndarray], img: list[np.ndarray], size: tuple[int, int], focal: float,
               flags: int) -> tuple[float, float, np.ndarray]:
    K0 = intrinsics(focal, size[0], size[1])
    rms, K, D, *_ = cv2.calibrateCamera(obj, img, size, K0, np.zeros(5), flags=flags)
    return float(rms), float(K[0, 0]), np.asarray(D, dtype=np.float64).reshape(-1)


def fit_lens(views: Sequence[tuple[np.ndarray, np.ndarray]], width: int, height: int, focal_guess: float) -> LensFit | None:
    """The lens from many views of the markers: `views` are (corners in tray mm (N, 2), in pixels
    (N, 2)) per photo, 8 corners (two markers) at least. None when too few views or no fit."""
    obj = [np.column_stack([o, np.zeros(len(o))]).astype(np.float32) for o, _ in views if len(o) >= 8]
    img = [np.asarray(i, dtype=np.float32) for o, i in views if len(o) >= 8]
    if len(obj) < 3:
        return None
    try:
        rms0, f0, _ = _calibrate(obj, img, (width, height), focal_guess, _PINHOLE_FLAGS)
        rms1, f1, D = _calibrate(obj, img, (width, height), f0, _RADIAL_FLAGS)
    except cv2.error:
        return None
    if not (0.2 * width < f0 < 10 * width and 0.2 * width < f1 < 10 * width) or not np.isfinite(D[:2]).all():
        return None
    return LensFit(f1, (float(D[0]), float(D[1])), rms1, f0, rms0)


@dataclass
class Lens:
    """A lens with radial distortion (k1, k2) about the frame's centre, calibrated on frames of
    `width` x `height`. The coefficients are in the camera's normalised coordinates, so the same
    camera at another resolution of the same shape has them too, with the focal length scaled;
    a straightened frame keeps its focal length."""

    focal_px: float
    radial: tuple[float, float]
    width: int
    height: int
    _maps: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def K(self, width: int | None = None, height: int | None = None) -> np.ndarray:
        """The camera matrix at a frame size (the calibration's when not given)."""
        w, h = width or self.width, height or self.height
        return intrinsics(self.focal_px * w / self.width, w, h)

    @property
    def coefficients(self) -> np.ndarray:
        return np.array([self.radial[0], self.radial[1], 0.0, 0.0, 0.0])

    def straighten(self, img: np.ndarray) -> np.ndarray:
        """The frame as a pinhole camera with the same focal length would see it. A frame of
        another shape than the calibration's is another sensor mode, whose lens is not known:
        UnreadableFrame (a ValueError)."""
        h, w = img.shape[:2]
        if abs(w * self.height - h * self.width) > max(w, h):
            raise UnreadableFrame(f"the frame is {w}x{h} but the camera was calibrated at {self.width}x{self.height}: "
                                  "set the camera to that shape or calibrate again")
        maps = self._maps.get((w, h))
        if maps is None:  # made once per size: the remap itself is the per-frame cost
            K = self.K(w, h)
            maps = self._maps[(w, h)] = cv2.initUndistortRectifyMap(K, self.coefficients, None, K, (w, h), cv2.CV_16SC2)
        return cv2.remap(img, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)

    def ideal_points(self, px: np.ndarray) -> np.ndarray:
        """Pixels of the camera's own frame (calibration size), (N, 2), where the straightened
        frame shows them."""
        K = self.K()
        pts = np.asarray(px, dtype=np.float64).reshape(-1, 1, 2)
        return cv2.undistortPoints(pts, K, self.coefficients, P=K).reshape(-1, 2)

    def bent_points(self, px: np.ndarray) -> np.ndarray:
        """Pixels of the straightened frame (calibration size), (N, 2), where the camera's own
        frame shows them."""
        K = self.K()
        x = (np.asarray(px, dtype=np.float64).reshape(-1, 2) - K[:2, 2]) / self.focal_px
        r2 = (x ** 2).sum(axis=1, keepdims=True)
        return x * (1 + self.radial[0] * r2 + self.radial[1] * r2 ** 2) * self.focal_px + K[:2, 2]


def lens_from_config(cam: Mapping) -> Lens | None:
    """The lens the config's camera section describes, or None for a pinhole (no `radial`, or
    zeros): then frames are used as they come."""
    radial = cam.get("radial")
    if radial is None:
        return None
    try:
        k = [float(v) for v in radial]
    except (TypeError, ValueError):
        k = []
    if len(k) != 2 or not all(np.isfinite(k)):
        raise ValueError(f"the camera's radial distortion must be two numbers (k1, k2), not {radial!r}")
    if not any(k):
        return None
    if cam.get("focal_px") is None or cam.get("width") is None or cam.get("height") is None:
        raise ValueError("the camera's lens distortion needs its focal length and frame size in the calibration")
    return Lens(float(cam["focal_px"]), (k[0], k[1]), int(cam["width"]), int(cam["height"]))
