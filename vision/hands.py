"""Hands over the tower: arms that come in over the tray's edge and reach the counting zone.

A hand near the tower always belongs to an arm that crosses the edge of the visible tray (a player
sits round the table, half a metre away). So the tray around the tower (and a band of table,
wider on the side away from the camera when a tall tower's hands show further out there,
`_band_window`) is rectified at hand height onto a small grid (a few mm a cell; on a grainy frame each cell the
mean of the pixels round it, `cell_means`), every cell compared with the bare tray behind it
(colour and brightness; a shadow only darkens the tray and keeps its chromaticity), the tower's
own silhouette and the markers masked out (and the tower's painted sides seen beyond that
silhouette, `_tower_body`, and blobs that are an even shadow throughout, `_even_shadows`), and
the non-tray cells split into connected blobs. Fingers the tray's own colour show only by their
light and shade (`_ruffled`): they may join an arm as pieces of its hand, never bring one in.
Each place where a blob meets the tray's edge is an arm coming in; its direction (from where it
enters towards the hand) extended out to the seats gives `entry_deg`, and the part of the blob on
that arm's line says whether the hand reaches within one block length of the footprint (or onto
the tower). An arm the table's colour is seen only over the tray: where a blob crosses the tray's
rim with nothing seen on the table beyond, far from where it meets the edge, another arm comes
in (its hand overlapping the first one's), if it is the table's colour there. An arm seen only
on the table that meets the rim an arm's width wide in the tray's colour goes on over the tray
unseen (`past_rim`); its hand lies beyond the rim, so alone it counts a rim's width further out
(`_unseen_reach`). Entries close together are one arm, unless each is
an arm's width leading to its own blob over the tower (two arms side by side). An arm twice as
wide as one arm is two hands side by side, unless another arm is over the tower already; so is
a lone arm whose blob, its fingers and slim forearms eroded away, leaves two palms side by side
across its line (`_palms`: two arms that came in together).

The fingertip's side is no evidence of the seat (players reach round the tower); the arm's entry
direction is.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

import cv2
import numpy as np

from referee.observations import HandReading
from vision import top_level as tl
from vision.kit import Tray
from vision.memo import memoised
from vision.table_memory import TableReference
from vision.tray import Registration, frame_grain, h_inverse

SIDES = ("east", "north", "west", "south")
_K3 = np.ones((3, 3), np.uint8)


_NO_DEFAULT = object()


class _Later:
    """A dataclass field that may be given as a function of no arguments instead of its value:
    called when the field is first read, and its value kept (`HandMask.xy`, `HandMask.ruffled`).
    `default`: the field's, when it has one."""

    def __init__(self, default=_NO_DEFAULT):
        self.default = default

    def __set_name__(self, owner: type, name: str):
        self.key = "_later_" + name

    def __get__(self, obj, owner: type | None = None):
        if obj is None:
            if self.default is _NO_DEFAULT:
                raise AttributeError(self.key)  # (so the dataclass takes the field to have no default)
            return self.default
        v = obj.__dict__[self.key]
        if callable(v):
            v = obj.__dict__[self.key] = v()
        return v

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.key] = value


@dataclass(frozen=True)
class HandMask:
    """The tray on a grid of cells (row 0 north, column 0 west), as the camera sees it."""

    fg: np.ndarray        # (n, n) bool: not bare tray seen through the cell (and neither tower nor marker)
    known: np.ndarray     # (n, n) bool: bare tray lies behind the cell, so fg means something
    tower: np.ndarray     # (n, n) bool: the tower's silhouette covers the cell
    outside: np.ndarray   # (n, n) bool: beyond the tray sheet or the image: where arms come from
    table: np.ndarray     # (n, n) bool: the table round the tray (no learnt surface behind it)
    # (n, n, 2) where what covers the cell would be at hand height (tray mm). `hand_mask` gives a
    # function that works them out when first read (`_cells_xy`): `arm_entries` reads them only
    # once a blob is as large as a hand (half the bench's frames have none)
    xy: np.ndarray = _Later()
    z: float              # hand plane height (mm above the tray)
    cell_mm: float
    # the tray's rim between the sheet and the table band (unseen, arms cross it): None, none
    rim: np.ndarray | None = None
    # (n, n) bool: cells not in fg seen by their shading alone (`_ruffled`): only pieces of a hand
    # ahead of an arm (`_join_ahead`), never an arm or its width. None: none. `hand_mask` gives a
    # function that works them out when first read (`_ruffled_later`): `arm_entries` reads them
    # only once a blob is as large as a hand, and half the bench's frames have none (255 of 509
    # hand masks)
    ruffled: np.ndarray | None = _Later(None)
    # (n, n, 3) float32 BGR each cell shows, and the table's own colour this frame (the table
    # band's median): whether an arm seen only at the rim is the table's colour. None: unknown
    px: np.ndarray | None = field(default=None, compare=False, repr=False)
    table_bgr: np.ndarray | None = None
    tray_bgr: np.ndarray | None = None  # the bare tray's colour this frame


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
    on_tray: bool                    # some of it is seen against the tray (not only the table)
    tip_mm: tuple[float, float]
    entry_deg: float
    # an arm as wide as two, split down its middle: each side's (entry_deg, tip_mm)
    halves: tuple[tuple[float, tuple[float, float]], ...] = ()
    # it reaches the zone only through pieces of a hand cut off from it (`_join_ahead`)
    by_pieces: bool = False
    # it comes in where it crosses the tray's rim, nothing of it seen on the table (`_unfed_rim`)
    at_rim: bool = False
    # seen only on the table, it crosses the table band up to the tray's rim an arm's width wide:
    # it goes on over the tray unseen (a hand the tray's colour), so it is pinned at hand height
    past_rim: bool = False
    # where it crosses the edge, cell by cell (tray mm on the hand plane): how near two entries are
    edge_cells: np.ndarray | None = field(default=None, compare=False, repr=False)
    # two palms side by side at its hand end (`_palms`): each one's (entry_deg, tip_mm)
    palms: tuple[tuple[float, tuple[float, float]], ...] = ()
    # two hands of two skin tones in its blob (`_tones`): each one's (entry_deg, tip_mm)
    tones: tuple[tuple[float, tuple[float, float]], ...] = ()


def hand_plane_z(cfg: Mapping, z_top: float) -> float:
    return float(z_top) + float(cfg["hands"]["plane_above_top_mm"])


