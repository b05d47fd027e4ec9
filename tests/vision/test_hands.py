"""Hands over the tower: counted when within one block length of the footprint, each with the
direction its arm comes from (the player's seat), whatever the skin tone; shadows are not hands."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from vision import top_level as tl
from vision.geometry import intrinsics, look_at
from vision.hands import find_hands, side_of
from vision.reader import default_config
from vision.synthkit import BLOCK_RGB, SKIN_RGB, _hand_shapes, _paint_hand, box_faces, default_tray, draw_faces, tray_sheet
from vision.tray import register

TRAY = default_tray()
LEVELS = 6
BLOCK_H = TRAY.block_mm[2]


def tray_photo(cam) -> np.ndarray:
    """The table (dark) and the tray sheet as `cam` sees them, RGB (the scenes of the hands tests)."""
    img = np.full((480, 640, 3), (90, 70, 50), np.uint8)
    sheet, sx0, sytop = tray_sheet(TRAY, 3.0, (228, 222, 212))
    Hs = cam.plane_homography(0.0) @ np.array([[1 / 3.0, 0, sx0], [0, -1 / 3.0, sytop], [0, 0, 1]])
    warped = cv2.warpPerspective(sheet, Hs, (640, 480), flags=cv2.INTER_AREA)
    m = cv2.warpPerspective(np.full(sheet.shape[:2], 255, np.uint8), Hs, (640, 480)) > 0
    img[m] = warped[m]
    return img


def _scene(hands=(), shadow_only=False, seed=0):
    """A 6-level tower seen from straight above; hands are (tip xy, seat degrees, skin RGB)."""
    rng = np.random.default_rng(seed)
    cx, cy = TRAY.tower_center
    cam = look_at(intrinsics(600.0, 640, 480), np.array([cx + 15, cy - 10, 560.0]), np.array([cx, cy, 0.0]), 0.0)
    img = tray_photo(cam)
    light = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    faces = []
    L, W, H = TRAY.block_mm
    for lev in range(1, LEVELS + 1):
        for s in range(3):
            off = (s - 1) * W
            ctr, yaw = ((cx, cy + off, (lev - 0.5) * H), 0.0) if lev % 2 else ((cx + off, cy, (lev - 0.5) * H), 90.0)
            faces += box_faces(ctr, (L - 0.6, W - 0.6, H - 0.3), yaw, BLOCK_RGB[("red", "green", "blue")[s]], light)
    draw_faces(img, cam, faces)
    for tip, seat, skin in hands:
        shapes = _hand_shapes(cam, rng, TRAY, np.asarray(tip, float), seat, LEVELS * H + 30, skin)
        if shadow_only:  # the hand itself out of sight, only its shadow on the tray
            before = img.copy()
            _paint_hand(img, cam, rng, shapes, light)
            mask = np.zeros(img.shape[:2], np.uint8)
            for pts, zs, _ in shapes:
                cv2.fillPoly(mask, [np.round(cam.project(np.column_stack([pts, zs]))).astype(np.int32)], 1)
            img[mask > 0] = before[mask > 0] * 0.6
        else:
            _paint_hand(img, cam, rng, shapes, light)
    return cv2.cvtColor(img, cv2.COLOR_RGB2BGR)


def _hands(img):
    cfg = default_config()
    cfg["camera"]["focal_px"] = 600.0  # what calibration learns from the kit's views
    reg = register(cfg, TRAY, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    tray_bgr = tl.tray_color(cfg, TRAY, reg, img)
    return find_hands(cfg, TRAY, reg, img, tray_bgr, LEVELS * BLOCK_H, None, tl.color_gains(cfg, tray_bgr))


def _gap(a, b):
    d = abs(a - b) % 360
    return min(d, 360 - d)


def test_no_hand_no_reading():
    assert _hands(_scene()) == ()


@pytest.mark.parametrize("skin", [SKIN_RGB[0], SKIN_RGB[4], SKIN_RGB[-1]], ids=["light", "medium", "dark"])
def test_a_hand_over_the_tower_is_seen_with_its_seat_direction(skin):
    cx, cy = TRAY.tower_center
    hands = _hands(_scene([((cx + 10, cy + 5), 200.0, skin)]))
    assert len(hands) == 1
    assert hands[0].entry_deg is not None and _gap(hands[0].entry_deg, 200.0) < 30
    assert hands[0].side == side_of(hands[0].entry_deg)


def test_a_player_reaching_round_the_tower_is_placed_by_the_arm_not_the_fingertip():
    cx, cy = TRAY.tower_center
    # the fingertip is on the tower's east side, the arm comes from the south-west seat
    hands = _hands(_scene([((cx + 45, cy), 235.0, SKIN_RGB[2])]))
    assert len(hands) == 1
    assert _gap(hands[0].entry_deg, 235.0) < 30


def test_two_hands_from_two_seats_are_two():
    cx, cy = TRAY.tower_center
    hands = _hands(_scene([((cx - 20, cy), 180.0, SKIN_RGB[1]), ((cx + 20, cy + 10), 20.0, SKIN_RGB[7])]))
    assert len(hands) == 2
    assert sorted(round(_gap(h.entry_deg, 180.0) // 90) for h in hands) == [0, 1]


def test_a_hand_beyond_one_block_length_does_not_count():
    cx, cy = TRAY.tower_center
    far = TRAY.footprint_half + TRAY.block_mm[0] + 40
    assert _hands(_scene([((cx + far * math.cos(1.0), cy + far * math.sin(1.0)), math.degrees(1.0), SKIN_RGB[3])])) == ()


def test_a_shadow_is_not_a_hand():
    cx, cy = TRAY.tower_center
    assert _hands(_scene([((cx + 10, cy), 90.0, SKIN_RGB[3])], shadow_only=True)) == ()


def test_hands_are_still_looked_for_when_the_towers_height_is_unknown():
    cx, cy = TRAY.tower_center
    img = _scene([((cx - 10, cy), 200.0, SKIN_RGB[5])])
    cfg = default_config()
    cfg["camera"]["focal_px"] = 600.0
    reg = register(cfg, TRAY, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    tray_bgr = tl.tray_color(cfg, TRAY, reg, img)
    hands = find_hands(cfg, TRAY, reg, img, tray_bgr, float("nan"), None, tl.color_gains(cfg, tray_bgr))
    assert len(hands) == 1 and _gap(hands[0].entry_deg, 200.0) < 30


def _arm(x, y, width, reach, on_tower=False):
    from vision.hands import ArmEntry

    return ArmEntry((x, y), (0.0, -1.0), width, reach, on_tower, True, (x, y + 100.0), 270.0)


def test_a_thumb_crossing_the_edge_beside_its_arm_is_not_a_second_hand():
    from vision.hands import _absorb_slivers

    arm, thumb = _arm(0.0, -200.0, 80.0, 90.0), _arm(60.0, -200.0, 18.0, 20.0, on_tower=True)
    out = _absorb_slivers([arm, thumb], min_width=40.0, near_mm=120.0)
    assert len(out) == 1
    # what the thumb reached is the arm's: the hand reaches the tower
    assert out[0].reach_mm == 20.0 and out[0].on_tower and out[0].width_mm == 80.0


def test_a_narrow_arm_on_its_own_or_far_from_another_is_still_an_arm():
    from vision.hands import _absorb_slivers

    assert len(_absorb_slivers([_arm(0.0, -200.0, 25.0, 10.0)], 40.0, 120.0)) == 1
    assert len(_absorb_slivers([_arm(0.0, -200.0, 80.0, 10.0), _arm(200.0, 0.0, 25.0, 10.0)], 40.0, 120.0)) == 2


def _default_hands_config():
    from vision.reader import default_config

    return default_config()["hands"]


def test_a_narrow_sliver_beside_an_arm_is_no_second_hand():
    """A sleeve's edge or a shadow's sliver comes in beside the arm and ends short of the tower."""
    from vision.hands import counted_arms

    hc = _default_hands_config()
    arm, sliver = _arm(0.0, -200.0, 80.0, 5.0, on_tower=True), _arm(200.0, 0.0, 25.0, 45.0)
    assert counted_arms(hc, [arm, sliver]) == [arm]


def test_a_wrist_whose_hand_reaches_the_tower_is_a_second_hand_however_narrow():
    """Two players reach in from opposite sides; one's forearm is lost against a table of its own
    colour, so only its wrist crosses the tray's edge, 21 mm wide. Its hand ends beside the
    tower: two hands, the "Uno!" signal."""
    from vision.hands import counted_arms

    hc = _default_hands_config()
    arm = _arm(0.0, -200.0, 64.0, 5.0, on_tower=True)
    for wrist in (_arm(200.0, 0.0, 21.0, 22.0), _arm(200.0, 0.0, 21.0, 60.0, on_tower=True)):
        assert counted_arms(hc, [arm, wrist]) == [arm, wrist]


def test_synthetic_kits_hold_one_players_two_hands_side_by_side():
    """The "Uno!" foul: the same player's hands, arms from shoulders either side of one seat."""
    from vision.synthkit import SynthOptions, render_sample

    pairs = 0
    for seed in range(40):
        _, out = render_sample(np.random.default_rng(seed), TRAY, SynthOptions(hand_probs=(0.0, 0.0, 1.0)))
        hs = out["extra"]["hands"]
        if len(hs) == 2 and hs[1]["same_player_as_first"]:
            assert math.dist(hs[0]["tip_mm"], hs[1]["tip_mm"]) < 115  # side by side
            assert 20 <= _gap(hs[0]["from_deg"], hs[1]["from_deg"]) <= 40  # from either shoulder
            assert hs[0]["over_tower"] == hs[1]["over_tower"]
            pairs += 1
    assert pairs >= 3


