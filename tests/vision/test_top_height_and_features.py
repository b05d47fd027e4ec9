"""The top's height found on the tray plane, the focal length a zooming camera needs, and the
slot features computed three at a time."""

from __future__ import annotations

import json
from types import SimpleNamespace

import cv2
import numpy as np

from vision import patch_features as pf
from vision import plane_height as ph
from vision.geometry import Camera, apply_h, intrinsics, look_at
from vision.reader import frame_context, load_pipeline, read_frame, top_face


def _face_scale(cam: Camera, z: float) -> float:
    """How much the plane at height z is magnified on the tray plane, seen by this camera."""
    c = cam.center
    return float(c[2] / (c[2] - z))


def test_the_plane_search_finds_the_height_that_lines_the_top_face_up(calibration, small_kit):
    """A face one block height off shows its 75 mm outline 15 mm of parallax away: the found
    height must line the face up to within a few millimetres on the tray plane."""
    pipe = load_pipeline(calibration)
    truth = json.loads((small_kit / "truth.json").read_text())
    labels = json.loads((small_kit / "labels.json").read_text())
    misses = []
    names = [n for n in sorted(labels) if labels[n]["hands"] == 0][:8]
    for name in names:
        img = cv2.imread(str(small_kit / "images" / name))
        ctx = frame_context(pipe, img)
        z, reg = top_face(pipe, ctx.registration, img, ctx.tray_bgr, ctx.gains)
        eye_z = float(truth[name]["eye"][2])
        true_scale = eye_z / (eye_z - 15.0 * truth[name]["levels"])
        # the outline's half side on the tray plane, found against true
        misses.append(abs(37.5 * (_face_scale(reg.camera, z) - true_scale)))
    assert np.median(misses) < 2.0, misses


def test_the_camera_a_homography_implies_for_the_true_focal_length_is_the_true_camera():
    K = intrinsics(600.0, 640, 480)
    cam = look_at(K, np.array([120.0, 90.0, 520.0]), np.array([140.0, 140.0, 0.0]), 12.0)
    H = cam.plane_homography(0.0)
    back = ph.camera_for_focal(H, 600.0, 640, 480)
    assert np.allclose(back.center, cam.center, atol=1e-6)
    # another focal length: about the same tray plane (within a pixel; no exact rotation exists
    # for a wrong focal length), from a camera centre nearer the tray
    wide = ph.camera_for_focal(H, 540.0, 640, 480)
    tray_pts = np.array([[0.0, 0.0], [280.0, 0.0], [280.0, 280.0], [0.0, 280.0], [140.0, 140.0]])
    assert np.abs(apply_h(wide.plane_homography(0.0), tray_pts) - apply_h(H, tray_pts)).max() < 1.0
    assert wide.center[2] < cam.center[2]


def test_sides_whose_walls_the_camera_sees_are_not_checked_for_bare_tray(small_kit):
    from vision.kit import load_tray

    tray = load_tray(small_kit / "tray.json")
    c = np.asarray(tray.tower_center, dtype=np.float64)
    # right above the tower: every wall is hidden, beside every side of the top lies the tray
    assert ph.hidden_sides(tray, c).all()
    # far out along +x: the +x wall faces the camera, the other three are hidden
    assert list(ph.hidden_sides(tray, c + np.array([200.0, 0.0]))) == [False, True, True, True]


def test_a_frame_read_returns_the_registration_its_height_belongs_to(calibration, small_kit):
    pipe = load_pipeline(calibration)
    labels = json.loads((small_kit / "labels.json").read_text())
    name = sorted(labels)[0]
    res = read_frame(pipe, cv2.imread(str(small_kit / "images" / name)))
    assert np.isfinite(res.z_top) and res.z_top > 0
    # the focal length found stays within the searched range round the calibration's
    f0 = float(json.loads((calibration / "config.json").read_text())["camera"]["focal_px"])
    assert 0.85 * f0 <= res.registration.camera.K[0, 0] <= 1.15 * f0


def test_histogram_medians_are_numpy_medians():
    rng = np.random.default_rng(4)
    v = rng.integers(0, 256, (3, 101, 3)).astype(np.uint8)
    assert np.allclose(pf.median_u8(v), np.median(v.astype(np.float64), axis=1))
    even = v[:, :100]
    assert np.allclose(pf.median_u8(even), np.median(even.astype(np.float64), axis=1))
    mask = rng.uniform(size=(3, 101)) > 0.6
    want = np.array([np.median(v[s][mask[s]].astype(np.float64), axis=0) for s in range(3)])
    assert np.allclose(pf.median_u8(v, mask), want)


