"""Tray registration: ArUco markers -> homography (image <-> tray mm) -> camera pose.

The tower top sits up to ~30 cm above the tray plane, so a plane homography is not enough: the
camera (focal length from calibration, principal point at the image centre) is recovered with
solvePnP so any height z can be projected (Camera.plane_homography(z)). Hidden markers are
fine: three markers give twelve corners, and with the focal length known from calibration even
one marker's four corners place the camera (two hands over the tray often leave only one corner
of the sheet in view; the top-face search then corrects the loose tilt).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import cached_property
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

    @cached_property
    def H_inv(self) -> np.ndarray:
        """Image px -> tray mm (z = 0), worked out once per registration (read-only)."""
        Hi = np.linalg.inv(self.H)
        Hi.flags.writeable = False
        return Hi

    def to_image(self, pts_mm: np.ndarray, z: float = 0.0) -> np.ndarray:
        return apply_h(self.camera.plane_homography(z), pts_mm)


def h_inverse(reg) -> np.ndarray:
    """reg.H_inv; for a stand-in registration that has only H, its inverse."""
    Hi = getattr(reg, "H_inv", None)
    return np.linalg.inv(reg.H) if Hi is None else Hi


@dataclass(frozen=True)
class MarkerFinder:
    """The tray's marker detectors: a fast one for every frame, and a thorough one (every
    threshold window) for frames where the fast one finds fewer than `thorough_below` of the
    tray's markers: a hand over a corner, or blur that the one fast window does not bridge."""
    fast: cv2.aruco.ArucoDetector
    thorough: cv2.aruco.ArucoDetector
    thorough_below: int
    crop_search: bool = True  # the fast detector's tray markers found round where they lie (_CropSearch)
    crop_search_noise: float = 0.4  # ... on frames at least this grainy (_CropSearch.grain)
    rescue: cv2.aruco.ArucoDetector | None = None  # a missing marker looked for where the others place it
    rescue_upscale_below_px: float = 60.0  # ... its crop doubled in size when the marker is smaller than this
    rescue_below: int = 3  # ... only when fewer than this many of the tray's markers are found

    @cached_property
    def crops(self) -> "_CropSearch":
        return _CropSearch(self.fast, self.crop_search_noise)

    @cached_property
    def thorough_crops(self) -> "_CropSearch":
        return _CropSearch(self.thorough)


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
    # A marker smeared by motion (or washed out by a tone curve) is found as an outline a fraction
    # of a cell too large; each cell read from 8x8 pixels of the unwarped marker instead of
    # OpenCV's 4x4 keeps its middle on the cell: on four kits blurred 7 px along a line, the 10
    # photos that lost every marker all read (the outline search, which costs the time, is
    # the same: registration 1.52 ms a frame either way).
    p.perspectiveRemovePixelPerCell = int(a.get("pixels_per_cell", 4))
    if a.get("subpix", True):
        p.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    return cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50), p)


def make_detector(cfg: Mapping) -> MarkerFinder:
    """The marker detectors with the threshold windows from the config."""
    a = cfg.get("aruco", {})
    fast = _aruco_detector(a, int(a.get("win_min", 5)), int(a.get("win_max", 21)), int(a.get("win_step", 16)))
    tw = a.get("thorough_windows", [3, 23, 10])
    rw = a.get("rescue_windows")
    rescue = _aruco_detector({**a, "min_perimeter_rate": a.get("rescue_min_perimeter_rate", 0.05)},
                             int(rw[0]), int(rw[1]), int(rw[2])) if rw else None
    return MarkerFinder(fast, _aruco_detector(a, int(tw[0]), int(tw[1]), int(tw[2])), int(a.get("thorough_below", 0)),
                        bool(a.get("crop_search", True)), float(a.get("crop_search_noise", 0.4)),
                        rescue, float(a.get("rescue_upscale_below_px", 60.0)), int(a.get("rescue_below", 3)))


def _detect(detector: cv2.aruco.ArucoDetector, gray: np.ndarray) -> dict[int, np.ndarray]:
    """Marker corners by id (the first the detector gives for an id)."""
    out: dict[int, np.ndarray] = {}
    for c, i in _detect_all(detector, gray):
        out.setdefault(i, c)
    return out


