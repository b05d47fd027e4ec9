"""An independent synthetic kit renderer: OpenCV projection of boxes, markers and hands.

The twin renders kits with MuJoCo; the hidden acceptance kit comes from yet another renderer.
Calibrating on one renderer and testing on the other keeps the pipeline honest. Everything here
is drawn with a pinhole camera (vision.geometry) and painter's-order polygons.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from referee.blocks import Block, Kind, all_block_types
from vision.geometry import Camera, intrinsics, look_at
from vision.kit import Tray
from vision.lens import Lens

ARUCO = cv2.aruco.DICT_4X4_50

BLOCK_RGB = {"red": (205, 35, 35), "yellow": (240, 200, 25), "green": (30, 150, 65), "blue": (30, 85, 200)}
WILD_RGB = (28, 28, 30)
SKIN_RGB = [(255, 219, 172), (241, 194, 125), (224, 172, 105), (198, 134, 66), (160, 100, 50),
            (141, 85, 36), (110, 70, 40), (92, 58, 30), (70, 45, 28)]


def default_tray(size_mm: float = 280.0, marker_mm: float = 34.0, inset_mm: float = 8.0,
                 block_mm: tuple[float, float, float] = (75.0, 25.0, 15.0)) -> Tray:
    """A square tray with markers 0..3 in its corners (0 south-west, counter-clockwise), y north."""
    s, m, i = size_mm, marker_mm, inset_mm
    origins = {0: (i, i), 1: (s - i - m, i), 2: (s - i - m, s - i - m), 3: (i, s - i - m)}
    markers = {}
    for mid, (x0, y0) in origins.items():
        # printed top-left, top-right, bottom-right, bottom-left, with the sheet's top to the north (+y)
        markers[mid] = np.array([[x0, y0 + m], [x0 + m, y0 + m], [x0 + m, y0], [x0, y0]], dtype=np.float64)
    return Tray("DICT_4X4_50", markers, (s / 2.0, s / 2.0), block_mm)


def tray_sheet(tray: Tray, px_per_mm: float, surface_rgb=(255, 255, 255), margin_mm: float = 8.0,
               bounds: tuple[float, float, float, float] | None = None) -> tuple[np.ndarray, float, float]:
    """The tray sheet as an RGB image with y north up; returns (image, x0_mm, y_top_mm) of pixel (0,0).

    `bounds` (x0, y0, x1, y1 in mm) fixes the sheet's extent; by default it is the markers' extent
    plus `margin_mm`."""
    if bounds is None:
        x0, y0, x1, y1 = tray.extent()
        x0, y0, x1, y1 = x0 - margin_mm, y0 - margin_mm, x1 + margin_mm, y1 + margin_mm
    else:
        x0, y0, x1, y1 = bounds
    w = int(round((x1 - x0) * px_per_mm))
    h = int(round((y1 - y0) * px_per_mm))
    img = np.empty((h, w, 3), np.uint8)
    img[:] = surface_rgb
    dictionary = cv2.aruco.getPredefinedDictionary(ARUCO)
    for mid, c in tray.markers.items():
        side = float(np.linalg.norm(c[1] - c[0]))
        n = max(8, int(round(side * px_per_mm)))
        mk = cv2.aruco.generateImageMarker(dictionary, int(mid), n, borderBits=1)
        src = np.float32([[0, 0], [n - 1, 0], [n - 1, n - 1], [0, n - 1]])
        dst = np.float32([[(p[0] - x0) * px_per_mm, (y1 - p[1]) * px_per_mm] for p in c])
        M = cv2.getPerspectiveTransform(src, dst)
        warped = cv2.warpPerspective(mk, M, (w, h), flags=cv2.INTER_NEAREST, borderValue=255)
        mask = cv2.warpPerspective(np.full_like(mk, 255), M, (w, h), flags=cv2.INTER_NEAREST)
        img[mask > 0] = warped[mask > 0, None]
    return img, x0, y1


def glyph_texture(block: Block, px_per_mm: float, size_mm=(75.0, 25.0), rng: np.random.Generator | None = None) -> np.ndarray:
    """The top face of a block: its color with the glyph drawn in the middle (RGB)."""
    w, h = int(size_mm[0] * px_per_mm), int(size_mm[1] * px_per_mm)
    rgb = WILD_RGB if block.kind is Kind.WILD else BLOCK_RGB[block.color.value]
    if rng is not None:
        rgb = tuple(int(np.clip(c + rng.normal(0, 8), 0, 255)) for c in rgb)
    img = np.empty((h, w, 3), np.uint8)
    img[:] = rgb
    cx, cy = w // 2, h // 2
    u = h / 25.0  # px per mm
    white = (245, 245, 240)
    cv2.ellipse(img, (cx, cy), (int(16 * u), int(10 * u)), -25, 0, 360, white, -1, cv2.LINE_AA)
    ink = rgb if block.kind is not Kind.WILD else (20, 20, 20)
    th = max(1, int(1.8 * u))
    if block.kind is Kind.NUMBER:
        text = str(block.number)
        scale = 0.5 * u  # about 13 mm tall, as printed on the blocks
        th = max(1, int(2.2 * u))
        (tw, tht), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_DUPLEX, scale, th)
        cv2.putText(img, text, (cx - tw // 2, cy + tht // 2), cv2.FONT_HERSHEY_DUPLEX, scale, ink, th, cv2.LINE_AA)
    elif block.kind is Kind.DRAW2:
        for dx, dy in ((-3, 2), (3, -2)):
            p0 = (int(cx + (dx - 3) * u), int(cy + (dy - 4.5) * u))
            p1 = (int(cx + (dx + 3) * u), int(cy + (dy + 4.5) * u))
            cv2.rectangle(img, p0, p1, ink, -1, cv2.LINE_AA)
            cv2.rectangle(img, p0, p1, white, max(1, int(0.6 * u)), cv2.LINE_AA)
    elif block.kind is Kind.REVERSE:
        for sgn in (-1, 1):
            a = (int(cx + sgn * 6 * u), int(cy - sgn * 4 * u))
            b = (int(cx - sgn * 6 * u), int(cy + sgn * 4 * u))
            cv2.arrowedLine(img, b, a, ink, th, cv2.LINE_AA, tipLength=0.45)
    elif block.kind is Kind.SKIP:
        r = int(6.5 * u)
        cv2.circle(img, (cx, cy), r, ink, th, cv2.LINE_AA)
        d = int(r * 0.7)
        cv2.line(img, (cx - d, cy + d), (cx + d, cy - d), ink, th, cv2.LINE_AA)
    else:  # wild: four colored quadrants in the oval
        cols = [BLOCK_RGB["red"], BLOCK_RGB["blue"], BLOCK_RGB["yellow"], BLOCK_RGB["green"]]
        for k, col in enumerate(cols):
            cv2.ellipse(img, (cx, cy), (int(12 * u), int(7.5 * u)), -25, 90 * k, 90 * (k + 1), col, -1, cv2.LINE_AA)
    # small corner glyphs like the cards
    return img


@dataclass
class Face:
    pts3d: np.ndarray  # (4,3)
    rgb: tuple[int, int, int]
    texture: np.ndarray | None = None  # for top faces: texture whose corners map to pts3d order
    box_center: np.ndarray | None = None


def box_faces(center, size, yaw_deg, rgb, light_dir, top_texture=None) -> list[Face]:
    """The five visible-candidate faces (no bottom) of a box, shaded by a directional light."""
    cx, cy, cz = center
    L, W, Hh = size
    a = math.radians(yaw_deg)
    ux = np.array([math.cos(a), math.sin(a), 0.0])
    uy = np.array([-math.sin(a), math.cos(a), 0.0])
    c = np.array([cx, cy, cz])

    def corner(sx, sy, sz):
        return c + sx * ux * L / 2 + sy * uy * W / 2 + np.array([0, 0, sz * Hh / 2])

    faces = []
    top = np.array([corner(-1, 1, 1), corner(1, 1, 1), corner(1, -1, 1), corner(-1, -1, 1)])
    faces.append(Face(top, _shade(rgb, np.array([0, 0, 1.0]), light_dir), top_texture, c))
    sides = [((-1, -1), (1, -1), -uy), ((1, -1), (1, 1), ux), ((1, 1), (-1, 1), uy), ((-1, 1), (-1, -1), -ux)]
    for (a0, a1, normal) in sides:
        p = np.array([corner(a0[0], a0[1], 1), corner(a1[0], a1[1], 1), corner(a1[0], a1[1], -1), corner(a0[0], a0[1], -1)])
        faces.append(Face(p, _shade(rgb, normal, light_dir), None, c))
    return faces


def _shade(rgb, normal, light_dir) -> tuple[int, int, int]:
    k = 0.45 + 0.55 * max(0.0, float(np.dot(normal, light_dir)))
    return tuple(int(np.clip(v * k, 0, 255)) for v in rgb)


def draw_faces(img: np.ndarray, cam: Camera, faces: list[Face]) -> None:
    """Painter's algorithm: back-facing faces dropped, far faces first."""
    eye = cam.center
    items = []
    for f in faces:
        ctr = f.pts3d.mean(axis=0)
        # visibility: outward normal must face the camera
        outward = _outward_normal(f)
        if np.dot(outward, eye - ctr) <= 0:
            continue
        items.append((np.linalg.norm(eye - ctr), f))
    items.sort(key=lambda t: -t[0])
    h, w = img.shape[:2]
    for _, f in items:
        uv = cam.project(f.pts3d).astype(np.float32)
        if f.texture is not None:
            th, tw = f.texture.shape[:2]
            src = np.float32([[0, 0], [tw - 1, 0], [tw - 1, th - 1], [0, th - 1]])
            M = cv2.getPerspectiveTransform(src, uv)
            x0, y0 = np.floor(uv.min(axis=0)).astype(int)
            x1, y1 = np.ceil(uv.max(axis=0)).astype(int) + 1
            x0, y0 = max(x0, 0), max(y0, 0)
            x1, y1 = min(x1, w), min(y1, h)
            if x1 <= x0 or y1 <= y0:
                continue
            T = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], dtype=np.float64) @ M
            tex = cv2.warpPerspective(f.texture, T, (x1 - x0, y1 - y0), flags=cv2.INTER_AREA)
            mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
            cv2.fillConvexPoly(mask, np.round((uv - [x0, y0]) * 16).astype(np.int32), 255, cv2.LINE_AA, 4)
            roi = img[y0:y1, x0:x1].astype(np.float32)
            a = (mask.astype(np.float32) / 255.0)[..., None]
            img[y0:y1, x0:x1] = np.clip(roi * (1 - a) + tex.astype(np.float32) * a, 0, 255).astype(np.uint8)
        else:
            cv2.fillConvexPoly(img, np.round(uv * 16).astype(np.int32), f.rgb, cv2.LINE_AA, 4)