@pytest.mark.parametrize("seat", [0.0, 120.0, 250.0])
def test_one_players_two_hands_side_by_side_come_from_two_shoulders(seat):
    """The "Uno!" foul: both hands of the player at `seat`, arms from either shoulder. The match
    loop calls it only for two arms entering at least 20 degrees apart."""
    from referee.loop.fusion import two_arms

    cx, cy = TRAY.tower_center
    a = math.radians(seat)
    u, v = np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])
    tips = [np.array([cx, cy]) + 20 * u + s * 45 * v for s in (-1, 1)]
    hands = _hands(_scene([(tips[0], seat - 25.0, SKIN_RGB[6]), (tips[1], seat + 25.0, SKIN_RGB[6])]))
    assert len(hands) == 2
    assert two_arms(hands, 20.0)
    assert all(_gap(h.entry_deg, seat) < 50 for h in hands)


def _arm_cells(shoulder, tip, half_width=30.0, step=5.0):
    """Cells of an arm from `shoulder` to `tip` (tray mm), as the hand grid would hold them."""
    d = (shoulder - tip) / np.linalg.norm(shoulder - tip)
    p = np.array([-d[1], d[0]])
    return np.array([tip + a * d + b * p for a in np.arange(0, 400, step) for b in np.arange(-half_width, half_width + 1, step)])