def detect_markers(finder: MarkerFinder, gray: np.ndarray, wanted: Collection[int] = (),
                   grain: float | None = None) -> dict[int, np.ndarray]:
    """Marker corners by id. When the fast detector finds fewer than `thorough_below` of the
    `wanted` ids, the thorough one looks again and adds what it finds (the fast corners stay).
    With `wanted` the tray's markers (id -> corners in mm), the fast detector's are found round
    where they lie (_CropSearch: the same corners, a third of the work), and only they; and the
    thorough one looks for the missing ones where two or more found place them (_CropSearch.placed;
    on the bench's 27 such frames of 480, 3-6 ms less each). `grain`: the frame's `frame_grain` of
    every 32nd row, when the caller has measured it (else measured here, if the crop search asks)."""
    crops = finder.crop_search and isinstance(wanted, Mapping)
    found = finder.crops.find(gray, wanted, grain) if crops else None
    if found is None:
        found = _detect(finder.fast, gray)
    if sum(i in found for i in wanted) < finder.thorough_below:
        more = finder.thorough_crops.placed(gray, wanted, found) if crops else None
        for i, c in (_detect(finder.thorough, gray) if more is None else more).items():
            found.setdefault(i, c)
    if finder.rescue is not None and isinstance(wanted, Mapping) and sum(i in found for i in wanted) < finder.rescue_below:
        found.update(_rescued(finder, gray, wanted, found))
    return found