def _outward_normal(f: Face) -> np.ndarray:
    p = f.pts3d
    n = np.cross(p[1] - p[0], p[3] - p[0])
    n /= np.linalg.norm(n) + 1e-12
    return n if np.dot(n, p.mean(axis=0) - f.box_center) > 0 else -n


@dataclass(frozen=True)
class SynthOptions:
    width: int = 640
    height: int = 480
    f_range: tuple[float, float] = (560.0, 680.0)
    cam_height_range: tuple[float, float] = (470.0, 600.0)
    tilt_deg: float = 10.0
    levels_range: tuple[int, int] = (3, 18)
    hand_probs: tuple[float, float, float] = (0.45, 0.3, 0.25)  # 0, 1, 2 hands
    light_range: tuple[float, float] = (0.6, 1.25)
    blur_max: float = 1.4
    noise_max: float = 7.0
    skin_tones: tuple[int, ...] = tuple(range(len(SKIN_RGB)))
    hide_marker_prob: float = 0.15
    lens_radial: tuple[float, float] = (0.0, 0.0)  # (k1, k2): a lens that bends lines (k1 < 0: barrel)
    table: str = "plain"  # the table round the tray: "plain" (one colour), "wood" (grain) or "cloth" (a check)


def render_sample(rng: np.random.Generator, tray: Tray, opt: SynthOptions, focal: float | None = None) -> tuple[np.ndarray, dict]:
    """One RGB image and its label (orientation, slots, hands) plus ground-truth extras."""
    types = all_block_types()
    L, Wb, Hb = tray.block_mm
    tcx, tcy = tray.tower_center
    f = focal if focal is not None else rng.uniform(*opt.f_range)
    # with a lens, the scene is drawn through a pinhole on a larger canvas (pad px each side), then
    # bent into the frame (_through_lens): a barrel lens shows more than the pinhole's frame
    lens = Lens(f, tuple(opt.lens_radial), opt.width, opt.height) if any(opt.lens_radial) else None
    pad = _lens_pad(lens) if lens is not None else 0
    W, H = opt.width + 2 * pad, opt.height + 2 * pad
    K = intrinsics(f, W, H)
    # camera pose: above the tower, a little tilted, any roll; all markers must be in view
    x0, y0, x1, y1 = tray.extent()
    for _ in range(200):
        zc = rng.uniform(*opt.cam_height_range)
        tilt = math.radians(rng.uniform(0, opt.tilt_deg))
        az = rng.uniform(0, 2 * math.pi)
        target = np.array([tcx + rng.normal(0, 10), tcy + rng.normal(0, 10), 0.0])
        eye = target + np.array([math.sin(tilt) * math.cos(az) * zc, math.sin(tilt) * math.sin(az) * zc, math.cos(tilt) * zc])
        roll = rng.choice([0, 90, 180, 270]) + rng.uniform(-15, 15)
        cam = look_at(K, eye, target, roll)
        corners = np.concatenate([np.column_stack([c, np.zeros(4)]) for c in tray.markers.values()])
        uv = cam.project(corners) - pad
        if lens is not None:
            uv = lens.bent_points(uv)
        if uv[:, 0].min() > 6 and uv[:, 1].min() > 6 and uv[:, 0].max() < opt.width - 6 and uv[:, 1].max() < opt.height - 6:
            break
    light = np.array([rng.normal(0, 0.5), rng.normal(0, 0.5), 1.0])
    light /= np.linalg.norm(light)

    # background table and tray surface
    table = np.array([rng.uniform(60, 140), rng.uniform(45, 110), rng.uniform(30, 90)])
    img = np.empty((H, W, 3), np.uint8)
    img[:] = table.astype(np.uint8)
    if opt.table != "plain":
        img = _table_pattern(img, cam, tray, table, opt.table, rng)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape).astype(np.int16), 0, 255).astype(np.uint8)
    surface = tuple(int(v) for v in rng.uniform([200, 195, 185], [245, 240, 235]))
    ppm = 3.0
    sheet, sx0, sytop = tray_sheet(tray, ppm, surface)
    sheet = np.clip(sheet.astype(np.int16) + rng.normal(0, 3, sheet.shape).astype(np.int16), 0, 255).astype(np.uint8)
    Hs = cam.plane_homography(0.0) @ np.array([[1 / ppm, 0, sx0], [0, -1 / ppm, sytop], [0, 0, 1]])
    warped = cv2.warpPerspective(sheet, Hs, (W, H), flags=cv2.INTER_AREA)
    m = cv2.warpPerspective(np.full(sheet.shape[:2], 255, np.uint8), Hs, (W, H), flags=cv2.INTER_LINEAR)
    a = (m.astype(np.float32) / 255)[..., None]
    img = (img * (1 - a) + warped * a).astype(np.uint8)

    # tower
    n_levels = int(rng.integers(opt.levels_range[0], opt.levels_range[1] + 1))
    orient = "x" if n_levels % 2 == 1 else "y"
    faces: list[Face] = []
    occupied_top = [bool(v) for v in rng.random(3) < 0.75]
    if not any(occupied_top):
        occupied_top[int(rng.integers(3))] = True
    top_blocks: list[Block | None] = []
    for lev in range(1, n_levels + 1):
        o = "x" if lev % 2 == 1 else "y"
        zc = (lev - 0.5) * Hb
        for s in range(3):
            is_top = lev == n_levels
            if is_top and not occupied_top[s]:
                top_blocks.append(None)
                continue
            if not is_top and lev < n_levels - 1 and rng.random() < 0.12 and s != 1:
                continue  # a pulled block lower down
            blk = types[int(rng.integers(len(types)))]
            off = (s - 1) * Wb
            jit = rng.normal(0, 1.0, 2) if is_top else rng.normal(0, 0.4, 2)
            yaw_j = rng.normal(0, 1.5) if is_top else rng.normal(0, 0.5)
            if o == "x":
                ctr = (tcx + jit[0], tcy + off + jit[1], zc)
                yaw = 0.0 + yaw_j
            else:
                ctr = (tcx + off + jit[0], tcy + jit[1], zc)
                yaw = 90.0 + yaw_j
            rgb = WILD_RGB if blk.kind is Kind.WILD else BLOCK_RGB[blk.color.value]
            tex = None
            if lev >= n_levels - 1:
                tex = glyph_texture(blk, 6.0, (L, Wb), rng)
                if rng.random() < 0.5:
                    tex = tex[::-1, ::-1].copy()
                k = 0.55 + 0.45 * max(0.0, float(light[2]))
                tex = np.clip(tex.astype(np.float32) * k, 0, 255).astype(np.uint8)
            faces += box_faces(ctr, (L - 0.6, Wb - 0.6, Hb - 0.3), yaw, rgb, light, tex)
            if is_top:
                top_blocks.append(blk)
    draw_faces(img, cam, faces)

    # hands (their own random stream, so how hands are drawn does not change the rest of the scene)
    hand_seed = int(rng.integers(2**31))
    hands_in, hand_truth = _draw_hands(img, cam, np.random.default_rng(hand_seed), tray, opt, n_levels * Hb, light)
    hidden = slot_hidden_fractions(cam, tray, orient, n_levels * Hb, _hands_mask(img.shape, cam, hand_seed, tray, opt,
                                                                                n_levels * Hb, light))
    # a hand that hides a marker sometimes
    if rng.random() < opt.hide_marker_prob:
        mid = list(tray.markers)[int(rng.integers(len(tray.markers)))]
        c = tray.markers[mid].mean(axis=0)
        uv = cam.project(np.array([[c[0], c[1], 20.0]]))[0]
        col = SKIN_RGB[int(rng.choice(opt.skin_tones))]
        cv2.ellipse(img, (int(uv[0]), int(uv[1])), (int(rng.uniform(30, 45)), int(rng.uniform(25, 40))),
                    rng.uniform(0, 180), 0, 360, col, -1, cv2.LINE_AA)

    if lens is not None:
        img = _through_lens(img, lens, pad)
    img = _photometric(img, rng, opt)
    label = {"orientation": orient, "slots": [b.name if b else None for b in top_blocks], "hands": hands_in}
    extra = {"levels": n_levels, "f": f, "eye": [float(v) for v in cam.center], "hands": hand_truth,
             "slot_hidden": [round(float(v), 3) for v in hidden]}
    return img, {"label": label, "extra": extra}


