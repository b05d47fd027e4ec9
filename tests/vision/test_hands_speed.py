"""The hands stage's shortcuts compute what the NumPy calls they replace compute, value for value."""

from __future__ import annotations

import numpy as np

from vision.hands import (_Blobs, _cheb, _design, _least_squares, _mean0, _median1, _median_rows, _median_u8, _min_dist,
                          _norms, _percentiles, _rows_within)


def test_order_statistics_match_numpy():
    rng = np.random.default_rng(3)
    for trial in range(3000):
        n = int(rng.integers(1, 200))
        a = rng.standard_normal(n) * 10 ** rng.uniform(-2, 3)
        if trial % 3 == 0:
            a = np.round(a)  # ties
        assert _percentiles(a, (3, 97)) == [float(np.percentile(a, 3)), float(np.percentile(a, 97))]
        assert float(_median1(a)) == float(np.median(a))
        f = a.astype(np.float32)
        assert float(_median1(f)) == float(np.median(f))
        rows = rng.standard_normal((n, 3)).astype(np.float32)
        got = _median_rows(rows)
        assert got.dtype == np.float32 and np.array_equal(got, np.median(rows, axis=0))
    with_nan = np.array([[1, np.nan], [2, 3], [4, 5]], np.float32)
    assert np.array_equal(_median_rows(with_nan), np.median(with_nan, axis=0), equal_nan=True)
    assert np.isnan(_median1(np.array([1.0, np.nan, 3.0])))


def test_distances_and_means_match_numpy():
    rng = np.random.default_rng(4)
    for _ in range(500):
        a = rng.standard_normal((int(rng.integers(1, 30)), 2)) * 100
        b = rng.standard_normal((int(rng.integers(1, 60)), 2)) * 100
        assert _min_dist(a, b) == np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)).min()
        assert np.array_equal(_norms(b - a[0]), np.linalg.norm(b - a[0], axis=1))
        assert np.array_equal(_mean0(b), b.mean(axis=0))
        c = np.array([3.5, -7.25])
        assert np.array_equal(_cheb(b, c, 40.0), np.abs(b - c).max(axis=-1) - 40.0)


def test_channel_means_are_numpys():
    """colour_change writes the means over three channels out: the same float32 sums in the same order."""
    rng = np.random.default_rng(5)
    d = (rng.standard_normal((20000, 3)) * rng.choice([1e-3, 1.0, 1e3], (20000, 3))).astype(np.float32)
    assert np.array_equal((d[:, 0] + d[:, 1] + d[:, 2]) / 3, d.mean(axis=1))
    a = np.abs(d[::3])
    assert np.array_equal((a[:, 0] + a[:, 1] + a[:, 2]) / 3, a.mean(axis=1))


def test_design_and_blobs():
    rng = np.random.default_rng(6)
    xy = rng.standard_normal((30, 30, 2)) * 200
    X = _design(xy)
    q = ((xy.reshape(-1, 2) - xy.reshape(-1, 2).mean(axis=0)) / 100.0).astype(np.float32)
    assert np.array_equal(X[:, 1:3], q) and np.array_equal(X[:, 5], q[:, 0] * q[:, 1])
    lab = rng.integers(0, 5, (30, 30))
    blobs = _Blobs(lab, xy)
    for k in range(5):
        i, pts = blobs(k)
        assert np.array_equal(pts, xy[lab == k]) and np.array_equal(i, np.flatnonzero(lab == k))


def test_rows_within_is_numpys_comparison():
    """_rows_within's one cv2.inRange: |r| < trim as NumPy compares it, in float32 and float64,
    at the bounds and for NaN."""
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64):
        t = dtype(0.08)
        r = (rng.standard_normal((3000, 3)) * 0.08).astype(dtype)
        r[:6] = [[t, 0, 0], [np.nextafter(t, dtype(0)), 0, 0], [0, -t, 0], [0, 0, -np.nextafter(t, dtype(0))],
                 [np.nan, 0, 0], [-0.0, np.inf, 0]]
        a = np.abs(r)
        want = (a[:, 0] < 0.08) & (a[:, 1] < 0.08) & (a[:, 2] < 0.08)
        for rows in (r, r[::3]):
            got = _rows_within(rows, 0.08)
            w = want if rows is r else want[::3]
            assert got.dtype == np.uint8 and np.array_equal(got > 0, w)


def test_least_squares_rows_as_uint8_and_median_of_8_bits():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((500, 6)).astype(np.float32)
    D = rng.standard_normal((500, 3)).astype(np.float32)
    rows = rng.random(500) < 0.7
    Xr, Dr = X[rows].astype(np.float64), D[rows].astype(np.float64)
    want = np.linalg.solve(Xr.T @ Xr, Xr.T @ Dr).astype(np.float32)
    assert np.array_equal(_least_squares(X, D, rows), want)
    assert np.array_equal(_least_squares(X, D, rows.view(np.uint8) * np.uint8(255)), want)
    for n in (30, 31, 1000, 1001):
        img = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
        mask = np.zeros((40, 40), np.uint8)
        mask.ravel()[rng.choice(1600, n, replace=False)] = 1
        got = _median_u8(img, mask, n)
        want = _median_rows(img.reshape(-1, 3)[mask.ravel() > 0].astype(np.float32))
        assert got.dtype == np.float32 and np.array_equal(got, want)