def test_two_arms_merged_where_they_come_in_are_told_apart_by_their_directions():
    """Two hands of one player read as one wide entry: each side of it keeps its own arm's direction."""
    from vision.hands import _halves

    hc = default_config()["hands"]
    c = np.asarray(TRAY.tower_center, float)
    seat, grid_r = 200.0, 190.0
    shoulders = [c + 450 * np.array([math.cos(math.radians(seat + s)), math.sin(math.radians(seat + s))]) for s in (-20, 20)]
    tips = [c + 30 * (sh - c) / 450 for sh in shoulders]  # hands side by side at the tower
    cells = np.concatenate([_arm_cells(sh, tp) for sh, tp in zip(shoulders, tips)])
    cells = cells[np.abs(cells - c).max(axis=1) < grid_r]  # what the grid sees
    edge = cells[np.abs(cells - c).max(axis=1) > grid_r - 10]
    E = edge.mean(axis=0)
    u = (E - c) / np.linalg.norm(E - c)
    across = (cells - E) @ np.array([-u[1], u[0]])
    halves = _halves(hc, TRAY, cells, edge, E, u, float(np.median(across)))
    got = sorted(deg for deg, _ in halves)
    assert len(got) == 2
    assert _gap(got[0], seat - 20) < 8 and _gap(got[1], seat + 20) < 8