def _hands_mask(shape, cam: Camera, hand_seed: int, tray: Tray, opt: SynthOptions, top_z: float, light) -> np.ndarray:
    """Where the hands (and sleeves) are in the image: the same hands drawn again on black."""
    canvas = np.zeros(shape, np.uint8)
    _draw_hands(canvas, cam, np.random.default_rng(hand_seed), tray, opt, top_z, light)
    return canvas.max(axis=2) > 0


def slot_hidden_fractions(cam: Camera, tray: Tray, orient: str, top_z: float, hand_mask: np.ndarray) -> list[float]:
    """How much of each top slot's face the hands hide (0..1), for scoring on slots hidden by at most a tenth."""
    from vision.top_level import slot_corners

    out = []
    for slot in range(3):
        xy = slot_corners(tray, orient, slot)
        uv = cam.project(np.column_stack([xy, np.full(4, top_z)]))
        poly = np.zeros(hand_mask.shape, np.uint8)
        cv2.fillConvexPoly(poly, np.round(uv).astype(np.int32), 1)
        area = int(poly.sum())
        out.append(float((hand_mask & (poly > 0)).sum()) / area if area else 1.0)
    return out


SLEEVE_RGB = [(40, 40, 45), (200, 200, 205), (150, 30, 40), (30, 60, 120), (90, 110, 60), (235, 225, 200)]


