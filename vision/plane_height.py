"""The top face's height, searched on the tray plane: one warp, then every candidate is a scaling.

Seen from the camera centre C, the horizontal plane at height z lands on the tray plane scaled
by k = Cz / (Cz - z) about the nadir (Cx, Cy). So the frame is rectified onto the tray plane once
(only the region any candidate face can cover), and the top face at every candidate height is
an axis-aligned square there: probing a candidate is an index computation, not a projection of
points through the camera and a gather from the whole frame. The scores follow the image-space
ones in `top_level` (outline steps, slot-boundary pattern, band inside not bare tray), plus one
against heights too low: past the sides whose walls the camera cannot see, the top's outline
has the tray (or a hand) beside it, not more of the top face.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping, Sequence

import cv2
import numpy as np

from vision import top_level as tl
from vision.geometry import Camera, intrinsics
from vision.kit import Tray
from vision.memo import memoised, memoised_many
from vision.patch_features import median_along
from vision.tray import Registration, h_inverse

SIDE_NORMALS = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float64)  # +x, -x, +y, -y


@dataclass(frozen=True)
class PlaneView:
    """The frame rectified onto the tray plane, with what the probes read from it."""

    img: np.ndarray      # lightly smoothed 8-bit BGR
    # (4, H + 2, W + 2) colour step along x, along y, and each at its best within the window (uint16
    # sums) at img's pixels, with a zero border one pixel wide: what a probe outside the view reads
    # (planes, each made in place: interleaving them cost a pass over all four)
    steps: np.ndarray
    ppm: float           # pixels per tray mm
    x0: float            # tray mm of column 0
    y1: float            # tray mm of row 0 (rows go south, -y)
    nadir: np.ndarray    # (2,) the camera centre's foot on the tray, mm
    cam_z: float         # the camera centre's height over the tray, mm
    hidden: np.ndarray   # (4,) sides whose walls this camera cannot see (hidden_sides)
    sheet: np.ndarray | None = None  # (x0, y0, x1, y1) mm of the tray sheet, where "bare" means the tray
    table_bgr: np.ndarray | None = None  # the table's colour round the sheet in this frame (table_colour)
    # the height scores' constants on this view (_step_plan, _colour_plan), made once: a frame
    # scores four or more batches of candidates on one view
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def lift(self, pts: np.ndarray, zs: np.ndarray, nadirs: np.ndarray | None = None,
             cam_zs: np.ndarray | None = None) -> np.ndarray:
        """(M, 2) points of a plane at each height in zs -> (Z, M, 2) tray-plane mm where they
        appear; per candidate camera centres (nadirs (Z, 2), cam_zs (Z,)) when given."""
        N = self.nadir[None] if nadirs is None else np.asarray(nadirs, dtype=np.float64)
        cz = self.cam_z if cam_zs is None else np.asarray(cam_zs, dtype=np.float64)
        k = cz / (cz - np.asarray(zs, dtype=np.float64))
        return N[:, None, :] + (np.asarray(pts, dtype=np.float64)[None] - N[:, None, :]) * k[:, None, None]

    def on_sheet(self, mm: np.ndarray) -> np.ndarray:
        """Whether tray-plane points (..., 2) lie on the tray sheet (all, without a sheet set)."""
        if self.sheet is None:
            return np.ones(mm.shape[:-1], bool)
        x0, y0, x1, y1 = self.sheet
        return (mm[..., 0] >= x0) & (mm[..., 0] <= x1) & (mm[..., 1] >= y0) & (mm[..., 1] <= y1)

    def index(self, mm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tray mm (..., 2) -> flat pixel index (clipped into the view) and whether it is inside."""
        h, w = self.img.shape[:2]
        c = np.rint((mm[..., 0] - self.x0) * self.ppm).astype(np.int32)
        r = np.rint((self.y1 - mm[..., 1]) * self.ppm).astype(np.int32)
        inside = (c >= 0) & (c < w) & (r >= 0) & (r < h)
        return np.clip(r, 0, h - 1) * w + np.clip(c, 0, w - 1), inside

    def lift_index(self, pts: np.ndarray, zs: np.ndarray, nadirs: np.ndarray | None = None,
                   cam_zs: np.ndarray | None = None, grid: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
        """index(lift(...)) in one pass: (Z, M) flat pixel indices and whether each is inside, of
        this view or of another tray-plane grid (x0, y1, ppm, h, w)."""
        return _Lift(self, pts, zs, nadirs, cam_zs).index(grid or (self.x0, self.y1, self.ppm, *self.img.shape[:2]))


class _Lift:
    """Points of a plane at candidate heights, lifted onto the tray plane (PlaneView.lift_index's
    arithmetic), for indexing several grids and testing the sheet: the products shared by grids
    of the same scale are made once."""

    def __init__(self, pv: PlaneView, pts: np.ndarray, zs: np.ndarray, nadirs: np.ndarray | None,
                 cam_zs: np.ndarray | None):
        self.pv = pv
        cz = pv.cam_z if cam_zs is None else np.asarray(cam_zs, dtype=np.float64)
        self.k = cz / (cz - np.asarray(zs, dtype=np.float64))
        self.pts = np.asarray(pts, dtype=np.float64)
        self.n = pv.nadir if nadirs is None else np.asarray(nadirs, dtype=np.float64)
        self.one = nadirs is None
        self._scaled: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def _products(self, ppm: float) -> tuple[np.ndarray, np.ndarray]:
        """The k-scaled offsets from the nadir, along x and (y flipped) along y, at ppm."""
        got = self._scaled.get(ppm)
        if got is None:
            k, pts, n = self.k, self.pts, self.n
            if self.one:  # one centre: each coordinate is a + k b
                got = (np.multiply.outer(k, (pts[:, 0] - n[0]) * ppm), np.multiply.outer(k, (n[1] - pts[:, 1]) * ppm))
            else:
                kp = (k * ppm)[:, None]
                got = ((pts[None, :, 0] - n[:, 0, None]) * kp, (n[:, 1, None] - pts[None, :, 1]) * kp)
            self._scaled[ppm] = got
        return got

    def index(self, grid: tuple, channels: int = 1, channel: np.ndarray | None = None,
              clip: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(Z, M) flat pixel indices into a tray-plane grid (x0, y1, ppm, h, w), clipped, and
        whether each is inside; with `channels`, indices into its values (pixel x channels plus
        `channel` (M,), the channel each point reads). Without `clip`, a point outside gets
        index 0 instead of its nearest pixel's (for callers that mask those out)."""
        x0, y1, ppm, h, w = grid
        pc, pr = self._products(float(ppm))
        n = self.n
        if self.one:
            c = pc + (n[0] - x0) * ppm
            r = pr + (y1 - n[1]) * ppm
        else:
            c = pc + ((n[:, 0] - x0) * ppm)[:, None]
            r = pr + ((y1 - n[:, 1]) * ppm)[:, None]
        ci = np.rint(c, out=c).astype(np.int32)
        ri = np.rint(r, out=r).astype(np.int32)
        if not clip:  # (inside: 0 <= i < n, one unsigned test; far off, the cast's INT_MIN is outside)
            inside = ci.view(np.uint32) < w
            inside &= ri.view(np.uint32) < h
            flat = _flat_index(ri, ci, w, channels, channel)
            flat *= inside
            return flat, inside
        cc = np.clip(ci, 0, w - 1)  # (on these sizes one pass beats np.maximum and np.minimum)
        rc = np.clip(ri, 0, h - 1)
        inside = cc == ci
        inside &= rc == ri
        return _flat_index(rc, cc, w, channels, channel), inside

    def on_sheet(self) -> np.ndarray:
        """PlaneView.on_sheet of PlaneView.lift's points."""
        pv = self.pv
        if pv.sheet is None:
            return np.ones((len(self.k), len(self.pts)), bool)
        # lift's n + (p - n) k is n plus the products at one pixel per mm (and n - (n - p) k along y;
        # shared with the indices of a grid at one pixel per mm)
        pc, pr = self._products(1.0)
        n = self.n
        if self.one:
            x = n[0] + pc
            y = n[1] - pr
        else:
            x = n[:, 0, None] + pc
            y = n[:, 1, None] - pr
        x0, y0, x1, y1 = pv.sheet
        return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def _entries(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A lifting table's entries (_table) for points with the distinct xs and ys: the xs then
    the ys negated, and which coordinate each entry is (0: x, 1: y)."""
    return (np.concatenate([xs, -ys]),
            np.concatenate([np.zeros(len(xs), np.intp), np.ones(len(ys), np.intp)]))


@dataclass(frozen=True)
class _Table:
    """Points of a plane lifted onto tray-plane grids, as one table per batch of candidates: a
    point's column depends on its x alone and its row on its y, so the table holds the distinct
    x (pixel coordinates along x) and the distinct y (along y, flipped), each what _Lift works
    out for it, and a point's values are gathered from its x's entry and its y's. For grid g,
    entry j, a candidate of scale k: k u[g, j] + off[g, j] for the view's camera centre; for a
    centre n of its own, (a[j] - n'[j]) k ppm[g] + (n'[j] - b[g, j]) ppm[g], with n' = n_x at
    the x entries and -n_y at the y ones (the y entries are worked out negated, a and b
    too: -(p - q) is q - p exactly)."""

    u: np.ndarray      # (G, D) the view's centre: (a - n') ppm
    off: np.ndarray    # (G, D) the view's centre: (n' - b) ppm
    a: np.ndarray      # (D,) the distinct x, then the distinct y negated
    b: np.ndarray      # (G, D) each grid's x0 at the x entries, -y1 at the y ones
    ppm: np.ndarray    # (G, 1) each grid's pixels per mm
    ny: np.ndarray     # (D,) 0 at the x entries, 1 at the y ones


_FLIP_Y = np.array([1.0, -1.0])


def _table(pv: PlaneView, a: np.ndarray, ny: np.ndarray, grids: list[tuple]) -> _Table:
    """A _Table's constants on this view for the entries (a, ny) (_entries) and grids (x0, y1,
    ppm); a sheet test is a grid at one pixel per mm whose x0 and y1 are 0."""
    n = (pv.nadir * _FLIP_Y).take(ny)
    ppm = np.array([[float(g[2])] for g in grids])
    b = np.array([[float(g[0]), -float(g[1])] for g in grids]).take(ny, axis=1)
    u = a - n
    u = u * ppm
    off = n - b
    off *= ppm
    return _Table(u, off, a, b, ppm, ny)


def _table_values(t: _Table, k: np.ndarray, nadirs: np.ndarray | None) -> np.ndarray:
    """(Z, G, D) pixel coordinates (not rounded) of the table's entries for candidates of scale k
    (per candidate centres `nadirs`, (Z, 2), when given)."""
    if nadirs is None:
        v = np.multiply.outer(k, t.u)
        v += t.off
        return v
    n = (nadirs * _FLIP_Y).take(t.ny, axis=1)[:, None, :]  # (Z, 1, D)
    v = (t.a - n) * np.multiply.outer(k, t.ppm)  # (Z, G, D): k ppm (Z, G, 1)
    n = n - t.b
    n *= t.ppm
    v += n
    return v


@dataclass(frozen=True)
class _StepPlan:
    """PlaneView.steps' flat indices of the step probes on one view (height_scores), from a
    _Table of one entry per distinct x and channel and one per distinct y: each entry rounded,
    clipped onto the border (a point outside the view reads its 0, with no mask to apply) and
    times its stride, plus its channel, is its part of a probe's index. Kept transposed (one row
    per entry): the gather of the probes' parts then takes whole rows, a quarter of the time of
    taking columns."""

    u: np.ndarray      # (D,) _Table's, transposed
    off: np.ndarray    # (D, 1)
    a: np.ndarray      # (D, 1)
    b: np.ndarray      # (D, 1)
    ppm: float
    ny: np.ndarray     # (D,)
    top: np.ndarray    # (D, 1) int32: w at the x entries, h at the y ones (clipped into -1..top)
    mul: np.ndarray    # (D, 1) int32: a column's stride (1), a row's (w + 2)
    add: np.ndarray    # (D, 1) int32: the border's pixel, plus an x entry's channel's plane
    at: np.ndarray     # (2 P,) each probe's x entry, then each probe's y entry


def _step_plan(pv: PlaneView, pr: Probes) -> _StepPlan:
    """_StepPlan of the view and probes (made once per view)."""
    def make() -> _StepPlan:
        a, ny, channel, at = pr.step_entries
        t = _table(pv, a, ny, [(pv.x0, pv.y1, pv.ppm)])
        h, w = pv.img.shape[:2]
        top = np.array([w, h], np.int32).take(ny)[:, None]
        mul = np.array([1, w + 2], np.int32).take(ny)[:, None]
        return _StepPlan(t.u[0], t.off.T, a[:, None], t.b.T, float(pv.ppm), ny, top, mul,
                         mul + channel * ((h + 2) * (w + 2)), at)
    return memoised(pv.memo, "steps", (pr,), make)


def _step_indices(plan: _StepPlan, k: np.ndarray, nadirs: np.ndarray | None) -> np.ndarray:
    """(P, Z) flat indices into PlaneView.steps (bordered by one pixel) of the step probes for
    candidates of scale k (per candidate centres `nadirs` when given): _Lift.index's pixels,
    clipped onto the border instead of into the view. (One row per probe: each probe part of
    the score then reads whole rows.)"""
    if nadirs is None:
        v = np.multiply.outer(plan.u, k)
        v += plan.off
    else:
        n = (nadirs * _FLIP_Y).T.take(plan.ny, axis=0)  # (D, Z)
        v = plan.a - n
        v *= k * plan.ppm
        n -= plan.b
        n *= plan.ppm
        v += n
    np.rint(v, out=v)
    t = v.astype(np.int32)  # (far off, the cast's INT_MIN: clipped onto the border)
    np.minimum(t, plan.top, out=t)  # (np.clip with array bounds: twice the time)
    np.maximum(t, -1, out=t)
    t *= plan.mul
    t += plan.add
    both = t.take(plan.at, axis=0)
    p = len(plan.at) // 2
    out = both[:p]
    out += both[p:]
    return out


def _flat_index(r: np.ndarray, c: np.ndarray, w: int, channels: int, channel: np.ndarray | None) -> np.ndarray:
    """Row and column (int32, reused in place) -> flat index into an (h, w, channels) array."""
    r *= w * channels
    if channels != 1:
        c *= channels
    r += c
    if channel is not None:
        r += channel
    return r


def colour_steps(img: np.ndarray, o: int, win: int) -> np.ndarray:
    """PlaneView.steps of the smoothed view img: (4, h + 2, w + 2) uint16, the summed absolute
    colour difference between the pixels o to either side along x, then along y (the exact
    integer sums; 0 where the other pixel lies outside), then each at its best within win pixels
    along its own axis, all with a zero border one pixel wide. (Each plane is written in place:
    bordered copies and an interleaving pass over all four cost some 0.1 ms a frame.)"""
    h, w = img.shape[:2]
    out = np.empty((4, h + 2, w + 2), np.uint16)
    sx, sy = out[0], out[1]
    # the border, and where the other pixel lies outside (slices: a third of a list index's time)
    sx[0] = 0
    sx[-1] = 0
    sx[:, :o + 1] = 0
    sx[:, w + 1 - o:] = 0
    sy[:o + 1] = 0
    sy[h + 1 - o:] = 0
    sy[:, 0] = 0
    sy[:, -1] = 0
    # each channel's steps from the view split once, not each step image (~16 us a view less)
    b, g, r = cv2.split(img)
    at = sx[1:h + 1, o + 1:w + 1 - o]
    np.add(cv2.absdiff(b[:, 2 * o:], b[:, :w - 2 * o]), cv2.absdiff(g[:, 2 * o:], g[:, :w - 2 * o]), out=at, dtype=np.uint16)
    at += cv2.absdiff(r[:, 2 * o:], r[:, :w - 2 * o])
    at = sy[o + 1:h + 1 - o, 1:w + 1]
    np.add(cv2.absdiff(b[2 * o:], b[:h - 2 * o]), cv2.absdiff(g[2 * o:], g[:h - 2 * o]), out=at, dtype=np.uint16)
    at += cv2.absdiff(r[2 * o:], r[:h - 2 * o])
    # the dilation reads the border as the 0 it is (as it reads beyond the image), but reaches into it
    _window_max(sx, out[2], win, 1)
    _window_max(sy, out[3], win, 0)
    return out


def _window_max(src: np.ndarray, dst: np.ndarray, win: int, axis: int) -> np.ndarray:
    """dst = src (bordered by one pixel) at its best within win pixels along axis, with a zero
    border (in place): cv2.dilate by a line of 2 win + 1. At win 1 the line lies within the
    bordered array for every pixel inside, so it is two cv2.max of src's shifted views (the
    same maxima; some 60% of the dilation's time, whose filter set-up is most of it)."""
    if win != 1:
        kernel = np.ones((1, 2 * win + 1) if axis == 1 else (2 * win + 1, 1), np.uint8)
        return _zero_border(cv2.dilate(src, kernel, dst=dst))
    at = dst[1:-1, 1:-1]
    if axis == 1:
        cv2.max(src[1:-1, :-2], src[1:-1, 1:-1], dst=at)
        cv2.max(at, src[1:-1, 2:], dst=at)
    else:
        cv2.max(src[:-2, 1:-1], src[1:-1, 1:-1], dst=at)
        cv2.max(at, src[2:, 1:-1], dst=at)
    return _zero_border(dst)


def _zero_border(a: np.ndarray) -> np.ndarray:
    """a with its outermost rows and columns set to 0 (in place)."""
    a[0] = 0
    a[-1] = 0
    a[:, 0] = 0
    a[:, -1] = 0
    return a


def plane_view(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, z_lo: float, z_hi: float,
               bgra: np.ndarray | None = None) -> PlaneView:
    """Rectify the region every candidate top face (heights z_lo..z_hi) can cover, plus a margin
    for the probes, clipped to the tray, and take its colour steps. `bgra`: the frame as BGRA
    (top_level.frame_bgra), when the caller has made it for the frame's crops too: warped as it is."""
    ac = cfg["align"]
    ppm = float(ac["plane_px_per_mm"])
    C = reg.camera.center
    nadir, cz = np.asarray(C[:2], dtype=np.float64), float(C[2])
    # clipped to the tray and (align.plane_beyond_tray_mm) some way past it, where a tall face seen
    # from aside can hang out over the table, and to what the frame shows
    lo, hi = _view_box(tray, nadir, cz, float(z_lo), float(z_hi), float(ac["plane_margin_mm"]),
                       _grown(tray, float(ac.get("plane_beyond_tray_mm", 0.0))), _seen_box(reg, img.shape))
    x0, y1 = float(lo[0]), float(hi[1])
    w = max(8, int(np.ceil((hi[0] - lo[0]) * ppm)))
    h = max(8, int(np.ceil((hi[1] - lo[1]) * ppm)))
    A = np.array([[1 / ppm, 0, x0], [0, -1 / ppm, y1], [0, 0, 1]])
    warped = _warp_bgr(img, reg.H @ A, (w, h)) if bgra is None else tl.warp_frame(bgra, reg.H @ A, (w, h))
    smooth = tl.edge_image(warped)
    steps = colour_steps(smooth, max(1, int(round(float(cfg["top"]["probe_mm"]) * ppm))),
                         max(1, int(round(float(ac["window_mm"]) * ppm))))
    sm = ac.get("sheet_margin_mm")  # how far past the markers the tray sheet surely reaches
    sheet = None if sm is None else _extent_grown(tray, float(sm))
    table = table_colour(cfg, tray, reg, img) if sheet is not None else None
    return PlaneView(smooth, steps, ppm, x0, y1, nadir, cz, hidden_sides(tray, nadir), sheet, table)


def _view_box(tray: Tray, nadir: np.ndarray, cz: float, z_lo: float, z_hi: float, m: float,
              ex: tuple[float, float, float, float], seen: np.ndarray) -> tuple[tuple, tuple]:
    """The plane view's box (lo (x, y), hi (x, y), mm): the footprint square grown by m, as the
    heights z_lo and z_hi show it, within `ex` and the frame's `seen` box grown by m. (On Python
    floats, the same IEEE steps as on NumPy's arrays of the eight corners; NumPy's where a value
    is NaN, whose min and max NumPy propagates.)"""
    if cz != z_lo and cz != z_hi:  # (else NumPy's division by zero, which gives inf)
        nx, ny = nadir.tolist()
        r = tray.footprint_half + m
        cx, cy = (float(v) for v in tray.tower_center)
        ks = (cz / (cz - z_lo), cz / (cz - z_hi))
        xs = [nx + (x - nx) * k for k in ks for x in (-r + cx, r + cx)]  # (corners * (half + m) + c, lifted)
        ys = [ny + (y - ny) * k for k in ks for y in (-r + cy, r + cy)]
        sx0, sy0, sx1, sy1 = seen.tolist()
        if all(v == v for v in xs + ys + [sx0, sy0, sx1, sy1, *ex]):
            return ((max(min(xs), max(ex[0], sx0) - m), max(min(ys), max(ex[1], sy0) - m)),
                    (min(max(xs), min(ex[2], sx1) + m), min(max(ys), min(ex[3], sy1) + m)))
    c = np.asarray(tray.tower_center, dtype=np.float64)
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], dtype=np.float64) * (tray.footprint_half + m) + c
    k = cz / (cz - np.array([z_lo, z_hi]))
    spread = (nadir + (corners[None] - nadir) * k[:, None, None]).reshape(-1, 2)
    ex_a = np.array(ex)
    lo = np.maximum(spread.min(axis=0), np.maximum(ex_a[:2], seen[:2]) - m)
    hi = np.minimum(spread.max(axis=0), np.minimum(ex_a[2:], seen[2:]) + m)
    return (float(lo[0]), float(lo[1])), (float(hi[0]), float(hi[1]))


