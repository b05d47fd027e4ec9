"""The frame reader's faster arithmetic gives what the plain formulas give (issue 9's 10 ms)."""

from __future__ import annotations

import cv2
import numpy as np

from vision import plane_height as ph


def _view(rng) -> ph.PlaneView:
    img = rng.integers(0, 256, (150, 170, 3)).astype(np.uint8)
    steps = rng.uniform(0, 100, (4, 152, 172)).astype(np.float32)  # (planes bordered by one pixel: PlaneView.steps)
    nadir = np.array([131.0, 97.0])
    return ph.PlaneView(img, steps, 1.0, 55.3, 231.7, nadir, 610.0, np.array([True, False, True, True]))


def test_lifting_and_indexing_in_one_pass_is_lifting_then_indexing():
    rng = np.random.default_rng(1)
    pv = _view(rng)
    pts = rng.uniform(40, 240, (300, 2))
    zs = np.arange(7.5, 330, 5.0)
    flat, inside = pv.lift_index(pts, zs)
    want_flat, want_inside = pv.index(pv.lift(pts, zs))
    assert np.array_equal(inside, want_inside) and np.array_equal(flat, want_flat)
    assert not inside.all() and inside.any()  # both kinds are exercised
    # a camera centre per candidate (the focal search)
    nadirs = pv.nadir + rng.normal(0, 5, (len(zs), 2))
    czs = pv.cam_z + rng.normal(0, 20, len(zs))
    flat, inside = pv.lift_index(pts, zs, nadirs, czs)
    want_flat, want_inside = pv.index(pv.lift(pts, zs, nadirs, czs))
    assert np.array_equal(inside, want_inside) and np.array_equal(flat, want_flat)


def test_not_tray_is_the_chromaticity_and_brightness_test():
    rng = np.random.default_rng(2)
    th = {"chroma": 0.08, "dark": 0.3, "bright": 1.35}
    px = rng.integers(0, 256, (40, 30, 3)).astype(np.float32)
    ref = rng.uniform(20, 230, (40, 30, 3)).astype(np.float32)
    p, r = px + 1.0, ref + 1.0
    dist = np.abs(p / p.sum(axis=-1, keepdims=True) - r / r.sum(axis=-1, keepdims=True)).sum(axis=-1)
    ratio = p.sum(axis=-1) / r.sum(axis=-1)
    want = (dist > 0.08) | (ratio < 0.3) | (ratio > 1.35)
    assert np.array_equal(ph._not_tray(th, px, ref), want)


def test_not_tray_of_stacked_colours_is_not_tray_colours_bit_for_bit():
    from vision import top_level as tl

    rng = np.random.default_rng(21)
    for th in ({"chroma": 0.08, "dark": 0.3, "bright": 1.35},
               {"chroma": 0.08, "dark": 0.3, "bright": 1.35, "shadow_below": 0.85, "shadow_chroma": 0.15}):
        px = rng.integers(0, 256, (6, 64, 3)).astype(np.float32)
        ref = rng.uniform(0, 255, (6, 64, 3)).astype(np.float32)
        ref[:, ::3] = px[:, ::3] * rng.uniform(0.25, 1.4, (6, 22, 1)).astype(np.float32)  # (near the limits)
        table = rng.uniform(0, 255, 3).astype(np.float32)
        cols = np.empty((3, 6, 64, 3), np.float32)
        cols[0], cols[1], cols[2] = px, ref, table
        got = ph._not_tray_cols(th, cols)
        want = tl.not_tray_colours(th, px, (ref, table))
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def _highest_peak(sc, alpha):
    """One camera's rising heights: a single run, the face larger the higher."""
    return ph._highest_peak_blocks(sc, np.zeros(len(sc)), np.arange(len(sc), dtype=float), alpha)


def test_the_top_is_the_highest_local_maximum_near_the_best():
    sc = np.array([0.2, 0.9, 0.5, 0.8, 0.85, 0.3, 1.0, 0.95, 0.96, 0.1])
    assert _highest_peak(sc, 0.9) == 8     # 0.96 is a peak within 0.9 of the best, higher than 1.0's
    assert _highest_peak(sc, 0.97) == 6    # only the best itself
    assert _highest_peak(np.array([3.0, 2.0, 1.0]), 1.0) == 0  # the first candidate can be the peak
    assert _highest_peak(np.array([1.0, 1.0]), 1.0) == 1       # a plateau: its highest end


def test_several_masked_medians_at_once_are_each_median():
    from vision import patch_features as pf

    rng = np.random.default_rng(3)
    v = rng.integers(0, 256, (3, 120, 3)).astype(np.uint8)
    masks = [None, rng.uniform(size=(3, 120)) > 0.5, np.zeros((3, 120), bool)]
    together = pf.medians_u8(v, masks)
    for m, got in zip(masks, together):
        assert np.array_equal(got, pf.median_u8(v, m))
    assert np.allclose(together[0], np.median(v.astype(np.float64), axis=1))


def test_chroma_and_hue_tables_are_the_per_pixel_formulas():
    from vision import patch_features as pf

    rng = np.random.default_rng(4)
    ab8 = rng.integers(0, 256, (5000, 2)).astype(np.uint8)
    a = ab8[:, 0] * pf.LAB_SCALE[1] - pf.LAB_SHIFT[1]
    b = ab8[:, 1] * pf.LAB_SCALE[2] - pf.LAB_SHIFT[2]
    idx = ab8[:, 0].astype(np.intp) * 256 + ab8[:, 1]
    assert np.array_equal(pf.AB_CHROMA[idx], np.hypot(a, b))
    hue = np.floor((np.arctan2(b, a) + np.pi) / (2 * np.pi) * 12).astype(np.int64) % 12
    assert np.array_equal(pf.AB_HUE[idx], hue)