def _draw_hands(img, cam: Camera, rng: np.random.Generator, tray: Tray, opt: SynthOptions, top_z: float,
                light) -> tuple[int, list[dict]]:
    """0-2 hands: arms from any direction (a player's seat), tips over the tower or near it, the
    second hand often from the same side so the two overlap, or the same player's other hand
    beside the first (its arm from the other shoulder); skin tones from very light to very
    dark, sometimes a sleeve. Hands together leave at least three markers in view (a kit image
    must be readable). Returns the label's hand count and each hand's truth."""
    n_hands = int(rng.choice(3, p=np.asarray(opt.hand_probs) / sum(opt.hand_probs)))
    half = tray.footprint_half
    zone = tray.block_mm[0]
    truth, hands_in = [], 0
    skin = _skin_tone(rng, opt)
    covered = np.zeros(img.shape[:2], np.uint8)  # the tower's silhouette hides markers too
    cx, cy = tray.tower_center
    box = np.array([[cx + sx * half, cy + sy * half, zz] for sx in (-1, 1) for sy in (-1, 1) for zz in (0.0, top_z)])
    cv2.fillConvexPoly(covered, cv2.convexHull(np.round(cam.project(box)).astype(np.int32)), 1)
    # each marker's corners and centre, with its white border: covering any of them can hide it
    probes = [cam.project(np.array([[*(c.mean(axis=0) + 1.25 * (q - c.mean(axis=0))), 0.0] for q in c]
                                   + [[*c.mean(axis=0), 0.0]])) for c in tray.markers.values()]
    first = None
    for k in range(n_hands):
        inside = rng.random() < 0.8
        tone = skin if rng.random() < 0.5 else _skin_tone(rng, opt)
        z = top_z + rng.uniform(15, 60)
        sleeve = SLEEVE_RGB[int(rng.integers(len(SLEEVE_RGB)))] if rng.random() < 0.3 else None
        # one player's two hands (the "Uno!" foul): same skin and sleeve, side by side, each arm
        # from its own shoulder either side of the seat
        pair = first is not None and rng.random() < 0.3
        if pair:
            inside, tone, sleeve, z = first["inside"], first["tone"], first["sleeve"], first["z"] + rng.uniform(-10, 10)
        for _ in range(30):
            if pair:
                side = rng.choice([-1, 1])
                seat = first["seat"] + side * rng.uniform(20, 40)
                sa = math.radians(first["seat"])
                tip = first["tip"] + side * rng.uniform(55, 110) * np.array([-math.sin(sa), math.cos(sa)])
            else:
                # (the same draws as ever: a first hand left out, for want of a pose that leaves the
                # tray readable, leaves nothing to overlap, and this one comes from anywhere)
                if k == 1 and rng.random() < 0.4 and truth:
                    seat = truth[0]["from_deg"] + rng.choice([-1, 1]) * rng.uniform(8, 35)  # overlapping the first
                else:
                    seat = rng.uniform(0, 360)
                if inside:  # the fingertip anywhere within one block length of the footprint
                    reach = rng.uniform(-0.8 * half, zone - 25)
                else:
                    reach = rng.uniform(zone + 30, zone + 75)
                # the tip lies on the square at `reach` outside the footprint, in a direction near the seat
                a = math.radians(seat + (rng.normal(0, 50) if inside else rng.normal(0, 25)))
                u = np.array([math.cos(a), math.sin(a)])
                tip = np.array(tray.tower_center) + u * (half + reach) / max(abs(u[0]), abs(u[1]))
            out_by = np.abs(tip - np.array(tray.tower_center)).max() - half
            if pair and (out_by > zone - 10 if inside else out_by < zone + 20):
                continue  # the other hand is in the zone as the first is, clear of the zone's edge
            if any(np.linalg.norm(tip - np.array(t["tip_mm"])) < 60 for t in truth):
                continue  # two hands cannot hold the same place: they overlap, side by side
            tu, tv = cam.project(np.array([[tip[0], tip[1], z]]))[0]
            if inside and not (10 <= tu < img.shape[1] - 10 and 10 <= tv < img.shape[0] - 10):
                continue  # a hand counted over the tower is one the camera sees (a tall tower's zone can leave the view)
            shapes = _hand_shapes(cam, rng, tray, tip, seat, z, tone, sleeve)
            mask = covered.copy()
            for pts, zs, _ in shapes:
                uv = cam.project(np.column_stack([pts, zs]))
                cv2.fillPoly(mask, [np.round(uv).astype(np.int32)], 1)
            h, w = mask.shape
            hidden = sum(1 for pr in probes
                         if any(0 <= int(x) < w and 0 <= int(y) < h and mask[int(y), int(x)] for x, y in pr))
            if hidden <= 1:
                break
        else:
            continue  # no pose of this hand leaves the tray readable: leave it out
        covered = mask
        if first is None:
            first = {"inside": inside, "tone": tone, "sleeve": sleeve, "z": z, "seat": seat, "tip": tip}
        _paint_hand(img, cam, rng, shapes, light)
        hands_in += inside
        truth.append({"from_deg": round(seat % 360, 1), "over_tower": bool(inside),
                      "tip_mm": [round(float(v), 1) for v in tip], "same_player_as_first": bool(pair)})
    return hands_in, truth