def test_synthetic_kits_count_only_hands_the_camera_sees():
    """A tall tower under a close camera: the zone round its top can leave the view, and a hand
    there is not labelled as one over the tower."""
    from vision.synthkit import SynthOptions, _draw_hands

    cx, cy = TRAY.tower_center
    cam = look_at(intrinsics(620.0, 640, 480), np.array([cx, cy, 470.0]), np.array([cx, cy, 0.0]), 0.0)
    light = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    seen = 0
    for seed in range(30):
        img = np.zeros((480, 640, 3), np.uint8)
        _, truth = _draw_hands(img, cam, np.random.default_rng(seed), TRAY, SynthOptions(hand_probs=(0.0, 0.5, 0.5)), 270.0, light)
        for h in truth:
            if h["over_tower"]:
                u, v = cam.project(np.array([[*h["tip_mm"], 285.0]]))[0]
                assert 0 <= u < 640 and 0 <= v < 480
                seen += 1
    assert seen >= 10


def _patch_cells(brightness: np.ndarray, tint: float) -> tuple[np.ndarray, np.ndarray]:
    """A 30 x 30 cell tray (colour of pale wood) with a 12 x 12 patch in the middle: each patch
    cell's brightness times the tray's, and its red raised / blue lowered by `tint` (log)."""
    tray = np.array([150.0, 190.0, 215.0], np.float32)  # BGR
    ref = np.broadcast_to(tray, (30, 30, 3)).copy()
    px = ref.copy()
    patch = px[9:21, 9:21]
    patch *= brightness[..., None]
    patch[..., 2] *= math.exp(tint)
    patch[..., 0] *= math.exp(-tint)
    return px, ref


def _arm_cells_of(px, ref):
    from vision.hands import _changed_cells

    hc = default_config()["hands"]
    hc = {**hc, "chroma": 0.05}  # as calibration sets it on the twin's kits
    region = np.ones((30, 30), bool)
    ii, jj = np.indices((30, 30))
    xy = np.stack([jj * 5.0, -ii * 5.0], axis=-1)
    fg = _changed_cells(hc, px, ref, [region], xy)[0].astype(np.uint8)
    k = int(hc["open_cells"])  # specks and a shadow's rim are opened away, as in hand_mask
    return cv2.morphologyEx(fg, cv2.MORPH_OPEN, np.ones((k, k), np.uint8)).astype(bool)[9:21, 9:21]


def test_a_shadow_with_the_lamps_colour_gone_is_not_an_arm():
    """The twin's shadows turn a little redder (the warm lamp is blocked, the room's light stays),
    and darken the tray evenly."""
    px, ref = _patch_cells(np.full((12, 12), 0.6, np.float32), 0.1)
    assert _arm_cells_of(px, ref).mean() < 0.05


def test_fingers_the_colour_of_the_tray_in_their_own_shade_are_an_arm():
    """The same colour change on round fingers: each is bright on top and dark at its sides, so
    the brightness varies from cell to cell, as no shadow's inside does."""
    stripes = np.tile(np.array([0.45, 0.75, 0.6], np.float32), (12, 4))
    px, ref = _patch_cells(stripes, 0.1)
    assert _arm_cells_of(px, ref).mean() > 0.5


