"""Colour and occupancy features of the three slot patches of a level, computed together.

The features are the ones the models were designed on (Lab statistics, a chroma-weighted hue
histogram, seam and edge profiles); what changes is the arithmetic: the three patches go through
each step at once, and medians come from 8-bit histograms (OpenCV's Lab is 8-bit, so a median
is a cumulative count) instead of sorting, which kept a frame's slot reading over budget.
"""

from __future__ import annotations

import functools
import math
from typing import Mapping, Sequence

import cv2
import numpy as np

LAB_SCALE = np.array([100.0 / 255.0, 1.0, 1.0], dtype=np.float32)
LAB_SHIFT = np.array([0.0, 128.0, 128.0], dtype=np.float32)
_LAB_NORM = np.array([100, 128, 128], dtype=np.float64)


def lab8(bgr: np.ndarray, gains: np.ndarray | None = None) -> np.ndarray:
    """8-bit Lab (OpenCV's table path) after a saturating per-channel gain."""
    x = np.asarray(bgr)
    if x.dtype != np.uint8:
        x = np.clip(x.astype(np.float32) + 0.5, 0, 255).astype(np.uint8)
    if gains is not None:
        g = [float(v) for v in np.asarray(gains).reshape(-1)[:3]]
        x = cv2.multiply(x, (g[0], g[1], g[2], 0.0), dtype=cv2.CV_8U)
    return cv2.cvtColor(x, cv2.COLOR_BGR2Lab)