def _skin_tone(rng: np.random.Generator, opt: SynthOptions) -> tuple[float, float, float]:
    base = np.array(SKIN_RGB[int(rng.choice(opt.skin_tones))], np.float64)
    return tuple(float(v) for v in np.clip(base * rng.uniform(0.9, 1.08) + rng.normal(0, 5, 3), 0, 255))


def _hand_shapes(cam: Camera, rng, tray: Tray, tip: np.ndarray, seat_deg: float, z: float, rgb,
                 sleeve=None) -> list[tuple[np.ndarray, np.ndarray, tuple]]:
    """An arm from the player's seat (`seat_deg`, about half a metre from the tower) to the
    fingertip at `tip`, rising towards the shoulder; palm and fingers: (points, heights, colour)."""
    tcx, tcy = tray.tower_center
    s = math.radians(seat_deg)
    shoulder = np.array([tcx, tcy]) + rng.uniform(420, 560) * np.array([math.cos(s), math.sin(s)])
    back = shoulder - tip
    back /= np.linalg.norm(back) + 1e-9  # from the tip towards the arm
    bperp = np.array([-back[1], back[0]])
    palm_c = tip + back * 70
    wrist = tip + back * 100
    elbow = tip + back * 420
    shapes = []
    arm_w = rng.uniform(26, 38)
    rise = max(0.0, min(rng.uniform(0, 120), float(cam.center[2]) - 250 - z))  # the elbow is higher than the wrist
    arm_col = sleeve if sleeve is not None else rgb
    shapes.append((np.array([wrist + bperp * arm_w, elbow + bperp * (arm_w + 10), elbow - bperp * (arm_w + 10),
                             wrist - bperp * arm_w]), np.array([z, z + rise, z + rise, z]), arm_col))
    t = np.linspace(0, 2 * np.pi, 24)
    palm = palm_c + np.outer(np.cos(t) * 45, back) + np.outer(np.sin(t) * rng.uniform(36, 44), bperp)
    shapes.append((palm, np.full(len(palm), z), rgb))
    spread = rng.uniform(0.8, 1.2)
    n_fingers = 4 if rng.random() < 0.7 else int(rng.integers(1, 4))  # a pinch or a pointing finger too
    for k in range(n_fingers):
        off = (k - (n_fingers - 1) / 2) * 19 * spread
        base = palm_c - back * 30 + bperp * off
        ftip = base - back * rng.uniform(45, 65)
        fw = 8.5
        f = np.array([base + bperp * fw, ftip + bperp * fw * 0.8, ftip - bperp * fw * 0.8, base - bperp * fw])
        shapes.append((f, np.full(4, z - 4), rgb))
    th_side = rng.choice([-1, 1])
    th_base = palm_c + bperp * 38 * th_side
    th_tip = th_base + bperp * 30 * th_side - back * 30
    shapes.append((np.array([th_base + back * 10, th_tip + back * 6, th_tip - back * 6, th_base - back * 10]),
                   np.full(4, z), rgb))
    return shapes