def test_an_arm_seen_only_against_the_table_counts_when_its_hand_comes_close():
    """A pale hand over a pale tray shows only where its arm crosses the darker table: the hand
    counts when it reaches the tower, or comes closer than a hand seen over the tray must, as
    nothing pins its height (a hand resting on the table beside a tall tower lines up with the
    tower's top from the camera)."""
    from dataclasses import replace

    from vision.hands import reaches_zone

    hc = default_config()["hands"]
    on_table = replace(_arm(0.0, -200.0, 80.0, 0.0), on_tray=False)
    assert reaches_zone(hc, replace(on_table, reach_mm=hc["table_reach_mm"] - 10))
    assert not reaches_zone(hc, replace(on_table, reach_mm=hc["table_reach_mm"] + 10))
    assert reaches_zone(hc, replace(on_table, reach_mm=200.0, on_tower=True))
    # over the tray the hand is placed at hand height and counts within one block length
    assert reaches_zone(hc, _arm(0.0, -200.0, 80.0, hc["reach_mm"] - 5))
    assert not reaches_zone(hc, _arm(0.0, -200.0, 80.0, hc["reach_mm"] + 5))


def _grid_with(strips):
    """A hand grid round the tower (5 mm cells, seen from straight above, nothing masked but the
    tower): `strips` are (x0, x1, y0, y1) boxes of arm cells in tray mm."""
    from vision.hands import HandMask

    g, half = 5.0, 200.0
    cx, cy = TRAY.tower_center
    n = int(2 * half / g)
    ii, jj = np.indices((n, n))
    xy = np.stack([cx - half + g / 2 + g * jj, cy + half - g / 2 - g * ii], axis=-1).astype(float)
    outside = np.zeros((n, n), bool)
    outside[[0, -1], :] = outside[:, [0, -1]] = True
    tower = (np.abs(xy - (cx, cy)).max(axis=-1) < TRAY.footprint_half + 6.0)
    fg = np.zeros((n, n), bool)
    for x0, x1, y0, y1 in strips:
        fg |= (xy[..., 0] >= cx + x0) & (xy[..., 0] < cx + x1) & (xy[..., 1] >= cy + y0) & (xy[..., 1] < cy + y1)
    known = ~outside & ~tower
    fg &= known
    return HandMask(fg, known, tower, outside, np.zeros((n, n), bool), xy, 0.0, g)


def test_fingers_cut_off_from_their_arm_bring_the_hand_into_the_count():
    """The twin's hands the colour of the tray show their shaded fingers but not the evenly lit
    palm: the arm seen coming in stops short of the zone, the fingers lie ahead of it."""
    from vision.hands import arm_entries, counted_arms

    cfg = default_config()
    hc = cfg["hands"]
    arm = (-30.0, 30.0, -200.0, -115.0)          # from the south edge to 115 mm short of the centre
    fingers = (-30.0, 30.0, -90.0, -50.0)        # a gap, then the fingers by the tower
    assert counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([arm]))) == []
    got = counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([arm, fingers])))
    assert len(got) == 1 and got[0].by_pieces
    # fingers off to the side of the arm's line are not its own
    aside = (70.0, 110.0, -90.0, -50.0)
    assert counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([arm, aside]))) == []


def test_cut_off_fingers_never_make_a_second_hand_beside_another():
    """With another hand over the tower next to them the fingers may be that hand's: the arm
    they would bring in is not a second hand (a false "Uno!" is the worst error)."""
    from vision.hands import arm_entries, counted_arms

    cfg = default_config()
    hc = cfg["hands"]
    arm, fingers = (-30.0, 30.0, -200.0, -115.0), (-30.0, 30.0, -90.0, -50.0)
    other = (-200.0, -40.0, -20.0, 20.0)         # a hand from the west onto the tower
    got = counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([arm, fingers, other])))
    assert len(got) == 1 and not got[0].by_pieces