def _warp_bgr(img: np.ndarray, M: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """cv2.warpPerspective (linear, inverse map, border replicated) of an 8-bit BGR frame, the
    same pixels, through BGRA: OpenCV 5 warps four channels in about half the time of three
    (each channel is interpolated alone), so on a view this large (some 80 000 pixels) the two
    conversions cost well under what the fourth channel saves (top_level.warp_frame)."""
    bgr8 = img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8
    return tl.warp_frame(tl.frame_bgra(img) if bgr8 else img, M, size)


def _extent_grown(tray: Tray, mm: float) -> np.ndarray:
    """The markers' extent (min x, min y, max x, max y) grown by mm on every side."""
    return np.array(_grown(tray, mm))


def _grown(tray: Tray, mm: float) -> tuple[float, float, float, float]:
    """_extent_grown as Python floats (the same sums: a + (-1 mm) is a - mm exactly; one NumPy
    call a box, not four)."""
    x0, y0, x1, y1 = tray.extent()
    return x0 - mm, y0 - mm, x1 + mm, y1 + mm


def table_colour(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray) -> np.ndarray | None:
    """The table's colour in this frame: the median of a ring round the tray sheet
    (align.table_ring_mm out from the markers' extent), None when too little of it is in view.
    Why: a tall face seen from aside hangs out over the table, and a square of table there is
    no top face, whatever the tray model says (it never saw the table in this light)."""
    r = cfg["align"].get("table_ring_mm")
    if not r:
        return None
    uv = cv2.perspectiveTransform(_table_ring(_grown(tray, float(r))),
                                  np.asarray(reg.H, dtype=np.float64))  # (1, 96, 2)
    h, w = img.shape[:2]
    # the points in the image, both bounds inclusive (one inRange, not four comparisons and three ands)
    at = cv2.inRange(uv, (0.0, 0.0), (w - 1.0, h - 1.0))[0].nonzero()[0]
    if len(at) < 12:
        return None
    uv = uv[0].take(at, axis=0).round().astype(np.int32)  # (round: np.rint, without its wrapper)
    return median_along(img[uv[:, 1], uv[:, 0]].astype(np.float32), axis=0)  # (np.median, without its overhead)


_RINGS: dict = {}


def _table_ring(box: tuple[float, float, float, float]) -> np.ndarray:
    """(1, 96, 2) points round the box (x0, y0, x1, y1), 24 a side (read-only, made once per box)."""
    ring = _RINGS.get(box)
    if ring is None:
        x0, y0, x1, y1 = box
        t = np.linspace(0.0, 1.0, 24, endpoint=False)
        ring = np.concatenate([np.column_stack([x0 + (x1 - x0) * t, np.full_like(t, y0)]),
                               np.column_stack([np.full_like(t, x1), y0 + (y1 - y0) * t]),
                               np.column_stack([x1 - (x1 - x0) * t, np.full_like(t, y1)]),
                               np.column_stack([np.full_like(t, x0), y1 - (y1 - y0) * t])])[None].astype(np.float64)
        ring.flags.writeable = False
        if len(_RINGS) < 64:
            _RINGS[box] = ring
    return ring


def _seen_box(reg: Registration, shape: tuple) -> np.ndarray:
    """The box on the tray plane (min x, min y, max x, max y, mm) that the frame shows (unbounded
    when the horizon is in view)."""
    h, w = shape[:2]
    corners = np.array([[0, 0, 1], [w, 0, 1], [w, h, 1], [0, h, 1]], dtype=np.float64)
    p = corners @ h_inverse(reg).T
    (x0, y0, w0), (x1, y1, w1), (x2, y2, w2), (x3, y3, w3) = p.tolist()
    total = w0 + w1 + w2 + w3  # (the sign of the weights' mean, as NumPy sums them)
    if math.isfinite(total):  # (the four corners on Python floats: the same IEEE arithmetic)
        sign = (total > 0) - (total < 0)
        if min(w0 * sign, w1 * sign, w2 * sign, w3 * sign) <= 1e-9:
            return np.array([-np.inf, -np.inf, np.inf, np.inf])
        xs, ys = (x0 / w0, x1 / w1, x2 / w2, x3 / w3), (y0 / w0, y1 / w1, y2 / w2, y3 / w3)
        return np.array([min(xs), min(ys), max(xs), max(ys)])
    if np.any(p[:, 2] * np.sign(p[:, 2].mean()) <= 1e-9):
        return np.array([-np.inf, -np.inf, np.inf, np.inf])
    xy = p[:, :2] / p[:, 2:]
    return np.concatenate([xy.min(axis=0), xy.max(axis=0)])


def _square(tray: Tray, n: int, off: float) -> tuple[np.ndarray, np.ndarray]:
    """n points along each side of the footprint square (+x, -x, +y, -y), `off` mm outwards, with their normals."""
    half = tray.footprint_half
    c = np.asarray(tray.tower_center, dtype=np.float64)
    t = np.linspace(-0.8 * half, 0.8 * half, n)
    P, N = [], []
    for nrm in SIDE_NORMALS:
        tan = np.array([-nrm[1], nrm[0]])
        P.append(c + (half + off) * nrm + t[:, None] * tan)
        N.append(np.broadcast_to(nrm, (n, 2)))
    return np.concatenate(P), np.concatenate(N)


def hidden_sides(tray: Tray, nadir: np.ndarray) -> np.ndarray:
    """(4,) which sides of the footprint (+x, -x, +y, -y) have walls the camera cannot see: past
    such a side's top edge the camera looks down beside the tower, at the tray or a hand."""
    (nx, ny), (cx, cy) = np.asarray(nadir, dtype=np.float64).tolist(), tray.tower_center
    dx, dy, half = nx - float(cx), ny - float(cy), tray.footprint_half
    if math.isfinite(dx) and math.isfinite(dy):  # (SIDE_NORMALS @ d, whose rows pick +-dx and +-dy)
        return np.array([dx < half, -dx < half, dy < half, -dy < half])
    return (SIDE_NORMALS @ (np.asarray(nadir) - np.asarray(tray.tower_center, dtype=np.float64))) < tray.footprint_half


@dataclass(frozen=True)
class _EdgeGroups:
    """The step probes' rows that the edge fit averages, as groups of one run (make_probes lays
    them so): the outline's four sides, then the reference probes."""

    starts: np.ndarray  # (5,) each group's first row (np.add.reduceat's indices)
    counts: np.ndarray  # (5, 1) float32: each group's rows (a mean is its sum over them, as np.mean)
    stop: int           # the run's end (the reference's)


@dataclass(frozen=True)
class Probes:
    """Every point the height score reads, on the face (mm), and which step channel each reads,
    with what the score needs of them that does not change from frame to frame."""

    pts: np.ndarray        # (M, 2)
    channel: np.ndarray    # (M,) 0/1: step along x / y; 2/3: the same at its best in the window; -1: colour
    n: int                 # points per side
    parts: dict            # name -> slice of pts
    n_steps: int = 0       # the step probes come first: pts[:n_steps]
    pattern_w: np.ndarray | None = None    # (10, P) segment strengths -> occupancy pattern scores
    pattern_off: np.ndarray | None = None  # (P,)

    @cached_property
    def edge_groups(self) -> _EdgeGroups:
        """_EdgeGroups of these probes."""
        o, r = self.parts["outline"], self.parts["reference"]
        assert o.start == 0 and o.stop == r.start and o.stop - o.start == 4 * self.n, \
            "the outline's four sides first, then the reference probes"
        return _EdgeGroups(np.append(self.n * np.arange(4), r.start),
                           np.array([[self.n]] * 4 + [[r.stop - r.start]], np.float32), r.stop)

    @cached_property
    def step_entries(self) -> tuple[np.ndarray, ...]:
        """The step probes as a lifting table's entries (_table): one per distinct x and channel,
        then one per distinct y, as (a, ny) of _entries, each x entry's channel ((D, 1) int32, 0
        at the y entries) and (2 P,) each probe's x entry, then each probe's y entry."""
        pts = np.asarray(self.pts[:self.n_steps], dtype=np.float64)
        xc, ix = np.unique(np.column_stack([pts[:, 0], self.channel[:self.n_steps]]), axis=0, return_inverse=True)
        ys, iy = np.unique(pts[:, 1], return_inverse=True)
        a, ny = _entries(xc[:, 0], ys)
        channel = np.concatenate([xc[:, 1], np.zeros(len(ys))]).astype(np.int32)[:, None]
        return a, ny, channel, np.concatenate([ix.reshape(-1), len(xc) + iy.reshape(-1)])

    @cached_property
    def colour_entries(self) -> tuple[np.ndarray, ...]:
        """The colour probes (band, then outside) as a lifting table's entries (_table): (a, ny)
        of _entries, (3, 2, M) each probe's x entry and y entry in a table of three grids
        (flattened: (3 D,)), and (M,) each outside probe's side (-1 at the band's)."""
        band, outside = self.parts["band"], self.parts["outside"]
        pts = np.asarray(self.pts[band.start:outside.stop], dtype=np.float64)
        nb = band.stop - band.start
        assert len(pts) == 2 * nb and nb % 4 == 0, "as many outside probes as band probes, a quarter a side"
        xs, ix = np.unique(pts[:, 0], return_inverse=True)
        ys, iy = np.unique(pts[:, 1], return_inverse=True)
        a, ny = _entries(xs, ys)
        side = np.concatenate([np.full(nb, -1), np.repeat(np.arange(4), nb // 4)])
        at = np.stack([ix.reshape(-1), len(xs) + iy.reshape(-1)])
        return a, ny, at[None] + len(a) * np.arange(3)[:, None, None], side


def make_probes(cfg: Mapping, tray: Tray) -> Probes:
    """The probe points for a tray and config (the same for every frame: build once)."""
    ac = cfg["align"]
    n = int(ac["probes_per_side"])
    ref = float(ac["reference_mm"])
    groups = {}
    P, N = _square(tray, n, 0.0)
    groups["outline"] = (P, 2 + (np.abs(N[:, 1]) > 0.5))
    Pi, Ni = _square(tray, n, -ref)
    Po, No = _square(tray, n, ref)
    groups["reference"] = (np.concatenate([Pi, Po]), (np.abs(np.concatenate([Ni, No])[:, 1]) > 0.5).astype(int))
    for o in tl.ORIENTS:
        seg = tl.slot_segments(tray, o, int(cfg["top"]["samples_per_segment"]))
        S, K, _ = seg.pts.shape
        groups[f"segments_{o}"] = (seg.pts.reshape(-1, 2), (np.abs(np.repeat(seg.normal, K, axis=0)[:, 1]) > 0.5).astype(int))
    nc = int(ac["colour_probes_per_side"])
    Pb, _ = _square(tray, nc, -float(ac["band_inset_mm"]))
    groups["band"] = (Pb, np.full(len(Pb), -1))
    Pu, _ = _square(tray, nc, float(ac["outside_band_mm"]))
    groups["outside"] = (Pu, np.full(len(Pu), -1))
    parts, start = {}, 0
    for name, (p, _) in groups.items():
        parts[name] = slice(start, start + len(p))
        start += len(p)
    channel = np.concatenate([np.asarray(g[1], int) for g in groups.values()])
    n_steps = int((channel >= 0).sum())
    assert (channel[:n_steps] >= 0).all(), "the step probes come first"
    Wm, off = tl._pattern_weights(cfg)
    return Probes(np.concatenate([g[0] for g in groups.values()]), channel, n, parts, n_steps, Wm, off)


def height_scores(cfg: Mapping, tray: Tray, pv: PlaneView, pr: Probes, zs: np.ndarray, tray_bgr: np.ndarray | None,
                  bg=None, gains: np.ndarray | None = None, nadirs: np.ndarray | None = None,
                  cam_zs: np.ndarray | None = None, within: float | None = None) -> np.ndarray:
    """Per candidate height: the outline's edge fit plus the best slot-boundary pattern (each
    scaled by its best over the candidates), times the checks that the band just inside the
    square is not bare tray (against heights too high) and the band past its hidden-wall sides is
    (against heights too low).

    With `within`, only the candidates that can score within that fraction of the best are
    scored in full and the others get -inf: the colour checks can only lower a score, so they are
    taken best edge fit first until no candidate left could reach it (most frames need one or
    two of some forty). The best and every candidate within `within` of it score as without."""
    k, nadirs, sc = _edge_fit(cfg, pv, pr, zs, nadirs, cam_zs)
    if tray_bgr is None:
        return sc
    return _checked(cfg, pv, pr, k, nadirs, sc, tray_bgr, bg, gains, within)


def _edge_fit(cfg: Mapping, pv: PlaneView, pr: Probes, zs: np.ndarray, nadirs: np.ndarray | None,
              cam_zs: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """height_scores before the colour checks: each candidate's scale k, its centre (nadirs as
    float64, or None) and its edge-fit score (the outline's fit plus the best pattern)."""
    ac = cfg["align"]
    zs = np.asarray(zs, dtype=np.float64)
    Z = len(zs)
    cz = pv.cam_z if cam_zs is None else np.asarray(cam_zs, dtype=np.float64)
    k = cz / (cz - zs)  # each candidate's scale on the tray plane (_Lift's)
    if nadirs is not None:
        nadirs = np.asarray(nadirs, dtype=np.float64)
    # (take: a third faster than [at]; a probe outside the view reads the steps' zero border)
    raw = pv.steps.reshape(-1).take(_step_indices(_step_plan(pv, pr), k, nadirs))  # (P, Z)
    # means as sum / count (what np.mean computes, without its per-call overhead); the steps are
    # integers, whose float32 sums (under 2^24) are exact in any order, down the probes' rows too:
    # the four sides' and the reference's in one call (np.add.reduceat, _EdgeGroups)
    eg = pr.edge_groups
    means = np.add.reduceat(raw[:eg.stop].astype(np.float32), eg.starts, axis=0)
    means /= eg.counts
    sides, ref_v = means[:4], means[4]  # (4, Z), (Z,)
    w2 = float(ac["second_weakest_weight"])
    on_v = sides.T.copy()  # (Z, 4)
    on_v.sort(axis=1)  # (np.sort, without its wrapper)
    on_v = on_v[:, 1]
    if w2 != 1.0:  # (at 1, (1 - w2) mean + w2 second is the second, bit for bit; else each
        # candidate's four summed along a row, in NumPy's order for a row)
        on_v = (1 - w2) * (np.add.reduce(sides.T.copy(), axis=1) / 4) + w2 * on_v
    out = on_v / (ref_v + float(ac["reference_floor"]))
    sc = out / (float(np.maximum.reduce(out)) + 1e-9)  # (what .max() calls)
    w = float(ac["pattern_weight"])
    if w > 0:
        # both orientations' segment medians at once (the 5th and 6th of 10 values, as np.median
        # takes them), then every occupancy pattern's score
        seg = slice(pr.parts["segments_x"].start, pr.parts["segments_y"].stop)
        kk = pr.parts["segments_x"].stop - pr.parts["segments_x"].start
        med = _middle_means(raw[seg].reshape(20, kk // 10, Z).transpose(2, 0, 1).astype(np.int32, order="C"))
        med = med.reshape(Z, 2, 10)
        pat = np.maximum.reduce((med @ pr.pattern_w + pr.pattern_off).reshape(Z, -1), axis=1)
        sc = sc + w * np.maximum(pat, 0.0) / (float(np.maximum.reduce(pat)) + 1e-9)
    return k, nadirs, sc


_FIRST_ROUND = 4  # the candidates _checked colour-checks first, best edge fit first


def _best_first(sc: np.ndarray) -> np.ndarray:
    """The candidates by edge-fit score sc, best first (ties in their order; NaN last)."""
    return (-sc).argsort(kind="stable")


def _first_round(sc: np.ndarray) -> np.ndarray:
    """The candidates _checked's first round takes (of edge-fit scores sc, within given): the
    best four edge fits."""
    return _best_first(sc)[:_FIRST_ROUND]


def _checked(cfg: Mapping, pv: PlaneView, pr: Probes, k: np.ndarray, nadirs: np.ndarray | None, sc: np.ndarray,
             tray_bgr: np.ndarray, bg, gains, within: float | None, first: np.ndarray | None = None,
             order: np.ndarray | None = None) -> np.ndarray:
    """height_scores from the edge fit (_edge_fit): the colour checks, with `within` only where
    they can matter. `first`: the colour-checked scores of the first round's candidates
    (_first_round) when already known (coarse_search scores them with its own); `order`: the
    candidates best edge fit first (_best_first), when the caller has sorted them for that."""
    if within is None:
        return _colour_checked(cfg, pv, pr, k, nadirs, sc, tray_bgr, bg, gains)
    Z = len(sc)
    # best edge fit first; a candidate is checked while it could still reach `within` of the best checked.
    # Those that can are a run at the head of the unchecked in this order (NaN last, never taken
    # but in the first four), so each round takes the next run: none twice, and none once a round is empty
    # (the bookkeeping in plain Python: a dozen NumPy calls on ~40 values a round cost more)
    if order is None:
        order = _best_first(sc)
    edge = sc[order].tolist()  # (float32 or float64: exact as Python floats, compared as NumPy would)
    full = np.empty(Z)
    full.fill(-np.inf)  # (np.full's wrapper: twice the time)
    lo, hi, best = 0, min(_FIRST_ROUND, Z), -math.inf
    while lo < hi:
        at = order[lo:hi]
        if first is not None and lo == 0:
            got = first
        else:
            got = _colour_checked(cfg, pv, pr, k[at], None if nadirs is None else nadirs[at], sc[at],
                                  tray_bgr, bg, gains)
        full[at] = got
        best = _running_max(best, got.tolist())
        bar = within * best
        lo = hi
        while hi < Z and edge[hi] >= bar:
            hi += 1
    return full


def _running_max(best: float, vals: list[float]) -> float:
    """np.maximum.reduce's best over best and vals: NaN once any is NaN."""
    for v in vals:
        if v != v:
            return v
        if v > best:
            best = v
    return best


def _middle_means(a: np.ndarray) -> np.ndarray:
    """The mean of the two middle values along the last axis of integers a (a few values, sorted
    in place), as float32 (exact: the steps are sums under 2^16), as np.median takes them. (Whole
    rows sorted as int32, NumPy's vectorised sort: under half cv2.sort's time on rows of ten, and
    under NumPy's partition at two places for any number of rows.)"""
    n = a.shape[-1]
    lo, hi = (n - 1) // 2, n // 2
    a.sort(axis=-1)
    mid = a[..., lo] + a[..., hi]
    return mid.astype(np.float32) / 2


@dataclass(frozen=True)
class _ColourPlan:
    """The colour probes (band, outside) on one view, for _colour_checked: their _Table over three
    grids (the view, the tray model's, the sheet's at one pixel per mm), and what turns its
    entries into each probe's pixels and masks (_Lift.index and _Lift.on_sheet's arithmetic)."""

    table: _Table
    size: np.ndarray     # (2, D) int32: each grid's w at the x entries, h at the y ones
    stride: np.ndarray   # (2, D) int32: 1 at the x entries, the grid's w at the y ones
    lo: np.ndarray | None  # (D,) the sheet's x0, then -y1 (the y entries are negated); None: no sheet
    hi: np.ndarray | None  # (D,) its x1, then -y0
    flat_at: np.ndarray  # (2, 2, M): of each grid, each probe's x entry and y entry
    mask_at: np.ndarray  # (3, 2, M): the same of the masks (in the view, in the model's grid, on the sheet)
    counted: np.ndarray  # (M,) the outside probes on the hidden sides
    any_hidden: bool     # whether the view has a hidden side at all


def _colour_plan(pv: PlaneView, pr: Probes, bg) -> _ColourPlan:
    """_ColourPlan of the view, probes and tray model (made once per view)."""
    def make() -> _ColourPlan:
        a, ny, at, side = pr.colour_entries
        h, w = pv.img.shape[:2]
        grids = [(pv.x0, pv.y1, pv.ppm, w, h)]
        grids.append(grids[0] if bg is None else (bg.x0, bg.y1, bg.ppm, bg.bgr.shape[1], bg.bgr.shape[0]))
        t = _table(pv, a, ny, grids + [(0.0, 0.0, 1.0)])
        # (both in one take)
        ss = np.array([g[3:] for g in grids] + [(1, g[3]) for g in grids], np.int32).take(ny, axis=1)
        size, stride = ss[:2], ss[2:]
        lo = hi = None
        if pv.sheet is not None:
            x0, y0, x1, y1 = (float(v) for v in pv.sheet)
            lo, hi = np.array([[x0, -y1], [x1, -y0]]).take(ny, axis=1)
        hidden = np.asarray(pv.hidden, bool).tolist()
        counted = np.array(hidden + [False]).take(side)  # (side -1: the band's, not counted)
        return _ColourPlan(t, size, stride, lo, hi, at[:2], at, counted, any(hidden))
    return memoised(pv.memo, "colour", (pr, bg), make)


_FEW_BY_HAND = 12  # (_colour_checked: up to this many candidates, the scores' last steps on Python floats:
# 16 of them (_first_with_fine's four first rounds) take 47 us so and 31 us in NumPy, 8 take 24 and 29 us)


def _colour_checked(cfg: Mapping, pv: PlaneView, pr: Probes, k: np.ndarray, nadirs: np.ndarray | None,
                    sc: np.ndarray, tray_bgr: np.ndarray, bg, gains, v: np.ndarray | None = None) -> np.ndarray:
    """Edge-fit scores sc of candidates of scale k (per candidate centres `nadirs` when given)
    times the bare-tray checks: the view against the bare tray expected at the same pixel (the
    learnt tray model where it covers the point on the sheet, else the tray's colour), in the
    band inside the square and past its hidden sides. (The probes' pixels and masks come from
    one table, _ColourPlan, and their counts per side from one reduction: the checks are some
    fifty NumPy calls on a few hundred values.) `v`: the candidates' _table_values when the caller
    has made them (_first_rounds_checked)."""
    ac = cfg["align"]
    plan = _colour_plan(pv, pr, bg)
    Z, M = len(k), len(plan.counted)
    if v is None:
        v = _table_values(plan.table, k, nadirs)  # (Z, 3, D): the view's, the model's, the sheet's
    masks = np.empty(v.shape, bool)
    if plan.lo is None:
        masks[:, 2] = True
    else:
        np.greater_equal(v[:, 2], plan.lo, out=masks[:, 2])
        masks[:, 2] &= v[:, 2] <= plan.hi
    t = np.rint(v[:, :2]).astype(np.int32)  # (far off, the cast's INT_MIN: outside)
    np.less(t.view(np.uint32), plan.size, out=masks[:, :2])  # (0 <= i < n: one unsigned test)
    t *= plan.stride
    flat = t.reshape(Z, -1).take(plan.flat_at, axis=1)  # (Z, 2, 2, M): each probe's column and row parts
    flat = np.add(flat[:, :, 0], flat[:, :, 1])  # (Z, 2, M): each probe's pixel in the view, in the model
    m = masks.reshape(Z, -1).take(plan.mask_at, axis=1)
    m = np.logical_and(m[:, :, 0], m[:, :, 1])  # (Z, 3, M): in the view, in the model's grid, on the sheet
    ins, on_sheet = m[:, 0], m[:, 2]
    # (a probe outside a grid reads some pixel of it, mode="clip" keeping its index in the grid:
    # what it reads there is masked out below)
    # the pixels (cols[0]), the bare tray's colour at each probe (cols[1]) and the table's (cols[2])
    table = None if pv.table_bgr is None else np.asarray(pv.table_bgr)
    two = table is not None and table.dtype == np.float32 and Z <= 16  # (many: the table's terms once)
    cols = np.empty((3 if two else 2, Z, M, 3), np.float32)
    cols[0] = pv.img.reshape(-1, 3).take(flat[:, 0], axis=0, mode="clip")
    px, refs = cols[0], cols[1:]
    tray = np.asarray(tray_bgr, np.float32)
    on_tray = None
    if bg is None:
        refs[0] = tray
    else:
        # only the tray sheet is bare tray: the model's margin beyond it is the table as the kit's
        # photos showed it, and a table need not look the same in play (a tall face seen from aside
        # hangs out over it)
        fb = flat[:, 1]
        on_tray = bg.valid.reshape(-1).take(fb, mode="clip")
        on_tray &= m[:, 1]
        on_tray &= on_sheet
        g = gains if gains is not None else np.ones(3, np.float32)
        # (the model everywhere, then the tray's colour where it does not hold: a third under
        # np.divide's where=, whose masked loop is slow; its rows set by their numbers, not by
        # np.copyto's where=, whose mask broadcast along the colours is slow too: 55 -> 23 us on
        # a hundred candidates)
        np.divide(bg.bgr.reshape(-1, 3).take(fb, axis=0, mode="clip"), np.asarray(g, np.float32), out=refs[0])
        refs[0].reshape(-1, 3)[(~on_tray).reshape(-1).nonzero()[0]] = tray
    th = cfg["silhouette"]
    hits = np.empty((Z, 4, M), bool)  # not tray, in the view, counted past the hidden sides, bare there
    fg = hits[:, 0]
    if table is None:
        np.logical_and(tl.not_tray_colour(th, px, refs[0]), ins, out=fg)
    else:
        if two:  # both references in one pass, with the pixels' (_not_tray_cols)
            refs[1] = table
            fg_tray, off_table = _not_tray_cols(th, cols)
        else:
            fg_tray, off_table = tl.not_tray_colours(th, px, (refs[0], table))
        # off the sheet, the table's own colour is not a face either
        np.logical_and(fg_tray, ins, out=fg)
        off_table |= on_sheet
        fg &= off_table
    hits[:, 1] = ins
    need = float(ac["outside_bare"])
    hidden = need > 0 and plan.any_hidden
    if hidden:
        counted = hits[:, 2]
        np.logical_and(ins, plan.counted, out=counted)
        if on_tray is not None:
            counted &= on_tray
        np.greater(counted, fg, out=hits[:, 3])  # (counted and not fg)
    # per side (the band's 4, then the outside's 4) of each (the last two only past hidden sides)
    q = M // 8
    used = hits[:, :4 if hidden else 2]
    if q == 8:  # eight bools are eight bytes of 0 or 1: one uint64 whose set bits count the True
        per_side = np.bitwise_count(used.view(np.uint64))  # (a twentieth of a reduction's time)
    else:
        per_side = np.add.reduce(used.reshape(Z, -1, 8, q), axis=3, dtype=np.int64)
    ww = float(ac.get("band_weakest_weight", 0.0))
    bf = float(ac["band_foreground"])
    if Z > _FEW_BY_HAND:  # (NumPy's calls cost the same whatever Z; the loop below ~3 us a candidate)
        per_side = per_side.astype(np.float64)
        band = _band_share(per_side[:, 0, :4], per_side[:, 1, :4], 4 * q, ww)
        sc = sc * np.minimum(np.maximum(band / bf, 0.0), 1.0)
        if hidden:
            kb = np.add.reduce(per_side[:, 2:, 4:], axis=2)  # (Z, 2): counted, and bare among them
            kn = kb[:, 0]
            bare = np.where(kn > 0, kb[:, 1] / np.maximum(kn, 1), 1.0)
            sc = sc * np.minimum(np.maximum(bare / need, 0.0), 1.0)
        return sc
    # a few candidates: the same arithmetic on Python numbers (a NumPy call on a few values costs
    # some twenty times one on a float; the counts are ints, whose true division is the floats';
    # every step is the one above, value by value, in the same order)
    out = []
    for s, ps in zip(sc.tolist(), per_side.tolist()):  # ps: hits, seen (, counted, bare) per side
        s *= min(max(_band_share_of(ps[0], ps[1], 4 * q, ww) / bf, 0.0), 1.0)
        if hidden:
            cnt, bare = ps[2], ps[3]
            kn, kb = cnt[4] + cnt[5] + cnt[6] + cnt[7], bare[4] + bare[5] + bare[6] + bare[7]
            s *= min(max((kb / max(kn, 1) if kn > 0 else 1.0) / need, 0.0), 1.0)
        out.append(s)
    return np.array(out)


def band_cover(fg: np.ndarray, weakest_weight: float, seen: np.ndarray | None = None) -> np.ndarray:
    """How much of the band just inside each candidate face is not bare tray, from its probes
    `fg` (Z, 4 sides x n): the band's share, blended by `weakest_weight` with its weakest side's.
    A side's share counts only its probes in the image (`seen`, as fg; None: all), and a side
    with fewer than half of them there is not judged: a tall top seen from aside may stand
    past the frame's border, and what is not in view says nothing against the face.

    Why the weakest side: a face too high stands out past the tower's far edge (the camera
    magnifies a higher plane more) on the sides away from the camera, and only there its band
    shows the bare tray; the other sides still lie on the tower's walls and top. The band's
    share over all four sides hides that one side, and a look that lets a too-high face read
    blocks (a darker tone curve, JPEG, blur) then keeps it (docs/vision.md, 2026-11-30 from
    02:41 UTC)."""
    Z, n = fg.shape
    if weakest_weight <= 0:
        return np.add.reduce(fg, axis=1, dtype=np.float64) / n  # (np.mean of a bool array)
    k = n // 4
    hits = np.add.reduce(fg.reshape(Z, 4, k), axis=2, dtype=np.float64)
    m = None if seen is None else np.add.reduce(seen.reshape(Z, 4, k), axis=2, dtype=np.float64)
    return _band_share(hits, m, n, weakest_weight)


def _band_share(hits: np.ndarray, seen: np.ndarray | None, n: int, weakest_weight: float) -> np.ndarray:
    """band_cover from the counts per side (Z, 4) of the probes not bare tray and of those in the
    image (None: all of them), n probes in all."""
    share = np.add.reduce(hits, axis=1) / n  # (np.mean of the bool array: the same counts)
    if weakest_weight <= 0:
        return share
    k = n // 4
    if seen is None:
        side = hits / k
    else:
        side = np.where(seen >= k / 2, hits / np.maximum(seen, 1), np.inf)  # (inf: not judged)
    weakest = np.minimum.reduce(side, axis=1)
    weakest = np.where(np.isfinite(weakest), weakest, share)
    return (1 - weakest_weight) * share + weakest_weight * weakest


def _band_share_of(hits: list[float], seen: list[float], n: int, weakest_weight: float) -> float:
    """_band_share of one candidate (its first four sides), on Python floats (the same IEEE
    arithmetic; a plain loop: a generator's min costs more than the arithmetic)."""
    share = (hits[0] + hits[1] + hits[2] + hits[3]) / n
    if weakest_weight <= 0:
        return share
    half = n // 4 / 2
    weakest = math.inf  # (a side with fewer than half its probes seen is not judged)
    for h, m in zip(hits[:4], seen[:4]):
        if m >= half:
            v = h / max(m, 1.0)
            if v < weakest:
                weakest = v
    if weakest == math.inf:
        weakest = share
    return (1 - weakest_weight) * share + weakest_weight * weakest


def _not_tray_cols(th: Mapping, cols: np.ndarray) -> np.ndarray:
    """tl.not_tray_colours of the pixels cols[0] against each reference cols[1:] (float32 (G, ..., 3),
    overwritten), as (G - 1, ...) bools: the same float32 steps, with the pixels' and the
    references' shared ones (plus one, channel sums, chromaticities) each one call on all of
    them (a third fewer NumPy calls on a few hundred colours)."""
    if "shadow_below" in th:
        return tl.not_tray_colour(th, cols[0][None], cols[1:])
    cols += 1.0
    s = cols[..., 0] + cols[..., 1]
    s += cols[..., 2]
    np.divide(cols, s[..., None], out=cols)  # (chromaticities)
    d = np.subtract(cols[:1], cols[1:])
    np.abs(d, out=d)
    dist = d[..., 0] + d[..., 1]
    dist += d[..., 2]
    ratio = np.divide(s[:1], s[1:])
    out = dist > float(th["chroma"])
    out |= ratio < float(th["dark"])
    out |= ratio > float(th["bright"])
    return out


def _not_tray(th: Mapping, px: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Pixels whose chromaticity or brightness is not the bare tray's (as `top_level.foreground`)."""
    return tl.not_tray_colour(th, px, ref)


@dataclass(frozen=True)
class _FineAhead:
    """The fine search round one coarse candidate (refine_candidate's, one camera), its edge fit
    and its first round's colour-checked scores (_checked's `first`), made by coarse_search in
    the same call as its own first round; kept with what they were made for."""

    i: int               # the coarse candidate
    fine: np.ndarray     # its fine heights (tl.fine_heights)
    k: np.ndarray        # their scales (_edge_fit)
    sc: np.ndarray       # their edge-fit scores
    first: np.ndarray    # the first round's scores (_first_round)
    made_with: tuple     # (cfg, tray, tray_bgr, bg, gains): reused only for the same objects
    focal: "_FocalAhead | None" = None  # refine_focal's first rounds for the height the best edge fits give
    order: np.ndarray | None = None  # the fine heights best edge fit first (_best_first of sc)


@dataclass(frozen=True)
class CoarseSearch:
    """The coarse height candidates of one frame (per focal factor's camera when
    align.coarse_all_focal), their scores and the rectified view they were scored on, kept so
    that other candidates than the chosen one can be refined when its reading fails."""

    pv: PlaneView
    pr: Probes
    facs: np.ndarray     # (Z,) focal factor of each candidate's camera
    zs: np.ndarray       # (Z,) candidate heights for that camera, mm
    nadirs: np.ndarray   # (Z, 2) that camera's foot on the tray
    czs: np.ndarray      # (Z,) that camera's height
    scores: np.ndarray   # (Z,) scores, -inf where not worth a full score (height_scores' `within`)
    centres: dict        # focal factor -> (camera centre, pose) (_focal_centres)
    chosen: int          # the candidate fit_height refines
    ahead: _FineAhead | None = None  # the fine search round the best edge fit, first round checked

    @property
    def one_camera(self) -> bool:
        return len(self.centres) == 1


def coarse_search(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray,
                  bg=None, gains: np.ndarray | None = None, z_lo: float = 0.0, z_hi: float = np.inf,
                  probes: Probes | None = None, focal_search: bool = True, full: bool = False,
                  bgra: np.ndarray | None = None) -> CoarseSearch:
    """Coarse candidates over the whole range on one rectified view, and the highest good peak
    among them (see fit_height). `full`: every candidate scored in full, not only those that can
    come near the best (for a caller that compares given heights: `reader.face_scores_at`).
    `bgra`: the frame as BGRA, when the caller has it (see plane_view)."""
    ac = cfg["align"]
    level = tray.block_mm[2]
    factors = [float(v) for v in ac.get("focal_factors", [])] if focal_search else []
    # align.coarse_all_focal: the coarse search runs for every focal factor's camera, not only
    # the calibrated one's (off by default: it fixed tall synthetic towers but read the twin worse)
    centres = _focal_centres(reg, img.shape, factors if ac.get("coarse_all_focal", False) else [])
    zcap = level * float(cfg["top"]["max_levels"])
    frac = float(ac["max_camera_fraction"])
    cz0 = float(centres[1.0][0][2])
    lo, hi = max(level * 0.5, z_lo), min(zcap, frac * cz0, z_hi)
    if hi <= lo:
        lo, hi = level * 0.5, min(zcap, frac * cz0)
    step = float(ac["coarse_step_mm"])
    facs, zs, nadirs, czs = [], [], [], []
    for fac, (C, _) in centres.items():
        czf = float(C[2])
        # about the same range as the calibrated camera's (heights scale with the camera's)
        top = min(zcap, frac * czf, hi * czf / cz0)
        c = np.arange(lo * czf / cz0, top + 1e-6, step)
        facs.append(np.full(len(c), fac))
        zs.append(c)
        nadirs.append(np.broadcast_to(C[:2], (len(c), 2)))
        czs.append(np.full(len(c), czf))
    one = len(centres) == 1  # (one camera's arrays as they are: a concatenation of one is a copy)
    facs_a, zs_a = (facs[0], zs[0]) if one else (np.concatenate(facs), np.concatenate(zs))
    nad_a, czs_a = np.concatenate(nadirs), czs[0] if one else np.concatenate(czs)
    # the view covers every candidate face: the largest scale any candidate shows it at
    scale = czs_a / (czs_a - zs_a)
    k_max = float(scale.max())
    pv = plane_view(cfg, tray, reg, img, lo, cz0 * (1 - 1 / k_max) + step, bgra)
    pr = probes or make_probes(cfg, tray)
    alpha = float(ac["highest_within"])
    if tray_bgr is None or full or not one:
        sc = height_scores(cfg, tray, pv, pr, zs_a, tray_bgr, bg, gains, None if one else nad_a,
                           None if one else czs_a, within=None if full else alpha)
        ahead = None
    else:  # (height_scores, with the fine search's first round looked ahead)
        k, _, edge = _edge_fit(cfg, pv, pr, zs_a, None, None)
        colour = bool(ac.get("focal_colour_checks", True))  # (refine_focal's first rounds made ahead too)
        focal = (reg, img.shape, factors, centres) if factors and colour else None
        order = _best_first(edge)  # (sorted once for the first round and the checks)
        first, ahead = _first_with_fine(cfg, tray, pv, pr, zs_a, k, edge, tray_bgr, bg, gains, focal, order)
        sc = _checked(cfg, pv, pr, k, None, edge, tray_bgr, bg, gains, alpha, first, order)
    i = _highest_peak_blocks(sc, facs_a, scale, alpha)
    return CoarseSearch(pv, pr, facs_a, zs_a, nad_a, czs_a, sc, centres, i, ahead)


# (_first_with_fine: the focal search's first rounds are made ahead only when the best coarse edge fit
# leads the first round's last by this much; in a closer race the colour checks change the winner
# more often than not, 39 of the bench's 67 frames under 1.25, and the focal edge fits made for
# nothing cost twice the call saved)
_FOCAL_AHEAD_LEAD = 1.25


def _first_with_fine(cfg: Mapping, tray: Tray, pv: PlaneView, pr: Probes, zs: np.ndarray, k: np.ndarray,
                     edge: np.ndarray, tray_bgr: np.ndarray, bg, gains, focal: tuple | None = None,
                     order: np.ndarray | None = None) -> tuple[np.ndarray, _FineAhead]:
    """The coarse search's first round of colour checks (one camera), and the fine search's
    round its best edge fit (refine_candidate's when that candidate is chosen: four frames in
    five) with its own first round, both rounds in one call (`_first_rounds_checked`). With
    `focal` ((reg, shape, factors, known) of refine_focal), the focal search's first rounds for
    the height the fine round's best edge fit gives go in the same call (refine_candidate's
    when both best edge fits win: three frames in four; the others pay their edge fits), when
    the best coarse edge fit leads the first round by _FOCAL_AHEAD_LEAD. `order`:
    _best_first(edge), when the caller has it."""
    at = (_best_first(edge) if order is None else order)[:_FIRST_ROUND]
    j = int(at[0])
    fine = tl.fine_heights(cfg, tray, float(zs[j]))
    kf, _, sf = _edge_fit(cfg, pv, pr, fine, None, None)
    order_f = _best_first(sf)
    atf = order_f[:_FIRST_ROUND]
    fits = [(k, None, edge, at), (kf, None, sf, atf)]
    made = None
    lead = edge[at].tolist()  # (the first round's edge fits, best first)
    if focal is not None and lead[0] >= _FOCAL_AHEAD_LEAD * lead[-1]:
        reg, shape, factors, known = focal
        zf = float(fine[int(atf[0])])
        fs = _FocalSearch(cfg, reg, shape, pv, pr, factors, known)
        made = fs.first_fits(zf, some=True)
        if made is not None:
            fits += made[3]
    got = _first_rounds_checked(cfg, pv, pr, fits, tray_bgr, bg, gains)
    ahead = None if made is None else _FocalAhead(zf, fs, *made[:3], got[2], got[3], (reg, shape[:2], factors, known),
                                                  made[4])
    return got[0], _FineAhead(j, fine, kf, sf, got[1], (cfg, tray, tray_bgr, bg, gains), ahead, order_f)


def _first_rounds_checked(cfg: Mapping, pv: PlaneView, pr: Probes, fits: Sequence[tuple], tray_bgr: np.ndarray,
                          bg, gains) -> list[np.ndarray]:
    """_checked's first round of each edge fit in `fits` ((k, nadirs or None for the view's centre,
    edge-fit scores, its first round: _first_round)), colour-checked in one _colour_checked call: the
    checks are some fifty NumPy calls whatever the candidates (up to 16: the path for a few),
    and a candidate's score does not depend on the others checked with it, so each is the one
    it would be alone. Fits of the view's centre and of their own centres can go together: each
    fit's table values are made as its own call would make them (the two ways differ in the
    last bits), then checked as one. Returns each fit's first round's scores (_checked's `first`)."""
    ks = [k[at] for (k, _, _, at) in fits]
    sc = np.concatenate([s[at] for (_, _, s, at) in fits])
    if all(n is None for (_, n, _, _) in fits) or all(n is not None for (_, n, _, _) in fits):
        nadirs = None if fits[0][1] is None else np.concatenate([n[at] for (_, n, _, at) in fits])
        got = _colour_checked(cfg, pv, pr, np.concatenate(ks), nadirs, sc, tray_bgr, bg, gains)
    else:
        t = _colour_plan(pv, pr, bg).table
        v = np.concatenate([_table_values(t, kk, None if n is None else n[at]) for kk, (_, n, _, at) in zip(ks, fits)])
        got = _colour_checked(cfg, pv, pr, np.concatenate(ks), None, sc, tray_bgr, bg, gains, v)
    out, i = [], 0  # (slices: np.split's wrapper costs some 6 us)
    for kk in ks:
        out.append(got[i:i + len(kk)])
        i += len(kk)
    return out


def _shifted_nadirs(C: np.ndarray, zs: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The camera nadirs that show a face at heights zs moved by d (mm) on its plane, the tray
    plane kept: the lifted point N + k (p - N) equals C + k (p + d - C) for N = C - k d / (k - 1)."""
    k = C[2] / (C[2] - zs)
    return C[:2][None] - (k / (k - 1))[:, None] * np.asarray(d, np.float64)[None]


def _moved_face(cfg: Mapping, tray: Tray, cs: CoarseSearch, tray_bgr: np.ndarray, bg,
                gains) -> tuple[float, np.ndarray] | None:
    """A tall face moved a few mm on its plane (align.shift_mm, eight ways, heights from
    align.shift_above_mm) that scores more than align.shift_gain times the face chosen in place
    (cs.chosen), as (height, shift); else None. Scored in one call with the faces in place
    (scores are scaled by their best over the candidates); the search's own choice is left as it
    is."""
    ac = cfg["align"]
    mm = float(ac.get("shift_mm", 0.0))
    if mm <= 0:
        return None
    zs, C = cs.zs, cs.centres[1.0][0]
    tall = zs[zs >= float(ac["shift_above_mm"])]
    if not len(tall):
        return None
    ds = [mm * np.array([math.cos(a * math.pi / 4), math.sin(a * math.pi / 4)]) for a in range(8)]
    zz = np.concatenate([zs] + [tall] * 8)
    nad = np.concatenate([np.broadcast_to(C[:2], (len(zs), 2))] + [_shifted_nadirs(C, tall, d) for d in ds])
    full = height_scores(cfg, tray, cs.pv, cs.pr, zz, tray_bgr, bg, gains, nad, np.full(len(zz), float(C[2])),
                         within=float(ac.get("highest_within", 1.0)))
    j = int(np.argmax(full[len(zs):]))
    if not full[len(zs) + j] > float(ac["shift_gain"]) * float(full[cs.chosen]):
        return None
    return float(tall[j % len(tall)]), ds[j // len(tall)]


def refine_candidate(cfg: Mapping, tray: Tray, reg: Registration, shape: tuple, cs: CoarseSearch, i: int,
                     tray_bgr: np.ndarray, bg=None, gains: np.ndarray | None = None,
                     focal_search: bool = True) -> tuple[float, Registration]:
    """Coarse candidate i refined: a fine search round it, then (align.focal_factors) the focal
    length searched with it. Returns the height and the registration whose camera fits it."""
    ac = cfg["align"]
    factors = [float(v) for v in ac.get("focal_factors", [])] if focal_search else []
    a = cs.ahead
    ready = None
    if a is not None and a.i == i and all(x is y for x, y in zip(a.made_with, (cfg, tray, tray_bgr, bg, gains))):
        # (coarse_search's: the same as below, its first round checked with the coarse one's)
        z = float(a.fine[int(np.argmax(_checked(cfg, cs.pv, cs.pr, a.k, None, a.sc, tray_bgr, bg, gains, 1.0,
                                                a.first, a.order)))])
        ready = a.focal
    elif (cs.one_camera and i == cs.chosen and factors and tray_bgr is not None
          and bool(ac.get("focal_colour_checks", True))):
        z, ready = _fine_with_focal(cfg, tray, reg, shape, cs, i, factors, tray_bgr, bg, gains)
    elif cs.one_camera:
        fine = tl.fine_heights(cfg, tray, float(cs.zs[i]))
        z = float(fine[int(np.argmax(height_scores(cfg, tray, cs.pv, cs.pr, fine, tray_bgr, bg, gains, within=1.0)))])
    else:  # the focal search starts from the coarse winner's face scale, as a height for the calibrated camera
        k = float(cs.czs[i] / (cs.czs[i] - cs.zs[i]))
        z = cs.pv.cam_z * (1 - 1 / k)
    if not factors:
        return z, reg
    if ready is not None:
        r, hw, fs, known = ready.made_with
        if not (ready.z == z and r is reg and hw == tuple(shape[:2]) and fs == factors and known is cs.centres
                and ready.search.pv is cs.pv and ready.search.pr is cs.pr):
            ready = None  # (made for another height, camera or factors)
    return refine_focal(cfg, tray, reg, shape, cs.pv, cs.pr, z, factors, tray_bgr, bg, gains, cs.centres, ready)


def _fine_with_focal(cfg: Mapping, tray: Tray, reg: Registration, shape: tuple, cs: CoarseSearch, i: int,
                     factors: list[float], tray_bgr: np.ndarray, bg, gains) -> tuple[float, _FocalAhead | None]:
    """refine_candidate's fine search round coarse candidate i (height_scores within 1, one
    camera) when coarse_search guessed another: its first round colour-checked in one call with
    refine_focal's first rounds for the height its best edge fit gives (as _first_with_fine).
    Returns the height found and those rounds (_FocalAhead, None when the focal search has no
    height there). For the chosen candidate only: its fine search peaks at its best edge fit
    four times in five, a retry's (read_frame's other heights) barely more than half the time,
    and the focal edge fits made for nothing cost twice the call saved."""
    pv, pr = cs.pv, cs.pr
    fine = tl.fine_heights(cfg, tray, float(cs.zs[i]))
    kf, _, sf = _edge_fit(cfg, pv, pr, fine, None, None)
    order = _best_first(sf)
    atf = order[:_FIRST_ROUND]
    zf = float(fine[int(atf[0])])
    fs = _FocalSearch(cfg, reg, shape, pv, pr, factors, cs.centres)
    made = fs.first_fits(zf, some=True)
    got = _first_rounds_checked(cfg, pv, pr, [(kf, None, sf, atf)] + ([] if made is None else made[3]),
                                tray_bgr, bg, gains)
    z = float(fine[int(np.argmax(_checked(cfg, pv, pr, kf, None, sf, tray_bgr, bg, gains, 1.0, got[0], order)))])
    if made is None:
        return z, None
    return z, _FocalAhead(zf, fs, *made[:3], got[1], got[2], (reg, shape[:2], factors, cs.centres), made[4])


def moved_face(cfg: Mapping, tray: Tray, reg: Registration, cs: CoarseSearch, tray_bgr: np.ndarray, bg=None,
               gains: np.ndarray | None = None) -> tuple[float, Registration] | None:
    """A tall face moved a few mm on its plane that fits better than the face the search chose
    (_moved_face), refined: a fine search in height that keeps its move, and the camera whose
    centre shows it so with the tray plane kept (camera_through). None when there is none.

    Why: the camera centre the markers imply lies 7-30 mm off (quartiles, 741 tall synthetic
    frames), and at a tall top's height that puts the face 4 mm or more off its blocks on one
    frame in three (16-18 levels); there no height lines the outline up and a lower level wins
    (synthetic fam20/same 0013: 217 mm found for a top at 270). Only read_frame's doubtful
    readings look for it, and the reading decides (docs/vision.md, 2026-11-29 from 18:20 UTC)."""
    if not cs.one_camera:
        return None
    found = _moved_face(cfg, tray, cs, tray_bgr, bg, gains)
    if found is None:
        return None
    C = cs.centres[1.0][0]
    z0, d = found
    fine = tl.fine_heights(cfg, tray, z0)
    nad = _shifted_nadirs(C, fine, d)
    sc = height_scores(cfg, tray, cs.pv, cs.pr, fine, tray_bgr, bg, gains, nad, np.full(len(fine), float(C[2])),
                       within=1.0)
    j = int(np.argmax(sc))
    return float(fine[j]), replace(reg, camera=camera_through(reg.H, np.array([*nad[j], C[2]])))


def other_candidates(cfg: Mapping, tray: Tray, cs: CoarseSearch, tray_bgr: np.ndarray, bg=None,
                     gains: np.ndarray | None = None, count: int = 2) -> list[int]:
    """Up to `count` coarse candidates other than the chosen one, best first: local peaks of the
    fully scored candidates (colour checks and all), one per level's height apart from the
    chosen one and each other. Only a frame whose first reading fails pays for these."""
    one = cs.one_camera
    sc = height_scores(cfg, tray, cs.pv, cs.pr, cs.zs, tray_bgr, bg, gains,
                       None if one else cs.nadirs, None if one else cs.czs)
    # each candidate as the calibrated camera's height that shows the face at the same scale
    z_eq = cs.pv.cam_z * (1 - (cs.czs - cs.zs) / cs.czs)
    gap = float(tray.block_mm[2]) * 0.8
    taken = [cs.chosen]
    peaks = [j for j in _local_peaks(sc, cs.facs) if np.isfinite(sc[j]) and sc[j] > 0]
    out: list[int] = []
    for j in sorted(peaks, key=lambda j: -sc[j]):
        if all(abs(z_eq[j] - z_eq[t]) > gap for t in taken):
            out.append(int(j))
            taken.append(int(j))
        if len(out) >= count:
            break
    return out


def levels_above(tray: Tray, cs: CoarseSearch, count: int) -> list[int]:
    """The coarse candidates one to `count` levels above the chosen one (its focal factor's camera,
    each the nearest within half a level's height of its place; none past the search's range),
    lowest first. For read_frame's last try when no candidate's reading finds a block: a tall
    top seen from aside whose level holds one or two blocks shows no square outline of its own,
    and the full level below (or one further down) wins the search; the peaks taken as the
    other candidates then all lie lower still."""
    level = float(tray.block_mm[2])
    z_eq = cs.pv.cam_z * (1 - (cs.czs - cs.zs) / cs.czs)  # as other_candidates: the calibrated camera's height
    same = np.flatnonzero(cs.facs == cs.facs[cs.chosen])
    out: list[int] = []
    for k in range(1, int(count) + 1):
        want = z_eq[cs.chosen] + k * level
        j = int(same[np.argmin(np.abs(z_eq[same] - want))])
        if abs(float(z_eq[j]) - want) < level / 2 and j != cs.chosen and j not in out:
            out.append(j)
    return out


def fit_height(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray,
               bg=None, gains: np.ndarray | None = None, z_lo: float = 0.0, z_hi: float = np.inf,
               probes: Probes | None = None, focal_search: bool = True) -> tuple[float, Registration]:
    """The top face's height over the whole range: coarse candidates, the highest good peak, then
    a fine search round it, all on one rectified view; then (align.focal_factors) the focal
    length searched with it. Returns the height and the registration whose camera fits it.

    With align.coarse_all_focal the coarse search runs for every focal factor's camera: when the
    camera's focal length is not the calibration's, the camera centre the markers imply is off,
    and a tall tower's face (lifted far off the tray plane) lines up at no height at all for the
    calibrated centre, so a lower level or the tray's edge won and the focal search round it
    never saw the top."""
    cs = coarse_search(cfg, tray, reg, img, tray_bgr, bg, gains, z_lo, z_hi, probes, focal_search)
    return refine_candidate(cfg, tray, reg, img.shape, cs, cs.chosen, tray_bgr, bg, gains, focal_search)


def _focal_centres(reg: Registration, shape: tuple, factors: list[float]) -> dict[float, tuple]:
    """Per focal factor (1.0 always, first): the camera centre the tray homography implies for
    that focal length, and its pose (K, R, t; None for the calibrated camera)."""
    out: dict[float, tuple] = {1.0: (np.asarray(reg.camera.center, dtype=np.float64), None)}
    h, w = shape[:2]
    f0 = float(reg.camera.K[0, 0])
    for fac in factors:
        if fac not in out:
            K, R, t = _pose_for_focal(reg.H, f0 * fac, w, h)
            out[fac] = (-R.T @ t, (K, R, t))
    return out


def _highest_peak_blocks(sc: np.ndarray, block: np.ndarray, scale: np.ndarray, alpha: float) -> int:
    """The candidate that is a local maximum of its run (one run of rising heights per camera)
    scoring within alpha of the best and shows the face largest, i.e. the highest such peak (the
    tower's base and lower levels show outline edges too); else the best. (On Python floats, a
    frame's forty candidates: a dozen NumPy calls cost more than the loop; NumPy's where any is NaN.)"""
    v = sc.tolist()
    if v and not any(x != x for x in v):
        b, n = block.tolist(), len(v)
        bar = alpha * max(v)
        keep = [i for i in range(n) if v[i] >= bar and (i == 0 or b[i - 1] != b[i] or v[i] >= v[i - 1])
                and (i == n - 1 or b[i + 1] != b[i] or v[i] >= v[i + 1])]
        if not keep:
            return v.index(max(v))
        s = scale.tolist()
        return max(keep, key=s.__getitem__)  # (the first of the largest, as argmax)
    best = float(sc.max())
    keep = _local_peaks(sc, block)
    keep = keep[sc[keep] >= alpha * best]  # (in order, as one by one)
    if not len(keep):
        return int(sc.argmax())
    return int(keep[scale[keep].argmax()])


def _local_peaks(sc: np.ndarray, block: np.ndarray) -> np.ndarray:
    """The candidates that score at least as high as their neighbours within their run (one run
    of rising heights per camera, `block` its label), in order."""
    n = len(sc)
    if not n:
        return np.zeros(0, dtype=int)
    left, right = np.empty(n), np.empty(n)  # each one's neighbours (-inf past its run's ends)
    left[0] = right[-1] = -np.inf
    left[1:] = sc[:-1]
    right[:-1] = sc[1:]
    cut = np.flatnonzero(np.asarray(block)[1:] != np.asarray(block)[:-1]) + 1  # (all the runs at once)
    left[cut] = -np.inf
    right[cut - 1] = -np.inf
    return np.flatnonzero((sc >= left) & (sc >= right))


def _pose_for_focal(H: np.ndarray, f: float, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K, R and t of the camera a tray homography implies for focal length f (principal point
    at the image centre): the columns of K^-1 H are r1, r2 and t up to one scale."""
    return _poses_for_focal(H, [f], width, height)[0]


def _poses_for_focal(H: np.ndarray, fs: list[float], width: int, height: int) -> list[tuple]:
    """_pose_for_focal for each focal length in fs, all in one pass: a frame's focal searches ask
    for two to eleven at a time, and a stack's column lengths, SVD and products are each matrix's
    own, to the bit (the lengths' products are the BLAS dot product's, as one by one)."""
    # (K^-1 H, the scale and the cross product on Python floats: the same IEEE steps, elementwise,
    # as on NumPy's 0-d values; the column lengths stay the BLAS's dot products, whose sums it
    # orders its own way)
    (h00, h01, h02), (h10, h11, h12), (h20, h21, h22) = np.asarray(H, dtype=np.float64).tolist()
    cx, cy = intrinsics(1.0, width, height)[:2, 2].tolist()  # (K's principal point, whatever f)
    Ms = [[[(h00 - cx * h20) / f, (h01 - cx * h21) / f, (h02 - cx * h22) / f],
           [(h10 - cy * h20) / f, (h11 - cy * h21) / f, (h12 - cy * h22) / f],
           [h20, h21, h22]] for f in fs]
    cols = np.array(Ms).transpose(0, 2, 1)[:, :2]  # (N, 2, 3): each K^-1 H's first two columns
    lengths = (cols[..., None, :] @ cols[..., :, None]).reshape(-1, 2).tolist()  # (matmul's: the dot's)
    Bs, ts = [], []
    for M, (l0, l1) in zip(Ms, lengths):
        lam = 2.0 / (math.sqrt(l0) + math.sqrt(l1))
        if h22 * lam < 0:  # the tray lies in front of the camera
            lam = -lam
        (a0, b0, t0), (a1, b1, t1), (a2, b2, t2) = M
        a0, a1, a2, b0, b1, b2 = lam * a0, lam * a1, lam * a2, lam * b0, lam * b1, lam * b2
        Bs.append([[a0, b0, a1 * b2 - a2 * b1], [a1, b1, a2 * b0 - a0 * b2], [a2, b2, a0 * b1 - a1 * b0]])
        ts.append([lam * t0, lam * t1, lam * t2])
    U, _, Vt = np.linalg.svd(np.array(Bs))
    Rs = U @ Vt
    ts = np.array(ts)
    out = []
    for i, (f, r) in enumerate(zip(fs, Rs.tolist())):
        R = Rs[i]
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = r
        # (the sign of its determinant, written out: R is a rotation or a reflection, +-1 far from 0)
        if r00 * (r11 * r22 - r12 * r21) - r01 * (r10 * r22 - r12 * r20) + r02 * (r10 * r21 - r11 * r20) < 0:
            R = U[i] @ np.diag([1.0, 1.0, -1.0]) @ Vt[i]
        out.append((intrinsics(f, width, height), R, ts[i]))
    return out


def _pose_centres(pv: PlaneView, H: np.ndarray, fs: list[float], width: int, height: int) -> list[tuple]:
    """The camera centre and pose (K, R, t) _pose_for_focal gives, per focal length in fs, once
    per frame (its view) and focal length: a frame's focal searches (the first, each retry's, the
    alternatives') ask for the same few (read-only). Those not made yet are made together
    (_poses_for_focal)."""
    def make(todo: list[int]) -> list[tuple[np.ndarray, tuple]]:
        out = []
        for K, R, t in _poses_for_focal(H, [fs[i] for i in todo], width, height):
            C = -R.T @ t
            for a in (C, K, R, t):
                a.flags.writeable = False
            out.append((C, (K, R, t)))
        return out
    return memoised_many(pv.memo, [("pose", float(f), int(width), int(height)) for f in fs], (H,), make)


def _pose_centre(pv: PlaneView, H: np.ndarray, f: float, width: int, height: int) -> tuple[np.ndarray, tuple]:
    """_pose_centres of one focal length."""
    return _pose_centres(pv, H, [f], width, height)[0]


def camera_for_focal(H: np.ndarray, f: float, width: int, height: int) -> Camera:
    """The camera pose a tray homography implies for focal length f (see _pose_for_focal)."""
    K, R, t = _pose_for_focal(H, f, width, height)
    return Camera(K, cv2.Rodrigues(R)[0].reshape(3), t)


def camera_through(H: np.ndarray, C: np.ndarray) -> Camera:
    """The camera whose tray plane homography is H and whose centre is C: its projection matrix
    (H's columns for x, y and 1, and the z column that sends C to nothing) taken apart into K, R, t."""
    H = np.asarray(H, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    p3 = -(H @ np.array([C[0], C[1], 1.0])) / C[2]
    K, R = cv2.decomposeProjectionMatrix(np.column_stack([H[:, 0], H[:, 1], p3, H[:, 2]]))[:2]
    S = np.diag(np.sign(np.diag(K)))  # positive focal lengths: the signs moved into R
    K, R = K @ S, S @ R
    if np.linalg.det(R) < 0:
        R = -R
    return Camera(K / K[2, 2], cv2.Rodrigues(R)[0].reshape(3), -R @ C)


class _FocalSearch:
    """refine_focal's search on one view: the camera centres and poses per focal factor (made as
    asked, kept for the search), and its candidates. Made apart from refine_focal so that
    coarse_search can make the search's first rounds ahead (_FocalAhead)."""

    def __init__(self, cfg: Mapping, reg: Registration, shape: tuple, pv: PlaneView, pr: Probes,
                 factors: list[float], known: dict[float, tuple] | None):
        ac = cfg["align"]
        self.cfg, self.reg, self.pv, self.pr, self.factors = cfg, reg, pv, pr, factors
        self.h, self.w = shape[:2]
        self.f0 = float(reg.camera.K[0, 0])
        self.win, self.step = float(ac["focal_z_window_mm"]), float(ac["fine_step_mm"])
        self.zmax_frac = float(ac["max_camera_fraction"])
        self.centres: dict[float, np.ndarray] = {1.0: np.array([*pv.nadir, pv.cam_z])}
        self.poses: dict[float, tuple] = {}
        for fac, (C, pose) in (known or {}).items():
            if pose is not None:
                self.centres[fac], self.poses[fac] = C, pose
        fs = sorted(factors)
        self.d = min(b - a for a, b in zip(fs, fs[1:])) / 2 if len(factors) > 1 else 0.0

    def centre(self, fac: float) -> np.ndarray:
        if fac not in self.centres:  # only the centre is needed to score: C = -R^T t
            self.centres[fac], self.poses[fac] = _pose_centre(self.pv, self.reg.H, self.f0 * fac, self.w, self.h)
        return self.centres[fac]

    def candidates(self, facs: list[float], scale: float, offs: np.ndarray, ahead: list[float] = (),
                   some: bool = False) -> tuple | None:
        """The factors, each at the heights that show the face at `scale` on the tray plane for
        its camera centre, plus offs, with their edge fit: (facs, each candidate's factor's row,
        heights, then _edge_fit's k, nadirs and scores). The poses of the factors `ahead` are
        made with theirs (kept in the view's memo, _pose_centres). With `some`, None when no
        height is left (a search made ahead is then left to refine_focal)."""
        # all the factors at once (one row each), the same arithmetic as one by one
        centres, poses = self.centres, self.poses
        new = [fac for fac in dict.fromkeys(facs) if fac not in centres]
        if new:
            more = [fac for fac in dict.fromkeys(ahead) if fac not in centres and fac not in new]
            made = _pose_centres(self.pv, self.reg.H, [self.f0 * fac for fac in new + more], self.w, self.h)
            for fac, (Cf, pose) in zip(new, made):
                centres[fac], poses[fac] = Cf, pose
        C = np.array([centres[fac] for fac in facs])
        zc = C[:, 2:] * (1 - 1 / scale) + offs
        keep = zc > 0
        keep &= zc < C[:, 2:] * self.zmax_frac
        row = keep.nonzero()[0]
        zs_all = zc[keep]
        if some and not len(zs_all):
            return None
        return (facs, row, zs_all) + _edge_fit(self.cfg, self.pv, self.pr, zs_all, C[row, :2], C[row, 2])

    def coarse(self, z: float, some: bool = False) -> tuple | None:
        """The coarse candidates: every factor, heights round the one showing the face as large as
        found at z, 2 fine steps apart (the fine step's factors' poses made with theirs: one pass,
        not two; a pass is ~0.1 ms in a frame, much of it LAPACK's cold start, and a pose more
        some 5 us)."""
        pv, d, win, step = self.pv, self.d, self.win, self.step
        return self.candidates(self.factors, pv.cam_z / (pv.cam_z - z), np.arange(-win, win + 1e-6, 2 * step),
                               [f for fac in self.factors for f in (fac - d, fac + d)] if d else [], some)

    def fine(self, fac: float, zb: float, some: bool = False) -> tuple | None:
        """The fine candidates: the factor and its neighbours half a factor step away, heights
        round zb."""
        cz, d, step = float(self.centre(fac)[2]), self.d, self.step
        return self.candidates(sorted({fac - d, fac, fac + d}) if d else [fac], cz / (cz - zb),
                               np.arange(-2 * step, 2 * step + 1e-6, step), (), some)

    def first_fits(self, z: float, some: bool = False) -> tuple[tuple, int, tuple, list[tuple], tuple] | None:
        """The coarse candidates for the height z, the best edge fit among them, the fine
        candidates round it, both rounds' fits for _first_rounds_checked, and both rounds'
        candidates best edge fit first (_best_first; with `some`, None where either has no height
        left)."""
        coarse = self.coarse(z, some)
        if coarse is None:
            return None
        oc = _best_first(coarse[5])
        j = int(oc[0])
        ahead = self.fine(coarse[0][int(coarse[1][j])], float(coarse[2][j]), some)
        if ahead is None:
            return None
        oa = _best_first(ahead[5])
        return coarse, j, ahead, [(*coarse[3:], oc[:_FIRST_ROUND]), (*ahead[3:], oa[:_FIRST_ROUND])], (oc, oa)


@dataclass(frozen=True)
class _FocalAhead:
    """refine_focal's first rounds for one height, made by coarse_search ahead of it (for the
    height its fine search gives when the best edge fits win, coarse and fine) and colour-checked
    in the same call as the coarse search's and the fine search's first rounds; kept with what
    they were made for."""

    z: float             # the height the focal search starts from
    search: _FocalSearch  # its state after the first rounds' candidates
    coarse: tuple        # _FocalSearch.first_fits' coarse candidates, best edge fit, fine candidates
    j: int
    ahead: tuple
    first: np.ndarray    # the coarse and the fine candidates' first rounds' scores
    first_ahead: np.ndarray
    made_with: tuple     # (reg, (h, w), factors, known): reused only for the same (reg, known: objects)
    orders: tuple        # the coarse and the fine candidates best edge fit first (_best_first)


def refine_focal(cfg: Mapping, tray: Tray, reg: Registration, shape: tuple, pv: PlaneView, pr: Probes, z: float,
                 factors: list[float], tray_bgr: np.ndarray, bg, gains,
                 known: dict[float, tuple] | None = None, ready: _FocalAhead | None = None) -> tuple[float, Registration]:
    """The focal length and height that fit the top face best, near the calibrated focal length
    and the height found with it. A camera that zooms (or another camera than the calibration's)
    moves the camera centre the markers imply, so no height lines the face up exactly; the markers
    fix the tray plane whatever the focal length, so only the centre moves, and the rectified
    view is reused. `known`: centres and poses already found (_focal_centres). `ready`: the first
    rounds made ahead for this height, view, registration and factors (coarse_search's)."""
    ac = cfg["align"]
    colour = bool(ac.get("focal_colour_checks", True)) and tray_bgr is not None

    def best(cand: tuple, first: np.ndarray | None = None, order: np.ndarray | None = None) -> tuple[int, float, float]:
        """The best of the candidates (height_scores within 1; `first`, `order`: _checked's), as
        its index, factor and height."""
        facs, row, zs_all, k, nad, sc = cand
        if colour:
            sc = _checked(cfg, pv, pr, k, nad, sc, tray_bgr, bg, gains, 1.0, first, order)
        i = int(sc.argmax())
        return i, facs[int(row[i])], float(zs_all[i])

    # coarse: every factor round the height found; fine: the best factor and its neighbours half a
    # factor step away, heights round the best
    if not colour:
        fs = _FocalSearch(cfg, reg, shape, pv, pr, factors, known)
        _, fac, zb = best(fs.coarse(z))
        _, fac, zb = best(fs.fine(fac, zb))
    else:
        # the fine candidates round the best edge fit made ahead, and their first round of colour
        # checks made in one call with the coarse one's (as coarse_search with the fine search's):
        # taken when that candidate wins, four frames in five
        if ready is not None:
            fs, coarse, j, ahead, first, first_ahead = (ready.search, ready.coarse, ready.j, ready.ahead,
                                                        ready.first, ready.first_ahead)
            (oc, oa) = ready.orders
        else:
            fs = _FocalSearch(cfg, reg, shape, pv, pr, factors, known)
            coarse, j, ahead, fits, (oc, oa) = fs.first_fits(z)
            first, first_ahead = _first_rounds_checked(cfg, pv, pr, fits, tray_bgr, bg, gains)
        i, fac, zb = best(coarse, first, oc)
        _, fac, zb = best(ahead, first_ahead, oa) if i == j else best(fs.fine(fac, zb))
    if fac == 1.0:
        return zb, reg
    K, R, t = fs.poses[fac]
    return zb, replace(reg, camera=Camera(K, cv2.Rodrigues(R)[0].reshape(3), t))


def focal_alternatives(cfg: Mapping, tray: Tray, reg: Registration, shape: tuple, cs: CoarseSearch,
                       z: float, reg_z: Registration, tray_bgr: np.ndarray, bg=None,
                       gains: np.ndarray | None = None) -> list[tuple[float, Registration]]:
    """Other (height, camera) fits of the face found at height z for camera reg_z, best first:
    per focal factor on a fine grid (align.alt_focal_step over the range of align.focal_factors),
    the best height showing the face at about the found scale (within align.alt_z_window_mm),
    kept when a local peak along the factors that places the face at least
    align.alt_min_shift_mm from the found one on the tray plane (decision.focal_alternatives of them).

    Why: seen from far aside, a tall top's face moves some 30 mm on the tray plane per tenth of
    focal length, so the focal search's grid (tenths, then half steps) can only put it a slot or
    more off its place when the camera's focal length lies between; the slot boundaries repeat
    every block width, so a face one slot over also fits. Searched only for frames whose reading
    is doubtful (read_frame), and the reading decides."""
    ac = cfg["align"]
    count = int(cfg["decision"].get("focal_alternatives", 0))
    factors = [float(v) for v in ac.get("focal_factors", [])]
    step = float(ac.get("alt_focal_step", 0.0))
    if count <= 0 or not factors or step <= 0:
        return []
    h, w = shape[:2]
    f0 = float(reg.camera.K[0, 0])
    C1 = np.asarray(reg_z.camera.center, dtype=np.float64)
    k = float(C1[2] / (C1[2] - z))
    c = np.asarray(tray.tower_center, dtype=np.float64)
    found = C1[:2] + (c - C1[:2]) * k
    win, fine = float(ac.get("alt_z_window_mm", ac["focal_z_window_mm"])), float(ac["fine_step_mm"])
    offs = np.arange(-win, win + 1e-6, fine)
    facs = np.arange(min(factors), max(factors) + 1e-6, step)
    centres = _pose_centres(cs.pv, reg.H, [f0 * fac for fac in facs.tolist()], w, h)
    # every factor's heights at once (one row each), the same arithmetic as one by one
    Cs = np.array([cp[0] for cp in centres])
    zc = Cs[:, 2:] * (1 - 1 / k) + offs
    keep = zc > 0
    keep &= zc < Cs[:, 2:] * float(ac["max_camera_fraction"])
    fs_a = keep.nonzero()[0]
    zs_a = zc[keep]
    # one call (scores are scaled by their best over the candidates); only those within
    # align.alt_within of the best are worth their colour checks
    sc = height_scores(cfg, tray, cs.pv, cs.pr, zs_a, tray_bgr, bg, gains, Cs[fs_a, :2], Cs[fs_a, 2],
                       within=float(ac.get("alt_within", 0.5)))
    # each factor's best (its first, as argmax; none where no score is finite)
    best_sc = [-math.inf] * len(facs)
    best_z = [math.nan] * len(facs)
    for j, v, z in zip(fs_a.tolist(), sc.tolist(), zs_a.tolist()):
        if v > best_sc[j]:
            best_sc[j], best_z[j] = v, z
    s, best_z = np.array(best_sc), np.array(best_z)  # (the heights given back: NumPy floats, as ever)
    peaks = _local_peaks(s, np.zeros(len(s), int))
    out = []
    for j in sorted((j for j in peaks if np.isfinite(s[j]) and s[j] > 0), key=lambda j: -s[j]):
        C, (K, R, t) = centres[j]
        kj = float(C[2] / (C[2] - best_z[j]))
        at = C[:2] + (c - C[:2]) * kj
        if np.hypot(*(at - found)) < float(ac.get("alt_min_shift_mm", 0.0)):
            continue
        out.append((best_z[j], replace(reg, camera=Camera(K, cv2.Rodrigues(R)[0].reshape(3), t))))
        if len(out) >= count:
            break
    return out