def _paint_hand(img, cam: Camera, rng, shapes, light) -> None:
    """The hand's shadow on the tray plane (cast along the light), then the hand over it."""
    mask = np.zeros(img.shape[:2], np.uint8)
    for pts, zs, _ in shapes:
        off = -np.outer(zs, np.array(light[:2]) / max(light[2], 0.3))
        uv = cam.project(np.column_stack([pts + off, np.zeros(len(pts))]))
        cv2.fillPoly(mask, [np.round(uv).astype(np.int32)], 255, cv2.LINE_AA)
    mask = cv2.GaussianBlur(mask, (0, 0), 4)
    k = 1 - rng.uniform(0.3, 0.5) * (mask.astype(np.float32) / 255)[..., None]
    img[:] = np.clip(img.astype(np.float32) * k, 0, 255).astype(np.uint8)
    for pts, zs, col in shapes:
        uv = cam.project(np.column_stack([pts, zs]))
        shade = np.array(col, np.float32) * rng.uniform(0.85, 1.05)
        cv2.fillPoly(img, [np.round(uv * 16).astype(np.int32)], tuple(int(v) for v in np.clip(shade, 0, 255)), cv2.LINE_AA, 4)


def _table_pattern(img: np.ndarray, cam: Camera, tray: Tray, base_rgb: np.ndarray, kind: str,
                   rng: np.random.Generator) -> np.ndarray:
    """A table with a pattern round the tray, drawn on the table plane: "wood" (grain a few mm apart,
    wavy, along a random direction, in planks) or "cloth" (a check of two tones 20-40 mm)."""
    ppm, reach = 1.0, 700.0  # 1 px per mm, 700 mm round the tower
    cx, cy = tray.tower_center
    n = int(2 * reach * ppm)
    ys, xs = np.mgrid[0:n, 0:n].astype(np.float32) / ppm
    a = rng.uniform(0, np.pi)
    u = xs * np.cos(a) + ys * np.sin(a)  # along the grain / one check direction
    v = -xs * np.sin(a) + ys * np.cos(a)
    if kind == "wood":
        period = rng.uniform(4.0, 12.0)
        plank = rng.uniform(90.0, 160.0)
        wobble = 6.0 * np.sin(u / rng.uniform(60, 140) + rng.uniform(0, 6.3)) + 3.0 * np.sin(u / 23.0 + v / 41.0)
        grain = np.sin((v + wobble) * 2 * np.pi / period)
        shade = 1.0 + rng.uniform(0.06, 0.16) * grain + 0.08 * np.sign(np.sin(v * np.pi / plank))
        seams = v % plank < 1.2
        shade = np.where(seams, 0.55, shade)
        tex = np.clip(base_rgb[None, None, :] * shade[..., None], 0, 255)
    elif kind == "cloth":
        size = rng.uniform(20.0, 40.0)
        other = np.clip(base_rgb * rng.uniform(0.55, 0.8) + rng.uniform(-30, 30, 3), 0, 255)
        check = ((np.floor(u / size) + np.floor(v / size)) % 2).astype(np.float32)
        tex = base_rgb[None, None, :] * (1 - check[..., None]) + other[None, None, :] * check[..., None]
    else:
        raise ValueError(f"unknown table pattern {kind!r} (plain, wood or cloth)")
    # table px (col, row) -> table mm: x = cx - reach + col/ppm, y = cy + reach - row/ppm (north up)
    M = np.array([[1 / ppm, 0, cx - reach], [0, -1 / ppm, cy + reach], [0, 0, 1]])
    Hs = cam.plane_homography(0.0) @ M
    return cv2.warpPerspective(tex.astype(np.uint8), Hs, (img.shape[1], img.shape[0]), flags=cv2.INTER_AREA,
                               borderMode=cv2.BORDER_REPLICATE)