def test_a_finger_crossing_beside_the_far_end_of_a_wide_entry_is_part_of_that_arm():
    """A forearm crossing the edge at a slant has a long entry: a finger or its shadow crossing
    just beyond its end is near the arm, however far from the middle of its entry."""
    from dataclasses import replace

    from vision.hands import _absorb_slivers

    arm = replace(_arm(0.0, -200.0, 90.0, 90.0), edge_cells=np.array([[x, -200.0] for x in range(-100, 101, 5)], float))
    finger = replace(_arm(130.0, -200.0, 20.0, 20.0, on_tower=True), edge_cells=np.array([[130.0, -200.0], [135.0, -200.0]]))
    out = _absorb_slivers([arm, finger], min_width=40.0, near_mm=120.0)
    assert len(out) == 1 and out[0].on_tower and out[0].reach_mm == 20.0
    # without the cells (centres 130 mm apart) they would be two arms
    assert len(_absorb_slivers([_arm(0.0, -200.0, 90.0, 90.0), _arm(130.0, -200.0, 20.0, 20.0)], 40.0, 120.0)) == 2


def test_a_hand_cut_off_from_its_arm_far_from_another_hand_is_a_second_hand():
    """Two players reaching in from opposite sides, one arm seen whole, the other only up to its
    wrist and by its fingers: the fingers lie a hand's length from the first hand, so they are
    no cut-off part of it."""
    from vision.hands import arm_entries, counted_arms

    cfg = default_config()
    hc = cfg["hands"]
    arm, fingers = (-30.0, 30.0, -200.0, -115.0), (-30.0, 30.0, -90.0, -50.0)
    north = (-30.0, 30.0, 60.0, 200.0)           # a hand from the north, ending short of the tower's north side
    got = counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([arm, fingers, north])))
    assert len(got) == 2 and sum(a.by_pieces for a in got) == 1
    # with the pieces rule off it stays one, as before
    assert len(counted_arms({**hc, "pieces_apart_mm": 0.0}, arm_entries(cfg, TRAY, _grid_with([arm, fingers, north])))) == 1


def test_two_arms_side_by_side_that_each_reach_the_tower_are_two_hands():
    """One player's two hands (or two neighbours'), arms come in a finger's width apart: two
    entries each as wide as an arm, each blob reaching the tower on its own."""
    from vision.hands import arm_entries, counted_arms

    cfg = default_config()
    hc = cfg["hands"]
    left, right = (-75.0, -15.0, -200.0, -45.0), (-5.0, 55.0, -200.0, -45.0)
    got = counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([left, right])))
    assert len(got) == 2
    # before, entries that close were one arm (not wide enough to be two)
    assert len(counted_arms(hc, arm_entries({**cfg, "hands": {**hc, "own_blob_arm_mm": 0.0}}, TRAY, _grid_with([left, right])))) == 1
    # one of them stopping well short of the tower: one arm seen in two pieces, as before
    short = (-5.0, 55.0, -200.0, -150.0)
    assert len(counted_arms(hc, arm_entries(cfg, TRAY, _grid_with([left, short])))) == 1


def test_an_entry_of_two_runs_apart_along_its_line_has_its_edge_width():
    """Two runs merged into one entry can lie either side of their mean along the arm's line,
    with no cell of the arm near that mean (twin 907): the width is then the edge's own, not a
    percentile of nothing (that crashed the frame's reading)."""
    from vision.hands import entry_width

    u = np.array([1.0, 0.0])  # the line found runs along the tray's edge
    left = np.array([[x, -200.0] for x in np.arange(-100.0, -55.0, 5.0)])
    right = np.array([[x, -200.0] for x in np.arange(55.0, 100.0, 5.0)])
    edge = np.concatenate([left, right])
    arm = np.concatenate([left + (0.0, 5.0), right + (0.0, 5.0), edge])
    width, across = entry_width(arm, edge, edge.mean(axis=0), u, 5.0, 40.0)
    assert len(across) == len(edge)
    assert width == pytest.approx(float(np.ptp(edge[:, 1])) + 5.0)
    # an arm with cells near its entry is measured from those, as always
    arm_in = np.array([[x, y] for x in np.arange(-20.0, 21.0, 5.0) for y in np.arange(-200.0, -100.0, 5.0)])
    w2, across2 = entry_width(arm_in, arm_in[:9], np.array([0.0, -200.0]), np.array([0.0, -1.0]), 5.0, 40.0)
    assert w2 == pytest.approx(45.0, abs=2.0) and len(across2) < len(arm_in)