def test_three_patches_at_once_give_what_each_gives_alone():
    rng = np.random.default_rng(5)
    cfg = {"color": {"tray_ref_bgr": [200, 200, 200]}}
    patches = [rng.integers(0, 256, (31, 94, 3)).astype(np.uint8) for _ in range(3)]
    patches[1][:, :40] = (30, 40, 200)  # a red block half way: different statistics per patch
    gains = np.array([1.1, 0.95, 1.0], np.float32)
    labs = pf.patch_labs(patches, gains)
    together_c = pf.color_features(labs)
    together_o = pf.occupancy_features(cfg, labs, together_c)
    for s in range(3):
        alone = pf.patch_labs([patches[s]], gains)
        c = pf.color_features(alone)
        assert np.allclose(together_c[s], c[0], atol=1e-5)
        assert np.allclose(together_o[s], pf.occupancy_features(cfg, alone, c)[0], atol=1e-5)


def test_colour_and_occupancy_together_give_what_each_gives_alone_bit_for_bit():
    """slot_patch_features shares the two passes' work (the slot reading's colour patches,
    some cut again, then the nominal three's occupancy): every value as each function gives it."""
    rng = np.random.default_rng(7)
    cfg = {"color": {"tray_ref_bgr": [180, 200, 210]}}
    patches = [rng.integers(0, 256, (31, 94, 3)).astype(np.uint8) for _ in range(5)]
    patches[2][:, 50:] = (40, 180, 60)
    labs = pf.patch_labs(patches, np.array([1.05, 1.0, 0.9], np.float32))
    for n in (1, 3, 5):
        col, occ = pf.slot_patch_features(cfg, labs, n)
        alone = pf.color_features(labs)
        assert col.tobytes() == alone.tobytes()
        assert occ.tobytes() == pf.occupancy_features(cfg, labs[:n], alone[:n]).tobytes()


def test_among_several_cameras_the_top_is_the_good_peak_showing_the_face_largest():
    """Coarse heights come in one rising run per focal factor's camera: a local maximum near
    the best in any run counts, and the one whose face is largest on the tray plane (the
    highest level) wins, not merely the last run's."""
    sc = np.array([0.2, 1.0, 0.3, 0.5, 0.97, 0.4, 0.1, 0.2, 0.3])
    run = np.array([0.9, 0.9, 0.9, 1.0, 1.0, 1.0, 1.1, 1.1, 1.1])
    scale = np.array([1.1, 1.3, 1.5, 1.1, 1.4, 1.6, 1.1, 1.2, 1.3])
    assert ph._highest_peak_blocks(sc, run, scale, 0.95) == 4  # 0.97 at scale 1.4 beats 1.0 at 1.3
    assert ph._highest_peak_blocks(sc, run, scale, 0.99) == 1  # only the best itself
    # one run is the single-camera rule: the highest peak near the best
    assert ph._highest_peak_blocks(sc[:6], np.ones(6), np.arange(6.0), 0.9) == 4


def test_the_coarse_height_search_already_tries_every_focal_factor(calibration, small_kit, monkeypatch):
    """A camera whose focal length is not the calibration's implies a wrong camera centre, and a
    tall tower's face then lines up at no height for it: the coarse search must score the
    candidates of every focal factor's camera, not only the calibrated one's (when so set)."""
    pipe = load_pipeline(calibration)
    labels = json.loads((small_kit / "labels.json").read_text())
    img = cv2.imread(str(small_kit / "images" / sorted(labels)[0]))
    ctx = frame_context(pipe, img)
    calls = []
    real = ph.height_scores

    def spy(*args, **kw):
        calls.append(args[8] if len(args) > 8 else kw.get("nadirs"))
        return real(*args, **kw)

    monkeypatch.setattr(ph, "height_scores", spy)
    cfg = {**pipe.cfg, "align": {**pipe.cfg["align"], "coarse_all_focal": True}}
    ph.fit_height(cfg, pipe.tray, ctx.registration, img, ctx.tray_bgr, pipe.background, ctx.gains,
                  probes=pipe.height_probes)
    first = calls[0]
    assert first is not None
    assert len(np.unique(np.round(first, 3), axis=0)) == len(pipe.cfg["align"]["focal_factors"])