def median_u8(values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Exact medians (as np.median: the mean of the two middle values) of 8-bit values
    (S, N, C) over N, per S and C, counting only where mask (S, N) holds."""
    return medians_u8(values, [mask])[0]


def medians_u8(values: np.ndarray, masks: Sequence[np.ndarray | None]) -> np.ndarray:
    """median_u8 of the same values under several masks at once (G, S, C). One histogram:
    each value is counted in a bin of (which masks hold it, patch, channel, value), and each
    mask's histogram is the sum of the bins it holds. (Channels are put before pixels first, so
    every step runs along the pixels, not along three channels.)"""
    S, N, C = values.shape
    real = [np.asarray(m).reshape(S, N) for m in masks if m is not None]
    nb = 1 << len(real)
    key = np.ascontiguousarray(values.transpose(0, 2, 1)).astype(np.intp)  # (S, C, N)
    key += (np.arange(S * C, dtype=np.intp) * 256).reshape(S, C, 1)
    for b, m in enumerate(real):
        key += (m * ((S * C * 256) << b))[:, None, :]
    counts = np.bincount(key.reshape(-1), minlength=nb * S * C * 256).reshape(nb, S, C, 256)
    hists, b = [], 0
    for m in masks:
        if m is None:
            hists.append(counts.sum(axis=0))
        else:
            hists.append(counts[[k for k in range(nb) if k >> b & 1]].sum(axis=0))
            b += 1
    cum = np.cumsum(np.stack(hists), axis=3)
    n = cum[..., -1:]
    lo = (cum <= (n - 1) // 2).sum(axis=3)  # value at rank (n-1)//2
    hi = (cum <= n // 2).sum(axis=3)        # value at rank n//2
    return ((lo + hi) / 2.0).astype(np.float32)


def _lab_float(v8: np.ndarray) -> np.ndarray:
    return v8 * LAB_SCALE - LAB_SHIFT


def _ab_tables() -> tuple[np.ndarray, np.ndarray]:
    """Chroma and 12-bin hue of every 8-bit (a, b) pair, computed as color_features would."""
    a = np.repeat(np.arange(256, dtype=np.float32) * LAB_SCALE[1] - LAB_SHIFT[1], 256)
    b = np.tile(np.arange(256, dtype=np.float32) * LAB_SCALE[2] - LAB_SHIFT[2], 256)
    chroma = np.hypot(a, b)
    hue = np.floor((np.arctan2(b, a) + np.pi) / (2 * np.pi) * 12).astype(np.int64) % 12
    return chroma, hue


AB_CHROMA, AB_HUE = _ab_tables()  # constants: looking up 65536 entries beats arctan2 per pixel


# The tables again, indexed by a + 256 b: a Lab pixel's (a, b) bytes read as one little-endian
# uint16 (`_ab_index`), so the index costs no arithmetic.
_BA_CHROMA = np.ascontiguousarray(AB_CHROMA.reshape(256, 256).T).reshape(-1)
# per (a, b): its hue bin (0-11) when coloured (chroma over 18), else 12, or 13 when grey (chroma under 15)
# (8-bit: the codes' class then comes from cv2.LUT, and the hue bins by patch stay 8-bit for bincount)
_BA_CODE = np.where(_BA_CHROMA > 18, np.ascontiguousarray(AB_HUE.reshape(256, 256).T).reshape(-1),
                    np.where(_BA_CHROMA < 15, 13, 12)).astype(np.uint8)
# per code, its class in the medians' histogram (coloured 0, grey 1, other 2) times the class's stride
# (256 entries: a table for cv2.LUT)
_CLASS_STRIDE = np.array([0] * 12 + [2, 1] + [0] * 242, np.uint8) * 6
_L8 = np.arange(256, dtype=np.uint8) * LAB_SCALE[0]  # each 8-bit L's float L, as the features take it
_DARK_BELOW = int(np.count_nonzero(_L8 < 25))  # float L < 25: 8-bit L under this (L rises with it)
_BRIGHT_FROM = int(np.count_nonzero(_L8 <= 75))  # float L > 75: 8-bit L from this
# the feature each median gives, per channel and sum of its two middle 8-bit values (0..510)
_MED_LAB = (_lab_float((np.arange(511) / 2.0).astype(np.float32)[:, None]) / _LAB_NORM).T.reshape(-1)
_HALF_RANKS = np.array([[1.0], [0.0]], np.float32)  # n - this, halved down: the two middle ranks (0-based)
# per group (all, coloured, grey, frame), which (class, frame) rows of the medians' histogram it sums
_GROUP_ROWS = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [0, 1, 0, 1, 0, 1]], np.float32)
_MED_GROUPS = np.array([0, 1, 3])  # the groups whose medians are features (the grey pixels' count only)


@functools.lru_cache(maxsize=64)
def _colour_layout(S: int, ph: int, pw: int) -> tuple[np.ndarray, ...]:
    """color_features' constant arrays for S patches of ph x pw: each pixel channel's histogram
    row but for its colour class, (S, N, 3) uint8 (rows (patch, class, frame, channel)); the
    hue histogram's row offset per patch (8-bit as the codes, S <= 14); per cumulative histogram
    row (patch, group, channel), the offset that turns two searchsorted places into the median's
    _MED_LAB index; where
    the cumulative counts of coloured, dark and bright grey pixels lie; and whether a patch can
    lack pixels or a frame (whose medians need clipping)."""
    frame = np.ones((ph, pw), bool)
    frame[ph // 5: ph - ph // 5, pw // 5: pw - pw // 5] = False
    f = frame.reshape(1, -1, 1).astype(np.intp)
    rows = (np.arange(S).reshape(-1, 1, 1) * 18 + f * 3 + np.arange(3)).astype(np.uint8)
    r = np.arange(S * 4 * 3)
    off = 2 * (r * 256 + 1) - (r % 3) * 511
    L0 = lambda g: (np.arange(S) * 4 + g) * 3 * 256  # noqa: E731 (where the L row of group g starts)
    at = np.stack([L0(1) + 256, L0(1), L0(0) + _DARK_BELOW, L0(0), L0(2) + 256, L0(2) + _BRIGHT_FROM], axis=1)
    out = (rows, (np.arange(S).reshape(-1, 1) * 14).astype(np.uint8), off, r * 256 + 1, at)
    for a in out:
        a.flags.writeable = False
    return out + (not frame.any(),)


def _ab_index(labs: np.ndarray) -> np.ndarray:
    """(S, N) a + 256 b of contiguous 8-bit Lab patches: their (a, b) bytes as little-endian uint16."""
    S = labs.shape[0]
    N = labs.size // (3 * S)
    return np.ndarray((S, N), "<u2", labs, 1, (3 * N, 3))


def color_features(labs: np.ndarray) -> np.ndarray:
    """(S, D) per patch: Lab medians (all, coloured pixels, the frame round the glyph), the
    chroma-weighted hue histogram and a few fractions. `labs` (S, h, w, 3) 8-bit Lab patches.

    The medians and the pixel counts come from one histogram of every channel value by (patch,
    colour class, frame or not, channel) (OpenCV's 8-bit histogram; medians_u8 tells how), the
    coloured pixels' median is the whole patch's when it has 10 or fewer, and the hue histogram
    puts the pixels that are not coloured in two bins left out."""
    S = labs.shape[0]
    if S > 14:  # (the histogram's rows and the hue bins by patch are 8-bit)
        return np.concatenate([color_features(labs[i:i + 14]) for i in range(0, S, 14)])
    labs = np.ascontiguousarray(labs)
    return _color_features(labs, _std1(labs.reshape(S, -1, 3)[..., 0] * LAB_SCALE[0]))


def _color_features(labs: np.ndarray, l_std: np.ndarray) -> np.ndarray:
    """color_features of up to 14 contiguous patches, given each one's float L's deviation (S,)."""
    S, ph, pw, _ = labs.shape
    N = ph * pw
    rows, hue_off, off, row_at, at, tiny = _colour_layout(S, ph, pw)
    ab = _ab_index(labs).astype(np.intp)
    chroma = _BA_CHROMA.take(ab)
    code = _BA_CODE.take(ab)
    csum = np.add.reduce(chroma, axis=1)
    # (the patches' pixels taken in turn, each patch's still in order: bincount then adds to S bins
    # by turns instead of to one bin after another, each add waiting for the last; 5 us a call)
    hist = np.bincount(cv2.transpose(code + hue_off).reshape(-1), weights=cv2.transpose(chroma).reshape(-1),
                       minlength=S * 14)
    hist = hist.reshape(S, 14)[:, :12] / (csum + 1e-6)[:, None]
    # the medians: counts by (patch, class, frame, channel, value), then per group (all, coloured,
    # grey, frame) one cumulative count over all rows, whose middle ranks searchsorted finds
    # (the class copied to the three channels by OpenCV: NumPy's broadcast over them is 20 times slower)
    key = np.add(rows, cv2.cvtColor(cv2.LUT(code, _CLASS_STRIDE), cv2.COLOR_GRAY2BGR))
    H = cv2.calcHist([key.reshape(-1, 3), labs.reshape(-1, 3)], [0, 1], None, [S * 18, 256], [0, S * 18, 0, 256])
    # (the groups' counts as one 0/1 matrix product over the 6 (class, frame) rows: every sum is of
    # whole counts under 2^24, so exact in any order; a third of the three adds' time)
    G = np.matmul(_GROUP_ROWS, H.reshape(S, 6, 3 * 256))
    # (cv2.integral's one row: the running count after a leading 0, seven times faster than np.cumsum;
    # in float32 while the counts stay exact, under 2^24)
    cum = cv2.integral(G.reshape(1, -1), sdepth=cv2.CV_32F if 9 * S * N < 1 << 24 else cv2.CV_64F)[1]
    start = cum[:-1:256]
    ranks = cum[256::256] - start - _HALF_RANKS
    ranks //= 2
    ranks += start
    at_rank = cum.searchsorted(ranks, side="right")
    if tiny:  # a group without pixels: np.median's count of values at or under ranks -1 and 0
        at_rank -= row_at
        np.clip(at_rank, 0, 256, out=at_rank)
        at_rank += row_at
    med = (at_rank[0] + at_rank[1] - off).reshape(S, 4, 3).take(_MED_GROUPS, axis=1)
    got = cum.take(at)
    counts = got[:, 0::2] - got[:, 1::2]  # coloured, dark, bright and grey pixels
    np.copyto(med[:, 1], med[:, 0], where=(counts[:, :1] <= 10))  # too few coloured pixels: all of them
    return np.concatenate([
        _MED_LAB.take(med).reshape(S, 9), hist, counts / N,
        (csum / N / 100)[:, None], (l_std / 100)[:, None],
    ], axis=1, dtype=np.float32)


def median_along(x: np.ndarray, axis: int = -1, reorder: bool = False) -> np.ndarray:
    """np.median(x, axis) for arrays without NaN, from one partition: the mean of the two middle
    values (or the middle one), as np.median takes it, without its per-call overhead.
    `reorder`: x is the caller's scratch, partitioned in place (no copy)."""
    n = x.shape[axis]
    lo, hi = (n - 1) // 2, n // 2
    if x.ndim == 1 and n >= 4096:
        got = _middle_of_long(x, lo, hi)
        if got is not None:
            return got
    part = x if reorder else x.copy(order="K")  # (np.partition's own copy, then its in-place method: no wrapper)
    if hi != lo and n >= 256:
        # one partition at the upper middle: the lower middle is the largest of the part below it
        part.partition(hi, axis=axis)
        below = (slice(None),) * (axis % x.ndim) + (slice(0, hi),)
        return (np.maximum.reduce(part[below], axis=axis) + part.take(hi, axis=axis)) / 2
    part.partition((lo, hi) if hi != lo else lo, axis=axis)
    return (part.take(lo, axis=axis) + part.take(hi, axis=axis)) / 2


def _middle_of_long(x: np.ndarray, lo: int, hi: int):
    """(x[lo] + x[hi]) / 2 of x sorted (1-D, long), from a partition of only the values between
    two bounds that a sample of 1 in 32 puts either side of the middle (some 12% of them): half
    the time of partitioning them all. None when the middle ranks are not between them (the
    sample misled)."""
    sample = x[::32].copy()
    m = len(sample)
    k0, k1 = int(m * 0.44), int(m * 0.56)
    sample.partition((k0, k1))
    a, b = sample[k0], sample[k1]
    under = np.count_nonzero(x < a)
    mid = x.compress((x >= a) & (x <= b))  # (compress: three times faster than a boolean index)
    if not under <= lo <= hi < under + len(mid):
        return None
    lo, hi = lo - under, hi - under
    mid.partition((lo, hi) if hi != lo else lo)
    return (mid[lo] + mid[hi]) / 2


def percentile_along(x: np.ndarray, q: float, axis: int = -1) -> np.ndarray:
    """np.percentile(x, q, axis) (linear method, q a Python number) for arrays without NaN, from
    one partition and numpy's own interpolation arithmetic, without its per-call overhead."""
    lo, hi, t = percentile_places(x.shape[axis], q)
    part = x.copy(order="K")
    part.partition((lo, hi) if hi != lo else lo, axis=axis)
    return interpolated(part.take(lo, axis=axis), part.take(hi, axis=axis), t)


def percentile_places(n: int, q: float) -> tuple[int, int, float]:
    """Where np.percentile (linear method) reads the q-th percentile of n sorted values: the two
    places and the weight between them, as numpy works them out (its virtual index)."""
    v = (n - 1) * (float(q) / 100)
    if v >= n - 1:
        return n - 1, n - 1, v + 1  # (numpy's weight there: it multiplies a zero difference)
    if v < 0:
        return 0, 0, v
    lo = math.floor(v)
    return lo, lo + 1, v - lo


def interpolated(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """The value a fraction t of the way from a to b, with numpy's percentile arithmetic."""
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def _mean1(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """x.mean(axis) as np.mean computes it (a bool or integer array summed in float64), without
    np.mean's per-call overhead, which is most of its cost on a patch."""
    dt = np.float64 if x.dtype.kind in "biu" else None
    return np.add.reduce(x, axis=axis, dtype=dt) / x.shape[axis]


@functools.lru_cache(maxsize=16)
def _occupancy_layout(h: int, w: int) -> tuple:
    """occupancy_features' index arrays for h x w patches: a patch's rows with its mirrored
    border row above and below (BORDER_REFLECT_101, as a 3x3 filter sees it); the columns of
    the three windows whose greatest column step is taken (the inner columns, and round a third
    and two thirds), and the rows of the first and last three, each window padded to the
    longest by repeating its first index (a maximum does not mind); the inner window's length;
    where each third of the columns starts and its pixel count."""
    border = [cv2.borderInterpolate(-1, h, cv2.BORDER_REFLECT_101)] + list(range(h)) + \
        [cv2.borderInterpolate(h, h, cv2.BORDER_REFLECT_101)]
    r = max(1, int(round(w / 75.0 * 4.0)))
    cols = [range(w)[w // 10: w - w // 10]] + [range(w)[max(0, c - r): c + r + 1] for c in (w // 3, 2 * w // 3)]
    rows = [range(h)[:3], range(h)[-3:]]

    def padded(wins: list) -> np.ndarray:
        k = max(len(x) for x in wins)
        return np.array([list(x) + [x[0]] * (k - len(x)) for x in wins], np.intp)

    starts = [k * w // 3 for k in range(3)]
    px = np.array([h * ((k + 1) * w // 3 - k * w // 3) for k in range(3)], np.int64).reshape(3, 1)
    out = (np.array(border, np.intp), padded(cols), padded(rows), len(cols[0]), starts, px)
    for x in out:
        if isinstance(x, np.ndarray):
            x.flags.writeable = False
    return out


def _lab_steps(planes: np.ndarray, border: np.ndarray) -> np.ndarray:
    """(2, S, h + 2, w) float32: |Sobel| in x, then in y, of each patch's float Lab image summed
    over its channels, with a mirrored border row above and below (rows 0 and h + 1 are not the
    patch's), from the 8-bit Lab planes (3, S, h, w). The Sobel kernel sums to zero, so the float
    Lab's offset drops out and its scale comes after. The planes go through one above another
    (each patch framed by its border rows), so one cv2.spatialGradient gives both directions of
    all, into one array."""
    _, S, h, w = planes.shape
    planes = planes.take(border, axis=2)  # (3, S, h + 2, w)
    d = np.empty((2, 3, S, h + 2, w), np.int16)
    cv2.spatialGradient(planes.reshape(-1, w), d[0].reshape(-1, w), d[1].reshape(-1, w))
    np.abs(d, out=d)
    g = np.multiply(d[:, 0], LAB_SCALE[0], dtype=np.float32)
    g += d[:, 1]
    g += d[:, 2]
    return g


def occupancy_features(cfg: Mapping, labs: np.ndarray, color_f: np.ndarray) -> np.ndarray:
    """(S, D) per patch: does a block lie here? A block's patch is one colour with edges at its long
    sides; an empty slot shows the level below: seams across the patch, 15 mm further down."""
    S = labs.shape[0]
    planes = np.ascontiguousarray(labs.transpose(3, 0, 1, 2))  # (3, S, h, w): each channel's pixels in a row
    # a and b, a patch's channel to a row (the rows _std1 takes one by one)
    spread_ab = _std1(np.subtract(planes[1:], np.float32(128.0)).reshape(2 * S, -1))
    return _occupancy_features(cfg, labs, color_f, planes, spread_ab)


def _occupancy_features(cfg: Mapping, labs: np.ndarray, color_f: np.ndarray, planes: np.ndarray,
                        ab_std: np.ndarray) -> np.ndarray:
    """occupancy_features given the patches' 8-bit Lab planes (3, S, h, w) (a view of more
    patches' will do) and the deviations of their float a and b (2 S,: a's rows, then b's)."""
    S, h, w, _ = labs.shape
    border, col_wins, row_wins, n_inner, starts, px = _occupancy_layout(h, w)
    g = _lab_steps(planes, border)
    gx, gy = g[0, :, 1:-1], g[1, :, 1:-1]
    band = gx[:, h // 6: h - h // 6]
    cols = np.add.reduce(band, axis=1)
    np.true_divide(cols, np.intp(band.shape[1]), out=cols, casting="unsafe")  # (np.mean's own steps)
    rows = _mean1(gy[:, :, w // 8: w - w // 8], axis=2)
    # the greatest column step inside the patch and round its thirds: the level below, seen through
    # an empty slot, lies across it, its seams at a third and two thirds of the patch (a few mm off
    # with the 15 mm of parallax)
    wins = cols.take(col_wins, axis=1)  # (S, 3, longest window)
    top = wins.max(axis=2)
    base = median_along(wins[:, 0, :n_inner], axis=1, reorder=True) + 1.0
    ends = rows.take(row_wins, axis=1).max(axis=2)  # the first and last three rows' greatest
    edge_long = (ends[:, 0] + ends[:, 1]) / (median_along(rows, axis=1, reorder=True) + 1.0)
    # each third's mean Lab colour, from exact integer sums of the 8-bit values (each column's by
    # cv2.reduce over the patches side by side: half NumPy's time)
    side = np.ascontiguousarray(labs.reshape(S, h, w * 3).transpose(1, 0, 2)).reshape(h, -1)
    colsum = cv2.reduce(side, 0, cv2.REDUCE_SUM, dtype=cv2.CV_32S).reshape(S, w, 3)
    if w >= 3:
        sums = np.add.reduceat(colsum, starts, axis=1)
    else:
        sums = np.stack([colsum[:, k * w // 3:(k + 1) * w // 3].sum(axis=1) for k in range(3)], axis=1)
    means = sums / px * LAB_SCALE - LAB_SHIFT
    d = means.take(_THIRD_PAIRS[0], axis=1) - means.take(_THIRD_PAIRS[1], axis=1)  # thirds 0, 0, 1 less 2, 1, 2
    d *= d
    spread = np.add.reduce(np.sqrt(np.add.reduce(d, axis=2)), axis=1)  # (_norm1 of each pair, added in turn)
    # at level 1 an empty slot shows the bare tray: how much of the patch has the tray's colour
    # (squared Lab distance to it per 8-bit value and channel, looked up; a distance under d is a
    # squared distance under the least float32 whose square root is d)
    sq, below = _tray_distance_table(tuple(float(v) for v in cfg["color"]["tray_ref_bgr"]))
    flat = planes.reshape(3, S * h, w)
    dE2 = cv2.LUT(flat[0], sq[0])
    dE2 += cv2.LUT(flat[1], sq[1])
    dE2 += cv2.LUT(flat[2], sq[2])
    near = (dE2.reshape(1, S, h * w) < below).view(np.uint8).reshape(2 * S, -1)  # under 10, under 20
    tray = (cv2.reduce(near, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S) / (h * w)).reshape(2, S)
    spread_ab = (ab_std / 50).reshape(2, S)
    steps = g[:, :, 1:-1].reshape(2 * S, -1)  # (each patch's steps in a row of its own: _mean1's sums)
    step_means = (np.add.reduce(steps, axis=1) / steps.shape[1] / 50).reshape(2, S)
    # the three greatest steps over the base, the thirds' two in order (a division by the same
    # positive base keeps their order, so the lesser ratio is the lesser step's)
    top /= base[:, None]
    top[:, 1:].sort(axis=1)
    # (one concatenate straight to float32: column_stack's wrapper makes each column 2-D in turn,
    # and every value rounds to float32 once either way)
    return np.concatenate([
        top, edge_long[:, None], (spread / 100)[:, None],
        spread_ab.T, step_means.T, tray.T, color_f,
    ], axis=1, dtype=np.float32)


_THIRD_PAIRS = np.array([[0, 0, 1], [2, 1, 2]])


def slot_patch_features(cfg: Mapping, labs: np.ndarray, n_occ: int) -> tuple[np.ndarray, np.ndarray]:
    """color_features of all the patches (S, h, w, 3) and occupancy_features of the first
    `n_occ`, sharing their work: one transpose to channel planes for both, and one _std1 for
    the float L of all and the float a and b of the first n_occ (each row's deviation is its
    own, so every value is as the two functions give it alone; some 10 us a slot reading)."""
    S, h, w, _ = labs.shape
    if S > 14 or not 0 < n_occ <= S:
        col = color_features(labs)
        return col, occupancy_features(cfg, labs[:n_occ], col[:n_occ])
    labs = np.ascontiguousarray(labs)
    planes = np.ascontiguousarray(labs.transpose(3, 0, 1, 2))  # (3, S, h, w)
    rows = np.empty((S + 2 * n_occ, h * w), np.float32)  # L of every patch, then a and b of the first n_occ
    np.multiply(planes[0].reshape(S, -1), LAB_SCALE[0], out=rows[:S])
    np.subtract(planes[1:, :n_occ].reshape(2, n_occ, -1), np.float32(128.0), out=rows[S:].reshape(2, n_occ, -1))
    dev = _std1(rows)
    col = _color_features(labs, dev[:S])
    return col, _occupancy_features(cfg, labs[:n_occ], col[:n_occ], planes[:, :n_occ], dev[S:])


@functools.lru_cache(maxsize=256)
def _tray_distance_table(tray_bgr: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per channel and 8-bit Lab value, the squared float Lab distance to the tray's colour
    (3, 256), and (2, 1, 1) the float32 squared distances whose square roots are first 10 and
    20 (so sqrt(s) < d exactly when s < those). Made once per tray colour."""
    tray_lab = _lab_float(lab8(np.array([[tray_bgr]], dtype=np.float32)).reshape(3))
    sq = _lab_float(np.arange(256, dtype=np.uint8)[:, None]) - tray_lab
    sq *= sq
    sq = np.ascontiguousarray(sq.T)  # (3, 256): each channel's table contiguous
    below = np.array([_least_with_root(10.0), _least_with_root(20.0)], np.float32).reshape(2, 1, 1)
    sq.flags.writeable = False
    below.flags.writeable = False
    return sq, below


def _least_with_root(d: float) -> np.float32:
    """The least float32 s with np.sqrt(s) >= d (square roots are correctly rounded, so monotone)."""
    s = np.float32(d * d)
    while np.sqrt(s) >= np.float32(d):
        s = np.nextafter(s, np.float32(0))
    while np.sqrt(s) < np.float32(d):
        s = np.nextafter(s, np.float32(np.inf))
    return s


def _norm1(v: np.ndarray) -> np.ndarray:
    """np.linalg.norm(v, axis=1) of a real 2-D array (its own arithmetic), without its overhead."""
    return np.sqrt(np.add.reduce(v * v, axis=1))


def _std1(x: np.ndarray) -> np.ndarray:
    """x.std(axis=1) of a 2-D float array, NumPy's own steps (sum over n as an intp count, the
    squared deviations summed the same way), without its per-call overhead."""
    n = np.intp(x.shape[1])
    m = np.add.reduce(x, axis=1, keepdims=True)
    np.true_divide(m, n, out=m, casting="unsafe")
    d = np.subtract(x, m)
    np.square(d, out=d)
    v = np.add.reduce(d, axis=1)
    np.true_divide(v, n, out=v, casting="unsafe")
    return np.sqrt(v, out=v)


def patch_labs(patches: Sequence[np.ndarray], gains: np.ndarray) -> np.ndarray:
    """(S, h, w, 3) 8-bit Lab of equally sized BGR patches after colour constancy (one conversion)."""
    stack = np.concatenate(list(patches), axis=0)
    S = len(patches)
    h, w = patches[0].shape[:2]
    return lab8(stack, gains).reshape(S, h, w, 3)