def _occupancy_in_float(cfg, labs, color_f):
    """The occupancy features computed on the float Lab image (the formulas, unoptimised)."""
    import cv2

    from vision import patch_features as pf

    S, h, w, _ = labs.shape
    stack = np.concatenate([cv2.copyMakeBorder(p, 1, 1, 0, 0, cv2.BORDER_REFLECT_101) for p in labs], axis=0)
    stack = (stack * pf.LAB_SCALE - pf.LAB_SHIFT).astype(np.float32)
    gx = np.abs(cv2.Sobel(stack, cv2.CV_32F, 1, 0, ksize=3)).sum(axis=2).reshape(S, h + 2, w)[:, 1:-1]
    gy = np.abs(cv2.Sobel(stack, cv2.CV_32F, 0, 1, ksize=3)).sum(axis=2).reshape(S, h + 2, w)[:, 1:-1]
    lab = stack.reshape(S, h + 2, w, 3)[:, 1:-1]
    cols = gx[:, h // 6: h - h // 6].mean(axis=1)
    rows = gy[:, :, w // 8: w - w // 8].mean(axis=2)
    inner = cols[:, w // 10: w - w // 10]
    base = np.median(inner, axis=1) + 1.0
    r = max(1, int(round(w / 75.0 * 4.0)))
    thirds = np.column_stack([cols[:, max(0, c - r): c + r + 1].max(axis=1) for c in (w // 3, 2 * w // 3)])
    edge_long = (rows[:, :3].max(axis=1) + rows[:, -3:].max(axis=1)) / (np.median(rows, axis=1) + 1.0)
    means = np.stack([lab[:, :, k * w // 3:(k + 1) * w // 3].reshape(S, -1, 3).astype(np.float64).mean(axis=1)
                      for k in range(3)], axis=1)
    spread = sum(np.linalg.norm(means[:, i] - means[:, j], axis=1) for i, j in ((0, 2), (0, 1), (1, 2)))
    tray = cv2.cvtColor(np.array([[cfg["color"]["tray_ref_bgr"]]], np.uint8), cv2.COLOR_BGR2Lab).reshape(3)
    dE = np.linalg.norm(lab.reshape(S, -1, 3) - (tray * pf.LAB_SCALE - pf.LAB_SHIFT), axis=2)
    ab = lab.reshape(S, -1, 3)
    return np.column_stack([
        inner.max(axis=1) / base, thirds.min(axis=1) / base, thirds.max(axis=1) / base, edge_long, spread / 100,
        ab[..., 1].std(axis=1) / 50, ab[..., 2].std(axis=1) / 50,
        gx.reshape(S, -1).mean(axis=1) / 50, gy.reshape(S, -1).mean(axis=1) / 50,
        (dE < 10).mean(axis=1), (dE < 20).mean(axis=1), color_f])


def test_occupancy_features_from_8_bit_lab_are_the_float_lab_formulas():
    from vision import patch_features as pf

    rng = np.random.default_rng(6)
    cfg = {"color": {"tray_ref_bgr": [200, 200, 200]}}
    patches = [rng.integers(0, 256, (31, 94, 3)).astype(np.uint8) for _ in range(3)]
    patches[0][:] = (190, 205, 198)  # near the tray's colour: the dE fractions count
    patches[0][:, 30:33] = (60, 60, 60)  # a seam
    patches[2][:, :50] = (30, 40, 200)
    labs = pf.patch_labs(patches, np.ones(3, np.float32))
    col = pf.color_features(labs)
    got = pf.occupancy_features(cfg, labs, col)
    want = _occupancy_in_float(cfg, labs, col)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got[0, 9] > 0.9 > got[1, 9]  # the tray-coloured patch is seen as such


def test_scoring_only_candidates_that_can_win_keeps_the_winner_and_its_rivals(calibration, small_kit):
    """The bare-tray checks only lower a score, so they are skipped for candidates whose edge fit
    is already below the best: the best, and every candidate within `within` of it, score as in
    the full scoring; the others get -inf."""
    import json

    import cv2

    from vision.reader import load_pipeline

    pipe = load_pipeline(calibration)
    labels = json.loads((small_kit / "labels.json").read_text())
    skipped = 0
    for name in sorted(labels)[:6]:
        img = cv2.imread(str(small_kit / "images" / name))
        ctx, zs, pv = _heights_view(pipe, img)
        args = (pipe.cfg, pipe.tray, pv, pipe.height_probes, zs, ctx.tray_bgr, pipe.background, ctx.gains)
        full = ph.height_scores(*args)
        for within in (1.0, 0.7):
            some = ph.height_scores(*args, within=within)
            near = full >= within * full.max()
            assert np.array_equal(some[near], full[near])
            assert np.all(np.isneginf(some[~near]) | (some[~near] == full[~near]))
            assert int(np.argmax(some)) == int(np.argmax(full))
            skipped += int(np.isneginf(some).sum())
    assert skipped > 0


def _first_photos_heights(calibration, small_kit):
    """The small kit's first photo read as far as the height search: the pipeline, the frame's
    context, candidate heights every 5 mm and the rectified view they are scored on."""
    import json

    import cv2

    from vision.reader import load_pipeline

    pipe = load_pipeline(calibration)
    name = sorted(json.loads((small_kit / "labels.json").read_text()))[0]
    return (pipe, *_heights_view(pipe, cv2.imread(str(small_kit / "images" / name))))


def _heights_view(pipe, img):
    """A frame's context, candidate heights every 5 mm up to 0.6 of the camera's height, and the
    rectified view they are scored on."""
    from vision.reader import frame_context

    ctx = frame_context(pipe, img)
    zs = np.arange(7.5, 0.6 * float(ctx.registration.camera.center[2]), 5.0)
    return ctx, zs, ph.plane_view(pipe.cfg, pipe.tray, ctx.registration, img, 7.5, float(zs[-1]) + 5)


def test_the_best_first_scoring_ends_when_the_checks_rule_every_candidate_out(calibration, small_kit, monkeypatch):
    """Each candidate is colour-checked once: were every check to score -inf, the search would
    still end (a loop over the candidates left at -inf would take them again forever)."""
    pipe, ctx, zs, pv = _first_photos_heights(calibration, small_kit)
    calls = []

    def ruled_out(cfg, pv, pr, k, nadirs, sc, *rest):
        calls.append(len(sc))
        return np.full(len(sc), -np.inf)

    monkeypatch.setattr(ph, "_colour_checked", ruled_out)
    got = ph.height_scores(pipe.cfg, pipe.tray, pv, pipe.height_probes, zs, ctx.tray_bgr, pipe.background,
                           ctx.gains, within=1.0)
    assert np.all(np.isneginf(got))
    assert sum(calls) == len(zs)  # every candidate checked once, none twice


def _best_first_with_masks(sc, within, check):
    """height_scores' best-first loop as it was written with NumPy masks (the reference)."""
    order = (-sc).argsort(kind="stable")
    full = np.full(len(sc), -np.inf)
    checked = np.zeros(len(sc), bool)
    todo = order[:4]
    while len(todo):
        full[todo] = check(todo)
        checked[todo] = True
        rest = order[~checked[order]]
        todo = rest[sc[rest] >= within * np.maximum.reduce(full)]
    return full


def test_the_best_first_bookkeeping_takes_the_same_batches_as_the_masks_did(calibration, small_kit, monkeypatch):
    """The best-first loop keeps its order, batches and running best in plain Python: the same
    candidates are checked in the same batches, and every score is the same (checks that score
    NaN or -inf, or exactly the bar, too)."""
    pipe, ctx, zs, pv = _first_photos_heights(calibration, small_kit)
    args = (pipe.cfg, pipe.tray, pv, pipe.height_probes, zs, ctx.tray_bgr, pipe.background, ctx.gains)
    sc = ph.height_scores(*args[:5], None)  # the edge fit alone
    k = pv.cam_z / (pv.cam_z - zs)
    rng = np.random.default_rng(7)
    for trial in range(40):
        # each candidate's check: its edge fit lowered, or another's edge fit exactly (ties with the bar)
        factor = rng.choice([0.3, 0.9, 1.0, -np.inf, np.nan], len(zs), p=[0.3, 0.4, 0.2, 0.07, 0.03])
        table = sc * factor if trial % 2 else np.where(np.isfinite(factor), sc[rng.permutation(len(zs))], factor)
        batches, want_batches = [], []

        def check(cfg, pv_, pr, kk, nadirs, s, *rest):
            at = [int(np.flatnonzero(k == v)[0]) for v in kk]
            batches.append(at)
            return table[at]

        def reference(at):
            want_batches.append(at.tolist())
            return table[at]

        monkeypatch.setattr(ph, "_colour_checked", check)
        for within in (1.0, 0.7):
            batches.clear()
            want_batches.clear()
            got = ph.height_scores(*args, within=within)
            assert got.tobytes() == _best_first_with_masks(sc, within, reference).tobytes()
            assert batches == want_batches


def test_a_cameras_rotation_and_centre_are_worked_out_once_and_stay_right():
    import cv2

    from vision.geometry import Camera, intrinsics, look_at

    cam = look_at(intrinsics(600.0, 640, 480), np.array([120.0, 90.0, 520.0]), np.array([140.0, 140.0, 0.0]), 12.0)
    assert cam.R is cam.R  # cached on the camera, not recomputed per call
    assert np.array_equal(cam.R, cv2.Rodrigues(np.asarray(cam.rvec, np.float64))[0])
    assert np.allclose(cam.center, [120.0, 90.0, 520.0])
    other = Camera(cam.K, -np.asarray(cam.rvec), cam.tvec)  # a new camera has its own
    assert not np.allclose(other.R, cam.R)


def test_patch_means_are_numpy_means():
    from vision import patch_features as pf

    rng = np.random.default_rng(7)
    x = rng.uniform(0, 50, (3, 2900)).astype(np.float32)
    assert np.array_equal(pf._mean1(x), x.mean(axis=1))
    assert np.array_equal(pf._mean1(x > 20), (x > 20).mean(axis=1))
    y = rng.uniform(0, 50, (3, 25, 70)).astype(np.float32)
    assert np.array_equal(pf._mean1(y, axis=2), y.mean(axis=2))


def test_medians_from_one_partition_are_numpy_medians():
    from vision.patch_features import median_along

    rng = np.random.default_rng(8)
    for shape, axis in (((12, 75), 1), ((12, 74), 1), ((12, 75, 3), 1), ((166,), -1), ((5, 20, 10), 2)):
        x = rng.uniform(0, 100, shape).astype(np.float32)
        assert np.array_equal(median_along(x, axis), np.median(x, axis=axis))


def test_the_pose_for_a_focal_length_is_the_homography_factored():
    from vision.geometry import apply_h, intrinsics, look_at

    cam = look_at(intrinsics(600.0, 640, 480), np.array([120.0, 90.0, 520.0]), np.array([140.0, 140.0, 0.0]), 12.0)
    H = cam.plane_homography(0.0)
    K, R, t = ph._pose_for_focal(H, 600.0, 640, 480)
    assert np.allclose(R @ R.T, np.eye(3)) and np.linalg.det(R) > 0
    assert np.allclose(R, cam.R, atol=1e-9) and np.allclose(t, cam.tvec, atol=1e-6)
    pts = np.array([[0.0, 0.0], [280.0, 40.0], [140.0, 140.0]])
    back = K @ np.column_stack([R[:, 0], R[:, 1], t])
    assert np.allclose(apply_h(back, pts), apply_h(H, pts), atol=1e-6)


def test_the_marker_detector_skips_outlines_far_smaller_than_a_tray_marker():
    from vision.reader import default_config
    from vision.tray import make_detector

    det = make_detector(default_config())
    assert abs(det.fast.getDetectorParameters().minMarkerPerimeterRate - 0.1) < 1e-9
    assert abs(make_detector({}).fast.getDetectorParameters().minMarkerPerimeterRate - 0.03) < 1e-9  # OpenCV's own


def test_percentiles_and_long_medians_from_one_partition_are_numpys():
    from vision.patch_features import median_along, percentile_along

    rng = np.random.default_rng(11)
    for shape, axis in (((12, 67), 1), ((12, 66), 1), ((97,), -1), ((3, 40, 2), 1), ((1,), -1)):
        x = rng.normal(0, 30, shape).astype(np.float32)
        for q in (0, 25, 40, 80, 99.5, 100):
            got, want = percentile_along(x, q, axis), np.percentile(x, q, axis=axis)
            assert np.array_equal(got, want) and np.asarray(got).dtype == np.asarray(want).dtype
    for shape, axis in (((13800,), -1), ((2, 600), 1), ((600, 3), 0), ((3, 512, 2), 1)):
        x = np.round(rng.normal(0, 30, shape)).astype(np.float32)  # (ties too)
        assert np.array_equal(median_along(x, axis), np.median(x, axis=axis))


def test_std_and_norm_rows_are_numpys():
    from vision import patch_features as pf

    rng = np.random.default_rng(12)
    x = rng.normal(5, 20, (3, 2914)).astype(np.float32)
    assert np.array_equal(pf._std1(x), x.std(axis=1))
    v = rng.normal(0, 9, (3, 3))
    assert np.array_equal(pf._norm1(v), np.linalg.norm(v, axis=1))
    for d in (10.0, 20.0):  # a square root under d is a square under the least float32 whose root is d
        s = pf._least_with_root(d)
        sq = np.concatenate([rng.uniform(0, 2 * d * d, 20000).astype(np.float32),
                             np.array([np.nextafter(s, np.float32(0)), s, np.nextafter(s, np.float32(1e9))])])
        assert np.array_equal(np.sqrt(sq) < d, sq < s)


def test_the_lab_table_is_the_lab_formula_for_every_colour():
    from vision import top_level as tl

    b, g, r = np.meshgrid(np.arange(0, 256, 3), np.arange(0, 256, 5), np.arange(256), indexing="ij")
    img = np.stack([b, g, r], axis=-1).reshape(-1, 256, 3).astype(np.uint8)
    want = cv2.cvtColor(img, cv2.COLOR_BGR2Lab) * tl._LAB_SCALE - tl._LAB_SHIFT
    got = tl.lab_of(img)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_the_pixels_against_two_references_are_each_test():
    from vision import top_level as tl

    rng = np.random.default_rng(13)
    th = {"chroma": 0.08, "dark": 0.3, "bright": 1.35, "shadow_below": 0.8, "shadow_chroma": 0.12}
    px = rng.integers(0, 256, (4, 64, 3)).astype(np.float32)
    ref = rng.uniform(20, 230, (4, 64, 3)).astype(np.float32)
    table = np.array([90.0, 120.0, 140.0], np.float32)
    a, b = tl.not_tray_colours(th, px, (ref, table))
    assert np.array_equal(a, tl.not_tray_colour(th, px, ref))
    assert np.array_equal(b, tl.not_tray_colour(th, px, np.broadcast_to(table, px.shape)))


def test_indices_without_clipping_and_into_a_bordered_grid_are_the_clipped_ones_where_inside():
    rng = np.random.default_rng(14)
    pv = _view(rng)
    zs = np.arange(7.5, 330, 5.0)
    xs, ys = rng.uniform(40, 240, 6), rng.uniform(40, 240, 5)
    pts = np.column_stack([rng.choice(xs, 200), rng.choice(ys, 200)])  # (points on a few lines, like the probes)
    channel = rng.integers(0, 4, 200)
    pr = ph.Probes(pts, channel, 50, {}, 200)
    grid = (pv.x0, pv.y1, pv.ppm, *pv.img.shape[:2])
    for nadirs, czs in ((None, None), (pv.nadir + rng.normal(0, 5, (len(zs), 2)), pv.cam_z + rng.normal(0, 20, len(zs)))):
        lift = ph._Lift(pv, pts, zs, nadirs, czs)
        flat, inside = lift.index(grid, 4, channel.astype(np.int32))
        loose, inside2 = lift.index(grid, 4, channel.astype(np.int32), clip=False)
        assert np.array_equal(inside, inside2) and not inside.all()
        assert np.array_equal(loose[inside], flat[inside]) and (loose[~inside] == 0).all()
        assert np.array_equal(lift.on_sheet(), np.ones(inside.shape, bool))  # (no sheet set)
        # into the values bordered by one zero pixel (PlaneView.steps): a point outside reads 0,
        # one inside its own value
        values = rng.integers(1, 700, (*pv.img.shape[:2], 4)).astype(np.uint16)
        bordered = np.pad(values.transpose(2, 0, 1), ((0, 0), (1, 1), (1, 1)))  # (planes)
        k = lift.k
        steps = ph._step_indices(ph._step_plan(pv, pr), k, None if nadirs is None else np.asarray(nadirs)).T
        read = np.take(bordered.reshape(-1), steps)
        assert np.array_equal(read, np.where(inside, np.take(values.reshape(-1), loose), 0))


def _colour_checked_plainly(cfg, pv, pr, zs, nadirs, cam_zs, sc, tray_bgr, bg, gains):
    """The bare-tray checks of height_scores written out point by point (the arithmetic
    plane_height._colour_checked works out from its tables)."""
    from vision import top_level as tl

    ac = cfg["align"]
    cols = slice(pr.parts["band"].start, pr.parts["outside"].stop)
    pts = pr.pts[cols]
    lifted = ph._Lift(pv, pts, zs, nadirs, cam_zs)
    fi, ins = lifted.index((pv.x0, pv.y1, pv.ppm, *pv.img.shape[:2]), clip=False)
    px = np.take(pv.img.reshape(-1, 3), fi, axis=0).astype(np.float32)
    on_sheet = lifted.on_sheet()
    h, w = bg.bgr.shape[:2]
    flat, inside = lifted.index((bg.x0, bg.y1, bg.ppm, h, w), clip=False)
    on_tray = inside & np.take(bg.valid.reshape(-1), flat) & on_sheet
    expect = np.where(on_tray[..., None], np.take(bg.bgr.reshape(-1, 3), flat, axis=0) / np.asarray(gains, np.float32),
                      np.asarray(tray_bgr, np.float32))
    fg, off_table = tl.not_tray_colours(cfg["silhouette"], px, (expect, np.asarray(pv.table_bgr)))
    fg = fg & ins & (on_sheet | off_table)
    nb = pr.parts["band"].stop - pr.parts["band"].start
    band = ph.band_cover(fg[:, :nb], float(ac.get("band_weakest_weight", 0.0)), ins[:, :nb])
    sc = sc * np.minimum(np.maximum(band / float(ac["band_foreground"]), 0.0), 1.0)
    counted = ins[:, nb:] & on_tray[:, nb:] & np.repeat(pv.hidden, nb // 4)
    k = counted.sum(axis=1)
    bare = np.where(k > 0, (~fg[:, nb:] & counted).sum(axis=1) / np.maximum(k, 1), 1.0)
    return sc * np.minimum(np.maximum(bare / float(ac["outside_bare"]), 0.0), 1.0)


def test_the_colour_checks_from_one_table_are_the_checks_point_by_point(calibration, small_kit):
    """_colour_checked's probes (pixels, masks and counts from one table per batch, the counts of a
    few candidates in Python floats) are the plain arithmetic's, bit for bit, one camera centre or
    one per candidate, a few candidates or many."""
    import json

    from vision.reader import load_pipeline

    pipe = load_pipeline(calibration)
    labels = json.loads((small_kit / "labels.json").read_text())
    rng = np.random.default_rng(18)
    for name in sorted(labels)[:4]:
        img = cv2.imread(str(small_kit / "images" / name))
        ctx, zs, pv = _heights_view(pipe, img)
        assert pv.table_bgr is not None and pv.hidden.any() and pv.sheet is not None  # (every check is exercised)
        sc = rng.uniform(0.2, 1.5, len(zs))
        args = (pipe.cfg, pv, pipe.height_probes)
        rest = (ctx.tray_bgr, pipe.background, ctx.gains)
        for some in (slice(0, 4), slice(None)):  # (Python floats for a few, NumPy for many)
            z = zs[some]
            cz = np.full(len(z), pv.cam_z) + rng.normal(0, 20, len(z))
            nad = pv.nadir + rng.normal(0, 8, (len(z), 2))
            want = _colour_checked_plainly(*args, z, None, None, sc[some], *rest)
            got = ph._colour_checked(*args, pv.cam_z / (pv.cam_z - z), None, sc[some], *rest)
            assert np.array_equal(got, want) and (want < sc[some]).any()
            want = _colour_checked_plainly(*args, z, nad, cz, sc[some], *rest)
            assert np.array_equal(ph._colour_checked(*args, cz / (cz - z), nad, sc[some], *rest), want)


def test_the_block_posterior_is_the_product_normalised_and_sorted():
    from vision.reader import block_posterior

    rng = np.random.default_rng(15)
    for _ in range(200):
        pc, pg = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(8) * 0.3)
        pg[rng.integers(8)] = pg[rng.integers(8)]  # (ties)
        out = [(f"{c}-{g}", float(pc[ci] * pg[gi])) for ci, c in enumerate(("red", "yellow", "green", "blue"))
               for gi, g in enumerate(("1", "2", "3", "4", "draw2", "reverse", "skip"))]
        out.append(("wild", float(pc[4] * pg[7])))
        total = sum(p for _, p in out) or 1.0
        assert block_posterior(pc, pg) == sorted(((n, p / total) for n, p in out), key=lambda t: -t[1])


def test_the_tray_markers_found_round_where_they_lie_are_the_whole_frames(small_kit):
    import json
    from dataclasses import replace

    from vision.kit import load_tray
    from vision.reader import default_config
    from vision.tray import detect_markers, make_detector

    tray = load_tray(small_kit / "tray.json")
    cfg = default_config()
    fast = replace(make_detector(cfg), crop_search_noise=0.0)  # (every frame searched round its markers)
    whole = replace(fast, crop_search=False)
    searched = 0
    for name in sorted(json.loads((small_kit / "labels.json").read_text())):
        gray = cv2.cvtColor(cv2.imread(str(small_kit / "images" / name)), cv2.COLOR_BGR2GRAY)
        for g in (gray, cv2.GaussianBlur(gray, (0, 0), 1.2), np.ascontiguousarray(gray[40:, 25:])):
            a = {i: c for i, c in detect_markers(whole, g, tray.markers).items() if i in tray.markers}
            b = detect_markers(fast, g, tray.markers)
            assert a.keys() == b.keys() and all(np.array_equal(a[i], b[i]) for i in a)
            searched += fast.crops.find(g, tray.markers) is not None
    assert searched > 0


def test_a_frames_readings_share_what_they_have_worked_out(small_kit, calibration):
    import json

    from vision import reader

    pipe = reader.load_pipeline(calibration)
    name = sorted(json.loads((small_kit / "labels.json").read_text()))[0]
    img = cv2.imread(str(small_kit / "images" / name))
    ctx = reader.frame_context(pipe, img)
    first = reader.slot_evidence(pipe, ctx, img, 60.0, "x")
    assert reader.slot_evidence(pipe, ctx, img, 60.0, "x") is first  # made once per frame
    fresh = reader.slot_evidence(pipe, reader.FrameContext(ctx.registration, ctx.tray_bgr, ctx.gains), img, 60.0, "x")
    assert fresh is not first and all(np.array_equal(getattr(fresh, f), getattr(first, f)) for f in ("p_occ", "p_col", "p_gly"))
    other = img.copy()  # another frame (even the same pixels) is not this one
    assert reader.slot_evidence(pipe, ctx, other, 60.0, "x") is not first


def test_the_view_warped_through_bgra_is_opencvs_warp():
    rng = np.random.default_rng(16)
    img = rng.integers(0, 256, (120, 160, 3)).astype(np.uint8)
    M = np.array([[0.9, 0.12, 20.0], [-0.05, 0.8, 10.0], [1e-4, 2e-4, 1.0]])
    for size in ((200, 150), (37, 31)):  # (reaching past the frame: the replicated border too)
        want = cv2.warpPerspective(img, M, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                   borderMode=cv2.BORDER_REPLICATE)
        assert np.array_equal(ph._warp_bgr(img, M, size), want)


def test_the_crops_cut_from_the_frames_bgra_are_the_bgr_frames(small_kit, calibration):
    import json

    from vision import reader
    from vision import top_level as tl

    rng = np.random.default_rng(17)
    img = rng.integers(0, 256, (120, 160, 3)).astype(np.uint8)
    M = np.array([[0.9, 0.12, 20.0], [-0.05, 0.8, 10.0], [1e-4, 2e-4, 1.0]])
    for size in ((200, 150), (37, 31)):  # (reaching past the frame: the replicated border too)
        got = tl.warp_frame(tl.frame_bgra(img), M, size)
        assert got.shape == (size[1], size[0], 3) and np.array_equal(got, tl.warp_frame(img, M, size))
    pipe = reader.load_pipeline(calibration)
    name = sorted(json.loads((small_kit / "labels.json").read_text()))[0]
    img = cv2.imread(str(small_kit / "images" / name))
    reg, bgra = reader.frame_context(pipe, img).registration, tl.frame_bgra(img)
    for z, orient in ((30.0, "x"), (75.0, "y")):
        for a, b in zip(tl.slot_cuts(pipe.cfg, pipe.tray, reg, img, z, orient),
                        tl.slot_cuts(pipe.cfg, pipe.tray, reg, bgra, z, orient)):
            a, b = (list(a.values()), list(b.values())) if isinstance(a, dict) else (a, b)
            assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
        assert np.array_equal(tl.face_image(pipe.cfg, pipe.tray, reg, img, z),
                              tl.face_image(pipe.cfg, pipe.tray, reg, bgra, z))
        for slot in range(3):
            assert np.array_equal(tl.glyph_crop(pipe.cfg, pipe.tray, reg, img, z, orient, slot),
                                  tl.glyph_crop(pipe.cfg, pipe.tray, reg, bgra, z, orient, slot))


def test_middles_from_sorted_int_rows_are_numpys_medians_of_the_floats():
    rng = np.random.default_rng(17)
    for shape in ((14, 20, 10), (275, 20, 10), (275, 20, 9), (3, 20, 10)):
        a = rng.integers(0, 700, shape).astype(np.int32)
        got = ph._middle_means(a.copy())
        assert got.dtype == np.float32 and np.array_equal(got, np.median(a.astype(np.float32), axis=-1))


def test_the_glyphs_blobs_by_granas_labelling_are_the_default_labellings():
    from vision import top_level as tl

    rng = np.random.default_rng(18)
    for shape in ((60, 72), (31, 23), (61, 73)):
        for share in (0.2, 0.3, 0.4):
            mask = (rng.random(shape) < share).astype(np.uint8)
            _, _, stats, cent = cv2.connectedComponentsWithStats(mask, connectivity=8)
            x, y, w, h = stats[:, 0], stats[:, 1], stats[:, 2], stats[:, 3]
            inner = (x > 0) & (y > 0) & (x + w < shape[1]) & (y + h < shape[0])
            inner[0] = False
            area, centre = tl._inner_blobs(mask)
            assert inner.any() and np.array_equal(area, stats[inner, cv2.CC_STAT_AREA]) and np.array_equal(centre, cent[inner] + 0.5)


def test_the_inner_blobs_statistics_from_their_box_are_the_whole_masks_bit_for_bit():
    from vision import top_level as tl

    rng = np.random.default_rng(19)
    for i in range(600):
        shape = tuple(int(v) for v in rng.integers(3, 80, 2))
        mask = (rng.random(shape) < rng.uniform(0.2, 0.8)).astype(np.uint8)
        mask = (cv2.dilate, cv2.erode, lambda m, k: m)[i % 3](mask, None)
        _, _, stats, cent = cv2.connectedComponentsWithStatsWithAlgorithm(mask, 8, cv2.CV_32S, cv2.CCL_GRANA)
        x, y, w, h = stats[:, 0], stats[:, 1], stats[:, 2], stats[:, 3]
        inner = (x > 0) & (y > 0) & (x + w < shape[1]) & (y + h < shape[0])
        inner[0] = False
        area, centre = tl._inner_blobs(mask)
        assert area.dtype == np.float64 and area.tobytes() == stats[inner, cv2.CC_STAT_AREA].astype(np.float64).tobytes()
        assert centre.shape == (int(inner.sum()), 2) and centre.tobytes() == (cent[inner] + 0.5).tobytes()


def test_a_steady_heap_keeps_the_frames_memory_and_changes_no_value():
    import platform

    from vision.reader import steady_heap

    a = np.random.default_rng(9).integers(0, 256, (480, 640, 3)).astype(np.uint8)
    before = cv2.cvtColor(a, cv2.COLOR_BGR2GRAY)
    if platform.libc_ver()[0] != "glibc":  # (no mallopt: nothing is set, and nothing changes)
        assert steady_heap() is False
    else:  # the Pi's and the CI's C library: both settings taken
        assert steady_heap() is True
    assert np.array_equal(cv2.cvtColor(a, cv2.COLOR_BGR2GRAY), before)


def _colour_in_formulas(labs):
    """color_features' features computed plainly, per patch, on the float Lab image."""
    from vision import patch_features as pf

    S, ph, pw, _ = labs.shape
    frame = np.ones((ph, pw), bool)
    frame[ph // 5: ph - ph // 5, pw // 5: pw - pw // 5] = False
    rows = []
    for v8 in labs.reshape(S, -1, 3):
        lab = v8 * pf.LAB_SCALE - pf.LAB_SHIFT
        chroma = np.hypot(lab[:, 1], lab[:, 2])
        hue = np.floor((np.arctan2(lab[:, 2], lab[:, 1]) + np.pi) / (2 * np.pi) * 12).astype(np.int64) % 12
        coloured = chroma > 18
        use = coloured if coloured.sum() > 10 else np.ones_like(coloured)
        norm = np.array([100, 128, 128])
        # (a patch too small for a frame: medians_u8's median of nothing, the 8-bit middle 128)
        meds = [np.median(lab[m].astype(np.float64), axis=0) / norm if m.any() else (128 * pf.LAB_SCALE - pf.LAB_SHIFT) / norm
                for m in (np.ones_like(use), use, frame.reshape(-1))]
        hist = np.array([chroma[coloured & (hue == k)].astype(np.float64).sum() for k in range(12)]) / (chroma.sum() + 1e-6)
        L = lab[:, 0]
        rows.append(np.concatenate(meds + [hist, [coloured.mean(), (L < 25).mean(), ((L > 75) & (chroma < 15)).mean(),
                                                  chroma.mean() / 100, L.std() / 100]]))
    return np.array(rows)


def test_colour_features_from_one_histogram_are_the_per_pixel_formulas():
    from vision import patch_features as pf

    rng = np.random.default_rng(19)
    patches = [rng.integers(0, 256, (31, 94, 3)).astype(np.uint8) for _ in range(4)]
    patches[1][:, :50] = (30, 40, 200)  # half a red block
    grey = rng.integers(60, 200, (31, 94, 1)).astype(np.uint8)
    patches[2] = np.repeat(grey, 3, axis=2)
    patches[2][3, :8] = (30, 40, 200)  # 8 coloured pixels: too few, the whole patch's median
    patches[3] = cv2.GaussianBlur(patches[3], (15, 15), 5)
    for labs in (pf.patch_labs(patches, np.array([1.1, 0.95, 1.0], np.float32)),
                 pf.patch_labs([rng.integers(0, 256, (4, 4, 3)).astype(np.uint8)] * 2, np.ones(3, np.float32)),  # no frame
                 pf.patch_labs(patches * 4, np.ones(3, np.float32))):  # more patches than the histogram's rows take at once
        got = pf.color_features(labs)
        want = _colour_in_formulas(labs)
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_long_median_is_numpys_when_its_sample_misleads_too():
    from vision.patch_features import median_along

    rng = np.random.default_rng(20)
    x = rng.uniform(0, 10, 20000).astype(np.float32)
    x[::32] = 1000.0  # every value the sample takes lies above the middle
    assert np.array_equal(median_along(x), np.median(x))
    x[::32] = rng.uniform(4.9, 5.1, len(x[::32]))  # and here all round it
    assert np.array_equal(median_along(x), np.median(x))


def test_markers_smaller_than_the_half_size_locator_looks_for_are_still_found(small_kit):
    """A camera mounted higher shows the tray's markers near or under the locator's perimeter
    floor: the crop search still finds each one the whole frame's search finds, corners to the
    bit (in crops where the others place it, or by the whole frame when too few are located)."""
    import json
    from dataclasses import replace

    from vision.kit import load_tray
    from vision.reader import default_config
    from vision.tray import detect_markers, make_detector

    tray = load_tray(small_kit / "tray.json")
    fast = replace(make_detector(default_config()), crop_search_noise=0.0)
    whole = replace(fast, crop_search=False)
    rng = np.random.default_rng(5)
    seen = searched = 0
    for scale in (0.5, 0.7):  # (the same tray seen from twice and 1.4 times as high)
        for name in sorted(json.loads((small_kit / "labels.json").read_text()))[:6]:
            gray = cv2.cvtColor(cv2.imread(str(small_kit / "images" / name)), cv2.COLOR_BGR2GRAY)
            h, w = gray.shape
            sh, sw = int(h * scale), int(w * scale)
            far = np.full((h, w), int(np.median(gray)), np.uint8)
            far[(h - sh) // 2:(h - sh) // 2 + sh, (w - sw) // 2:(w - sw) // 2 + sw] = cv2.resize(
                gray, (sw, sh), interpolation=cv2.INTER_AREA)
            far = np.clip(far + rng.normal(0, 6, far.shape), 0, 255).astype(np.uint8)  # (a grainy sensor)
            a = {i: c for i, c in detect_markers(whole, far, tray.markers).items() if i in tray.markers}
            b = detect_markers(fast, far, tray.markers)
            assert a.keys() == b.keys() and all(np.array_equal(a[i], b[i]) for i in a)
            seen += len(a)
            searched += fast.crops.find(far, tray.markers) is not None
    assert seen >= 24 and searched >= 3  # (both ways taken)


def test_a_missing_marker_looked_for_where_the_others_place_it_is_the_whole_frames(small_kit):
    """The thorough detector, run only round where the markers found place a missing one, finds
    it with the corners its whole-frame run gives."""
    import json

    from vision.kit import load_tray
    from vision.reader import default_config
    from vision.tray import _detect, make_detector

    tray = load_tray(small_kit / "tray.json")
    finder = make_detector(default_config())
    checked = 0
    for name in sorted(json.loads((small_kit / "labels.json").read_text()))[:8]:
        gray = cv2.cvtColor(cv2.imread(str(small_kit / "images" / name)), cv2.COLOR_BGR2GRAY)
        everywhere = {i: c for i, c in _detect(finder.thorough, gray).items() if i in tray.markers}
        if len(everywhere) < 3:
            continue  # (one left would place none)
        for gone in list(everywhere)[:2]:
            found = {i: c for i, c in everywhere.items() if i != gone}
            placed = finder.thorough_crops.placed(gray, tray.markers, found)
            assert placed is not None and list(placed) == [gone]
            assert np.array_equal(placed[gone], everywhere[gone])
            checked += 1
    assert checked >= 8
    assert finder.thorough_crops.placed(gray, tray.markers, dict(list(everywhere.items())[:1])) is None  # one places none


def test_the_focal_search_made_ahead_is_the_focal_search_made_after(small_kit, calibration):
    """coarse_search makes refine_focal's first rounds ahead, for the height the best edge fits
    give, colour-checked with its own first round: the height and camera refine_candidate then
    gives are the ones a focal search made afresh gives, and each fit's checked scores are the
    ones its own call gives (fits of the view's centre and of their own centres together)."""
    import json
    from dataclasses import replace

    from vision import reader

    pipe = reader.load_pipeline(calibration)
    made = 0
    for name in sorted(json.loads((small_kit / "labels.json").read_text()))[:4]:
        img = cv2.imread(str(small_kit / "images" / name))
        ctx = reader.frame_context(pipe, img)
        args = (pipe.cfg, pipe.tray, ctx.registration)
        cs = ph.coarse_search(*args, img, ctx.tray_bgr, pipe.background, ctx.gains, probes=pipe.height_probes)
        a = cs.ahead
        if a is None or a.focal is None:
            continue
        made += 1
        got = ph.refine_candidate(*args, img.shape, cs, cs.chosen, ctx.tray_bgr, pipe.background, ctx.gains)
        fresh = replace(cs, ahead=replace(a, focal=None))
        want = ph.refine_candidate(*args, img.shape, fresh, cs.chosen, ctx.tray_bgr, pipe.background, ctx.gains)
        assert got[0] == want[0]
        assert np.array_equal(got[1].camera.center, want[1].camera.center)
        f = a.focal
        fits = [(*f.coarse[3:], ph._first_round(f.coarse[5])), (*f.ahead[3:], ph._first_round(f.ahead[5]))]
        own = [ph._colour_checked(pipe.cfg, cs.pv, cs.pr, k[at], n[at], s[at], ctx.tray_bgr, pipe.background, ctx.gains)
               for k, n, s, at in fits]
        assert np.array_equal(own[0], f.first) and np.array_equal(own[1], f.first_ahead)
    assert made > 0


def test_the_colour_checks_last_steps_in_numpy_are_the_ones_on_python_floats(calibration, small_kit):
    """Past _FEW_BY_HAND candidates the colour checks' last steps run in NumPy, below it on Python
    floats: each candidate's score is the same either way."""
    pipe, ctx, zs, pv = _first_photos_heights(calibration, small_kit)
    pr = pipe.height_probes
    k, _, sc = ph._edge_fit(pipe.cfg, pv, pr, zs[:16], None, None)
    checks = (ctx.tray_bgr, pipe.background, ctx.gains)
    together = ph._colour_checked(pipe.cfg, pv, pr, k, None, sc, *checks)
    alone = np.concatenate([ph._colour_checked(pipe.cfg, pv, pr, k[i:i + 1], None, sc[i:i + 1], *checks)
                            for i in range(len(k))])
    assert len(k) > ph._FEW_BY_HAND and np.array_equal(together, alone)


def test_the_chosen_candidates_fine_search_with_the_focal_rounds_ahead_is_the_plain_one(small_kit, calibration):
    """When coarse_search's guess missed, refine_candidate checks the chosen candidate's fine
    round in one call with the focal search's first rounds made ahead (_fine_with_focal): the
    height and camera are the fine search's and refine_focal's made one after the other."""
    import json
    from dataclasses import replace

    from vision import reader
    from vision import top_level as tl

    pipe = reader.load_pipeline(calibration)
    factors = [float(v) for v in pipe.cfg["align"]["focal_factors"]]
    for name in sorted(json.loads((small_kit / "labels.json").read_text()))[:3]:
        img = cv2.imread(str(small_kit / "images" / name))
        ctx = reader.frame_context(pipe, img)
        args = (pipe.cfg, pipe.tray, ctx.registration)
        checks = (ctx.tray_bgr, pipe.background, ctx.gains)
        cs = replace(ph.coarse_search(*args, img, *checks, probes=pipe.height_probes), ahead=None)
        got = ph.refine_candidate(*args, img.shape, cs, cs.chosen, *checks)
        fine = tl.fine_heights(pipe.cfg, pipe.tray, float(cs.zs[cs.chosen]))
        z = float(fine[int(np.argmax(ph.height_scores(pipe.cfg, pipe.tray, cs.pv, cs.pr, fine, *checks, within=1.0)))])
        want = ph.refine_focal(*args, img.shape, cs.pv, cs.pr, z, factors, *checks, cs.centres)
        assert got[0] == want[0]
        assert np.array_equal(got[1].camera.center, want[1].camera.center)