@dataclass(frozen=True)
class HandGrid:
    """What the hand grid's cells are, whatever the frame: built once per tray, background and
    grid settings (`hand_grid`; the vision pipeline keeps its own). Arrays are read-only."""

    tray: Tray
    bg: object
    n: int
    A: np.ndarray          # cell -> tray mm (on the tray plane)
    ii: np.ndarray         # (n, n) float64 row of each cell
    jj: np.ndarray         # (n, n) float64 column
    ground: np.ndarray     # (n, n, 2) each cell's centre, tray mm on the tray plane
    design: np.ndarray     # (n * n, 6) float32: the light surface's terms at each cell (`colour_change`)
    on_sheet: np.ndarray   # (n, n) bool: within the tray sheet (and its margin)
    off_rim: np.ndarray    # (n, n) bool: beyond the tray's rim (the table band, where the image has it)
    border: np.ndarray     # (n, n) bool: the grid's outer ring of cells
    marker: np.ndarray     # (n, n) bool: a marker (padded) lies there
    bg_bgr: np.ndarray | None   # (n, n, 3) float32: the learnt tray surface behind each cell, reference light
    bg_missing: np.ndarray | None  # (n, n) bool: no learnt surface behind the cell
    # flat indices of those cells (a window's: worked out when first read, `_window`)
    bg_missing_idx: np.ndarray | None = _Later()
    # the same cells with the table band `table_band_max_mm` wide all round (`pad` cells more on
    # every side), which frames whose hands show beyond the band take part of (`_band_window`)
    wide: HandGrid | None = field(default=None, compare=False, repr=False)
    pad: int = 0
    rows: int | None = None  # a part of `wide`: its rows (n: its columns); None: n x n
    windows: dict = field(default_factory=dict, compare=False, repr=False)  # those parts, made once each
    # bg_bgr's three channels, each contiguous (or a window's part of one): a frame's light is
    # taken out channel by channel (dividing an (n, n, 3) array by three gains costs NumPy eight times)
    bg_planes: tuple | None = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def clear(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What every frame's masks start from, made once per grid (read-only): the cells that
        are known where the image has them and no tower covers them, with a table band (the
        sheet and the band, no marker) and without one (the sheet, no marker), and the tray's
        rim (neither sheet nor band)."""
        free = ~self.marker
        return (_readonly((self.on_sheet | self.off_rim) & free), _readonly(self.on_sheet & free),
                _readonly(~self.on_sheet & ~self.off_rim))

    @functools.cached_property
    def missing_off_band(self) -> np.ndarray | None:
        """The flat indices of the cells with no learnt surface that lie off the table band
        (`off_rim`): the only ones whose expected colour a frame that sees the table band reads
        (`hand_mask`). Every cell with none lies in the band on the kits' trays (2,755 of 6,724),
        so this is mostly empty. None without a learnt surface."""
        if self.bg_missing is None:
            return None
        return _readonly(np.flatnonzero(self.bg_missing & ~self.off_rim))


_SHIFT1 = np.array([[1, 0, -1], [0, 1, -1], [0, 0, 1]])
_CONSTANTS: dict[tuple, np.ndarray] = {}  # read-only arrays every frame uses: made once each


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def hand_grid(hc: Mapping, tray: Tray, bg) -> HandGrid:
    """The grid for this tray, background and these settings: the pipeline's, not the frame's, so
    it is built once (`vision.reader.Pipeline.hand_grid`) and passed to `find_hands`.
    With `table_band_max_mm` over `table_band_mm` it also holds `wide`, the same cells with the
    table band that wide all round, from which a frame whose hands show further out takes the
    part it needs (`_band_window`)."""
    out = _cells(hc, tray, bg)
    band, wide = float(hc["table_band_mm"]), float(hc.get("table_band_max_mm", 0.0))
    if band > 0 and wide > band:
        k = int(math.ceil((wide - band) / float(hc["cell_mm"])))
        out = replace(out, wide=_cells(hc, tray, bg, k), pad=k)
    return out


def _cells(hc: Mapping, tray: Tray, bg, more: int = 0) -> HandGrid:
    """The square of cells of `cell_mm` centred on the tower that covers the tray and the table
    band round it, `more` cells further out on every side."""
    g = float(hc["cell_mm"])
    margin = float(hc["tray_margin_mm"])
    rim = float(hc["tray_rim_mm"])
    band = float(hc["table_band_mm"])
    pad = float(hc["marker_pad_mm"])
    cx, cy = tray.tower_center
    x0, y0, x1, y1 = tray.extent()
    half = max(abs(x0 - cx), abs(x1 - cx), abs(y0 - cy), abs(y1 - cy)) + max(margin, rim + band if band > 0 else 0) + 2 * g
    n = int(math.ceil(2 * half / g)) + 2 * more
    half += more * g
    A = np.array([[g, 0, cx - half + g / 2], [0, -g, cy + half - g / 2], [0, 0, 1]])  # cell -> tray mm
    ii, jj = np.indices((n, n), dtype=np.float64)
    ground = np.stack([A[0, 2] + g * jj, A[1, 2] - g * ii], axis=-1)

    def within(d: float) -> np.ndarray:
        return (ground[..., 0] > x0 - d) & (ground[..., 0] < x1 + d) & (ground[..., 1] > y0 - d) & (ground[..., 1] < y1 + d)

    border = np.zeros((n, n), bool)
    border[[0, -1], :] = border[:, [0, -1]] = True
    marker = np.zeros((n, n), bool)
    for c in tray.markers.values():
        lo, hi = c.min(axis=0) - pad, c.max(axis=0) + pad
        marker |= (ground[..., 0] >= lo[0]) & (ground[..., 0] <= hi[0]) & (ground[..., 1] >= lo[1]) & (ground[..., 1] <= hi[1])
    bg_bgr = bg_missing = bg_missing_idx = None
    if bg is not None:
        B = np.array([[bg.ppm, 0, -bg.x0 * bg.ppm], [0, -bg.ppm, bg.y1 * bg.ppm], [0, 0, 1]]) @ A
        bg_bgr = cv2.warpPerspective(bg.bgr, B / B[2, 2], (n, n), flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                                     borderMode=cv2.BORDER_CONSTANT, borderValue=(np.nan, np.nan, np.nan))
        bg_missing = ~np.isfinite(bg_bgr).all(axis=-1)
        bg_missing_idx = np.flatnonzero(bg_missing)
    design = _design(ground)
    planes = None if bg_bgr is None else tuple(_readonly(np.ascontiguousarray(bg_bgr[..., c])) for c in range(3))
    out = HandGrid(tray, bg, n, A, ii, jj, ground, design, within(margin), ~within(rim), border, marker,
                   *(None if a is None else _readonly(a) for a in (bg_bgr, bg_missing, bg_missing_idx)),
                   bg_planes=planes)
    for a in (A, ii, jj, ground, design, out.on_sheet, out.off_rim, border, marker):
        _readonly(a)
    return out


def _band_window(hc: Mapping, G: HandGrid, reg: Registration, z: float, shape: tuple[int, int]) -> HandGrid:
    """The cells for this frame: the grid itself, or, where the counting zone at hand height
    (`band_zone_mm` round the footprint) seen from the camera lies on the table beyond the grid's
    band (a tall tower, the camera off to that side), the grid with the table band widened on
    that side as far as that needs (never beyond `table_band_max_mm`, nor beyond the image)."""
    W = G.wide
    if W is None or z <= 0:
        return G
    k, g = G.pad, float(hc["cell_mm"])
    cx, cy = G.tray.tower_center
    r = G.tray.footprint_half + float(hc.get("band_zone_mm", hc["reach_mm"]))
    Hinv = h_inverse(reg)
    q = _square(cx, cy, r) @ (Hinv @ reg.camera.plane_homography(z)).T  # the zone at hand height, where the camera sees it on the tray plane
    h, w = shape
    corners = _square(w / 2, h / 2, w / 2, h / 2) @ Hinv.T
    q, corners = q.tolist(), corners.tolist()
    if any(p[2] <= 0 for p in q) or any(p[2] <= 0 for p in corners):
        return G
    # (the four corners' divisions and extremes in plain floats: the same numbers as NumPy's, without
    # a dozen calls on arrays of four)
    qx, qy, ix, iy = ([p[a] / p[2] for p in pts] for pts, a in ((q, 0), (q, 1), (corners, 0), (corners, 1)))
    lo = (max(min(qx), min(ix)), max(min(qy), min(iy)))  # west, south: tray mm
    hi = (min(max(qx), max(ix)), min(max(qy), max(iy)))  # east, north
    ex0, ey1 = float(G.A[0, 2]) - g / 2, float(G.A[1, 2]) + g / 2  # the grid's west and north edges
    ex1, ey0 = ex0 + G.n * g, ey1 - G.n * g
    step = max(1, int(hc.get("band_step_cells", 4)))

    def more(d: float) -> int:  # cells to add (whole steps) to reach d mm further out
        return 0 if d <= 0 else min(k, step * int(math.ceil(d / g / step)))

    west, east, south, north = more(ex0 - lo[0]), more(hi[0] - ex1), more(ey0 - lo[1]), more(hi[1] - ey1)
    if not (west or east or south or north):
        return G
    key = (north, south, west, east)
    cache = G.windows
    got = cache.get(key)
    if got is None:
        got = _window(W, k - north, k + G.n + south, k - west, k + G.n + east)
        if len(cache) < 256:
            cache[key] = got
    return got


@functools.lru_cache(maxsize=64)
def _square(cx: float, cy: float, rx: float, ry: float | None = None) -> np.ndarray:
    """(4, 3) homogeneous corners of the rectangle rx (and ry, else rx) either side of (cx, cy),
    anticlockwise from (cx - rx, cy - ry) (read-only; made once per size)."""
    ry = rx if ry is None else ry
    return _readonly(np.array([[cx - rx, cy - ry, 1.0], [cx + rx, cy - ry, 1.0], [cx + rx, cy + ry, 1.0],
                               [cx - rx, cy + ry, 1.0]]))


def _window(W: HandGrid, r0: int, r1: int, c0: int, c1: int) -> HandGrid:
    """Rows r0:r1 and columns c0:c1 of grid W, as a grid of its own. (A frame's window is mostly
    new: 265 made for the bench's 509 hand masks, some 0.09 ms each: its design is copied in
    whole rows, and its border is one made once per size.)"""
    A = W.A @ np.array([[1.0, 0, c0], [0, 1.0, r0], [0, 0, 1]])
    h, w = r1 - r0, c1 - c0
    sl = (slice(r0, r1), slice(c0, c1))
    # (W's rows of cells as rows of 6 w floats: copied a row at a time, not six floats at a time)
    design = _readonly(np.ascontiguousarray(W.design.reshape(W.n, -1)[r0:r1, 6 * c0:6 * c1]).reshape(h * w, -1))
    bg_bgr = None if W.bg_bgr is None else W.bg_bgr[sl]
    bg_missing = None if W.bg_missing is None else W.bg_missing[sl]
    out = HandGrid(W.tray, W.bg, w, A, W.ii[:h, :w], W.jj[:h, :w], W.ground[sl], design, W.on_sheet[sl],
                   W.off_rim[sl], _border(h, w), W.marker[sl], bg_bgr, bg_missing,
                   None if bg_missing is None else functools.partial(np.flatnonzero, bg_missing), rows=h,
                   bg_planes=None if W.bg_planes is None else tuple(pl[sl] for pl in W.bg_planes))
    _readonly(A)
    # its masks' starts, `clear`, are W's own cut to the window (the same cells, read-only views):
    # a frame's window is mostly new, and W's are made once
    out.__dict__["clear"] = tuple(c[sl] for c in W.clear)
    off = W.missing_off_band  # (W's own, a few cells at most, mostly none, placed in the window)
    if off is not None and len(off):
        r, c = np.divmod(off, W.n)
        inside = (r >= r0) & (r < r1) & (c >= c0) & (c < c1)
        off = _readonly((r[inside] - r0) * w + (c[inside] - c0))
    out.__dict__["missing_off_band"] = off
    return out


def _border(h: int, w: int) -> np.ndarray:
    """(h, w) bool: the outer ring of cells (read-only; made once per size)."""
    def make() -> np.ndarray:
        b = np.zeros((h, w), bool)
        b[[0, -1], :] = b[:, [0, -1]] = True
        return b
    return _constant(("border", h, w), make)


def _constant(key: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
    a = _CONSTANTS.get(key)
    if a is None:
        a = _CONSTANTS[key] = _readonly(make())
    return a


def _ones(h: int, w: int) -> np.ndarray:
    return _constant(("ones", h, w), lambda: np.ones((h, w), np.uint8))


def _kernel(k: int) -> np.ndarray:
    """A k x k square structuring element."""
    return _ones(k, k)


def _disk(r: int) -> np.ndarray:
    """A round structuring element of radius r cells."""
    return _constant(("disk", r), lambda: cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1)))


def hand_mask(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
              bg=None, gains: np.ndarray | None = None, grid: HandGrid | None = None,
              table_ref: TableReference | None = None, means: np.ndarray | None = None,
              memo: dict | None = None) -> HandMask:
    """Rectify the tray onto a grid and mark the cells where the camera sees something else.
    `grid`: `hand_grid(cfg["hands"], tray, bg)`, built once by the caller (else here, per frame).
    `table_ref`: the table as play has shown it (`table_memory`): each table cell is compared
    with its own remembered colour instead of the frame's one table colour (a patterned table).
    `means`: `cell_means(cfg["hands"], img)`, when the caller has it (a frame's hands looked for
    at two heights sample the same blurred frame). `memo`: the frame's (`vision.memo`), in which
    the grid's samples are kept for hands looked for again on the same cells (`_samples`)."""
    hc = cfg["hands"]
    G = grid if grid is not None else hand_grid(hc, tray, bg)
    g = float(hc["cell_mm"])
    band = float(hc["table_band_mm"])
    if not math.isfinite(float(z_top)):
        z_top = 0.0  # no height found: the hands are looked for as if the tower were flat
    z = hand_plane_z(cfg, z_top)
    # where something seen against a tray cell would be if it were at hand height
    if reg.camera.center[2] < z + float(hc["plane_below_camera_mm"]):
        z = 0.0  # a camera pose that puts the lens near the hands is off (no focal length learnt)
    h, w = img.shape[:2]
    G = _band_window(hc, G, reg, z, (h, w))  # a tall tower's hands may show beyond the band
    n, ii, jj = G.n, G.ii, G.jj
    size = (n, G.rows or n)  # columns, rows
    M, warped8, warped, in_img = _samples(hc, G, reg, img, means, memo)
    on_sheet = G.on_sheet
    outside = ~in_img | (G.border if band > 0 else ~on_sheet)
    gains = gains if gains is not None else np.ones(3, np.float32)
    tower = _tower_cells(hc, tray, reg, M, z_top, in_img.shape)
    seen = in_img & ~tower  # (the image has it and no tower covers it)
    # the table round the tray (its own colour, this frame's median): arms cross it on their way in
    # and a tall tower's hands may show only there. The tray's rim between is left out.
    table = G.off_rim & seen if band > 0 else np.zeros(in_img.shape, bool)
    on_table = np.flatnonzero(table)
    table_med = _median_u8(warped8, table.view(np.uint8), len(on_table)) if len(on_table) >= 30 else None
    table_exp = table_med
    if table_med is not None and table_ref is not None:  # each cell its own remembered colour
        remembered = cv2.warpPerspective(table_ref.image, table_ref.to_small() @ M, size,
                                         flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)
        table_exp = remembered.reshape(-1, 3)[on_table].astype(np.float32)
    if bg is not None:  # the learnt tray surface behind every cell, in this frame's light (channel by channel)
        g32 = np.asarray(gains, np.float32)
        t32 = np.asarray(tray_bgr, np.float32)
        planes = [pl / g32[c] for c, pl in enumerate(G.bg_planes or cv2.split(np.ascontiguousarray(G.bg_bgr)))]
        if all(math.isfinite(v) and abs(v) >= 1e-30 for v in g32.tolist()):
            # dividing by such gains keeps every finite cell finite (the grid's flat indices of
            # the others, written faster than through a mask of them all). With the table's colour
            # known, every band cell the image has is given it below and the others are not read
            # (`known`): of those, only the cells off the band need the tray's colour, mostly none
            missing = G.bg_missing_idx if table_exp is None else G.missing_off_band
        else:
            missing = np.flatnonzero(~(np.isfinite(planes[0]) & np.isfinite(planes[1]) & np.isfinite(planes[2])))
        for c in range(3):
            planes[c].reshape(-1)[missing] = t32[c]
            if table_exp is not None:
                planes[c].reshape(-1)[on_table] = table_exp[..., c]
        exp = cv2.merge(planes)
    else:
        exp = np.broadcast_to(np.asarray(tray_bgr, np.float32), in_img.shape + (3,)).copy()
        if table_exp is not None:
            exp.reshape(-1, 3)[on_table] = table_exp
    # ((on_sheet & in_img) | table) & ~marker & ~tower, from the grid's own part made once
    known = G.clear[0 if band > 0 else 1] & seen
    # the table and the tray are lit differently: each gets its own light surface
    regions = [known & ~table, known & table]
    changed, shady, shift = _changed_cells(hc, warped, exp, regions, G.ground, G.design)
    fg = _foreground(hc, changed & known, warped, warped8, tower, shady, table)
    rim = G.clear[2] & seen if band > 0 else None
    table_bgr = exp.reshape(-1, 3)[on_table[0]].copy() if len(on_table) >= 30 else None
    return HandMask(fg, known, tower, outside, table, functools.partial(_cells_xy, reg, z, M, jj[:1, :], ii[:, :1]), z, g, rim,
                    _ruffled_later(hc, changed, shift, regions, known, fg),
                    warped, table_bgr, np.asarray(tray_bgr, np.float32))


def _foreground(hc: Mapping, fg: np.ndarray, px: np.ndarray, px8: np.ndarray, tower: np.ndarray, shady: np.ndarray,
                table: np.ndarray) -> np.ndarray:
    """The changed cells `fg` (overwritten) less the tower's paint seen beyond its silhouette
    (`_tower_body`), opened by `open_cells` (specks dropped), less the blobs that are an even
    shadow (`_even_shadows`, of the `shady` cells off the `table`).

    An erosion takes no more cells from a part of a mask than from the whole: when the changed
    cells' own erosion holds none (most frames with no hand: a few specks), the opening of
    whatever is left of them holds none, and the foreground is empty whatever the paint and the
    shadows, told without them (a dilation of no cell is none). Where the paint takes no cell
    (most frames), the opening is that erosion dilated (MORPH_OPEN's own two steps)."""
    k = int(hc["open_cells"])
    core = cv2.erode(fg.view(np.uint8), _kernel(k)) if k > 1 else None
    if core is not None and not core.any():
        fg[...] = False
        return fg
    paint = _tower_body(hc, px, fg, tower, px8)
    if core is not None and not paint.any():
        fg = cv2.dilate(core, _kernel(k)).view(bool)
    else:
        fg &= ~paint
        if core is not None and fg.any():  # (an opening of no cell is none)
            fg = cv2.morphologyEx(fg.view(np.uint8), cv2.MORPH_OPEN, _kernel(k)).view(bool)
    fg &= ~_even_shadows(hc, fg, shady & ~table)
    return fg


def _cells_xy(reg: Registration, z: float, M: np.ndarray, j1: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """(rows, columns, 2): where what covers each cell of the grid M maps (cell -> image px) would
    be on the plane at height z (tray mm). j1, i1: (1, columns) and (rows, 1), each cell's column
    and row."""
    P = np.linalg.inv(reg.camera.plane_homography(z)) @ M
    # (P[r, 0] * jj + P[r, 1] * ii + P[r, 2]): the products taken once per column and once per
    # row (the same numbers in every row / column), then summed in the same order
    xy = np.empty((i1.shape[0], j1.shape[1], 2))
    den = P[2, 0] * j1 + P[2, 1] * i1 + P[2, 2]
    np.divide(P[0, 0] * j1 + P[0, 1] * i1 + P[0, 2], den, out=xy[..., 0])
    np.divide(P[1, 0] * j1 + P[1, 1] * i1 + P[1, 2], den, out=xy[..., 1])
    return xy


def _ruffled_later(hc: Mapping, changed: np.ndarray, shift: np.ndarray, regions: list[np.ndarray],
                   known: np.ndarray, fg: np.ndarray) -> Callable[[], np.ndarray | None]:
    """The mask's ruffled cells (`_ruffled_pieces` among the `known` cells not in `fg`; None: none),
    as a function that works them out, for `HandMask.ruffled` to call when first read."""
    def ruffled() -> np.ndarray | None:
        r = _ruffled_pieces(hc, changed, shift, regions)
        r &= known
        r &= ~fg
        return r if r.any() else None
    return ruffled


def _samples(hc: Mapping, G: HandGrid, reg: Registration, img: np.ndarray, means: np.ndarray | None,
             memo: dict | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The grid's cells as the camera sees them: M (cell on the tray plane -> image px), their
    colours sampled from the frame (`cell_means`; 8-bit and float32) and whether the image has
    them (read-only). Made once a frame for the same cells (`memo`: the frame's): the hands
    looked for again at another height (read_frame's second look, read_level's two levels)
    mostly take the same cells."""
    def make():
        M = reg.H @ G.A  # cell (on the tray plane) -> image px
        M = M / M[2, 2]
        size = (G.n, G.rows or G.n)  # columns, rows
        h, w = img.shape[:2]
        # (the frame may come as BGRA for its means: the reader's, warped in half the time)
        px8 = tl.warp_frame(cell_means(hc, img) if means is None else means, M, size)
        in_img = cv2.warpPerspective(_ones(h - 2, w - 2), _SHIFT1 @ M,
                                     size, flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP, borderValue=0).view(bool)
        return M, _readonly(px8), _readonly(px8.astype(np.float32)), _readonly(in_img)
    return memoised(memo, ("hand cells", id(G)), (G, reg, img, means, hc), make)


def cell_means(hc: Mapping, img: np.ndarray, grain: float | None = None) -> np.ndarray:
    """The frame the grid's cells are sampled from: on a grainy frame (`frame_grain` of every
    32nd row at `mean_above_grain` or more) each pixel the mean of the `cell_mean_px` square
    round it, else the frame itself.

    A cell (5 mm, some 5-7 px) is one bilinear sample of four pixels. On a grainy sensor their
    scatter sets how far a cell must stand out (`noise_k` times its region's median change), and
    a dark hand on a dark table stood out by less (synthetic 8603/0062: a few specks for a hand).
    A box the size of a cell cuts the grain some five times and keeps a hand's extent. Clean
    frames (the twin's renders) are left as they are: their fine shading finds fingers the tray's
    colour (`_ruffled`), and averaged they read worse on the whole. `grain`: the frame's
    grain, when the caller has measured it (`frame_grain` of every 32nd row of its grey frame,
    as the reader's frame context does for the markers' crop search)."""
    k = int(hc.get("cell_mean_px", 1))
    least = float(hc.get("mean_above_grain", 0.0))
    if k <= 1:
        return img
    if least > 0:
        if grain is None:
            grain = frame_grain(cv2.cvtColor(np.ascontiguousarray(img[::32]), cv2.COLOR_BGR2GRAY))
        if grain < least:
            return img
    return cv2.blur(img, (k, k))


def _even_shadows(hc: Mapping, fg: np.ndarray, shady: np.ndarray) -> np.ndarray:
    """Blobs that are a shadow throughout: at least `shadow_blob_share` of their cells dimmer
    than the tray and even (`_changed_cells`). A tall tower's shadow under a warm lamp changes the
    tray's colour more than `shadow_chroma` allows, but stays even; a hand is shaded (round
    fingers, the palm's edges) or dark, and its arm seldom lies in shade all along.
    `shadow_blob_share` 0: off."""
    share = float(hc.get("shadow_blob_share", 0.0))
    if share <= 0 or not (fg & shady).any():
        return np.zeros(fg.shape, bool)
    n, lab = cv2.connectedComponents(fg.view(np.uint8), connectivity=8)
    # the blobs' insides only: a shadow's rim cells see the bare tray beside them, so are not even
    inside = cv2.erode(fg.view(np.uint8), _K3).view(bool)
    flat = lab[inside]
    cells = np.bincount(flat, minlength=n)
    dim = np.bincount(flat, weights=shady[inside], minlength=n)
    drop = (dim >= share * cells) & (cells > 0)
    drop[0] = False
    return drop[lab]


def _tower_body(hc: Mapping, px: np.ndarray, fg: np.ndarray, tower: np.ndarray,
                px8: np.ndarray | None = None) -> np.ndarray:
    """Cells of the tower seen beyond its drawn silhouette (a top height read too low, a camera
    pose a little off): changed cells joined to the silhouette through cells of a block's paint.
    Blocks are painted in saturated red, yellow, green and blue; skin of every tone has an orange
    hue between red and yellow (and a hand over the tower stays a hand). `block_sat` 0: off.
    `px8`: px as 8 bits, when the caller has it (px as it is rounded and clipped into 8 bits)."""
    sat = float(hc.get("block_sat", 0.0))
    if sat <= 0 or not fg.any():
        return np.zeros(fg.shape, bool)
    near = cv2.dilate(tower.view(np.uint8), _K3).view(bool)
    # paint beside the silhouette first, from the few changed cells there: without any (432 of
    # the 469 bench frames with changed cells), no cell is joined to it, and the grid's other
    # cells need no looking at
    beside = np.flatnonzero(fg & near)
    if not len(beside):
        return np.zeros(fg.shape, bool)
    rows = (px if px8 is None else px8).reshape(-1, 3).take(beside, axis=0)
    if not _painted(hc, sat, np.clip(rows, 0, 255).astype(np.uint8) if px8 is None else rows).any():
        return np.zeros(fg.shape, bool)
    paint = fg & _painted(hc, sat, np.clip(px, 0, 255).astype(np.uint8) if px8 is None else px8)
    n, lab = cv2.connectedComponents((paint | tower).view(np.uint8), connectivity=8)
    keep = np.zeros(n, bool)
    keep[lab[tower]] = True  # (each label under the tower, however often: no sort for np.unique)
    keep[0] = False
    return keep[lab] & paint


def _painted(hc: Mapping, sat: float, bgr8: np.ndarray) -> np.ndarray:
    """Whether each 8-bit BGR pixel ((..., 3), an image or rows of pixels) shows a block's paint:
    saturated (`block_sat`), not dark, and of no skin hue (`skin_hue_deg`)."""
    hsv = cv2.cvtColor(bgr8 if bgr8.ndim == 3 else bgr8.reshape(-1, 1, 3), cv2.COLOR_BGR2HSV_FULL).reshape(bgr8.shape)
    lo, hi = hc.get("skin_hue_deg", [8.0, 42.0])
    skin = _skin_hues(float(lo), float(hi))  # per 8-bit hue, whether its degrees lie in the skin range
    return (hsv[..., 1] >= sat * 255) & (hsv[..., 2] >= 40) & ~np.take(skin, hsv[..., 0])


def _skin_hues(lo: float, hi: float) -> np.ndarray:
    """(256,) bool: whether each 8-bit full-range hue, in degrees (as float32), lies in [lo, hi]."""
    return _constant(("skin", lo, hi), lambda: (lambda h: (h >= lo) & (h <= hi))(
        np.arange(256, dtype=np.uint8).astype(np.float32) * (360.0 / 256.0)))


def colour_change(px: np.ndarray, ref: np.ndarray, regions: list[np.ndarray], xy: np.ndarray, trim: float,
                  rounds: int = 2, design: np.ndarray | None = None, lit_share: float = 0.0, lit_above: float = 0.14,
                  lit_chroma: float = 0.05, from_expected: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(chroma, shift) of the cells of each region (disjoint masks) against the bare surface
    behind them, room light taken out (cells in no region: 0, 0).

    Log colour difference per channel, minus a quadratic surface over the region fitted to its
    cells (robustly: most of it is bare): that removes a light gradient, a lamp's fall-off and a
    colour cast the global gains missed. What remains: `shift`, the mean log brightness change (a
    shadow makes it negative, keeping the colour), and `chroma`, the mean absolute colour change.
    `design`: `_design(xy)`, if already made (it depends on the grid only). `from_expected`: as
    `_fit_start`."""
    return _colour_change(px, ref, regions, xy, trim, rounds, design, lit_share, lit_above, lit_chroma,
                          from_expected)[:2]


def _colour_change(px: np.ndarray, ref: np.ndarray, regions: list[np.ndarray], xy: np.ndarray, trim: float,
                   rounds: int, design: np.ndarray | None, lit_share: float, lit_above: float, lit_chroma: float,
                   from_expected: bool) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """`colour_change`'s (chroma, shift), and each region's chroma as gathered: its cells in
    another order, which an order statistic of them does not see (`_changed_cells`' noise
    floor), without gathering them again from the grid. Those rows are the caller's to reorder
    (nothing here reads them again)."""
    n = px.shape[0] * px.shape[1]
    chroma = np.zeros(n, np.float32)
    shift = np.zeros(n, np.float32)
    if design is None:
        design = _design(xy)
    # every region's cells in one gather (the regions are disjoint), each region's in a block;
    # where the surface is fitted, the third of the cells that pins it down comes first in the
    # block, so that the fit's passes run on rows in a row
    parts = []
    for region in regions:
        idx = np.flatnonzero(region)
        parts.append(np.concatenate((idx[::3], idx[1::3], idx[2::3])) if len(idx) >= 90 else idx)
    idx = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if len(idx) == 0:
        return chroma.reshape(px.shape[:2]), shift.reshape(px.shape[:2]), [chroma[:0] for _ in parts]
    # (take: the rows gathered faster than by indexing)
    d = cv2.log(px.reshape(-1, 3).take(idx, axis=0).astype(np.float32, copy=False) + 4.0)
    d -= cv2.log(ref.reshape(-1, 3).take(idx, axis=0).astype(np.float32, copy=False) + 4.0)
    X = design.take(idx, axis=0)  # 1, x, y, x^2, y^2, xy: a lamp's fall-off is curved
    end = 0
    blocks = []
    for part in parts:
        start, end = end, end + len(part)
        blocks.append((start, end))
        if len(part) >= 90:
            third = start + (len(part) + 2) // 3
            Df, Xf = d[start:third], X[start:third]
            coef, resid, within = _robust_fit(Df, Xf, *_fit_start(Df, trim, from_expected), trim, rounds)
            if lit_share > 0:
                coef = _lit_surface(Df, Xf, coef, trim, rounds, lit_share, lit_above, lit_chroma, resid, within)
            d[start:end] -= X[start:end] @ coef
    sh, ch = _shift_and_chroma(d)
    shift[idx], chroma[idx] = sh, ch
    return chroma.reshape(px.shape[:2]), shift.reshape(px.shape[:2]), [ch[a:b] for a, b in blocks]


def _fit_start(Df: np.ndarray, trim: float, expected: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Where the light fit starts: the rows' median (per channel), or, with `expected`, no change
    at all (the surface as expected in this frame's light) when more rows lie within `trim` of
    that; and, with `expected`, the rows within `trim` of the start (`_rows_within`: counted
    here, they are the fit's first rows, `_robust_surface`), else None.

    Each channel's median is taken on its own, so over a tray that is partly bare, partly in a
    hand's shadow and partly a pale hand it can lie where no cell is: 12 of 672 rows (synthetic
    9602/0025, a pale yellow hand over a white tray). The fit then never starts (it needs 30),
    every bare cell reads as changed by the hand's tint, and the noise floor taken from them
    hides the hand itself. The expected colour is the surface's in this frame's light (the
    tray's gains are measured on its bare part in this very frame, `top_level.tray_color`), so
    most bare cells lie near it whatever covers the rest. (The largest group of rows alike,
    tried instead, was as often a large hand or shadow: worse.)"""
    median = _median_rows(Df)
    if not expected:
        return median, None
    # (the median taken off by OpenCV, the rows as three-channel pixels: the same float32
    # differences, without NumPy's broadcast over a last axis of three, a third of its time)
    off = cv2.subtract(Df.reshape(-1, 1, 3), (*median.tolist(), 0.0)).reshape(-1, 3)
    at_zero, at_median = _rows_within(Df, trim), _rows_within(off, trim)
    if np.count_nonzero(at_zero) > np.count_nonzero(at_median):
        return np.zeros(3, Df.dtype), at_zero
    return median, at_median


def _rows_within(r: np.ndarray, trim: float) -> np.ndarray:
    """Per row of residuals (N, 3, float32 or float64): whether all three lie within +-trim, as
    uint8 (255: within; count it, or gather rows with it by `compress`, not by indexing).
    (One cv2.inRange over the rows as three-channel pixels instead of six NumPy passes; its
    bounds are inclusive, so they are the float just inside trim: |r| < trim as NumPy compares
    it, in r's own precision. NaN is within neither.)"""
    if trim <= 0 or r.dtype not in (np.float32, np.float64):
        a = np.abs(r)
        return ((a[:, 0] < trim) & (a[:, 1] < trim) & (a[:, 2] < trim)).view(np.uint8) * np.uint8(255)
    lo, hi = _inside(float(trim), r.dtype.type)
    return cv2.inRange(r.reshape(-1, 1, 3), lo, hi).reshape(-1)


@functools.lru_cache(maxsize=16)
def _inside(trim: float, ftype: type) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """cv2.inRange's bounds for |v| < trim in the float type ftype (the nearest float below
    trim as ftype rounds it), for three channels."""
    b = float(np.nextafter(ftype(trim), ftype(0)))
    return (-b, -b, -b), (b, b, b)


def _robust_surface(Df: np.ndarray, Xf: np.ndarray, start: np.ndarray, first: np.ndarray | None, trim: float,
                    rounds: int) -> np.ndarray:
    """The light surface's coefficients (6, 3) fitted to the rows of Df from a flat start
    (`start`, (3,)): each round a least-squares fit to the rows within `trim` of the last, for
    up to `rounds` rounds, until the rows taken no longer change. `first`: the rows within
    `trim` of the start, when the caller has them (`_fit_start`; the flat surface's products
    are the start itself, to the bit: x * 0 adds nothing).

    The flat start takes only the bare cells about as bright as the median: under a lamp's
    fall-off or a light gradient across the tray (a quarter brighter at one side is common),
    that is a band of the tray, and the curved surface fitted to a band bends away from the
    rest. Each round takes in more of it. Two rounds left a far corner of the lit tray brighter
    than the fit by a sixth, seen as an arm (synthetic 8602/0021, 9602/0023)."""
    return _robust_fit(Df, Xf, start, first, trim, rounds)[0]


def _robust_fit(Df: np.ndarray, Xf: np.ndarray, start: np.ndarray, first: np.ndarray | None, trim: float,
                rounds: int) -> tuple[np.ndarray, np.ndarray | None, int]:
    """`_robust_surface`'s coefficients, Df less the surface they give (`Df - Xf @ coef`),
    when the last round worked it out (the rows it took were the last fit's, or too few: the
    fit stops there), else None, and how many of its rows lie within `trim` (with that residual
    only; else 0)."""
    coef = np.zeros((6, 3), np.float32)
    coef[0] = start
    XD = None
    last = None
    resid = None
    for r in range(rounds):
        # the largest of the three under trim
        if r == 0 and first is not None:
            inl, resid = first, None
        else:
            resid = Df - Xf @ coef
            inl = _rows_within(resid, trim)
        taken = inl.tobytes()  # (the rows taken compared as bytes: np.array_equal's overhead is more)
        kept = np.count_nonzero(inl)
        if kept < 30 or taken == last:
            return coef, resid, (kept if resid is not None else 0)
        if XD is None:  # converted once, not each round, side by side: each round's rows in one gather
            XD = np.concatenate((Xf, Df), axis=1, dtype=np.float64)
        coef = _least_squares(Xf, Df, inl, XD)
        last = taken
    return coef, None, 0


def _lit_surface(Df: np.ndarray, Xf: np.ndarray, coef: np.ndarray, trim: float, rounds: int, share: float,
                 above: float, chroma: float, resid: np.ndarray | None = None, within: int = 0) -> np.ndarray:
    """The light surface refitted to the lit surface when a shadow covers most of it.

    A shadow only darkens; the bare surface in full light is its brightest bare part. A hand's
    shadow across most of the tray pulls the fit (which starts at the median) onto the shadow,
    and the lit rest then reads brighter than bare tray by a sixth or more, with no change of
    colour: a second "arm" where there is none (synthetic 9802/0026, 9502/0012). When at least
    `share` of the cells read so (brighter by `above`, log; colour change under `chroma`), the
    fit starts again from their median. `resid`: `Df - Xf @ coef`, when the fit has it (`_robust_fit`;
    it is overwritten), and `within`: how many of its rows lie within `trim` (`_rows_within`).

    A row within `trim` in all three channels is brighter by under trim (their mean, rounded in
    float32, by less than trim and a few parts in ten million): with `above` over trim by 1%, no
    such row reads lit, so when the rows outside trim are fewer than `share` of them, too few
    read lit, told without them (most frames: the fit takes nearly all of the bare surface)."""
    if resid is not None and above > 1.01 * trim and len(Df) - within < share * len(Df):
        return coef
    sh, ch = _shift_and_chroma(Df - Xf @ coef if resid is None else resid)
    lit = (sh > above) & (ch < chroma)
    if np.count_nonzero(lit) < share * len(Df):
        return coef
    return _robust_surface(Df, Xf, _median_rows(Df[lit]), None, trim, rounds)


def _shift_and_chroma(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of log colour differences (N, 3; overwritten): the mean brightness change and the
    mean absolute colour change once that is taken out. The means over the three channels are
    written out: NumPy's reduction over a last axis of three costs several times the arithmetic."""
    sh = d[:, 0] + d[:, 1]
    sh += d[:, 2]
    sh /= 3
    d[:, 0] -= sh  # (column by column: NumPy's broadcast over a last axis of three is slower)
    d[:, 1] -= sh
    d[:, 2] -= sh
    a = np.abs(d, out=d)
    c = a[:, 0] + a[:, 1]
    c += a[:, 2]
    c /= 3
    return sh, c


def _design(xy: np.ndarray) -> np.ndarray:
    """(cells, 6) float32: 1, x, y, x^2, y^2, xy of each cell's position (centred on the grid's
    mean, per 100 mm): the terms of `colour_change`'s light surface."""
    q0 = xy.reshape(-1, 2)
    q0 = ((q0 - q0.mean(axis=0)) / 100.0).astype(np.float32)
    X = np.empty((len(q0), 6), np.float32)
    X[:, 0] = 1.0
    X[:, 1:3] = q0
    X[:, 3:5] = q0 * q0
    X[:, 5] = q0[:, 0] * q0[:, 1]
    return X


def _median_rows(a: np.ndarray) -> np.ndarray:
    """np.median(a, axis=0) of a 2-D array (the same values, NaN included), without its per-call
    overhead: one partition at the middle; the order statistic below it is the largest of the
    lower part."""
    n = a.shape[0]
    if n == 0:
        return np.median(a, axis=0)
    h = n // 2
    p = np.ascontiguousarray(a.T)
    p.partition(h, axis=1)
    m = p[:, h].copy() if n % 2 else (p[:, :h].max(axis=1) + p[:, h]) / 2
    # NaN sorts last; np.median gives NaN where a column has one (a maximum is NaN where a NaN is
    # among the values: a third of the time of isnan().any())
    # (one maximum over all three first: a NaN in none of them, nothing more to look at)
    top = p[:, h:].max()
    if top != top:
        m[np.isnan(p[:, h:].max(axis=1))] = np.nan
    return m


def _median_u8(img8: np.ndarray, mask: np.ndarray | None, n: int) -> np.ndarray:
    """Per channel, the median of an 8-bit three-channel image's `n` pixels under `mask` (uint8;
    None: all of them) as float32: `_median_rows` of them as float32, the same values, from
    their histograms (a third of the time of partitioning them). Order statistics of whole
    numbers, and the mean of two of them, are exact in float32."""
    h = n // 2
    # the three channels' counts one after the other, added up (float32 counts are exact): the
    # k-th smallest of channel c is where that passes c * n + k
    cum = np.concatenate([cv2.calcHist([img8], [c], mask, [256], [0, 256]) for c in range(3)]).reshape(-1).cumsum()
    hi = (np.searchsorted(cum, _ORDER * n + h, side="right") - _CHANNEL_START).astype(np.float32)
    if n % 2:
        return hi
    lo = (np.searchsorted(cum, _ORDER * n + (h - 1), side="right") - _CHANNEL_START).astype(np.float32)
    return (lo + hi) / 2


_ORDER = _readonly(np.arange(3))
_CHANNEL_START = _readonly(np.arange(3) * 256)


def _median1(a: np.ndarray, scratch: bool = False):
    """np.median of a 1-D array (the same value), without its per-call overhead. `scratch`: a
    is the caller's own copy, which may be reordered (not copied again)."""
    n = len(a)
    if n == 0:
        return np.median(a)
    h = n // 2
    p = a if scratch else np.array(a)
    p.partition(h)
    top = p[h:].max()  # NaN sorts last, and the maximum is NaN where one is among them
    if top != top:
        return p.dtype.type(np.nan)
    return p[h] if n % 2 else (p[:h].max() + p[h]) / 2


def _least_squares(X: np.ndarray, D: np.ndarray, rows: np.ndarray | None = None,
                   XD: np.ndarray | None = None) -> np.ndarray:
    """Least-squares coefficients of D on X's six columns (of the `rows` only, if given: bool, or
    uint8 as `_rows_within` gives them) through the normal equations (a 6 x 6 solve: a tenth of
    an SVD's time on the few thousand cells; X's columns are scaled to about 1, so the equations
    are well conditioned); lstsq where they are singular. XD: X and D side by side in float64
    (the robust fit's rounds convert them once).

    X's normal matrix and its products with D are one product, X' [X D], solved by OpenCV's LU:
    np.linalg.solve's checks and wrapping cost more than a 6 x 6 solve, and two products one
    call more (8 of 20 us a fit's round). Their float64 sums differ from the two products' (a
    symmetric one) in the last bits; the coefficients, float32, were the same on every fit of
    the nine sets."""
    Z = np.concatenate((X, D), axis=1, dtype=np.float64) if XD is None else XD
    if rows is not None:
        Z = Z.compress(rows, axis=0)  # (Z[rows] for bool rows, three times faster)
    P = Z[:, :6].T @ Z
    ok, coef = cv2.solve(P[:, :6], P[:, 6:], flags=cv2.DECOMP_LU)
    if ok:
        return coef.astype(np.float32)
    Xr, Dr = (X, D) if rows is None else (X.compress(rows, axis=0), D.compress(rows, axis=0))
    return np.linalg.lstsq(Xr, Dr, rcond=None)[0].astype(np.float32)


def _local_std(a: np.ndarray, regions: list[np.ndarray]) -> np.ndarray:
    """Each cell's standard deviation of `a` over its 3 x 3 neighbours of the same region."""
    out = np.zeros(a.shape, np.float32)
    for region in regions:
        v = np.where(region, a, 0).astype(np.float32, copy=False)
        # (the neighbours counted straight from the mask's bytes into float32: whole numbers, exact)
        n = cv2.boxFilter(region.view(np.uint8), cv2.CV_32F, (3, 3), normalize=False, borderType=cv2.BORDER_CONSTANT)
        np.maximum(n, 1.0, out=n)
        mu = cv2.boxFilter(v, -1, (3, 3), normalize=False, borderType=cv2.BORDER_CONSTANT)
        mu /= n
        np.multiply(v, v, out=v)
        m2 = cv2.boxFilter(v, -1, (3, 3), normalize=False, borderType=cv2.BORDER_CONSTANT)
        m2 /= n
        mu *= mu
        m2 -= mu
        np.maximum(m2, 0.0, out=m2)
        np.copyto(out, np.sqrt(m2, out=m2), where=region)
    return out


def _changed_cells(hc: Mapping, px: np.ndarray, ref: np.ndarray, regions: list[np.ndarray], xy: np.ndarray,
                   design: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells (of the regions) whose colour is not that of the surface behind them, the cells that
    look like a shadow's inside (dimmer, evenly), and each cell's brightness change
    (`colour_change`'s shift), from which the cells amid shaded fingers the surface's colour are
    found when asked for (`_ruffled_pieces`).

    In log colour a shadow (or dimmer light) shifts all three channels alike, so what is left
    after removing the mean shift is the colour change: skin, sleeves, blocks. Very light skin
    on pale wood is brighter and less yellow; dark skin much darker than any shadow. Skin the
    colour of the tray in its own shadow is told apart only by its shading; evenly lit, not.
    `regions`: the tray's cells, then (when there is one) the table band's (`table_bright`)."""
    chroma, shift, rows = _colour_change(px, ref, regions, xy, float(hc["fit_trim"]), int(hc.get("fit_rounds", 2)),
                                         design, float(hc.get("lit_share", 0.0)), math.log(float(hc["bright"])),
                                         float(hc.get("lit_chroma", 0.05)), bool(hc.get("fit_from_expected", False)))
    # in a shadow the light's colour changes too (the lamp is gone, the room's light stays): a
    # darker cell needs a larger colour change to count. But a shadow darkens the surface
    # evenly, while a hand the tray's colour is shaded (fingers are round, the palm's edges
    # turn away from the light): a dim cell whose brightness varies among its neighbours by
    # more than `shaded_std` is no shadow's inside and needs only the ordinary colour change
    dim = shift < math.log(float(hc["shadow_below"]))
    shaded = float(hc["shaded_std"])
    even = float(hc.get("shadow_even_std", 0.0))
    shady = np.zeros(dim.shape, bool)
    if (shaded > 0 or even > 0) and dim.any():  # (no dim cell, nothing to test: a fifth of the kits' frames)
        # (std is read at dim cells only, so a region with none is left out: its cells keep 0;
        # the tray's or the table band's alone holds them on a third of such masks)
        std = _local_std(shift, [r for r in regions if np.logical_and(dim, r).any()])
        shady = dim & (std < even) & (chroma < float(hc.get("shadow_even_chroma", 0.0)))
        if shaded > 0:
            dim &= std < shaded
    need = np.where(dim, float(hc["shadow_chroma"]), float(hc["chroma"]))
    # a grainy surface or a noisy sensor scatters the colour of bare cells: a cell must stand out
    # from its own region's scatter (most of a region is bare, so its median is the scatter;
    # of the region's chroma as `_colour_change` gathered it: the same values in another order)
    # (where k times the median is surely within the least need, it raises no cell's: left out)
    k = float(hc["noise_k"])
    least = min(float(hc["shadow_chroma"]), float(hc["chroma"]))
    for region, ch in zip(regions, rows):
        if k > 0 and len(ch) >= 30 and not _median_within(ch, k, least):
            np.maximum(need, k * float(_median1(ch, True)), out=need, where=region)
    brighter = shift > math.log(float(hc["bright"]))
    tb = float(hc.get("table_bright", 0.0))
    if tb > 0 and len(regions) > 1:
        # the table band (regions[1]) is a thin ring round the tray that an arm's shadow or a
        # lamp's fall-off covers in large part: when more than `table_lit_share` of it reads
        # brighter than its fitted light with no colour change of its own, the fit sat on the
        # shade and the rest is the table in full light (too little of it for the refit,
        # `lit_share`); there only a cell brighter by `table_bright` is something lying on it
        t = regions[1]
        nt = np.count_nonzero(t)
        if nt and np.count_nonzero(brighter & t & (chroma <= need)) > float(hc.get("table_lit_share", 0.0)) * nt:
            brighter &= ~t | (shift > math.log(tb))
    out = (chroma > need) | (shift < math.log(float(hc["dark"]))) | brighter
    return out, shady, shift


def _ruffled_pieces(hc: Mapping, out: np.ndarray, shift: np.ndarray, regions: list[np.ndarray]) -> np.ndarray:
    """The ruffled cells (`_ruffled`, lit as fingers are, `_lit`) not changed (`out`); none when
    `ruffled_std` is 0."""
    ruffled = float(hc.get("ruffled_std", 0.0))
    if ruffled > 0:
        return _lit(hc, _ruffled(hc, shift, regions, ruffled) & ~out, shift)
    return np.zeros(out.shape, bool)


def _ruffled(hc: Mapping, shift: np.ndarray, regions: list[np.ndarray], floor: float) -> np.ndarray:
    """Cells amid fingers the colour of the surface: along a row or a column of `ruffled_cells`
    cells the brightness goes up and down again by more than `ruffled_std` (and `noise_k` times
    the region's own ripple). Round fingers side by side are bright on top and dark at their
    sides; a shadow's edge, however soft, only goes down (its inside is even), and so does the
    edge of anything dark lying on the tray."""
    rip = _ripple(shift, regions, int(hc.get("ruffled_cells", 5)))
    out = np.zeros(shift.shape, bool)
    k = float(hc["noise_k"])
    for region in regions:
        if np.count_nonzero(region) < 30:
            continue
        out |= region & (rip > _floor_or_scatter(np.compress(region.ravel(), rip), k, floor))
    return out


def _floor_or_scatter(v: np.ndarray, k: float, floor: float) -> float:
    """max(floor, k * median of v) (v: float32, the caller's own copy, which may be reordered),
    without the median where k times it is surely at most floor (`_median_within`): the ripple of
    bare tray is mostly well under `ruffled_std` / `noise_k`."""
    if _median_within(v, k, floor):
        return floor
    return max(floor, k * float(_median1(v, True)))


def _median_within(v: np.ndarray, k: float, most: float) -> bool:
    """Whether k times the median of v (float32; `_median1`'s, in float64) is surely a number at
    most `most`, told without the median: k > 0, no NaN in v, and more than half of v at or under
    the float32 t whose k-fold is within `most`. The median then lies at or under t (in float32 the
    mean of two values there does as well), and k times it at or under k times t."""
    if k <= 0 or v.dtype != np.float32 or not len(v):
        return False
    if np.count_nonzero(v <= _k_fold_within(k, most)) <= len(v) // 2:
        return False
    top = v.max()  # (NaN where a NaN is among them)
    return bool(top == top)


@functools.lru_cache(maxsize=16)
def _k_fold_within(k: float, most: float) -> np.float32:
    """The float32 at or under most / k whose k-fold is within `most` (made once per pair)."""
    t = np.float32(most / k)
    while k * float(t) > most:
        t = np.nextafter(t, np.float32(-np.inf))
    return t


def _lit(hc: Mapping, ruffled: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The blobs of ruffled cells with `ruffled_lit_share` of their cells (and those round them)
    brighter than the bare tray by `ruffled_lit` (a factor): a round finger has a side facing
    the lamp that catches more of its light than the flat tray does, while a shadow only
    darkens (the stripes of the fingers' own shadows ruffle the tray as much). `ruffled_lit`
    0: all."""
    lit = float(hc.get("ruffled_lit", 0.0))
    if lit <= 0 or not ruffled.any():
        return ruffled
    n, lab = cv2.connectedComponents(ruffled.view(np.uint8), connectivity=8)
    near = cv2.dilate(lab.astype(np.uint16), _K3)  # each blob and the cells round it (blobs are apart)
    flat = near.ravel()
    cells = np.bincount(flat, minlength=n)
    bright = np.bincount(near[shift > math.log(lit)], minlength=n)
    keep = bright >= float(hc.get("ruffled_lit_share", 0.1)) * cells
    keep[0] = False
    return keep[lab] & ruffled


def _ripple(a: np.ndarray, regions: list[np.ndarray], cells: int) -> np.ndarray:
    """Each cell's ripple of `a` over the `cells` cells round it along a row and along a column,
    the larger: the total of the steps between neighbours less what they add up to (0 where it
    only rises or only falls). Steps into another region or out of all are left out. (Cells in
    no region hold what their neighbours' steps give: `_ruffled` reads the regions' cells only.)"""
    v = a.astype(np.float32, copy=False)
    out = None
    # (OpenCV's sizes are (width, height): the steps down a column are summed down it)
    for ksize, d in (((1, cells - 1), _steps(v, regions, 0)), ((cells - 1, 1), _steps(v, regions, 1))):
        tv = cv2.boxFilter(np.abs(d), -1, ksize, normalize=False, borderType=cv2.BORDER_CONSTANT)
        tv -= np.abs(cv2.boxFilter(d, -1, ksize, normalize=False, borderType=cv2.BORDER_CONSTANT))
        out = tv if out is None else np.maximum(out, tv, out=out)
    return out


def _steps(v: np.ndarray, regions: list[np.ndarray], axis: int) -> np.ndarray:
    """The step from each cell to the next one down (axis 0) or right (axis 1), 0 where the two
    lie in different regions (disjoint) or in none. (Taken only where both lie in one region,
    instead of every step times that mask: the steps left out are +0 instead of a product's
    -0, which the ripple's sums and their absolute values do not tell apart.)"""
    d = np.zeros(v.shape, np.float32)
    here, there = (np.s_[:-1], np.s_[1:]) if axis == 0 else (np.s_[:, :-1], np.s_[:, 1:])
    same = None
    for region in regions:
        both = region[there] & region[here]
        same = both if same is None else np.logical_or(same, both, out=same)
    if same is not None:
        np.subtract(v[there], v[here], out=d[here], where=same)
    return d


def _tower_cells(hc: Mapping, tray: Tray, reg: Registration, M: np.ndarray, z_top: float,
                 shape: tuple[int, int]) -> np.ndarray:
    """Cells through which the camera sees the tower (its whole box, floor to top face)."""
    cx, cy = tray.tower_center
    r = tray.footprint_half + float(hc["tower_pad_mm"])
    top = min(max(0.0, float(z_top)), float(reg.camera.center[2]) * 0.9)  # a top above the lens is a misreading
    # reg.to_image at both heights and apply_h, written out (the same products)
    sqh = _square(cx, cy, r)
    uvh = np.ones((8, 3))
    for rows, zz in ((slice(0, 4), 0.0), (slice(4, 8), top)):
        p = sqh @ reg.camera.plane_homography(zz).T
        uvh[rows, :2] = p[:, :2] / p[:, 2:3]
    p = uvh @ np.linalg.inv(M).T
    cells = p[:, :2] / p[:, 2:3]
    hull = cv2.convexHull(np.round(cells * 16).astype(np.int32))
    mask = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(mask, hull, 1, cv2.LINE_8, 4)
    return mask.view(bool)


class _Blobs:
    """The cells of each blob of a labelled grid (flat indices, in row order, and their points on
    the hand plane), each blob's found once: the same cells `m.xy[lab == k]` gives."""

    def __init__(self, lab: np.ndarray, xy: np.ndarray):
        self.flat = lab.ravel()
        self.xy = xy.reshape(-1, 2)
        self._got: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        got = self._got.get(k)
        if got is None:
            i = np.flatnonzero(self.flat == k)
            got = self._got[k] = (i, self.xy[i])
        return got


def _of_blobs(lab: np.ndarray, comps: set[int]) -> np.ndarray:
    """Whether each cell of a labelled grid is in one of the blobs `comps` (a bool grid). (One
    blob, the usual arm: a comparison, an eighth of the time of looking every label up.)"""
    if len(comps) == 1:
        return lab == next(iter(comps))
    keep = np.zeros(int(lab.max()) + 1, bool)
    keep[[k for k in comps if k < len(keep)]] = True
    return keep[lab]


def _cheb(pts: np.ndarray, c: np.ndarray, half: float) -> np.ndarray:
    """Chebyshev distance (mm) of points outside the footprint of half-side `half` round c
    (np.abs(pts - c).max(axis=1) - half, written out)."""
    return np.maximum(np.abs(pts[:, 0] - c[0]), np.abs(pts[:, 1] - c[1])) - half


def _norms(v: np.ndarray) -> np.ndarray:
    """np.linalg.norm(v, axis=1) of (N, 2) vectors (the same sums), without its overhead."""
    s = v * v
    return np.sqrt(s[:, 0] + s[:, 1])


def _mean0(a: np.ndarray) -> np.ndarray:
    """a.mean(axis=0) (the same sum and division), without its overhead."""
    return np.add.reduce(a, axis=0) / a.shape[0]


def _percentiles(a: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """np.percentile(a, q) for each q of a 1-D float array (linear method; the same arithmetic),
    from one sort instead of one call each."""
    n = len(a)
    if n == 0 or a.dtype != np.float64:
        return [float(np.percentile(a, q)) for q in qs]
    s = np.sort(a)
    if np.isnan(s[-1]):
        return [math.nan for _ in qs]
    out = []
    for q in qs:
        q = q / 100
        v = (n - 1) * q  # numpy's virtual index (linear method)
        lo = hi = n - 1 if v >= n - 1 else 0
        if 0 <= v < n - 1:
            lo = math.floor(v)
            hi = lo + 1
        t = v - (-1 if v >= n - 1 else lo)  # numpy's weight (it does not matter where lo == hi)
        x0, x1 = float(s[lo]), float(s[hi])
        diff = x1 - x0
        out.append(x1 - diff * (1 - t) if t >= 0.5 else x0 + diff * t)
    return out


def arm_entries(cfg: Mapping, tray: Tray, m: HandMask) -> list[ArmEntry]:
    """Every arm that comes in over the tray's edge, with how far in its hand reaches."""
    if not m.fg.any():
        # no changed cell: nothing to bridge (a dilation of none is none), so no blob (most frames
        # with no hand: 241 of the bench's 255 hand masks with no arm; 0.05 ms each)
        return []
    hc = cfg["hands"]
    g = m.cell_mm
    cx, cy = tray.tower_center
    c = np.array([cx, cy])
    # an arm is one blob across the unseen strips (the tray's rim, a marker): bridge them
    holes = ~m.known & ~m.tower & ~m.outside
    # (the bool masks handed to OpenCV as bytes, and its bytes taken back, by views: no copies)
    grown = cv2.dilate(m.fg.view(np.uint8), _K3, iterations=int(hc["bridge_cells"])).view(bool)
    fg8 = (m.fg | (holes & grown)).view(np.uint8)
    # (labels alone, the areas counted after: OpenCV's statistics cost eight times the labelling)
    ncomp, lab = cv2.connectedComponents(fg8, connectivity=8)
    stats = np.zeros((ncomp, cv2.CC_STAT_MAX), np.int32)
    stats[:, cv2.CC_STAT_AREA] = np.bincount(lab.ravel(), minlength=ncomp)
    min_area = float(hc["min_area_mm2"]) / (g * g)
    if not (stats[1:, cv2.CC_STAT_AREA] >= min_area).any():
        return []  # no blob as large as a hand: no arm comes in (half the bench's frames, 0.15 ms each)
    lab8 = lab  # the blobs across the bridged strips: an arm's whole shape (`_palms`)
    lab = np.where(m.fg, lab, 0)
    ruffled = m.ruffled
    if ruffled is not None:  # shaded fingers: loose pieces only, numbered after the blobs
        lab, stats = _with_ruffled(ruffled, lab, stats, g, float(hc["join_min_mm2"]))
    blob = _Blobs(lab, m.xy)
    # the band of known cells next to where arms come from (beyond the table band or the image;
    # without a table band, off the sheet or a marker they cover)
    # (an arm the colour of the table is seen from where it crosses the tray's rim instead)
    ec = int(hc["edge_cells"])
    edge = (cv2.dilate(m.outside.view(np.uint8), _K3, iterations=ec).view(bool) & m.known).ravel()
    rim = (cv2.dilate(holes.view(np.uint8), _K3, iterations=ec).view(bool) & m.known).ravel()
    near_tower = cv2.dilate(m.tower.view(np.uint8), _K3, iterations=2).view(bool).ravel()
    table = m.table.ravel()
    rim_side = _rim_side(hc, m, ec)
    half = tray.footprint_half
    # where an arm crosses the tray's rim with nothing of it seen on the table beyond (an arm the
    # table's colour): it comes in there, even when its blob also reaches the edge elsewhere
    # through another arm it overlaps
    unfed = _unfed_rim(hc, m, ec)
    runs: list[tuple[np.ndarray, set[int]]] = []  # (edge cells, blobs they belong to)
    run_idx: list[np.ndarray] = []  # each run's flat cell indices
    rim_runs: list[np.ndarray] = []  # the entries found at the rim alone
    gap, least = int(hc["merge_gap_cells"]), float(hc["min_entry_mm"]) / g
    for k in range(1, ncomp):
        if stats[k, cv2.CC_STAT_AREA] < min_area:
            continue
        i, pts = blob(k)
        at = edge[i]
        from_edge = bool(at.any())
        mine = _entry_runs(at, i, pts, lab.shape, gap, least) if from_edge else []
        if not mine:
            # a blob that does not reach the edge, or touches it by less than an entry's width (a
            # hand at the image's border, the table band there cut off): an arm over the tray's
            # rim. Past such a touch only on the tray's side of the rim: a blob on the table comes
            # in over the table's outer edge
            at_rim = rim[i] & ~table[i] if from_edge else rim[i]
            if at_rim.any():
                # (gaps bridged less than at the edge: the rim is seen on both its sides, and a
                # piece of hand beyond it bridges two hands' fingers on the tray)
                mine = _entry_runs(at_rim, i, pts, lab.shape, int(hc.get("rim_entry_gap_cells", gap)), least)
                from_edge = from_edge and not mine
        if not mine and not (from_edge and unfed is not None and unfed[i].any()):
            continue  # not connected to an arm from outside (tower sides, stray blocks, noise)
        if from_edge and unfed is not None and unfed[i].any():
            # an arm's width crossing the rim far from where the blob's other arms come in
            apart = float(hc["rim_apart_mm"])
            for e, ie in _entry_runs(unfed[i], i, pts, lab.shape, int(hc["merge_gap_cells"]), float(hc["min_arm_width_mm"]) / g):
                if all(_min_dist(e, o) > apart for o, _ in mine):
                    mine.append((e, ie))
                    rim_runs.append(e)
        runs += [(e, {k}) for e, _ in mine]
        run_idx += [ie for _, ie in mine]
    # entries close together are one arm (fingers seen apart, an edge split by a marker), even
    # when the blobs they lead to are apart, unless both are arms over the tower side by side
    def reaching(blobs: _Blobs) -> Callable[[set[int]], bool]:
        return lambda comps: _blobs_reach(hc, [blobs(k)[0] for k in comps], m.xy.reshape(-1, 2), c, half,
                                          near_tower, table)

    apart_mm = float(hc.get("apart_across_rim_mm", 0.0))
    apart_cells, reaches_u = None, None
    if apart_mm > 0 and len(runs) > 1:
        # two arms whose blobs join only across the bridged rim (two hands side by side, their
        # fingers apart on the tray, their palms on the rim): each run's own blobs, unbridged
        labu = cv2.connectedComponents(m.fg.astype(np.uint8), connectivity=8)[1].ravel()
        apart_cells = [set(labu[ie].tolist()) - {0} for ie in run_idx]
        reaches_u = reaching(_Blobs(labu.reshape(m.fg.shape), m.xy))
    groups = _merge_close(runs, float(hc["same_arm_mm"]), float(hc.get("own_blob_arm_mm", 0.0)), reaching(blob),
                          apart_cells, reaches_u, apart_mm)
    lines = []
    for e, comps in groups:
        E = _mean0(e)
        pts = np.concatenate([blob(k)[1] for k in comps])
        near = pts[_norms(pts - E) < float(hc["direction_mm"])]
        d = E - _mean0(near) if len(near) else np.zeros(2)
        if not np.linalg.norm(d) >= float(hc["direction_min_mm"]):
            d = E - c  # too little arm in view to say which way it points: towards the tower
        lines.append((E, d / (np.linalg.norm(d) + 1e-9)))
    pieces = _join_ahead(hc, m, lab, stats, groups, lines, blob)
    groups = [(e, comps | extra) for (e, comps), extra in zip(groups, pieces)]
    reach = np.full(len(groups), np.inf)
    tips = [c.copy() for _ in groups]
    touch = np.zeros(len(groups), bool)
    tray_seen = np.zeros(len(groups), bool)
    # the same without the joined pieces
    reach0 = np.full(len(groups), np.inf)
    touch0 = np.zeros(len(groups), bool)
    tray0 = np.zeros(len(groups), bool)
    owned0: list[list[np.ndarray]] = [[] for _ in groups]
    owned: list[list[np.ndarray]] = [[] for _ in groups]
    rim_pts: list[list[np.ndarray]] = [[] for _ in groups]
    rim_idx: list[list[np.ndarray]] = [[] for _ in groups]
    for k in set().union(*[comps for _, comps in groups]) if groups else ():
        mine = [j for j, (_, comps) in enumerate(groups) if k in comps]
        i, pts = blob(k)
        cheb_k, tower_k, tray_k = _cheb(pts, c, half), near_tower[i], ~table[i]
        if len(mine) == 1:
            owner = None
        else:  # each blob cell belongs to the arm whose line passes nearest
            owner = np.stack([np.abs((pts - lines[j][0]) @ np.array([-lines[j][1][1], lines[j][1][0]]))
                              + np.maximum(0, (pts - lines[j][0]) @ lines[j][1]) for j in mine]).argmin(axis=0)
        for o, j in enumerate(mine):
            if owner is None:  # all of it
                if not len(pts):
                    continue
                t = int(np.argmin(cheb_k))
                pts_j, on_tower, on_tray = pts, bool(tower_k.any()), bool(tray_k.any())
            else:
                own = owner == o
                if not own.any():
                    continue
                t = int(np.argmin(np.where(own, cheb_k, np.inf)))
                pts_j, on_tower, on_tray = pts[own], bool(tower_k[own].any()), bool(tray_k[own].any())
            if cheb_k[t] < reach[j]:
                reach[j], tips[j] = cheb_k[t], pts[t]
            touch[j] |= on_tower
            tray_seen[j] |= on_tray
            owned[j].append(pts_j)
            if rim_side is not None and k not in pieces[j]:
                at_rim_k = rim_side[i] if owner is None else rim_side[i] & own
                rim_pts[j].append(pts[at_rim_k])
                rim_idx[j].append(i[at_rim_k])
            if k not in pieces[j]:
                owned0[j].append(pts_j)
                reach0[j] = min(reach0[j], float(cheb_k[t]))
                touch0[j] |= on_tower
                tray0[j] |= on_tray
    out: list[ArmEntry] = []
    for j, ((e, _), (E, u)) in enumerate(zip(groups, lines)):
        perp = np.array([-u[1], u[0]])
        arm = np.concatenate(owned0[j] + [e])  # its width and halves from its own cells, not the pieces'
        width, across = entry_width(arm, e, E, u, g, float(hc["width_depth_mm"]))
        halves = ()
        if width >= float(hc["two_arm_width_mm"]):
            halves = _halves(hc, tray, arm, e, E, u, float(_median1(across)))
        own = _OwnColours(hc, m, np.concatenate([blob(k)[0] for k in groups[j][1] - pieces[j]] or [np.zeros(0, int)]))
        past = _past_rim(hc, m, rim_pts[j], rim_idx[j], E, perp, own)
        # (what reaches_zone says of the entry, with and without its pieces, from its fields: the
        # entry is made once, with all of them, not remade with each)
        zone = _reaches(hc, bool(touch[j]), float(reach[j]), bool(tray_seen[j]), past)
        by_pieces = bool(pieces[j]) and zone and not _reaches(hc, bool(touch0[j]), float(reach0[j]), bool(tray0[j]), past)
        palms, tones = (), ()
        if not halves and zone:
            palms = _palms(hc, tray, m, lab8, groups[j][1] - pieces[j], E, u)
            if not palms:
                tones = _tones(hc, tray, m, own, E, u, near_tower)
        out.append(ArmEntry((float(E[0]), float(E[1])), (float(u[0]), float(u[1])), width,
                            float(reach[j]), bool(touch[j]), bool(tray_seen[j]), (float(tips[j][0]), float(tips[j][1])),
                            _entry_deg(E - c, u, float(hc["seat_radius_mm"])), halves, by_pieces,
                            at_rim=any(e is r for r in rim_runs), past_rim=past, edge_cells=e, palms=palms, tones=tones))
    return _absorb_slivers(out, float(hc["min_arm_width_mm"]), float(hc["sliver_merge_mm"]))


def entry_width(arm: np.ndarray, e: np.ndarray, E: np.ndarray, u: np.ndarray, g: float,
                depth: float) -> tuple[float, np.ndarray]:
    """An arm's width just inside where it comes in (the edge itself may be cut short by the
    image's border or a marker): the spread across its line u (3rd to 97th percentile, plus a
    cell) of its cells `arm` (N, 2 mm) that lie from `depth` mm inside its entry E to a cell
    `g` beyond it. Two runs merged into one entry (`same_arm_mm`) can lie either side of their
    mean along that line with no cell near it (twin 907, entries 100 mm apart): then the width
    is the edge cells' `e` own. Returns the width and each measured cell's offset across."""
    along = (arm - E) @ u
    near = arm[(along <= g) & (along >= -depth)]
    if not len(near):
        near = e
    across = (near - E) @ np.array([-u[1], u[0]])
    p3, p97 = _percentiles(across, (3, 97))
    return float(p97 - p3 + g), across


def _rim_side(hc: Mapping, m: HandMask, ec: int) -> np.ndarray | None:
    """Flat mask of the table cells next to the tray's rim (within `edge_cells` + 1): where an arm
    seen on the table meets the tray. None without a rim or when `past_rim_width_mm` is 0."""
    if float(hc.get("past_rim_width_mm", 0.0)) <= 0 or m.rim is None:
        return None
    return (cv2.dilate(m.rim.view(np.uint8), _K3, iterations=ec + 1).view(bool) & m.table & m.fg).ravel()


def _past_rim(hc: Mapping, m: HandMask, pts: list[np.ndarray], idx: list[np.ndarray], E: np.ndarray,
              perp: np.ndarray, own: _OwnColours) -> bool:
    """Whether an arm's cells beside the rim span `past_rim_width_mm` across it, of the tray's
    colour (`_looks_like`): the arm meets the tray an arm's width wide and goes on over it
    unseen (a pale hand over a pale tray), not a hand resting on the table nor a shadow (which
    is darker than the tray, and would show over it too). `own`: the arm's own cells' colours,
    which hold these cells' (`_tones` asks for them too)."""
    width = float(hc.get("past_rim_width_mm", 0.0))
    if width <= 0 or not pts:
        return False
    p = np.concatenate(pts)
    if not len(p):
        return False
    cells = np.concatenate(idx)
    ok = own.like_tray(cells)
    if np.count_nonzero(ok) * 2 < len(ok):  # most of it, not a few cells of a shadow's edge
        return False
    p = p[ok]
    return float(np.ptp((p - E) @ perp)) >= width


def _palms(hc: Mapping, tray: Tray, m: HandMask, lab8: np.ndarray, comps: set[int], E: np.ndarray,
           u: np.ndarray) -> tuple[tuple[float, tuple[float, float]], ...]:
    """Two hands whose arms come in together (one blob, one entry no wider than an arm or two)
    seen by their palms side by side: the blob (across the bridged strips) eroded by
    `palm_core_mm` loses its fingers, thumbs and slim wrists, and what stays are palms and
    forearms. Two cores of at least `palm_min_mm2` each that lie side by side across the arm's
    line (their spans along it overlap, their spans across it do not) are two hands; an arm and
    its own hand lie one behind the other along its line, cut apart at the wrist or the tray's
    rim. Returns each core's (entry_deg, tip_mm), or () (`palm_core_mm` 0: off)."""
    core_mm = float(hc.get("palm_core_mm", 0.0))
    if core_mm <= 0 or not comps:
        return ()
    g = m.cell_mm
    r = max(1, int(round(core_mm / g)))
    blob = _of_blobs(lab8, comps).view(np.uint8)
    x, y, w, h = cv2.boundingRect(blob)  # (one call: the rows and columns it spans)
    if not w:
        return ()
    n0, n1 = blob.shape
    r0, r1 = max(0, y - r - 1), min(n0, y + h + r + 1)
    c0, c1 = max(0, x - r - 1), min(n1, x + w + r + 1)
    core = cv2.erode(blob[r0:r1, c0:c1], _disk(r))  # (the grid's own border does not erode)
    # (labels alone, the areas counted after, as arm_entries does)
    nl, cl = cv2.connectedComponents(core, connectivity=8)
    area = np.bincount(cl.ravel(), minlength=nl)
    big = (np.flatnonzero(area[1:] * g * g >= float(hc.get("palm_min_mm2", 0.0))) + 1).tolist()
    if len(big) < 2:
        return ()
    perp = np.array([-u[1], u[0]])
    xy = m.xy[r0:r1, c0:c1]
    spans = {}
    for k in big:
        p = xy[cl == k]
        along, across = (p - E) @ u, (p - E) @ perp
        spans[k] = (p, along.min(), along.max(), across.min(), across.max())
    best, pair = -1, None
    for i, a in enumerate(big):
        for b in big[i + 1:]:
            A, B = spans[a], spans[b]
            if min(A[2], B[2]) < max(A[1], B[1]) or max(A[3], B[3]) < min(A[4], B[4]):
                continue  # one behind the other along the arm, or overlapping across it
            small = min(area[a], area[b])
            if small > best:
                best, pair = small, (a, b)
    if pair is None:
        return ()
    return tuple(_hand_look(hc, tray, spans[k][0], E, u) for k in pair)


def _hand_look(hc: Mapping, tray: Tray, p: np.ndarray, E: np.ndarray, u: np.ndarray) -> tuple[float, tuple[float, float]]:
    """One of two hands that share an entry E, from its own cells p (N, 2 tray mm): where it
    comes from (entry_deg: from E away from its cells, or along the arm u when they lie too near
    E to tell) and its tip, the cell nearest the tower's centre."""
    c = np.asarray(tray.tower_center, float)
    d = E - _mean0(p)
    d = d / np.linalg.norm(d) if np.linalg.norm(d) >= float(hc["direction_min_mm"]) else u
    tip = p[np.argmin(_cheb(p, c, 0.0))]
    return _entry_deg(E - c, d, float(hc["seat_radius_mm"])), (float(tip[0]), float(tip[1]))


def _tones(hc: Mapping, tray: Tray, m: HandMask, own: _OwnColours, E: np.ndarray, u: np.ndarray,
           near_tower: np.ndarray) -> tuple[tuple[float, tuple[float, float]], ...]:
    """Two hands of two skin tones that came in together (one blob, one entry): the arm's cells
    (`own`), those of the colour of the surface they lie over left out
    (`_OwnColours.like_its_surface`: a lit patch of tray the light fit missed), split in two by
    their log brightness (the split that best separates the means). The two parts are two hands
    when their means lie `tone_gap` apart (log), each holds `tone_share` of the cells and
    `palm_min_mm2` at least, each lies whole (its largest piece holds `tone_whole_share` of it:
    0, any; 0.65: a pale hand with its fingers spread holds 0.68 of it, bench family-2 0001, while
    at 0.5 three photos of one hand split in two), each is of skin's colour (`_skin_coloured`:
    not a sleeve), each reaches the zone on its own and their middles lie `tone_across_mm` apart
    across the arm (side by side: a sleeve of a skin's colour and its hand lie one behind the
    other along it; 0: off). One hand's own light and shade spreads its brightness too, but its
    shaded part is a thin rim round the fingers, not a quarter of it, and lies in strips and
    specks (a fresh synthetic and a fresh twin photo of one hand split so, 2026-11-28), where
    two hands lie side by side.
    Returns each part's (entry_deg, tip_mm), or () (`tone_gap` 0: off)."""
    gap = float(hc.get("tone_gap", 0.0))
    if gap <= 0 or m.px is None or len(own.idx) == 0:
        return ()
    lg = own()[0]  # (the colour test's logs are the split's)
    other = ~own.like_its_surface()
    idx, lg = own.idx[other], lg[other]
    g = m.cell_mm
    least = max(float(hc.get("palm_min_mm2", 0.0)) / (g * g), 2.0)
    share = float(hc.get("tone_share", 0.25))
    if len(idx) < 2 * least:
        return ()
    L = lg[:, 0] + lg[:, 1]  # each cell's mean log, written out (`_shift_and_chroma`: several times faster)
    L += lg[:, 2]
    L /= 3
    s = np.sort(L)
    n = len(s)
    cs = np.cumsum(s)
    k = np.arange(1, n)  # split after the k-th smallest
    lo_mean, hi_mean = cs[:-1] / k, (cs[-1] - cs[:-1]) / (n - k)
    score = k * (n - k) * (hi_mean - lo_mean) ** 2
    b = int(np.argmax(score))
    nlo = b + 1
    if hi_mean[b] - lo_mean[b] < gap or min(nlo, n - nlo) < max(least, share * n):
        return ()
    dark = L <= s[b]
    whole = float(hc.get("tone_whole_share", 0.0))
    if whole > 0 and not all(_largest_share(m.fg.shape, idx[part]) >= whole for part in (dark, ~dark)):
        return ()  # one hand's light and shade lie in strips and specks; two hands each lie whole
    px = m.px.reshape(-1, 3)[idx]
    if not all(_skin_coloured(hc, px[part]) for part in (dark, ~dark)):
        return ()  # a sleeve, a block or a stain beside one hand
    xy = m.xy.reshape(-1, 2)
    c = np.asarray(tray.tower_center, float)
    parts = [idx[part] for part in (dark, ~dark)]
    if not all(_within_reach(hc, bool(near_tower[i].any()), float(_cheb(xy[i], c, tray.footprint_half).min()), True)
               for i in parts):
        return ()
    apart = float(hc.get("tone_across_mm", 0.0))
    if apart > 0:
        # two hands that came in together lie side by side, a hand's width apart across the arm;
        # a sleeve and its hand (or a hand and its lit fingers) lie one behind the other along it
        mid = xy[parts[1]].mean(axis=0) - xy[parts[0]].mean(axis=0)
        if abs(float(mid[0] * -u[1] + mid[1] * u[0])) < apart:
            return ()
    return tuple(_hand_look(hc, tray, xy[i], E, u) for i in parts)


def _largest_share(shape: tuple[int, int], idx: np.ndarray) -> float:
    """The share of the cells (flat indices into a grid of `shape`) that their largest
    8-connected piece holds (0 for none)."""
    if not len(idx):
        return 0.0
    grid = np.zeros(shape[0] * shape[1], np.uint8)
    grid[idx] = 1
    n, _, st, _ = cv2.connectedComponentsWithStats(grid.reshape(shape), connectivity=8)
    return float(st[1:, cv2.CC_STAT_AREA].max()) / len(idx) if n > 1 else 0.0


def _skin_coloured(hc: Mapping, bgr: np.ndarray) -> bool:
    """Whether cells (N, 3 BGR) are mostly of skin's colour: their median hue within
    `skin_hue_deg` (every skin tone is an orange between red and yellow) and saturation at
    least `tone_min_sat` (a grey or white sleeve has none)."""
    hsv = cv2.cvtColor(np.clip(bgr, 0, 255).astype(np.uint8).reshape(-1, 1, 3), cv2.COLOR_BGR2HSV_FULL).reshape(-1, 3)
    lo, hi = hc.get("skin_hue_deg", [8.0, 42.0])
    hue = float(np.median(hsv[:, 0])) * (360.0 / 256.0)
    return float(lo) <= hue <= float(hi) and float(np.median(hsv[:, 1])) >= float(hc.get("tone_min_sat", 0.0)) * 255


def _looks_like_each(hc: Mapping, m: HandMask, idx: np.ndarray, refs: tuple, lg: np.ndarray | None = None) -> np.ndarray:
    """(len(refs), len(idx)) bool: whether each cell (flat indices) shows each of the colours
    `refs` (BGR; a None one matches every cell), as `_looks_like` tells one: the cells' logs taken
    once and every colour's test in one pass (rows stacked; each row's arithmetic as one colour's
    alone). `lg`: the cells' logs, when the caller has them."""
    lim = float(hc.get("rim_table_chroma", 0.0))
    if lim <= 0 or m.px is None or any(r is None for r in refs):
        return np.ones((len(refs), len(idx)), bool)
    lg, n = np.log(m.px.reshape(-1, 3)[idx] + 4.0) if lg is None else lg, len(idx)
    d = np.empty((len(refs) * n, 3), lg.dtype)
    for j, r in enumerate(refs):
        np.subtract(lg, np.log(np.asarray(r, np.float32) + 4.0), out=d[j * n:(j + 1) * n])
    sh, ch = _shift_and_chroma(d)
    ok = (ch <= lim) & (np.abs(sh) <= float(hc.get("rim_table_shift", math.inf)))
    return ok.reshape(len(refs), n)


class _OwnColours:
    """An arm's own cells (flat indices, `idx`) and, made when first asked, their logs and whether
    each shows the tray's colour and the table's (`_looks_like_each`): `_past_rim` asks of the
    cells beside the rim (some of them) and `_tones` of them all, so the test is made once, not
    twice. (Each cell's logs and test are the same whichever cells are taken with it.)"""

    def __init__(self, hc: Mapping, m: HandMask, idx: np.ndarray):
        self.hc, self.m, self.idx = hc, m, idx
        self._got: tuple[np.ndarray | None, np.ndarray] | None = None

    def __call__(self) -> tuple[np.ndarray | None, np.ndarray]:
        """The cells' logs ((N, 3), None without the mask's colours) and (colours, N) whether each
        shows the tray's colour (row 0) and the table's (row 1, when the mask has it)."""
        if self._got is None:
            m = self.m
            lg = np.log(m.px.reshape(-1, 3)[self.idx] + 4.0) if m.px is not None else None
            refs = (m.tray_bgr,) if m.table_bgr is None else (m.tray_bgr, m.table_bgr)
            self._got = (lg, _looks_like_each(self.hc, m, self.idx, refs, lg))
        return self._got

    def like_its_surface(self) -> np.ndarray:
        """Whether each cell shows the colour of the surface it lies over: a cell over the table
        the table's, one over the tray the tray's. A dark hand over a pale tray may show a dark
        table's colour, and a pale one the tray's: that is no surface there. Tested against
        either colour wherever they lay, the cells of both hands of two tones were left out of
        `_tones`' split (bench family-4 0046: 756 of 767 arm cells; family-1 0020: 539 of 560)."""
        looks = self()[1]
        if len(looks) == 1:  # no table colour this frame: every cell against the tray's
            return looks[0]
        return np.where(self.m.table.ravel()[self.idx], looks[1], looks[0])

    def like_tray(self, cells: np.ndarray) -> np.ndarray:
        """Whether each of `cells` (flat indices, some of `idx`) shows the tray's colour: `_looks_like`
        of the tray's colour."""
        at = np.zeros(self.m.fg.size, bool)
        at[self.idx] = self()[1][0]
        return at[cells]


def _with_ruffled(ruffled: np.ndarray, lab: np.ndarray, stats: np.ndarray, g: float,
                  join_min: float) -> tuple[np.ndarray, np.ndarray]:
    """The blob labels and statistics with the ruffled cells' own blobs added after the others
    (`len(stats)` on): the entry search goes through the first ones only, so these never bring
    an arm in, but `_join_ahead` may join them to one as pieces of its hand. Unchanged when none
    holds `join_min` mm2 (cells of g mm; `_join_ahead`'s test): then none can join one, and no
    other use reads them (92 of 141 bench masks with ruffled cells)."""
    nr, lr = cv2.connectedComponents(ruffled.view(np.uint8), connectivity=8)
    if nr <= 1:
        return lab, stats
    area = np.bincount(lr.ravel(), minlength=nr)[1:]
    if not (area * g * g >= join_min).any():
        return lab, stats
    base = len(stats) - 1
    lab = np.where(ruffled, lr + base, lab)
    more = np.zeros((nr - 1, stats.shape[1]), stats.dtype)
    more[:, cv2.CC_STAT_AREA] = area
    return lab, np.concatenate([stats, more])


def _entry_runs(at: np.ndarray, i: np.ndarray, pts: np.ndarray, shape: tuple[int, int], gap: int,
                min_cells: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The separate pieces (hand-plane points) of a blob's cells `i[at]` along an edge, gaps of up
    to `gap` cells bridged, of at least `min_cells` cells: one arm coming in each, with their
    flat cell indices."""
    ent = np.zeros(shape[0] * shape[1], np.uint8)
    ent[i[at]] = 1
    nrun, rl = cv2.connectedComponents(cv2.dilate(ent.reshape(shape), _K3, iterations=gap), connectivity=8)
    rl_at, e_all, i_all = rl.ravel()[i[at]], pts[at], i[at]
    out = []
    for r in range(1, nrun):
        sel = rl_at == r
        if sel.sum() >= min_cells:
            out.append((e_all[sel], i_all[sel]))
    return out


def _unfed_rim(hc: Mapping, m: HandMask, ec: int) -> np.ndarray | None:
    """Flat mask of the tray-side cells along the rim with no arm seen on the table within
    `rim_fed_mm` across it: an arm the colour of the table (dark skin on a dark table) shows
    only where it is over the tray, so it comes in at the rim. None when there is no table band
    (then every arm is seen from the sheet's edge) or the setting is off. Only cells of the
    table's own colour (`_looks_like`) qualify: an arm of any other colour would have been seen
    crossing the table, so what crosses the rim there is a hand's fingers or shadow."""
    fed_mm = float(hc.get("rim_fed_mm", 0.0))
    if fed_mm <= 0 or m.rim is None or not m.table.any():
        return None
    at = cv2.dilate(m.rim.view(np.uint8), _K3, iterations=ec).view(bool) & m.known & ~m.table & m.fg
    out = at.ravel()
    x, y, w, h = cv2.boundingRect(at.view(np.uint8))
    if not w:
        return out  # no arm's cell along the rim
    # the table's arms and cells round those cells: `fed_mm` square round each, so only in
    # their box widened by that (the same values there as over the whole grid)
    r = int(math.ceil(fed_mm / m.cell_mm))
    k = _kernel(2 * r + 1)
    n0, n1 = at.shape
    win = np.s_[max(0, y - r):min(n0, y + h + r), max(0, x - r):min(n1, x + w + r)]
    table = m.table[win]
    fed = cv2.dilate((m.fg[win] & table).view(np.uint8), k).view(bool)
    seen = cv2.dilate((table & m.known[win]).view(np.uint8), k).view(bool)  # not where the image ends at the rim
    at[win] &= seen & ~fed
    if out.any():
        out[out] = _looks_like(hc, m, np.flatnonzero(out), m.table_bgr)
    return out


def _looks_like(hc: Mapping, m: HandMask, idx: np.ndarray, ref: np.ndarray | None) -> np.ndarray:
    """Whether cells (flat indices) show the colour `ref` (BGR): their log colour differs from it
    by at most `rim_table_chroma` (after the mean brightness change is taken out) and their
    brightness by at most `rim_table_shift` (log; an arm is lit a little otherwise than the
    surface beyond). `rim_table_chroma` 0, or no colours: all."""
    return _looks_like_each(hc, m, idx, (ref,))[0]


def _join_ahead(hc: Mapping, m: HandMask, lab: np.ndarray, stats: np.ndarray, groups: list[tuple[np.ndarray, set[int]]],
                lines: list[tuple[np.ndarray, np.ndarray]], blob: _Blobs | None = None) -> list[set[int]]:
    """Pieces of a hand cut off from its arm join the arm they lie ahead of (the nearest, if
    several): blobs of at least `join_min_mm2` with no entry of their own, within `join_gap_mm`
    of the arm's cells, their middle within `join_corridor_mm` of its line and further in than
    its entry. The twin's tray-coloured hands show their shaded fingers but not an evenly lit
    palm, so the fingers were cut off from the arm seen on the table. The piece's middle, not
    its farthest cell: a whole hand's shaded fingers spread 80-100 mm across, and a hand held a
    little aside of its arm's line put its outer finger past the corridor (twin 77/0041, 902/0001:
    the second hand of two was lost). Returns each arm's joined blob ids."""
    gap = float(hc["join_gap_mm"])
    pieces: list[set[int]] = [set() for _ in groups]
    if gap <= 0 or not groups:
        return pieces
    g = m.cell_mm
    used = set().union(*[comps for _, comps in groups])
    loose = [k for k in range(1, len(stats)) if k not in used and stats[k, cv2.CC_STAT_AREA] * g * g >= float(hc["join_min_mm2"])]
    if not loose:
        return pieces
    blob = blob or _Blobs(lab, m.xy)
    loose = [(k, *blob(k)) for k in loose]
    loose = [(k, i, pts) for k, i, pts in loose if len(i)]
    best: dict[int, tuple[float, int]] = {}  # loose blob -> (gap, arm): each piece joins the nearest arm
    corridor = float(hc["join_corridor_mm"])
    for j, ((e, comps), (E, u)) in enumerate(zip(groups, lines)):
        dist = (cv2.distanceTransform((~_of_blobs(lab, comps)).view(np.uint8), cv2.DIST_L2, 3) * g).ravel()
        perp = np.array([-u[1], u[0]])
        for k, i, pts in loose:
            d = float(dist[i].min())
            if d > gap or abs(float(np.mean((pts - E) @ perp))) > corridor or ((pts - E) @ u).max() > 0:
                continue
            if k not in best or d < best[k][0]:
                best[k] = (d, j)
    for k, (_, j) in best.items():
        pieces[j].add(k)
    return pieces


def _halves(hc: Mapping, tray: Tray, arm: np.ndarray, e: np.ndarray, E: np.ndarray, u: np.ndarray,
            middle: float) -> tuple[tuple[float, tuple[float, float]], ...]:
    """Two hands side by side from one wide entry: each side of the arm's middle line gets its
    own entry, direction and tip. One player's two hands come from either shoulder, so their
    directions differ by tens of degrees; the two sides of one wide arm mostly point alike."""
    c = np.asarray(tray.tower_center, float)
    perp = np.array([-u[1], u[0]])
    out = []
    for side in (-1.0, 1.0):
        mine = arm[side * ((arm - E) @ perp - middle) >= 0]
        edge = e[side * ((e - E) @ perp - middle) >= 0]
        if len(mine) < 3:
            return ()
        Eh = _mean0(edge) if len(edge) else mine[np.argmax((mine - E) @ u)]
        near = mine[_norms(mine - Eh) < float(hc["direction_mm"])]
        d = Eh - _mean0(near) if len(near) else np.zeros(2)
        d = d / np.linalg.norm(d) if np.linalg.norm(d) >= float(hc["direction_min_mm"]) else u
        tip = mine[np.argmin(_cheb(mine, c, 0.0))]
        out.append((_entry_deg(Eh - c, d, float(hc["seat_radius_mm"])), (float(tip[0]), float(tip[1]))))
    return tuple(out)


def _min_dist(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest distance between points of a and of b ((N, 2), (M, 2)): the same as
    np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)).min() (the root of the least sum)."""
    dx = a[:, 0, None] - b[None, :, 0]
    dy = a[:, 1, None] - b[None, :, 1]
    return float(np.sqrt((dx * dx + dy * dy).min()))


def _entry_gap(a: ArmEntry, b: ArmEntry) -> float:
    """How far apart two entries are: their nearest cells (a wide arm's entry is long)."""
    if a.edge_cells is None or b.edge_cells is None:
        return math.dist(a.entry_mm, b.entry_mm)
    return _min_dist(a.edge_cells, b.edge_cells)


def _absorb_slivers(arms: list[ArmEntry], min_width: float, near_mm: float) -> list[ArmEntry]:
    """An entry narrower than any arm next to a wider one is part of that arm (a thumb, a finger
    or the arm's shadow crossing the edge on its own): its reach goes to the arm. Alone, a
    narrow entry stays an arm (one cut short by the image's border)."""
    out = list(arms)
    for thin in sorted((a for a in arms if a.width_mm < min_width), key=lambda a: a.width_mm):
        wide = [a for a in out if a is not thin and a.width_mm >= min_width and _entry_gap(a, thin) < near_mm]
        if not wide or thin not in out:
            continue
        host = min(wide, key=lambda a: _entry_gap(a, thin))
        closer = thin.reach_mm < host.reach_mm
        merged = replace(host, reach_mm=min(host.reach_mm, thin.reach_mm), on_tower=host.on_tower or thin.on_tower,
                         on_tray=host.on_tray or thin.on_tray, tip_mm=thin.tip_mm if closer else host.tip_mm)
        out[out.index(host)] = merged
        out.remove(thin)
    return out


def _merge_close(runs: list[tuple[np.ndarray, set[int]]], gap_mm: float, own_arm_mm: float = 0.0,
                 reaches: Callable[[set[int]], bool] | None = None, unbridged: list[set[int]] | None = None,
                 reaches_u: Callable[[set[int]], bool] | None = None,
                 apart_mm: float = 0.0) -> list[tuple[np.ndarray, set[int]]]:
    """Join entries closer than `gap_mm` (cells, blob ids): one arm seen in pieces. Two entries
    each at least `own_arm_mm` long that lead to blobs apart, each blob reaching the zone on its
    own (`reaches`), are two arms side by side (one player's two hands, or two players' from
    next to each other), not one seen in pieces: an arm's own pieces are narrower (fingers, a
    thumb) or one blob across the marker they straddle. `own_arm_mm` 0: any close entries are
    joined. With `unbridged` (each run's blobs before the unseen strips were bridged) and
    `reaches_u` (as `reaches`, for those), two such entries of one blob, at least `apart_mm`
    apart, whose own blobs join only across the tray's rim are two arms too: two hands side by
    side whose palms lie on the rim, each hand's fingers its own blob on the tray
    (`hands.apart_across_rim_mm`)."""
    runs = list(runs)
    ub = [set(u) for u in unbridged] if unbridged is not None else None  # (merged below: copies)
    merged = True
    while merged and len(runs) > 1:
        merged = False
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                d = _min_dist(runs[i][0], runs[j][0])
                if d >= gap_mm:
                    continue
                wide = own_arm_mm > 0 and min(_extent(runs[i][0]), _extent(runs[j][0])) >= own_arm_mm
                if wide and reaches is not None and runs[i][1].isdisjoint(runs[j][1]) \
                        and reaches(runs[i][1]) and reaches(runs[j][1]):
                    continue
                if wide and ub is not None and reaches_u is not None and d >= apart_mm \
                        and len(runs[i][1]) == 1 and runs[i][1] == runs[j][1] and ub[i] and ub[j] \
                        and ub[i].isdisjoint(ub[j]) and reaches_u(ub[i]) and reaches_u(ub[j]):
                    continue
                e, comps = runs.pop(j)
                runs[i] = (np.concatenate([runs[i][0], e]), runs[i][1] | comps)
                if ub is not None:
                    ub[i] |= ub.pop(j)
                merged = True
                break
            if merged:
                break
    return runs


def _blobs_reach(hc: Mapping, cells: list[np.ndarray], xy: np.ndarray, c: np.ndarray, half: float,
                 near_tower: np.ndarray, table: np.ndarray) -> bool:
    """Whether blobs (their flat cell indices) reach the zone as an arm of theirs alone would
    (`reaches_zone`)."""
    i = np.concatenate(cells)
    if not len(i):
        return False
    return _within_reach(hc, bool(near_tower[i].any()), float(_cheb(xy[i], c, half).min()), bool((~table[i]).any()))


def _extent(pts: np.ndarray) -> float:
    """How long a run of edge cells is (mm): the farthest apart two of its points are along x or y."""
    return float(np.ptp(pts, axis=0).max()) if len(pts) else 0.0


def _entry_deg(e: np.ndarray, u: np.ndarray, radius: float) -> float:
    """Angle (degrees from +x) from the tower to where the arm's line reaches the seats' circle."""
    b = float(e @ u)
    cc = float(e @ e) - radius * radius
    t = -b + math.sqrt(max(0.0, b * b - cc))
    p = e + max(0.0, t) * u
    return math.degrees(math.atan2(p[1], p[0])) % 360.0


def find_hands(cfg: Mapping, tray: Tray, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, z_top: float,
               bg=None, gains: np.ndarray | None = None, grid: HandGrid | None = None,
               table_ref: TableReference | None = None, means: np.ndarray | None = None,
               memo: dict | None = None) -> tuple[HandReading, ...]:
    """The hands within one block length of the tower's footprint, each with where its arm comes from
    (`grid`, `table_ref`, `means`, `memo`: as for `hand_mask`)."""
    m = hand_mask(cfg, tray, reg, img, tray_bgr, z_top, bg, gains, grid, table_ref, means, memo)
    return hands_of(cfg["hands"], counted_arms(cfg["hands"], arm_entries(cfg, tray, m)))


def hands_of(hc: Mapping, arms: list[ArmEntry]) -> tuple[HandReading, ...]:
    """The hands of the counted arms (`counted_arms`): one each, or two for an arm that is two
    side by side. (The reader, which finds the arms before the top to know the skin's colour,
    takes the hands from those when the top's height stays.)"""
    hands: list[HandReading] = []
    for a in arms:
        if splits_in_two(hc, a, len(arms)) or two_palms(a, len(arms)):  # two side by side
            looks = a.halves or a.palms or a.tones or ((a.entry_deg, a.tip_mm),) * 2
            for deg, tip in looks:
                hands.append(HandReading(side=side_of(deg), tip_mm=tip, confidence=0.6, entry_deg=round(deg, 1)))
            continue
        conf = float(min(1.0, a.width_mm / float(hc["two_arm_width_mm"]) * 2))
        hands.append(HandReading(side=side_of(a.entry_deg), tip_mm=a.tip_mm, confidence=round(conf, 3),
                                 entry_deg=round(a.entry_deg, 1)))
    return tuple(hands)


def splits_in_two(hc: Mapping, a: ArmEntry, counted: int) -> bool:
    """Whether one counted arm (of `counted`) is two hands side by side: as wide as two arms.
    Width alone is a guess (an arm and its shadow, a sleeve, a hand turned flat are as wide), so
    beside another counted arm it is not made: that would be three hands over the tower at once,
    while the "two or more" the referee needs is already seen (`split_beside_others` off)."""
    if a.width_mm < float(hc["two_arm_width_mm"]):
        return False
    return counted <= 1 or bool(hc.get("split_beside_others", True))


def two_palms(a: ArmEntry, counted: int) -> bool:
    """Whether one counted arm, the only one, is two hands whose arms came in together: two
    palms side by side at its hand end (`_palms`). Beside another counted arm it is not made
    (as `splits_in_two`): the "two or more" is already seen."""
    return counted <= 1 and (len(a.palms) == 2 or len(a.tones) == 2)


def counted_arms(hc: Mapping, arms: list[ArmEntry]) -> list[ArmEntry]:
    """The arms whose hands are over the tower. One that reaches the zone only through a piece
    cut off from it may bring a lone hand into the count, and a second one only where its
    hand lies at least `pieces_apart_mm` from the other's (0: never): the piece may be another
    hand's fingers, and a false "Uno!" is the worst error. Beside another counted arm, an entry
    narrower than `second_arm_min_mm` is no second hand: a finger, a sleeve's edge or a shadow's
    sliver coming in on its own (23-39 mm wide in 12 of the 46 false "two or more" on 24 kits);
    a forearm is wider, and one cut short by the image's border still counts alone. A narrow
    entry whose hand is on the tower's silhouette or within `narrow_arm_reach_mm` of its
    footprint is a second hand all the same: a wrist whose forearm is lost against the table,
    or a forearm half hidden under the other arm (those slivers end 38-61 mm out on nine sets;
    the narrow second hands gained end on the tower or within 22 mm of it)."""
    arms = [a for a in arms if reaches_zone(hc, a)]
    if len(arms) > 1:  # an arm counted only as one going on over the tray unseen: a lone hand only
        arms = [a for a in arms if not _unseen_reach(hc, a)] or arms[:1]
    if len(arms) > 1:
        whole = [a for a in arms if not a.by_pieces]
        apart = float(hc.get("pieces_apart_mm", 0.0))
        # beside one other arm, unless its hand is far from that one's: then the piece is not
        # that hand's fingers (a third hand adds nothing the referee needs, only risk)
        far = [a for a in arms if a.by_pieces and apart > 0 and len(whole) == 1
               and math.dist(a.tip_mm, whole[0].tip_mm) >= apart]
        arms = whole + far[:1] or arms[:1]
    if len(arms) > 1:  # beside another arm, one narrower than a forearm is no second hand
        least = float(hc.get("second_arm_min_mm", 0.0))
        near = float(hc.get("narrow_arm_reach_mm", -math.inf))
        arms = [a for a in arms if a.width_mm >= least or a.on_tower or a.reach_mm <= near] or arms[:1]
    return arms


def reaches_zone(hc: Mapping, a: ArmEntry) -> bool:
    """Whether the arm's hand is over the tower: on its silhouette, or within `reach_mm` of the
    footprint seen against the tray. Seen only against the table, nothing pins the hand's height
    (a hand resting on the table beside a tall tower lines up with the tower's top from the
    camera), so it must come closer: within `table_reach_mm` (a pale hand over a pale tray
    often shows only where its arm crosses the darker table), unless the arm goes on over the
    tray unseen (`past_rim`): then its hand is over the tray, as one seen there."""
    return _reaches(hc, a.on_tower, a.reach_mm, a.on_tray, a.past_rim)


def _reaches(hc: Mapping, on_tower: bool, reach_mm: float, on_tray: bool, past_rim: bool) -> bool:
    """`reaches_zone` of an arm with these fields."""
    return _within_reach(hc, on_tower, reach_mm, on_tray or past_rim) or _unseen(hc, on_tower, reach_mm, on_tray, past_rim)


def _unseen_reach(hc: Mapping, a: ArmEntry) -> bool:
    """Whether an arm seen only on the table that goes on over the tray unseen (`past_rim`)
    reaches the zone only because its hand lies beyond the tray's unseen rim: its innermost
    cell seen is on the table, short of the rim, while the arm crossed the rim, so its hand is
    further in than that by the rim's width at least. Within `past_rim_reach_mm` (0: off)."""
    return _unseen(hc, a.on_tower, a.reach_mm, a.on_tray, a.past_rim)


def _unseen(hc: Mapping, on_tower: bool, reach_mm: float, on_tray: bool, past_rim: bool) -> bool:
    """`_unseen_reach` of an arm with these fields."""
    lim = float(hc.get("past_rim_reach_mm", 0.0))
    return (lim > 0 and past_rim and not on_tray and not on_tower
            and float(hc["reach_mm"]) < reach_mm <= lim)


def _within_reach(hc: Mapping, on_tower: bool, reach_mm: float, over_tray: bool) -> bool:
    """The reach rule of `reaches_zone`: on the tower, or within `reach_mm` of the footprint when
    the hand is known to be over the tray, `table_reach_mm` when seen only on the table."""
    return on_tower or reach_mm <= float(hc["reach_mm"] if over_tray else hc["table_reach_mm"])


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