def _tall_tops_hanging_over_the_table(small_kit, tray):
    """Frames of 17-18-level towers from a camera 47-50 cm up and up to 16 degrees aside, whose
    top face (on the tray plane, as the camera sees it) hangs 15-75 mm past the tray sheet."""
    from vision.synthkit import SynthOptions, render_sample

    focal = json.loads((small_kit / "truth.json").read_text())["0001.png"]["f"]  # the table's camera
    opt = SynthOptions(levels_range=(17, 18), tilt_deg=16.0, cam_height_range=(470.0, 500.0),
                       hand_probs=(1.0, 0.0, 0.0), hide_marker_prob=0.0)
    c = np.asarray(tray.tower_center, dtype=np.float64)
    corners = c + np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 37.5
    ex = np.array(tray.extent())
    for seed in range(40):
        img, meta = render_sample(np.random.default_rng(seed), tray, opt, focal)
        eye = np.asarray(meta["extra"]["eye"])
        k = eye[2] / (eye[2] - 15.0 * meta["extra"]["levels"])
        face = eye[:2] + (corners - eye[:2]) * k
        out = max((ex[:2] - 8 - face.min(axis=0)).max(), (face.max(axis=0) - ex[2:] - 8).max())
        if 15 <= out <= 75:
            yield cv2.cvtColor(img, cv2.COLOR_RGB2BGR), face, k


def test_a_tall_top_hanging_out_over_the_table_is_still_found(calibration, small_kit):
    """Seen from aside, a tall tower's top shows past the tray sheet, over the table. The search
    looks there too (align.plane_beyond_tray_mm), and the table round the sheet, in this frame's
    light, is no more a top face than bare tray is (align.table_ring_mm)."""
    pipe = load_pipeline(calibration)
    corners = np.asarray(pipe.tray.tower_center) + np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 37.5

    def misses(beyond: float) -> list[float]:
        pipe.cfg["align"]["plane_beyond_tray_mm"] = beyond
        out = []
        for img, face, k in _tall_tops_hanging_over_the_table(small_kit, pipe.tray):
            ctx = frame_context(pipe, img)
            z, reg = top_face(pipe, ctx.registration, img, ctx.tray_bgr, ctx.gains)
            C = reg.camera.center
            found = C[:2] + (corners - C[:2]) * (C[2] / (C[2] - z))
            out.append(float(np.abs(face - found).max() / k))  # in millimetres of the face itself
        return out

    found = misses(40.0)
    assert len(found) >= 8
    assert np.median(found) < 5.0, found
    # a view cut at the tray's edge (as before) loses more of them; with the band inside the
    # face judged as a whole (before its weakest side counted), it lost most of them
    assert np.median(misses(0.0)) > np.median(found) + 1.0
    pipe.cfg["align"]["band_weakest_weight"] = 0.0
    assert np.median(misses(0.0)) > 10.0


def test_the_table_colour_is_read_round_the_tray_sheet():
    from vision.synthkit import default_tray

    tray = default_tray()
    K = intrinsics(600.0, 640, 480)
    cam = look_at(K, np.array([140.0, 140.0, 700.0]), np.array([140.0, 140.0, 0.0]), 0.0)
    img = np.full((480, 640, 3), (40, 90, 160), np.uint8)  # a brown table
    H = cam.plane_homography(0.0)
    sheet = np.array([[0.0, 0.0], [280.0, 0.0], [280.0, 280.0], [0.0, 280.0]])
    cv2.fillConvexPoly(img, np.rint(apply_h(H, sheet)).astype(np.int32), (230, 230, 230))

    reg = SimpleNamespace(H=H)  # all table_colour needs of a registration
    cfg = {"align": {"table_ring_mm": 22.0}}
    assert np.allclose(ph.table_colour(cfg, tray, reg, img), (40, 90, 160))
    assert ph.table_colour({"align": {"table_ring_mm": None}}, tray, reg, img) is None


def test_a_face_standing_out_past_the_tower_on_one_side_is_scored_down():
    """A face too high stands out past the tower's far edge on the sides away from the camera:
    there the band just inside it shows bare tray, while its other sides still lie on the tower.
    Over all four sides the band is mostly covered (3/4 passes a 0.7 need); its weakest side
    tells the face is not the top's."""
    n = 8
    too_high = np.ones((1, 4 * n), bool)
    too_high[0, 3 * n:] = False  # the -y side: bare tray all along
    on_top = np.ones((1, 4 * n), bool)
    on_top[0, [2, 11, 20]] = False  # a probe or two on a shadow's edge: still the top
    need = 0.7
    assert ph.band_cover(too_high, 0.0)[0] >= need  # the band's share alone keeps it
    assert ph.band_cover(too_high, 0.7)[0] < 0.5 * need
    assert ph.band_cover(on_top, 0.7)[0] >= need
    assert np.allclose(ph.band_cover(on_top, 0.0), on_top.mean(axis=1))