def _rescued(finder: MarkerFinder, gray: np.ndarray, wanted: Mapping[int, np.ndarray],
             found: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The wanted markers still missing, found in a crop round where the markers found place them.

    A small, dark, grainy marker far from the camera can be missed by every threshold window the
    whole-frame detectors use (synthetic 707/0054: the two markers left, on one side of the tray,
    placed the camera 90 mm off and the top a slot over). In a crop round its place, with wider
    windows and the crop doubled in size, it is read. (Only with fewer than `rescue_below` found:
    three markers place the camera well, and most frames missing one have it under a hand.) A
    hit counts only with its own id, once, its centre within a marker's side of where it should
    be."""
    obj, img, ids = _pairs(wanted, found)
    if not ids or len(ids) == len(wanted):
        return {}
    H, _ = cv2.findHomography(obj, img, 0)
    if H is None:
        return {}
    h, w = gray.shape[:2]
    out: dict[int, np.ndarray] = {}
    for i in wanted:
        if i in found:
            continue
        q = apply_h(H, wanted[i])
        if not np.isfinite(q).all():
            continue
        c = q.mean(axis=0)
        side = float(np.linalg.norm(q[0] - q[2])) / np.sqrt(2.0)
        if not (0 <= c[0] < w and 0 <= c[1] < h) or not 4 <= side <= max(h, w):
            continue  # (beyond the frame, or a place one marker's corners cannot tell)
        m = side * (1.0 if len(ids) > 1 else 2.0)  # one marker places the others less surely
        x0, y0 = max(0, int(q[:, 0].min() - m)), max(0, int(q[:, 1].min() - m))
        x1, y1 = min(w, int(q[:, 0].max() + m) + 1), min(h, int(q[:, 1].max() + m) + 1)
        if x1 - x0 < 16 or y1 - y0 < 16:
            continue
        crop = gray[y0:y1, x0:x1]
        if not _looks_like_a_marker(crop, np.asarray(wanted[i], np.float64), H, (x0, y0)):
            continue
        s = 2.0 if side < finder.rescue_upscale_below_px else 1.0
        if s != 1.0:
            crop = cv2.resize(crop, None, fx=s, fy=s, interpolation=cv2.INTER_CUBIC)
        hits = [q2 / s + np.array([x0, y0], np.float64) + (0.5 / s - 0.5 if s != 1.0 else 0.0)
                for q2, j in _detect_all(finder.rescue, crop) if j == i]
        if len(hits) == 1 and np.linalg.norm(hits[0].mean(axis=0) - c) < side:
            out[i] = hits[0]
    return out


def _looks_like_a_marker(crop: np.ndarray, quad_mm: np.ndarray, H: np.ndarray, at: tuple[int, int],
                        dark_share: tuple[float, float] = (0.25, 0.9)) -> bool:
    """Whether the place where a marker should be could show one: a marker is black and white,
    so the middle of its place holds pixels darker than half the sheet round it (its border,
    half its cells: 0.4-0.72 of them on marker places read in the synthetic kits), but not only
    such pixels (a dark hand, a shadow or a block over it: the detector would find nothing)."""
    c = quad_mm.mean(axis=0)
    inner = apply_h(H, (quad_mm - c) * 0.8 + c) - at
    outer = apply_h(H, (quad_mm - c) * 1.6 + c) - at
    mi = np.zeros(crop.shape[:2], np.uint8)
    mo = np.zeros(crop.shape[:2], np.uint8)
    cv2.fillConvexPoly(mi, np.round(inner).astype(np.int32), 1)
    cv2.fillConvexPoly(mo, np.round(outer).astype(np.int32), 1)
    vi, vo = crop[mi > 0], crop[(mo > 0) & (mi == 0)]
    if vi.size < 4 or vo.size < 4:
        return True  # too small to tell: let the detector look
    dark = float(np.mean(vi < 0.5 * np.percentile(vo, 75)))
    return dark_share[0] <= dark <= dark_share[1]


_SECOND_DIFFERENCE = np.array([[1, -2, 1]], np.float32)


def frame_grain(rows: np.ndarray) -> float:
    """How grainy a frame is, from some of its rows (8-bit grey): the share of their pixels whose
    second difference along the row is 6 grey levels or more (edges are a small share of them)."""
    d = cv2.filter2D(rows, cv2.CV_16S, _SECOND_DIFFERENCE)
    return float(np.count_nonzero((d >= 6) | (d <= -6))) / max(1, d.size)


def _detect_all(detector: cv2.aruco.ArucoDetector, gray: np.ndarray) -> list[tuple[np.ndarray, int]]:
    corners, ids, _ = detector.detectMarkers(gray)
    if ids is None:
        return []
    return [(c.reshape(4, 2).astype(np.float64), int(j)) for c, j in zip(corners, ids.reshape(-1))]


class _CropSearch:
    """Finds a tray's markers as an ArUco detector finds them in the whole frame (the same ids,
    the same corners to the bit), reading only the frame round each marker.

    A marker is found from its outline in the thresholded frame, which the detector's adaptive
    threshold makes from each pixel's neighbourhood alone; the outline's polygon lies within a
    few percent of its perimeter of the outline, and the candidates the detector groups with it
    (its own inner outline, a frame round it) within one side of it. So the detector run on a
    crop round a marker, a quarter side and the threshold window clear of its outline and
    reaching the frame's edge wherever the marker lies within two sides of it (the detector drops
    candidates near the frame's edge), finds the outline the whole frame gives, with the same
    integer corners; the perimeter limits, a fraction of the image's larger side, are set for the
    crop's size to the frame's pixels. The corners are refined afterwards, on the whole frame, as
    the detector refines them (cornerSubPix, its window from the marker's module size).

    Where the markers lie: the detector on the frame at half size finds most of them; the others
    are looked for where the tray's homography from those places them. Anything doubtful (fewer
    than two found at half size, one not found again in its crop, an id twice) falls back to the
    detector on the whole frame, and so does a clean frame (`grain` under `noise`): the whole
    frame's cost grows with the sensor's grain (every speck the adaptive threshold makes is an
    outline the detector follows), and on a clean frame it costs less than the search."""

    def __init__(self, detector: cv2.aruco.ArucoDetector, noise: float = 0.0):
        self.noise = float(noise)
        p = detector.getDetectorParameters()
        self.detector, self.dictionary, self.params = detector, detector.getDictionary(), p
        self.usable = (not p.useAruco3Detection and not p.detectInvertedMarker
                       and p.cornerRefinementMethod in (cv2.aruco.CORNER_REFINE_NONE, cv2.aruco.CORNER_REFINE_SUBPIX))
        # the half-size detector only says where to look, and passes over outlines under 0.15 of
        # the frame's larger side (the kits' smallest marker's is 0.19) or over 1.0 (grain and the
        # sheet's own edges): 300 -> 265 us a call, and on the nine sets (4,720 photos) the same
        # markers, corners to the bit. A smaller marker (a camera mounted higher) is still found:
        # in its crop where the others place it, or by the whole frame's search when fewer than
        # two are found here (only the time differs).
        self.half = cv2.aruco.ArucoDetector(self.dictionary, self._params(
            minMarkerPerimeterRate=max(p.minMarkerPerimeterRate, 0.15),
            maxMarkerPerimeterRate=min(p.maxMarkerPerimeterRate, 1.0)))
        # a crop's detector, built once per (perimeter limits, crop size): building one (its
        # parameters copied) cost ~10 us a crop
        self._crop_detector = functools.lru_cache(maxsize=256)(self._new_crop_detector)
        self.pad = max(8, p.adaptiveThreshWinSizeMax // 2 + 5)  # px clear of the threshold window
        self.criteria = (cv2.TERM_CRITERIA_MAX_ITER | cv2.TERM_CRITERIA_EPS, p.cornerRefinementMaxIterations,
                         p.cornerRefinementMinAccuracy)
        self.modules = np.float32(4 * (self.dictionary.markerSize + 2 * p.markerBorderBits))

    def _params(self, **kw) -> cv2.aruco.DetectorParameters:
        q = self.detector.getDetectorParameters()  # (a copy)
        q.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_NONE
        for k, v in kw.items():
            setattr(q, k, v)
        return q

    def _new_crop_detector(self, limits: tuple[int, int], s: int) -> cv2.aruco.ArucoDetector:
        """The detector for a crop whose larger side is s px: the perimeter limits (px) as rates of s."""
        return cv2.aruco.ArucoDetector(self.dictionary, self._params(minMarkerPerimeterRate=(limits[0] + 0.5) / s,
                                                                     maxMarkerPerimeterRate=(limits[1] + 0.5) / s))

    def find(self, gray: np.ndarray, wanted: Mapping[int, np.ndarray],
             grain: float | None = None) -> dict[int, np.ndarray] | None:
        """The wanted markers the detector finds in the frame (id -> (4, 2) corners), or None.
        `grain`: the frame's (`self.grain`), when the caller has measured it."""
        h, w = gray.shape[:2]
        if not self.usable or gray.ndim != 2 or min(h, w) < 64 or len(wanted) < 2:
            return None
        if self.noise > 0 and (self.grain(gray) if grain is None else grain) < self.noise:
            return None
        c0, i0, _ = self.half.detectMarkers(cv2.resize(gray, (w // 2, h // 2), interpolation=cv2.INTER_AREA))
        if i0 is None:
            return None
        i0 = i0.reshape(-1).tolist()
        seen = [i for i in i0 if i in wanted]
        if len(seen) < 2 or len(set(seen)) != len(seen):
            return None
        p = self.params
        big = max(h, w)
        limits = (int(p.minMarkerPerimeterRate * big), int(p.maxMarkerPerimeterRate * big))  # (the detector's pixels)
        got = {}
        for c, i in zip(c0, i0):
            if i in wanted:
                q = c.reshape(4, 2) * 2 + 0.5  # (a half-size pixel's centre at full size)
                r = self._in_crop(gray, q, 0.15, limits, i)
                if r is None:
                    return None
                got[i] = r
        if not self._add_placed(gray, wanted, got, limits):
            return None
        return self._refined(gray, got)

    def placed(self, gray: np.ndarray, wanted: Mapping[int, np.ndarray],
               found: Mapping[int, np.ndarray]) -> dict[int, np.ndarray] | None:
        """The wanted markers not in `found` that the detector finds in the frame, looked for only
        where those found (two or more) place them (id -> (4, 2) corners); None when that cannot
        stand for the whole frame (fewer than two found, an id twice in its crop)."""
        h, w = gray.shape[:2]
        have = {i: found[i] for i in wanted if i in found}
        if not self.usable or gray.ndim != 2 or min(h, w) < 64 or len(have) < 2:
            return None
        p = self.params
        big = max(h, w)
        limits = (int(p.minMarkerPerimeterRate * big), int(p.maxMarkerPerimeterRate * big))
        got = dict(have)
        # (a side's margin, not half: placed by two markers on one side of the tray, a missing one
        # lay up to 25 px off on the nine sets, whose crops then kept it only 13 px from their edge)
        if not self._add_placed(gray, wanted, got, limits, 1.0):
            return None
        return self._refined(gray, {i: c for i, c in got.items() if i not in have})

    def _add_placed(self, gray: np.ndarray, wanted: Mapping[int, np.ndarray], got: dict[int, np.ndarray],
                    limits: tuple[int, int], margin: float = 0.5) -> bool:
        """Adds to `got` (id -> corners) the wanted markers missing from it that the detector finds
        where those in it place them (in crops `margin` sides round), again with any found then;
        False when one is found twice."""
        h, w = gray.shape[:2]
        for _ in range(2):
            missing = [i for i in wanted if i not in got]
            if not missing:
                break
            obj = np.concatenate([np.asarray(wanted[i], np.float64) for i in got])
            img = np.concatenate([got[i] for i in got]).astype(np.float64)
            H, _ = cv2.findHomography(obj, img, 0)
            if H is None:
                return False
            new = 0
            for i in missing:
                q = cv2.perspectiveTransform(np.asarray(wanted[i], np.float64).reshape(-1, 1, 2), H).reshape(4, 2)
                if not np.isfinite(q).all() or q.min() < -8 or q[:, 0].max() > w + 7 or q[:, 1].max() > h + 7:
                    continue  # beyond the frame: the detector cannot see it whole
                r = self._in_crop(gray, q, margin, limits, i, missing=True)
                if isinstance(r, np.ndarray):
                    got[i] = r
                    new += 1
                elif r is False:
                    return False
            if not new:
                break
        return True

    def _refined(self, gray: np.ndarray, got: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """The markers' integer corners refined as the detector refines them, by id (float64)."""
        ids = sorted(got)
        if not ids:
            return {}
        P = np.array([got[i] for i in ids], np.float32)  # (k, 4, 2)
        if self.params.cornerRefinementMethod == cv2.aruco.CORNER_REFINE_SUBPIX:
            self._refine(gray, P)
        P = P.astype(np.float64)
        return {i: P[k] for k, i in enumerate(ids)}

    def grain(self, gray: np.ndarray) -> float:
        """How grainy the frame is (`frame_grain` of every 32nd row)."""
        return frame_grain(gray[::32])

    def _in_crop(self, gray: np.ndarray, quad: np.ndarray, margin: float, limits: tuple[int, int], i: int,
                 missing: bool = False):
        """Marker i's integer corners (4, 2) float32 found by the detector in a crop round quad
        (margin sides and the pad clear of it); None if not there (False if twice, when missing)."""
        h, w = gray.shape[:2]
        # (on Python floats, each step rounded to the quad's own float type as NumPy rounds it, a
        # Python number meeting a float32 taken as float32: a dozen scalar NumPy calls fewer)
        r = _to_float32 if quad.dtype == np.float32 else float
        xs, ys = quad[:, 0].tolist(), quad[:, 1].tolist()
        lx, ly, hx, hy = min(xs), min(ys), max(xs), max(ys)
        side = max(r(hx - lx), r(hy - ly))
        m = margin * side + self.pad
        reach = 2 * side + 4  # candidates grouped with the marker lie within this of it
        mr = r(m)
        x0 = 0 if lx < r(reach) else max(0, math.floor(r(lx - mr)))
        y0 = 0 if ly < r(reach) else max(0, math.floor(r(ly - mr)))
        x1 = w if hx > r(w - 1 - reach) else min(w, math.ceil(r(hx + mr)) + 1)
        y1 = h if hy > r(h - 1 - reach) else min(h, math.ceil(r(hy + mr)) + 1)
        if x1 - x0 < 8 or y1 - y0 < 8:
            return None
        s = max(x1 - x0, y1 - y0)
        corners, ids, _ = self._crop_detector(limits, s).detectMarkers(gray[y0:y1, x0:x1])
        hits = [] if ids is None else [c for c, j in zip(corners, ids.reshape(-1).tolist()) if j == i]
        if len(hits) != 1:
            return False if missing and hits else None
        return hits[0].reshape(4, 2) + np.array([x0, y0], np.float32)

    def _refine(self, gray: np.ndarray, P: np.ndarray) -> None:
        """cornerSubPix on the markers' corners P (k, 4, 2) float32 (in place), each marker's window as
        the detector sets it: relativeCornerRefinmentWinSize x the mean module size (float32, as it
        sums them), within cornerRefinementWinSize."""
        d = P - P[:, _NEXT_CORNER]
        e = np.sqrt(d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1])
        size = (((e[:, 0] + e[:, 1]) + e[:, 2]) + e[:, 3]) / self.modules
        p = self.params
        wins = np.rint(np.float32(p.relativeCornerRefinmentWinSize) * size).astype(int).tolist()
        wins = [min(max(v, 1), p.cornerRefinementWinSize) for v in wins]
        if len(set(wins)) == 1:  # (the usual frame: one window for all, no rows picked out)
            pts = P.reshape(-1, 1, 2)
            cv2.cornerSubPix(gray, pts, (wins[0], wins[0]), (-1, -1), self.criteria)
            return
        wins = np.array(wins)
        for win in sorted(set(wins.tolist())):
            sel = np.flatnonzero(wins == win)
            pts = np.ascontiguousarray(P[sel].reshape(-1, 1, 2))
            cv2.cornerSubPix(gray, pts, (win, win), (-1, -1), self.criteria)
            P[sel] = pts.reshape(-1, 4, 2)


def _to_float32(v: float) -> float:
    """v rounded to the nearest float32 (as NumPy casts a Python float), as a Python float."""
    return float(np.float32(v))


_NEXT_CORNER = [1, 2, 3, 0]  # (np.roll(P, -1, axis=1) without its wrapper)


def correspondences(tray: Tray, found: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The tray's marker corners (mm) and where they were found (px), by marker id."""
    return _pairs(tray.markers, found)


def _pairs(markers_mm: Mapping[int, np.ndarray], found: Mapping[int, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    ids = tuple(sorted(i for i in found if i in markers_mm))
    if not ids:
        return np.empty((0, 2)), np.empty((0, 2)), ()
    obj = np.concatenate([np.asarray(markers_mm[i], np.float64) for i in ids])
    img = np.concatenate([np.asarray(found[i], np.float64) for i in ids])
    return obj, img, ids


def _lined_up(cfg: Mapping, obj: np.ndarray, img: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The marker corners that agree on one tray plane, and the homography of all the corners
    when it kept them all and found it (the one register would find again from the same
    corners), else None. A hand over part of a marker can leave it readable but pull one of its
    corners several pixels off, which would tilt the camera found; a corner that the others place
    `corner_outlier_px` away is left out (all of them are kept when fewer than two markers' worth
    would remain)."""
    tol = float(cfg.get("tray", {}).get("corner_outlier_px", 0.0))
    if tol <= 0 or len(obj) <= 8:
        return obj, img, None
    H, _ = cv2.findHomography(obj, img, 0)
    if H is not None and _largest_norm(apply_h(H, obj) - img) <= tol:
        return obj, img, H  # every corner fits: nothing to leave out
    _, inl = cv2.findHomography(obj, img, cv2.RANSAC, tol)
    keep = inl is not None and 8 <= int(inl.sum()) < len(obj)
    return (obj[inl.ravel() > 0], img[inl.ravel() > 0], None) if keep else (obj, img, H)


def _largest_norm(d: np.ndarray) -> float:
    """np.max(np.linalg.norm(d, axis=1)) of (N, 2) vectors (the same sums), without the wrappers."""
    s = d * d
    return float(np.sqrt(s[:, 0] + s[:, 1]).max())


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


def register(cfg: Mapping, tray: Tray, gray: np.ndarray, detector: MarkerFinder | None = None,
             grain: float | None = None) -> Registration:
    """Find the tray in a grayscale frame; raise TrayNotFound with a reason players understand.
    `grain`: the frame's, when the caller has measured it (detect_markers)."""
    det = detector or make_detector(cfg)
    found = detect_markers(det, gray, tray.markers, grain)
    obj, img, ids = correspondences(tray, found)
    min_markers = int(cfg.get("tray", {}).get("min_markers", 1))
    if len(ids) < min_markers:
        raise TrayNotFound(_why_not_found(det, tray, gray, found, ids))
    obj, img, H = _lined_up(cfg, obj, img)
    if H is None:
        H, _ = cv2.findHomography(obj, img, 0)
    if H is None:
        raise TrayNotFound("cannot find the tray: its markers do not line up")
    h, w = gray.shape[:2]
    f = float(cfg.get("camera", {}).get("focal_px") or 0)
    if f and cfg.get("camera", {}).get("width"):
        f *= w / float(cfg["camera"]["width"])  # the same camera at another resolution
    f = f or (focal_from_homography(H, w, h) or 0.9 * w)
    K = intrinsics(f, w, h)
    obj3 = np.zeros((len(obj), 3))
    obj3[:, :2] = obj
    img = np.asarray(img, np.float64)  # (float64 already from _pairs: no copies for the two solvers)
    ok, rvec, tvec = cv2.solvePnP(obj3, img, K, None, flags=cv2.SOLVEPNP_IPPE)
    if not ok:
        raise TrayNotFound("cannot find the tray: the camera pose does not fit its markers")
    rvec, tvec = cv2.solvePnPRefineLM(obj3, img, K, None, rvec, tvec)
    cam = Camera(K, rvec.reshape(3), tvec.reshape(3))
    sq = (cam.project(obj3) - img) ** 2
    err = math.sqrt(float((sq[:, 0] + sq[:, 1]).sum()) / len(sq))  # (np.sqrt(np.mean(np.sum(sq, axis=1))), written out)
    if cam.center[2] <= 0:
        raise TrayNotFound("cannot find the tray: the markers seem to be seen from below")
    max_err = float(cfg.get("tray", {}).get("max_reprojection_px", 6.0))
    if err > max_err:
        raise TrayNotFound(f"cannot find the tray: its markers are {err:.1f} px off (is the sheet flat and the right one?)")
    return Registration(H / H[2, 2], cam, ids, err)


def _why_not_found(det: MarkerFinder, tray: Tray, gray: np.ndarray, found: Mapping[int, np.ndarray],
                   ids: Collection[int]) -> str:
    """Why a frame shows too few of the tray's markers, in the words a player can act on.

    Set-up mistakes look like a covered tray: a picture too small, almost black or washed out; a
    camera set to mirror its picture (a webcam's or picamera2's flip setting; no marker reads
    mirrored); and a tray sheet other than the one tray.json describes (two markers or more seen,
    none with the tray's ids). They are looked for only when no marker of the tray is seen at all, so a
    frame with hands over the corners pays nothing."""
    n = len(tray.markers)
    if ids:
        return f"cannot find the tray: only {len(ids)} of the tray's {n} markers are visible (uncover the tray corners)"
    h, w = gray.shape[:2]
    if min(h, w) < 120:
        return f"cannot find the tray: the picture is only {w}x{h} pixels, too small to read its markers (use 640x480)"
    mean, std = (float(v[0][0]) for v in cv2.meanStdDev(gray))
    if mean < 20:
        return "cannot find the tray: the picture is almost black (is the lens covered, or the light off?)"
    if mean > 235 and std < 12:
        return "cannot find the tray: the picture is washed out (too much light on the camera: lower its exposure)"
    others = sorted(i for i in found if i not in tray.markers)
    if len(others) >= 2:  # (one stray id is noise read as a marker: 1 photo of 1,720 showed one)
        mine = ", ".join(str(i) for i in sorted(tray.markers))
        theirs = ", ".join(str(i) for i in others)
        return (f"cannot find the tray: the markers seen ({theirs}) are not this tray's ({mine}): "
                "is the tray sheet the one its tray.json describes?")
    mirrored = _detect(det.fast, np.ascontiguousarray(gray[:, ::-1]))
    if sum(i in tray.markers for i in mirrored) >= 2:  # (as for other ids: one could be noise)
        return ("cannot find the tray: the picture is mirrored (the camera's flip setting): "
                "turn mirroring off, or flip it both ways")
    return "cannot find the tray: none of the tray's markers are visible (uncover the tray corners)"


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