def _lens_pad(lens: Lens) -> int:
    """How far past the frame (px, each side) the pinhole view must reach for the lens's frame."""
    w, h = lens.width, lens.height
    edge = np.array([[x, y] for x in np.linspace(0, w - 1, 9) for y in (0, h - 1)]
                    + [[x, y] for y in np.linspace(0, h - 1, 9) for x in (0, w - 1)], np.float64)
    ideal = lens.ideal_points(edge)
    beyond = max(float(-ideal.min()), float((ideal - [w - 1, h - 1]).max()), 0.0)
    return int(math.ceil(beyond)) + 2


def _through_lens(img: np.ndarray, lens: Lens, pad: int) -> np.ndarray:
    """The pinhole canvas (`pad` px past the frame each side) as the lens shows it in the frame."""
    w, h = lens.width, lens.height
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    ideal = lens.ideal_points(np.column_stack([gx.ravel(), gy.ravel()])) + pad
    mx = ideal[:, 0].reshape(h, w).astype(np.float32)
    my = ideal[:, 1].reshape(h, w).astype(np.float32)
    return cv2.remap(img, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _photometric(img: np.ndarray, rng, opt: SynthOptions) -> np.ndarray:
    """Room light: brightness, color temperature, a light gradient, blur and sensor noise."""
    H, W = img.shape[:2]
    x = img.astype(np.float32)
    gain = rng.uniform(*opt.light_range)
    temp = rng.uniform(-0.15, 0.15)
    x *= gain * np.array([1 + temp, 1.0, 1 - temp], np.float32)
    gx, gy = rng.normal(0, 0.25, 2)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    ramp = 1 + gx * (xx / W - 0.5) + gy * (yy / H - 0.5)
    x *= ramp[..., None]
    x = np.clip(x, 0, 255)
    s = rng.uniform(0, opt.blur_max)
    if s > 0.3:
        x = cv2.GaussianBlur(x, (0, 0), s)
    x += rng.normal(0, rng.uniform(0, opt.noise_max), x.shape).astype(np.float32)
    return np.clip(x, 0, 255).astype(np.uint8)


def write_kit(out: str | Path, n_images: int, seed: int, opt: SynthOptions | None = None, tray: Tray | None = None,
              focal: float | None = None) -> Path:
    """Write a kit folder exactly as CONTRACT.md section 2 (plus truth.json with level counts).
    `focal`: the camera's focal length (px) instead of one drawn for the kit, e.g. the same table's
    camera as a calibration kit's."""
    opt = opt or SynthOptions()
    tray = tray or default_tray()
    root = Path(out)
    (root / "images").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    labels, truth = {}, {}
    drawn = float(rng.uniform(*opt.f_range))  # one camera per kit, as a table has
    focal = drawn if focal is None else float(focal)
    for i in range(n_images):
        img, meta = render_sample(rng, tray, opt, focal)
        name = f"{i + 1:04d}.png"
        cv2.imwrite(str(root / "images" / name), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
        labels[name] = meta["label"]
        truth[name] = meta["extra"]
    (root / "tray.json").write_text(json.dumps(tray.to_json(), indent=1))
    (root / "labels.json").write_text(json.dumps(labels, indent=1))
    (root / "truth.json").write_text(json.dumps(truth, indent=1))
    return root
