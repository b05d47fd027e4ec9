"""The whole frame reader: registration -> top face -> slots -> hands, as a TopLevelReading.

A Pipeline is the loaded calibration folder (config.json, tray.json, model files); read_frame is
a pure function of (pipeline, image). Nothing a reading depends on is cached between frames (the
hand grid keeps the parts of its wide grid it has cut, which depend on the calibration alone).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import cv2
import numpy as np

from referee.blocks import Block
from referee.observations import SlotReading, TopLevelReading
from vision import patch_features as pf
from vision import plane_height
from vision import skin as sk
from vision import top_level as tl
from vision.background import TrayBackground
from vision.frame_errors import UnreadableFrame
from vision.geometry import Camera
from vision.hands import arm_entries, cell_means, counted_arms, find_hands, hand_grid, hand_mask, hands_of
from vision.kit import KitError, Tray, load_tray
from vision.lens import Lens, lens_from_config
from vision.memo import memoised, memoised_many, recalled, remember
from vision.models import LinearModel, load_model
from vision.stage_clock import CHECKS, HANDS, HEIGHT, REGISTRATION, RETRIES, TOP, StageClock
from vision.table_memory import TableMemory
from vision.tray import Registration, TrayNotFound, frame_grain, make_detector, register  # noqa: F401 (TrayNotFound: read_frame raises it)

DEFAULT_CONFIG = Path(__file__).with_name("default_config.json")
GLYPHS = ("1", "2", "3", "4", "draw2", "reverse", "skip", "wild")
NO_GLYPH = "none"  # the glyph model's class for a crop with no glyph (a block's end, the level below)
COLOR_CLASSES = ("red", "yellow", "green", "blue", "wild")
MODEL_NAMES = ("orientation", "occupancy", "color", "glyph")


class CalibrationMissing(RuntimeError):
    """The calibration folder is missing or broken; the message says how to make one."""


def single_thread() -> None:
    """Run OpenCV and the BLAS behind NumPy on one thread, as the frame budget assumes, and keep
    the memory a frame frees for the next (steady_heap).

    On a busy machine a multi-threaded BLAS turns a 0.3 ms kernel product into tens of ms."""
    cv2.setNumThreads(1)
    one_blas_thread()
    steady_heap()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def steady_heap(mmap_below: int = 4 << 20, trim_above: int = 16 << 20) -> bool:
    """Have the C library's malloc serve blocks under `mmap_below` bytes from its heap and keep
    up to `trim_above` bytes of it free, so that a frame's arrays reuse the memory the last
    frame's freed (glibc's mallopt; False where the C library has none, and nothing changes).

    A frame allocates and frees arrays of up to a few MB (the frame's grey and BGRA copies, the
    rectified views, OpenCV's buffers). With glibc's defaults many came as fresh pages from the
    kernel each frame: some 480 page faults a frame and 0.8 ms of system time on the bench's
    photos, against 38 and under 0.1 ms so. Process-wide like the thread count; no value read
    changes."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, int(mmap_below))) and bool(mallopt(M_TRIM_THRESHOLD, int(trim_above)))


def one_blas_thread():
    """The BLAS behind NumPy on one thread from now on; used as a `with` block's context, only
    until its end. (threadpoolctl comes with scikit-learn; without it the BLAS keeps its own
    threads and this is a context that does nothing.)"""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1)


def default_config() -> dict:
    return json.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))


def merge(base: dict, over: Mapping) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else v
    return out


@dataclass
class Pipeline:
    cfg: dict
    tray: Tray
    models: dict[str, LinearModel] = field(default_factory=dict)  # or KernelModel (same proba())
    background: TrayBackground | None = None

    def __post_init__(self) -> None:
        self.detector = make_detector(self.cfg)
        self.height_probes = plane_height.make_probes(self.cfg, self.tray)
        self.tray_points = tl.tray_samples(self.tray)  # where the tray's colour is measured
        self.hand_grid = hand_grid(self.cfg["hands"], self.tray, self.background)  # the hands' cells, whatever the frame
        self.lens: Lens | None = lens_from_config(self.cfg.get("camera", {}))  # None: a pinhole, frames used as they come


def straighten(p: Pipeline, img):
    """The camera's frame as the rest of the pipeline needs it: shrunk to the calibration's size
    when far larger (`calibrated_size`), straightened through the lens calibration learnt (the
    same frame when it learnt none). Every way a raw frame enters vision goes through this once;
    a frame that is not a colour image passes on, for the stage that reads it to say so."""
    if not isinstance(img, np.ndarray) or img.ndim != 3:
        return img
    img = calibrated_size(p, img)
    lens = getattr(p, "lens", None)  # (a stand-in pipeline, as the loop's tests give: a pinhole)
    return img if lens is None else lens.straighten(img)


def calibrated_size(p: Pipeline, img: np.ndarray) -> np.ndarray:
    """A frame at least `camera.shrink_from` times as wide as the calibration's photos (a camera
    set to a higher resolution than the kit was shot at), shrunk to their width. Everything
    measured in millimetres follows the frame's size, but the marker detector's threshold
    windows are pixels: at five times the size (3200x2400 frames of a 640x480 kit) 2 of 20
    frames showed no marker to it ("none of the tray's markers are visible") and a frame took
    65 ms, against 15 ms shrunk (the resize included). Up to three times the size frames read as
    well as at their own (34-35 of 40 tops right either way)."""
    cam = getattr(p, "cfg", {}).get("camera", {})
    w0, k = cam.get("width"), float(cam.get("shrink_from", 0.0) or 0.0)
    h, w = img.shape[:2]
    if not w0 or k <= 0 or w < k * float(w0):
        return img
    w1 = int(w0)
    return cv2.resize(img, (w1, max(1, int(round(h * w1 / w)))), interpolation=cv2.INTER_AREA)


def load_pipeline(folder: str | Path) -> Pipeline:
    d = Path(folder)
    if not d.is_dir():
        raise CalibrationMissing(f"no calibration folder at {d}: run `stacko calibrate vision KIT --out {d}` first")
    try:
        over = json.loads((d / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationMissing(f"{d} has no config.json: run `stacko calibrate vision KIT --out {d}`") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationMissing(f"{d / 'config.json'} cannot be read: {exc}") from None
    try:
        tray = load_tray(d / "tray.json")
    except KitError as exc:
        raise CalibrationMissing(str(exc)) from None
    models = {}
    for name in MODEL_NAMES:
        p = d / f"{name}.npz"
        if p.is_file():
            try:
                models[name] = load_model(p)
            except (OSError, KeyError, ValueError) as exc:
                raise CalibrationMissing(f"the model file {p} is broken ({exc}): calibrate again") from None
    bg = None
    if (d / "tray_model.npz").is_file():
        try:
            bg = TrayBackground.load(d / "tray_model.npz")
        except (OSError, KeyError, ValueError) as exc:
            raise CalibrationMissing(f"the tray model {d / 'tray_model.npz'} is broken ({exc}): calibrate again") from None
    single_thread()  # the reader's budget is one core; see single_thread
    cfg = merge(default_config(), over)
    _check_feature_sizes(d, cfg, tray, models)
    try:
        return Pipeline(cfg, tray, models, bg)
    except ValueError as exc:  # the camera section (the lens) does not make sense
        raise CalibrationMissing(f"{d / 'config.json'}: {exc}: calibrate again") from None


def _check_feature_sizes(d: Path, cfg: dict, tray: Tray, models: Mapping) -> None:
    """A calibration made by older vision code has models for other features: say so plainly
    instead of failing on the first frame."""
    ppm = float(cfg["top"]["patch_px_per_mm"])
    L, W, _ = tray.block_mm
    patch = np.full((int(round(W * ppm)), int(round(L * ppm)), 3), 128, np.uint8)
    gains = np.ones(3, np.float32)
    labs = pf.patch_labs([patch], gains)
    col = pf.color_features(labs)
    gc = cfg["glyph"]
    oc = cfg["orientation"]
    face = int(round((2 * tray.footprint_half + 2 * float(oc["margin_mm"])) * float(oc["px_per_mm"])))
    sizes = {
        "color": col.shape[1],
        "occupancy": pf.occupancy_features(cfg, labs, col).shape[1],
        "glyph": len(tl.glyph_features(cfg, np.full((int(gc["height"]), int(gc["width"]), 3), 128, np.uint8))),
        "orientation": len(tl.orientation_features(cfg, tray, np.full((face, face, 3), 128, np.uint8))),
    }
    for name, n in sizes.items():
        m = models.get(name)
        if m is not None and len(m.mean) != n:
            raise CalibrationMissing(f"the calibration in {d} was made by an older version of the vision code "
                                     f"(its {name} model expects {len(m.mean)} features, not {n}): calibrate again")


@dataclass(frozen=True)
class FrameResult:
    reading: TopLevelReading
    registration: Registration
    z_top: float
    orientation_p: float  # probability of the chosen orientation
    first_slot: int = 0  # where the top's slot 0 lies on the face found (-1 or 1: shifted_face)
    # the markers' own camera, through which the hands were found (height_seen_by); None: `registration`
    markers_registration: Registration | None = None
    # the frame as read: straightened through the lens (the camera's own frame when it has none);
    # the registration's pixels are this frame's
    image: np.ndarray | None = field(default=None, repr=False, compare=False)


BLOCK_NAMES = tuple(f"{c}-{g}" for c in COLOR_CLASSES[:4] for g in GLYPHS[:7]) + ("wild",)


def block_posterior(p_color: np.ndarray, p_glyph: np.ndarray) -> list[tuple[str, float]]:
    """Joint block probabilities from independent colour and glyph probabilities, best first
    (BLOCK_NAMES' order where equal)."""
    return _block_posterior(p_color, p_glyph)[0]


def _block_posterior(p_color: np.ndarray, p_glyph: np.ndarray) -> tuple[list[tuple[str, float]], float]:
    """block_posterior, and how much of the two models' probability lies on blocks that exist
    (the joint's sum before it is normalised: how far colour and glyph agree, `slot_readings`)."""
    # (on Python floats: 29 products and a sort cost less so than NumPy's calls on so few values;
    # each product, the sum in order and each quotient round as NumPy's float64 do)
    pc, pg = _floats(p_color), _floats(p_glyph)
    joint = [c * g for c in pc[:4] for g in pg[:7]]
    joint.append(pc[4] * pg[7])
    agreement = sum(joint)
    d = agreement or 1.0
    vals = [j / d for j in joint]
    if agreement != agreement:  # (a NaN: NumPy's stable argsort puts it last, as a Python sort need not)
        return [(BLOCK_NAMES[k], vals[k]) for k in np.argsort(-np.array(vals), kind="stable").tolist()], agreement
    # (sorted with reverse keeps equal values in their order, as the stable argsort of -post did)
    return [(BLOCK_NAMES[k], vals[k]) for k in sorted(range(len(vals)), key=vals.__getitem__, reverse=True)], agreement


def _floats(v) -> list[float]:
    """A row of probabilities as Python floats (each exactly its float64 value)."""
    return v.tolist() if isinstance(v, np.ndarray) and v.dtype == np.float64 else [float(x) for x in v]


def _class_probs(model: LinearModel | None, X: np.ndarray, classes: tuple[str, ...]) -> np.ndarray:
    """Probabilities in the order of `classes` (a class the model never saw gets ~0)."""
    if model is None:
        return np.full((len(X), len(classes)), 1.0 / len(classes))
    P = model.proba(X)
    src, dst, order = _class_places(tuple(model.classes), classes)
    if order is not None and P.dtype == np.float64:
        out = P.take(order, axis=1)  # (every class learnt: one gather, no fill and no scatter)
    else:
        out = np.empty((len(X), len(classes)))
        out.fill(1e-6)  # (np.full's wrapper costs more than the fill)
        out[:, dst] = P[:, src]  # (one copy, not one a class)
    out /= np.add.reduce(out, axis=1, keepdims=True)  # (what .sum calls; in place: no temporary)
    return out


@lru_cache(maxsize=64)
def _class_places(learnt: tuple[str, ...], classes: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Which of a model's classes are among `classes`, and where each goes there (worked out
    once per pair, not per call: the slot models run some nine times a frame); and when the
    model learnt every one of `classes`, the model's column of each (else None)."""
    src = [j for j, c in enumerate(learnt) if c in classes]
    order = np.array([learnt.index(c) for c in classes], np.intp) if set(classes) <= set(learnt) else None
    return np.array(src, np.intp), np.array([classes.index(learnt[j]) for j in src], np.intp), order


def glyph_probs(model: LinearModel | None, X: np.ndarray, turns: int = 2) -> np.ndarray:
    """Per crop (X: `turns` feature rows each, as laid and turned): the eight glyphs'
    probabilities. Each glyph keeps its better turn (the block lies one way round) and "no
    glyph" its lesser one; a model that learnt NO_GLYPH keeps that class's share out of the
    eight (they then sum to less than one: a block's end or the level below reads as no glyph),
    one that never saw it gives the eight renormalised.

    Without a "no glyph" class, a crop with no glyph falls to the model's prior, and where that
    prior lands depends on the kit: 0.28-0.50 for its likeliest class on most calibrations, but
    0.60-0.66 ("4") on one of synthetic seed 2001, so that bare tray and block ends read as a
    sure 4 and 43% of its kits' visible slots went wrong."""
    classes = GLYPHS + (NO_GLYPH,)
    P = _class_probs(model, X, classes).reshape(-1, turns, len(classes))
    g = np.empty((len(P), len(classes)))  # (both reductions straight into one array: no concatenate)
    np.maximum.reduce(P[:, :, :-1], axis=1, out=g[:, :-1])
    np.minimum.reduce(P[:, :, -1], axis=1, out=g[:, -1])
    g /= np.add.reduce(g, axis=1, keepdims=True)
    return g[:, :-1]


def top_height(p: Pipeline, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, gains: np.ndarray) -> float:
    """The top face's height (see top_face) for the registration's own camera (no focal search),
    as calibration's labels refit it and the hand finder uses it with that camera."""
    return top_face(p, reg, img, tray_bgr, gains, focal_search=False)[0]


def top_face(p: Pipeline, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray,
             gains: np.ndarray, focal_search: bool = True) -> tuple[float, Registration]:
    """The top face's height and the registration whose camera lines it up (see top_face_search)."""
    z, reg, _ = top_face_search(p, reg, img, tray_bgr, gains, focal_search)
    return z, reg


def top_face_search(p: Pipeline, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, gains: np.ndarray,
                    focal_search: bool = True, bgra: np.ndarray | None = None
                    ) -> tuple[float, Registration, plane_height.CoarseSearch | None]:
    """The top face's height and the registration whose camera lines it up: the outline's edge
    fit over the whole range on the tray plane ("outline"; with align.focal_factors the focal
    length is searched too), or near the silhouette's height ("silhouette+outline"), or the
    silhouette alone. With the tray-plane search, its coarse candidates come too, for
    read_frame to try others when the first reads no block. `bgra`: the frame as BGRA, when the
    caller has it (`_bgra`), for the search's view."""
    method = str(p.cfg["top"].get("height_method", "outline"))
    z = float("nan")
    cs = None
    win = float(p.cfg["align"].get("silhouette_window_mm", 0.0))
    if method != "outline" or win > 0:
        bg = p.background if p.cfg["top"].get("height_uses_tray_model", True) else None
        z = tl.silhouette_height(p.cfg, p.tray, reg, img, tray_bgr, bg, gains)
    if method == "outline":
        lo, hi = (z - win, z + win) if win > 0 and np.isfinite(z) else (0.0, np.inf)
        if p.cfg["align"].get("search", "plane") == "plane":
            cs = plane_height.coarse_search(p.cfg, p.tray, reg, img, tray_bgr, p.background, gains, lo, hi,
                                            p.height_probes, focal_search, bgra=bgra)
            z, reg = plane_height.refine_candidate(p.cfg, p.tray, reg, img.shape, cs, cs.chosen, tray_bgr,
                                                   p.background, gains, focal_search)
        else:
            z = tl.fit_height(p.cfg, p.tray, reg, img, tray_bgr, p.background, gains, lo, hi)
    elif method != "silhouette":
        z = tl.align_height(p.cfg, p.tray, reg, img, z)
    if not np.isfinite(z):
        z = float(p.cfg["top"]["fallback_levels"]) * p.tray.block_mm[2]
    return z, reg, cs


def face_scores_at(p: Pipeline, img: np.ndarray, zs_mm: Sequence[float]) -> list[float]:
    """How well the top face lines up at each height of `zs_mm` on this frame, with the
    calibration's camera: the height search's score, in full, at its candidate nearest each
    (-inf for all with a `top.height_method` that has no such search). For a caller that knows
    the top is at one of a few heights and wants the frame to choose (the build, between a level
    and the one two above it, which read alike). Scored in full (`coarse_search(full=True)`): the
    height search itself scores only the candidates that can come near its best, and the true
    height is not always among them."""
    if str(p.cfg["top"].get("height_method", "outline")) != "outline" or p.cfg["align"].get("search", "plane") != "plane":
        return [float("-inf")] * len(zs_mm)
    img = straighten(p, img)
    ctx = frame_context(p, img)
    cs = plane_height.coarse_search(p.cfg, p.tray, ctx.registration, img, ctx.tray_bgr, p.background, ctx.gains,
                                    0.0, np.inf, p.height_probes, False, full=True)
    return [float(cs.scores[int(np.argmin(np.abs(cs.zs - float(z))))]) for z in zs_mm]


@dataclass(frozen=True)
class FrameContext:
    """What every reading of one frame shares: the tray's registration and this frame's light."""

    registration: Registration
    tray_bgr: np.ndarray
    gains: np.ndarray
    # what the frame's readings have worked out, shared by all its contexts (memoised): a retry, a
    # face one slot over or another focal length reads slots and glyphs read already
    memo: dict = field(default_factory=dict, compare=False, repr=False)


BGRA = "bgra"  # the memo's key for the frame as BGRA (top_level.frame_bgra)


def _bgra(memo: dict | None, img: np.ndarray) -> np.ndarray:
    """The frame as BGRA (top_level.frame_bgra), once a frame, for the slots', glyphs' and face's
    crops (top_level.warp_frame: the same pixels in two thirds of the time, some 0.2 ms a frame);
    without a memo the frame itself (a conversion for one call's crops costs more than it saves)."""
    return img if memo is None else memoised(memo, BGRA, (img,), lambda: tl.frame_bgra(img))


def _ink(p: Pipeline, reg: Registration, img: np.ndarray, z: float, orient: str, slot: int,
         memo: dict | None = None) -> tuple[float, float] | None:
    """Where one slot position's glyph ink lies (top_level.glyph_ink_offset; None: no ink found)."""
    # (keyed by the registration too, as the glyphs, glyph probabilities and evidence are: a moved
    # face's or another focal length's no longer push out the face's own, read again later)
    return memoised(memo, ("ink", float(z), orient, int(slot), id(reg)), (p, reg, img),
                 lambda: tl.glyph_ink_offset(p.cfg, p.tray, reg, _bgra(memo, img), z, orient, slot))


def _glyphs(p: Pipeline, reg: Registration, img: np.ndarray, z: float, orient: str, slots: Sequence[int],
            tray_bgr: np.ndarray, memo: dict | None = None) -> list[tuple[tuple[float, float], tuple]]:
    """Each slot position's glyph: where its ink lies (top_level.glyph_offset: the slot's centre
    when no ink is found) and the glyph features of the crop round it, as laid and turned, white-
    balanced by the frame's tray colour where it shows a cast (top_level.glyph_white_balance).
    Those the frame has not read yet are read together (their features in one pass:
    tl.glyph_features_turned_many)."""
    def make(todo: list[int]) -> list[tuple[tuple[float, float], tuple]]:
        offsets = [_ink(p, reg, img, z, orient, slots[i], memo) or (0.0, 0.0) for i in todo]
        bgra = _bgra(memo, img)
        crops = [tl.glyph_crop(p.cfg, p.tray, reg, bgra, z, orient, slots[i], offset=o) for i, o in zip(todo, offsets)]
        return list(zip(offsets, tl.glyph_features_turned_many(p.cfg, crops, _white_balance(p, tray_bgr, memo))))
    return memoised_many(memo, [("glyph", float(z), orient, int(s), id(reg)) for s in slots], (p, reg, img, tray_bgr),
                         make)


def _white_balance(p: Pipeline, tray_bgr: np.ndarray, memo: dict | None = None) -> np.ndarray | None:
    """The frame's white balance for glyphs (top_level.glyph_white_balance), once a frame."""
    return memoised(memo, ("white balance",), (p, tray_bgr), lambda: tl.glyph_white_balance(p.cfg, tray_bgr))


NO_COLOUR = ("the picture has no colour (a black-and-white camera or image): the blocks' colours cannot be read; "
             "set the camera to colour")


def has_colour(img: np.ndarray, step: int = 8, least: int = 4) -> bool:
    """Whether a 3-channel frame shows any colour: some pixel of a sparse grid (every `step`th
    row and column) whose channels differ by `least` or more. A grey-scale picture saved as
    colour has three equal channels, and read so a fresh kit's photo came out green 1, green 2,
    yellow 3 for red 1, green 2, red 3 (the yellow at 0.71); a tower's painted blocks always show
    some colour. About 10 us a frame (OpenCV on a nearest-pixel shrink).

    The grid's middle row is tested first: when the frame's sides are multiples of `step`, the
    shrink's pixels are img[::step, ::step] exactly (OpenCV's nearest pixel at a whole scale), so
    colour in that row is colour in the grid. It decides every bench photo, and reads 80 pixels
    of a frame the detector has pushed out of the cache, not 4,800 (some 30 us a frame)."""
    h, w = img.shape[:2]
    if h % step == 0 and w % step == 0 and h >= step and w >= step:
        row = step * (h // step // 2)
        b, g, r = cv2.split(np.ascontiguousarray(img[row:row + 1, ::step]))
        if max(cv2.norm(b, g, cv2.NORM_INF), cv2.norm(g, r, cv2.NORM_INF)) >= least:
            return True
    sub = cv2.resize(img, (max(1, w // step), max(1, h // step)), interpolation=cv2.INTER_NEAREST)
    b, g, r = cv2.split(sub)
    return max(cv2.norm(b, g, cv2.NORM_INF), cv2.norm(g, r, cv2.NORM_INF)) >= least


def frame_context(p: Pipeline, img: np.ndarray) -> FrameContext:
    """Register the tray and measure the light. Raises UnreadableFrame (a ValueError) for a
    frame that is not a colour image (or one without colour, `has_colour`) and TrayNotFound when
    the markers cannot be seen."""
    if img is None or not isinstance(img, np.ndarray) or img.ndim != 3 or img.shape[2] != 3:
        raise UnreadableFrame("the frame is not a colour image")
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    # the frame's grain (every 32nd row), measured once: the markers' crop search and the hands'
    # cell means (`_cell_means`) both take it
    grain = frame_grain(gray[::32])
    reg = register(p.cfg, p.tray, gray, p.detector, grain)
    if not has_colour(img):
        raise UnreadableFrame(NO_COLOUR)
    tray_bgr = tl.tray_color(p.cfg, p.tray, reg, img, p.tray_points)
    ctx = FrameContext(reg, tray_bgr, tl.color_gains(p.cfg, tray_bgr), {})
    remember(ctx.memo, GRAIN, (img,), grain)
    return ctx


GRAIN = "grain"  # the memo's key for the frame's grain (tray.frame_grain of every 32nd row of its grey)
CELL_MEANS = "cell means"  # ... for the frame the hand grid samples (hands.cell_means)


def _cell_means(p: Pipeline, ctx: FrameContext, img: np.ndarray) -> np.ndarray:
    """The frame the hand grid's cells are sampled from (hands.cell_means, with the grain
    `frame_context` measured), once a frame: hands looked for again at another height, and each
    level `read_level` reads, sample the same one (a blur of the whole frame on a grainy one).
    The frame itself comes as its BGRA (`_bgra`): the cells are warped from it in half the time,
    each channel alone (the same B, G, R bytes). (A blur of the BGRA lost in the frame.)"""
    def make():
        grain = recalled(ctx.memo, GRAIN, (img,))
        means = cell_means(p.cfg["hands"], img, grain[0] if grain else None)
        return _bgra(ctx.memo, img) if means is img else means
    return memoised(ctx.memo, CELL_MEANS, (p, img), make)


def slot_features(p: Pipeline, reg: Registration, img: np.ndarray, z: float, orient: str, gains: np.ndarray,
                  tray_bgr: np.ndarray, first: int = 0, memo: dict | None = None):
    """Per slot: the colour patch (8-bit Lab after colour constancy), colour, glyph (as laid and
    turned 180 degrees) and occupancy features.

    Each slot's glyph is found first; the colour patch of a slot whose glyph lies off the slot is
    cut again round it (`top_level.slot_cuts`): a played top can lie half a slot across, and a
    patch cut at the nominal slot is then half one block, half its neighbour (a vivid neighbour
    wins the colour). Occupancy stays on the nominal slots: an empty slot's glyph search can
    find the neighbour's glyph. `first`: the slot position the three start at (see
    top_level.slot_patches). `memo`: the frame's (FrameContext.memo), for glyphs read already."""
    glyphs = _glyphs(p, reg, img, z, orient, range(first, first + 3), tray_bgr, memo)
    nominal, _, again = tl.slot_cuts(p.cfg, p.tray, reg, _bgra(memo, img), z, orient, first, [g[0] for g in glyphs])
    labs = pf.patch_labs(nominal + list(again.values()), gains)  # one conversion and one feature pass for all
    feats, occ = pf.slot_patch_features(p.cfg, labs, 3)
    col = feats[:3].copy()
    col[list(again)] = feats[3:]
    col_labs = labs[:3].copy()
    col_labs[list(again)] = labs[3:]
    gly = [f for g in glyphs for f in g[1]]  # each slot's glyph as laid, then turned
    return col_labs, col, np.array(gly), occ


@dataclass(frozen=True)
class SlotEvidence:
    """Per-slot probabilities: occupancy (3,), colour (3, 5), glyph (3, 8)."""

    p_occ: np.ndarray
    p_col: np.ndarray
    p_gly: np.ndarray
    # (3, h, w, 3) 8-bit Lab of the patches the colour was read from (for `two_coloured_slots`)
    labs: np.ndarray | None = field(default=None, compare=False, repr=False)
    # (3,) bool: the slot's glyph was read only from a crop moved off where the ink was found
    # (`glyphs_looked_for_again`); None: none was
    moved: np.ndarray | None = field(default=None, compare=False, repr=False)


def slot_evidence(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                  first: int = 0) -> SlotEvidence:
    """The slots' probabilities at height z (made once per frame for the same registration)."""
    return memoised(ctx.memo, ("evidence", float(z), orient, int(first), id(ctx.registration)),
                    (p, ctx.registration, img, ctx.tray_bgr, ctx.gains),
                 lambda: _slot_evidence(p, ctx, img, z, orient, first))


def _slot_evidence(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                   first: int = 0) -> SlotEvidence:
    labs, col, gly, occ = slot_features(p, ctx.registration, img, z, orient, ctx.gains, ctx.tray_bgr, first, ctx.memo)
    p_occ = _class_probs(p.models.get("occupancy"), occ, ("empty", "block"))[:, 1]
    p_col = _class_probs(p.models.get("color"), col, COLOR_CLASSES)
    # (a block lies one way round: each glyph's better turn)
    p_gly = _glyph_probs_at(p, ctx, img, z, orient, tuple(range(first, first + 3)), lambda: gly)
    th = float(p.cfg["decision"]["tray_empty_above"])
    if th < 1.0 and z <= float(p.cfg["decision"]["tray_check_below_levels"]) * float(p.tray.block_mm[2]):
        # against the tray's colour in this frame: the learnt tray model never saw under the tower
        bare = tl.slot_tray_fraction(p.cfg, p.tray, ctx.registration, img, z, orient, ctx.tray_bgr, None, ctx.gains,
                                     first)
        p_occ = np.where(bare > th, np.minimum(p_occ, 1.0 - bare), p_occ)
    return SlotEvidence(p_occ, p_col, p_gly, labs)


def two_coloured_slots(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading]) -> list[int]:
    """The slots read as a block whose two ends are surely two different block colours.

    A block is one colour from end to end. A lone block laid across the top, seen from straight
    above, lets the level below show through the empty part of the face: read in the other
    orientation, the level below's blocks come out whole and surely, glyphs and all (synthetic
    707/0013, 404/0073), but each such slot holds a third of the lone block at one end. The ends
    (`decision.end_mm` of each) are classified by the colour model alone; both sure
    (`decision.two_colours_sure`) of two different colours flags the reading. A hand over an end
    is seldom surely a block colour.

    Ends whose mean chromaticity lies within `decision.two_colours_same_ab` (8-bit a, b) are one
    colour without asking the model (56% of held slots have their ends within 5, 78% within
    10). On the 98 kits' 15,081 held slots read, no slot the model flagged had its ends closer
    than 17.2; the model cost 0.4 ms a frame."""
    dc = p.cfg["decision"]
    sure = float(dc.get("two_colours_sure", 0.0))
    if sure <= 0 or ev.labs is None or p.models.get("color") is None:
        return []
    held = [s for s, r in enumerate(slots) if r.block is not None]
    same = float(dc.get("two_colours_same_ab", 0.0))
    if same > 0:
        held = [s for s in held if end_chroma_gap(p, ev, s) >= same]
    if not held:
        return []
    pc = end_colours(p, ev, held)
    return [s for k, s in enumerate(held) if two_colours_sureness(pc[k, 0], pc[k, 1], sure) > 0]


def end_width(p: Pipeline, ev: SlotEvidence) -> int:
    """How many columns of a slot's colour patch (`ev.labs`) make one end (decision.end_mm)."""
    w = ev.labs.shape[2]
    return max(2, int(round(w * float(p.cfg["decision"].get("end_mm", 18.0)) / float(p.tray.block_mm[0]))))


def end_chroma_gap(p: Pipeline, ev: SlotEvidence, slot: int) -> float:
    """How far apart the mean (a, b) of a slot's two ends lie (8-bit Lab units)."""
    e = end_width(p, ev)
    lab = ev.labs[slot]
    _, a0, b0, _ = cv2.mean(lab[:, :e])  # (OpenCV takes the strided columns as they are: no copy)
    _, a1, b1, _ = cv2.mean(lab[:, -e:])
    return math.hypot(a0 - a1, b0 - b1)


def end_colours(p: Pipeline, ev: SlotEvidence, which: Sequence[int]) -> np.ndarray:
    """The colour model's probabilities (len(which), 2, 5) of each listed slot's two ends
    (decision.end_mm of each), from the patches its colour was read from (`ev.labs`)."""
    e = end_width(p, ev)
    ends = np.stack([end for s in which for end in (ev.labs[s][:, :e], ev.labs[s][:, -e:])])
    return _class_probs(p.models["color"], pf.color_features(ends), COLOR_CLASSES).reshape(len(which), 2, -1)


def two_colours_sureness(pa: np.ndarray, pb: np.ndarray, sure: float) -> float:
    """How surely two ends are two different block colours: the lesser of their likeliest
    colours' probabilities when those differ, both reach `sure` and neither is a Wild (whose
    white reads as no colour); else 0."""
    ia, ib = int(np.argmax(pa)), int(np.argmax(pb))
    if ia == ib or pa[ia] < sure or pb[ib] < sure or "wild" in (COLOR_CLASSES[ia], COLOR_CLASSES[ib]):
        return 0.0
    return float(min(pa[ia], pb[ib]))


def crossed_middle(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                   slots: Sequence[SlotReading]) -> bool:
    """Whether a glyph is read at an end of the middle block: a block lies across it there.

    A block's glyph lies at its centre and nowhere else, so the ends of a middle block read in
    the right orientation are plain. A lone block laid across the top's end slot (the other
    orientation's slot 0 or 2) has its glyph just there; read in the level below's orientation,
    the level below's blocks come out whole, and when the lone block is their colour
    (synthetic 1139/0005, all yellow) the two-colour check cannot see it. The other
    orientation's end slots are read for a glyph (glyphs_seen_at's test), only where ink is found
    (top_level.glyph_ink_offset; a crossing Wild, whose white W encloses no ink, is missed). On
    the kits it fired on three readings of about 900 with a middle block, all three wrong.
    With decision.crossing_ink_centred, ink found only at the search's limit along the block
    (`_at_search_end`) is not looked at: on 60 kits it lay there on 29 of the 31 right readings
    that fired the check (5 of them then read across wrongly) and on none of the 15 tops the
    check sent across rightly."""
    if slots[1].block is None:
        return False
    other = "x" if orient == "y" else "y"
    return any(inked_glyph_seen(p, ctx, img, z, other, s) for s in (0, 2))


def inked_glyph_seen(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str, slot: int) -> bool:
    """glyphs_seen_at for one slot position, asked only where the glyph search finds ink (no
    ink: no glyph, and the crop and the glyph model are not paid for)."""
    if p.models.get("glyph") is None:
        return False
    ink = _ink(p, ctx.registration, img, z, orient, slot, ctx.memo)
    if ink is None or (p.cfg["decision"].get("crossing_ink_centred", False) and _at_search_end(p, ink)):
        return False
    return bool(glyphs_seen_at(p, ctx, img, z, orient, (slot,))[0])


def _at_search_end(p: Pipeline, ink: tuple[float, float]) -> bool:
    """Whether the glyph ink was found only at the glyph search's limit along the block (the
    found place clamped there: top_level.glyph_ink_offset). The ink lies beyond the search
    area; for a crossing block it is the seam between two blocks of the level read, 12.5 mm
    from the crossing slot's centre (the limit is 9 mm), not a glyph at that centre."""
    gc = p.cfg["glyph"]
    cw = float(gc["crop_w_mm"])
    half = (max(cw, float(gc.get("search_w_mm", cw))) - cw) / 2
    return half > 0 and abs(ink[0]) >= half - 0.5


def _best_joint(ev: SlotEvidence) -> np.ndarray:
    """Per slot: the likeliest colour's probability times the likeliest glyph's (the ufunc's
    reduce, not the .max method's wrapper)."""
    return np.maximum.reduce(ev.p_col, axis=1) * np.maximum.reduce(ev.p_gly, axis=1)


def contested_empties(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading]) -> list[int]:
    """The slots read empty although their colour and glyph are both read well (their product
    at decision.contested_above or more). The empty reading stands (the occupancy model
    outweighs the glyph there), but it is contested, so never given as sure: on a tall top seen
    from aside (synthetic 929/0069) the occupancy model put a clear blue Reverse at 0.01, and on
    a fresh kit a red 1 at 0.29, its colour at 1.00 and glyph at 0.83 (5103/0051). Over 1280
    readings of sixteen kits a threshold of 0.5 or 0.6 flags only wrong readings (4 and 3), 0.4
    flags 49 right ones too (a bare crop's likeliest glyph often reads 0.4-0.5): 0.6. Since a
    slot left contested is named (`contested_blocks`), 0.5: on the nine sets of 2026-11-30 slots
    in view +3 and orientations +3 against 0.6 (the reading across it sends more lone blocks to),
    slots in all +10, one reading fewer wrong and sure; 0.45 named more blocks under hands
    wrongly, and 0.4 lost 8 slots in view."""
    sure = _best_joint(ev) >= float(p.cfg["decision"]["contested_above"])
    return [s for s, r in enumerate(slots) if r.block is None and bool(sure[s])]


def contested_blocks(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading],
                     contested: Sequence[int], hands: Sequence = ()) -> tuple[SlotReading, ...]:
    """The contested empty slots (`contested_empties`, as `read_frame` leaves them after its
    retries) named by their likeliest block, at the confidence the occupancy model leaves it
    (its candidate's: the block's colour x glyph share times the occupancy), so the reading
    stays unsure and its note says why. decision.contested_named false: they stay empty.

    Why: the occupancy model reads a slot's seams and edges, and a block a few mm off its slot
    or a tall top's end seen from aside shows the level below's seams beside it, while its own
    colour and glyph are read well (synthetic family-3 0017: a red 1 pushed off its slot read
    empty at occupancy 0.26, red 1 at 0.86 of the joint). On 4,720 photos of nine sets, 43 slots
    were left contested (at decision.contested_above 0.6): 38 held a block (33 of them the
    likeliest one) and 5 were empty. A slot read empty has an occupancy under
    decision.empty_below or no glyph seen, so the block named reads under `uncertain_below`.

    `read_frame` only, as `unread_glyph_blocks`: the map-guided `read_level` counts a block
    where the occupancy and the glyph both see one. With a hand over the tower (`hands`) a slot
    whose likeliest block is the Wild is left to `wild_by_its_colour`, as there: dark fingers
    and their shadow read black (at a threshold of 0.45 a green 3 under a hand was named so)."""
    if not p.cfg["decision"].get("contested_named", False) or not contested:
        return tuple(slots)
    out = list(slots)
    for i in contested:
        s = slots[i]
        if s.block is None and s.candidates and not (hands and s.candidates[0][0] == "wild"):
            name, conf = s.candidates[0]
            out[i] = replace(s, block=Block.parse(name), confidence=float(conf))
    return tuple(out)


def empties_out_of_view(p: Pipeline, reg: Registration, z: float, orient: str, first: int,
                        shape: tuple, slots: Sequence[SlotReading]) -> list[int]:
    """The slots read empty whose outline at height z leaves the frame: the camera sees only
    part of them, so an empty reading there is a guess (synthetic 707/0065: a tall tower
    leaning out of the picture, its red 4 half outside it, read empty)."""
    h, w = shape[:2]
    out = []
    for s, r in enumerate(slots):
        if r.block is not None:
            continue
        q = (reg.camera.plane_homography(z)
             @ _slot_outline(tuple(p.tray.block_mm), tuple(p.tray.tower_center), orient, s + first).T).tolist()
        # (the four corners' tests on Python floats: the same quotients, no NumPy call a test)
        if any(c <= 0 for c in q[2]):
            out.append(s)
            continue
        xs = [a / c for a, c in zip(q[0], q[2])]
        ys = [b / c for b, c in zip(q[1], q[2])]
        if any(x < 0 or x > w - 1 for x in xs) or any(y < 0 or y > h - 1 for y in ys):
            out.append(s)
    return out


@lru_cache(maxsize=64)
def _slot_outline(block_mm: tuple, tower_center: tuple, orient: str, slot: int) -> np.ndarray:
    """A slot's four corners (tl.slot_corners) with a column of ones (4, 3), read-only: made once
    per slot place, not per empty slot a frame (6 -> 0.3 us a slot)."""
    corners = tl.slot_corners(Tray("", {}, tower_center, block_mm), orient, slot)
    out = np.column_stack([corners, np.ones(4)])
    out.flags.writeable = False
    return out


def occupancy_with_glyph(dc: Mapping, p_occ: np.ndarray, p_col: np.ndarray, p_gly: np.ndarray) -> np.ndarray:
    """The occupancy probability once a block read surely by its colour and glyph (their
    product at decision.glyph_sure_above or more) is counted: its odds times
    decision.glyph_block_odds.

    The occupancy model weighs seams, edges and colour, and a clear block can fall under one
    half there (twin 77 0046, twin 123 0059: 0.39 and 0.29) although its colour and glyph read
    at 0.94 and more. A glyph read that surely is almost never an empty slot's (on the six kits
    1 of 349 empty slots read in the right orientation, against three blocks in four); with the
    colour sure too, none. The lack of a glyph is left to glyph_seen. Counted for the slots'
    final reading only: the orientation and height choices keep the occupancy model's own (a
    glyph read surely across the wrong orientation's cut must not pull them)."""
    k = float(dc.get("glyph_block_odds", 1.0))
    if k == 1.0:
        return p_occ
    sure = np.maximum.reduce(p_col, axis=1) * np.maximum.reduce(p_gly, axis=1) >= float(dc.get("glyph_sure_above", 1.0))
    if p_occ.dtype != np.float64:
        odds = p_occ / np.maximum(1.0 - p_occ, 1e-9) * k
        return np.where(sure, odds / (1.0 + odds), p_occ)
    # (on Python floats: each step rounds as NumPy's float64 does, without a call per step on 3 values)
    out = []
    for o, s in zip(p_occ.tolist(), sure.tolist()):
        if s:
            odds = o / max(1.0 - o, 1e-9) * k
            o = odds / (1.0 + odds)
        out.append(o)
    return np.array(out)


def as_read(p: Pipeline, ev: SlotEvidence) -> SlotEvidence:
    """The evidence as the slots' final reading counts it: occupancy_with_glyph's occupancy."""
    return SlotEvidence(occupancy_with_glyph(p.cfg["decision"], ev.p_occ, ev.p_col, ev.p_gly), ev.p_col, ev.p_gly,
                        moved=ev.moved)


def reading_evidence(ev: SlotEvidence, empty_weight: float, covered: np.ndarray | None = None,
                     covered_value: float = 0.0) -> float:
    """How well one orientation's three slots read: each slot as a whole, confidently read
    block, or (with `empty_weight`) as surely empty, times the chance that some slot holds a
    block (a top level has one). The share of a slot that a hand covers (`covered`, per slot,
    from `covered_slots`) counts `covered_value` instead (`skin.covered_evidence`, the same in
    either orientation): read through fingers, neither orientation's reading says anything.

    Counting only the blocks read favours the wrong orientation whenever the top has one or two
    blocks: its slots run along the level below, whose blocks show for two thirds of their
    length and read as blocks, while the right orientation's empty slots (the level below seen
    across) add nothing. A slot surely empty is as good a reading as a block surely read; and
    a reading of three empty slots (a full top seen across, each slot cut into three by the
    seams) is no reading of a top at all."""
    # (on Python floats: each step rounds as NumPy's float64 does, and NumPy sums and multiplies
    # three values in order, as sum and math.prod do; no NumPy call per step on 3 values)
    occ, best = ev.p_occ.tolist(), _best_joint(ev).tolist()
    per_slot = [o * b + empty_weight * (1.0 - o) for o, b in zip(occ, best)]
    if covered is not None:
        per_slot = [(1.0 - c) * v + c * covered_value for c, v in zip(_floats(covered), per_slot)]
    some_block = 1.0 - math.prod([1.0 - o for o in occ]) if empty_weight > 0 else 1.0
    return sum(per_slot) * some_block


ARM_LAB = "arm colour"  # the memo's key for this frame's arm colour (skin.arm_lab; None: no hand)


def skin_on_face(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float,
                 face: np.ndarray | None = None) -> np.ndarray | None:
    """The top face's pixels at height z (as `tl.face_image` cuts it) that a hand covers
    (`skin.skin_mask`, with the arm colour read_frame measured before the top: the memo's
    ARM_LAB), or None: no hand reaches the tower, or none lies over the face."""
    arm = ctx.memo.get(ARM_LAB)
    if arm is None:
        return None
    return memoised(ctx.memo, ("skin", float(z)), (p, ctx.registration, img),
                 lambda: sk.skin_mask(p.cfg["skin"], tl.face_image(p.cfg, p.tray, ctx.registration,
                                                                   _bgra(ctx.memo, img), z)
                                      if face is None else face, arm))


def covered_slots(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str) -> np.ndarray | None:
    """The share of each slot of the orientation at height z that a hand covers (its pixels of
    the arm's colour, `skin_on_face`), for reading_evidence; None when no hand lies over the face.
    Counted in proportion, not past a threshold: on 86 kits a slot counted whole from 0.4 of it
    covered read 4 tops fewer right than the share did (see docs/vision.md)."""
    def make():
        mask = skin_on_face(p, ctx, img, z)
        return None if mask is None else sk.slot_cover(p.cfg["orientation"], p.tray.block_mm, mask, orient)
    # (once a face, orientation and arm colour: read_frame asks for it for the confidence and for
    # the empties)
    return memoised(ctx.memo, ("cover", float(z), orient), (p, ctx.registration, img, ctx.memo.get(ARM_LAB)), make)


def glyph_seen(p: Pipeline, ev: SlotEvidence) -> np.ndarray:
    """Per slot: whether a glyph was read there, the glyph model naming one surely
    (decision.glyph_seen_above).

    Every block carries its number or symbol on top. Through an empty outer slot the camera sees
    the level below crosswise, the ends of three blocks whose glyphs lie elsewhere: their colour
    and seams make the occupancy model say "block", often at 0.99 and more, but the glyph model
    reads no glyph there: it learnt such crops as NO_GLYPH (glyph_probs); one calibrated without
    that class falls back to its prior (about 0.35 for its likeliest class on most kits, against
    0.97 and more for nine blocks in ten, but a sure 4 on one). Without a glyph model every slot
    counts as seen."""
    if p.models.get("glyph") is None:
        return np.ones(len(ev.p_occ), bool)
    return _named_surely(p, ev.p_gly)


def _named_surely(p: Pipeline, p_gly: np.ndarray) -> np.ndarray:
    """Per row of glyph probabilities: whether the likeliest glyph reaches decision.glyph_seen_above."""
    return np.maximum.reduce(p_gly, axis=1) >= float(p.cfg["decision"].get("glyph_seen_above", 0.0))


def slot_readings(p: Pipeline, ev: SlotEvidence) -> tuple[SlotReading, ...]:
    """Each slot's block (or empty) with its confidence and top-3 candidates. A slot the
    occupancy model calls a block but where no glyph is seen (`glyph_seen`) reads empty with the
    low confidence of a doubtful block, so the reading is flagged uncertain. A block whose glyph
    was read only from a moved crop (`glyphs_looked_for_again`) has its confidence times
    decision.moved_glyph_trust. A block whose colour and glyph the two models read as no block
    there is (the joint's sum before it is normalised, under decision.colour_glyph_agree_below)
    is no surer than that sum: normalised, a colour read at 0.25 beside a glyph the best colour
    cannot carry became a sure block (synthetic 28/0021: a purplish blue 2 read wild at 0.74,
    yellow at 0.25, and given as a yellow 2 at 0.96)."""
    ev = as_read(p, ev)
    held = blocks_held(p, ev).tolist()
    trust = float(p.cfg["decision"].get("moved_glyph_trust", 1.0))
    agree_below = float(p.cfg["decision"].get("colour_glyph_agree_below", 0.0))
    occ, cols, glys = ev.p_occ.tolist(), ev.p_col.tolist(), ev.p_gly.tolist()  # (Python floats: no 0-d arrays)
    moved = ev.moved.tolist() if ev.moved is not None else [False] * 3
    slots = []
    for s in range(3):
        post, agreement = _block_posterior(cols[s], glys[s])
        cands = tuple((n, round(q * occ[s], 4)) for n, q in post[:3])
        if not held[s]:
            slots.append(SlotReading(None, 1 - occ[s], cands))
        else:
            conf = occ[s] * post[0][1] * (trust if moved[s] else 1.0)
            if agreement < agree_below:
                conf = min(conf, agreement)
            slots.append(SlotReading(Block.parse(post[0][0]), conf, cands))
    return tuple(slots)


def _shift_mm(dx: float, dy: float) -> np.ndarray:
    """A move of the crop by (dx, dy) slot mm (the `jitter` of top_level.glyph_crop)."""
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy], [0.0, 0.0, 1.0]])


def glyphs_looked_for_again(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str, first: int,
                            ev: SlotEvidence) -> SlotEvidence:
    """The reading's blocks whose glyph is not seen, looked for again in crops moved to the
    eight points round the first one, glyph.look_again_mm apart along and across the block
    (0: off).

    The crop is cut round the ink the glyph search finds. Blurred, a thin Skip or Reverse can sit
    a little off that, and the glyph model then reads no glyph: the block reads empty, doubtful.
    Of the forty-five such blocks in view on 4,640 photos of sixty-two kits, the crops moved 2 mm
    named twenty right and eight wrong (all read wrongly as empty before), and none of 323 empty
    slots as a block. Where one is named, its confidence is lowered (`slot_readings`), so the
    reading says it is unsure. Only slots the occupancy model calls a block
    (decision.empty_below) are looked at; about 0.3 slots a photo."""
    mm = float(p.cfg["glyph"].get("look_again_mm", 0.0))
    gm = p.models.get("glyph")
    if mm <= 0 or gm is None:
        return ev
    read = as_read(p, ev)
    want = np.flatnonzero((read.p_occ >= float(p.cfg["decision"]["empty_below"])) & ~glyph_seen(p, ev))
    if not len(want):
        return ev
    moves = [_shift_mm(dx, dy) for dx in (-mm, 0.0, mm) for dy in (-mm, 0.0, mm) if dx or dy]
    reg = ctx.registration
    wb = _white_balance(p, ctx.tray_bgr, ctx.memo)
    crops = []
    bgra = _bgra(ctx.memo, img)
    for s in want:
        offset = _ink(p, reg, img, z, orient, first + int(s), ctx.memo) or (0.0, 0.0)
        crops.extend(tl.glyph_crop(p.cfg, p.tray, reg, bgra, z, orient, first + int(s), jitter=J, offset=offset)
                     for J in moves)
    feats = [f for pair in tl.glyph_features_turned_many(p.cfg, crops, wb) for f in pair]
    P = glyph_probs(gm, np.array(feats)).reshape(len(want), len(moves), -1)
    p_gly, moved = ev.p_gly.copy(), np.zeros(len(ev.p_gly), bool)
    for k, s in enumerate(want):
        best = P[k, int(np.argmax(P[k].max(axis=1)))]
        if _named_surely(p, best[None])[0]:
            p_gly[s], moved[s] = best, True
    return replace(ev, p_gly=p_gly, moved=moved) if moved.any() else ev


def _uncertainty(p: Pipeline, slots, o_conf: float | None, hands: Sequence = (),
                 covered: np.ndarray | None = None) -> tuple[bool, str]:
    """Whether the reading is reported unsure, and why. With a hand over the tower a slot needs
    decision.uncertain_below_under_hands: the hand may cover part of the top. On 2,400 photos of
    32 unseen synthetic kits (2026-11-29) every reading given sure with its orientation wrong (3,
    the level below read through spread fingers) had a hand over the tower and a slot at
    0.65-0.68: at 0.7 under hands, readings wrong and sure 11 -> 8, right readings reported
    unsure 549 -> 589 of 2,312. At 0.8 (2026-11-29, from 20:55 UTC), half of those left went
    too: a glyph or an end block a finger half hides reads at 0.7-0.8, wrong in one such reading
    of nine (86 kits: wrong and sure 21 -> 11, right readings unsure 704 -> 784 of 5,266; fresh
    kits 8 -> 6, twin 8 -> 3). A match takes no reading while a hand is over the tower, so only
    `identify --details` shows it. When the arm's colour shows which slots the hand covers
    (`covered`, per slot: `covered_slots`), a slot with less than
    decision.uncovered_under_hand_share of skin on it needs only decision.uncertain_below, as
    with no hand (86 kits: right readings reported unsure 785 -> 771 of 5,389, none more wrong
    and sure; the orientation keeps the hands' threshold)."""
    dc = p.cfg["decision"]
    base = float(dc["uncertain_below"])
    th = max(base, float(dc.get("uncertain_below_under_hands", 0.0))) if hands else base
    clear = float(dc.get("uncovered_under_hand_share", 0.0))
    ths = [base if hands and covered is not None and float(covered[i]) < clear else th for i in range(len(slots))]
    bits = [f"slot {i} at {s.confidence:.2f}" for i, s in enumerate(slots) if s.confidence < ths[i]]
    if o_conf is not None and o_conf < th:
        bits.append(f"orientation at {o_conf:.2f}")
    return bool(bits), ("low confidence: " + ", ".join(bits)) if bits else ""


def read_level(p: Pipeline, ctx: FrameContext, img: np.ndarray, level: int, orientation: str | None = None,
               t: float = 0.0, frame_seq: int = -1, table: TableMemory | None = None) -> tuple[TopLevelReading, np.ndarray]:
    """The reading if the top were level `level` (its face at level x block height), and each
    slot's occupancy probability. The orientation defaults to the tower's for that level (levels
    alternate); the match loop uses this when its map says which levels the top can be."""
    from referee.tower import Tower

    orient = orientation or Tower.orientation(int(level))
    z = float(level) * float(p.tray.block_mm[2])
    ev = glyphs_looked_for_again(p, ctx, img, z, orient, 0, slot_evidence(p, ctx, img, z, orient))
    slots = slot_readings(p, ev)
    ref = table.reference(ctx.registration.H, img.shape) if table is not None else None
    hands = find_hands(p.cfg, p.tray, ctx.registration, img, ctx.tray_bgr, z, p.background, ctx.gains, p.hand_grid, ref,
                       _cell_means(p, ctx, img), ctx.memo)
    slots = with_hands_known(p, ev, slots, hands)
    uncertain, note = _uncertainty(p, slots, None, hands)
    return TopLevelReading(orient, slots, hands, t, frame_seq, uncertain, note), ev.p_occ


def read_top(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float,
             need_block: bool = False) -> tuple[str, SlotEvidence, float] | None:
    """The top face at height z read: its orientation, that orientation's slot evidence and the
    orientation's probability.

    Each orientation's slots are read; the right one shows whole, confidently read blocks (the
    wrong one cuts across blocks). That evidence joins the face-pattern model. With
    `need_block`, both orientations are read whatever the face pattern says (each only where
    some glyph is seen), and only one that reads a block (reads_a_block) can win (None when
    neither does): a lone block across the top shows the level below's three stripes round it,
    which the face pattern takes for the top."""
    # no glyph, no block: with need_block an orientation showing no glyph is not read (the
    # glyphs alone cost a third of a full reading) and, with none showing one, nothing is
    glyphs = {o: glyphs_seen_at(p, ctx, img, z, o, (0, 1, 2)).any() for o in ("x", "y")} if need_block else {}
    if need_block and not any(glyphs.values()):
        return None
    def face_pattern():
        face = tl.face_image(p.cfg, p.tray, ctx.registration, _bgra(ctx.memo, img), z)
        of = tl.orientation_features(p.cfg, p.tray, face, skin_on_face(p, ctx, img, z, face))
        return _class_probs(p.models.get("orientation"), of[None], ("x", "y"))[0]
    po = memoised(ctx.memo, ("face", float(z)), (p, ctx.registration, img), face_pattern)
    dc = p.cfg["decision"]
    lam = float(dc["orientation_block_weight"])
    sure = float(dc["orientation_sure_above"])
    covered = float(p.cfg["skin"]["covered_evidence"])
    reads: dict[str, SlotEvidence] = {}
    score = {}
    skipped = []

    def scored(k: int, ev: SlotEvidence) -> float:  # the face pattern's log-odds plus the reading's evidence
        hand = covered_slots(p, ctx, img, z, "xy"[k])
        return float(np.log(max(po[k], 1e-6))
                     + lam * reading_evidence(ev, float(dc["orientation_empty_weight"]), hand, covered))
    for k, o in enumerate(("x", "y")):
        if lam and po[k] < 1 - sure and not need_block:
            skipped.append((k, o))
            continue  # the face pattern alone is sure enough: read only the other orientation
        if need_block and not glyphs[o]:
            score[o] = float(np.log(max(po[k], 1e-6)))  # it scores as a reading of no block: its face pattern alone
            continue
        ev = slot_evidence(p, ctx, img, z, o)
        reads[o] = ev
        score[o] = scored(k, ev)
        if lam == 0 and not need_block:
            break
    if skipped and reads and any(weakly_read(p, ev) for ev in reads.values()):
        k, o = skipped[0]  # a block read weakly: the face pattern's sureness is not enough
        reads[o] = slot_evidence(p, ctx, img, z, o)
        score[o] = scored(k, reads[o])
    if lam or need_block:
        allowed = [o for o in reads if not need_block or reads_a_block(p, reads[o], with_glyph=True)]
        if not allowed:
            return None
        sx, sy = score.get("x", -np.inf), score.get("y", -np.inf)
        probs = np.exp(np.array([sx, sy]) - max(sx, sy))
        probs = dict(zip(("x", "y"), probs / probs.sum()))
        orient = max(allowed, key=score.get)
        return orient, reads[orient], float(probs[orient])
    orient = "x" if po[0] >= po[1] else "y"
    if orient not in reads:
        reads[orient] = slot_evidence(p, ctx, img, z, orient)
    return orient, reads[orient], float(max(po))


def weakly_read(p: Pipeline, ev: SlotEvidence) -> bool:
    """Whether some block read (blocks_held) is read only weakly by its colour and glyph (their
    product under decision.second_look_below). The face pattern can be sure of the wrong
    orientation on a tall top seen from aside (synthetic 929/0039: 0.85 for the level below's,
    whose blocks then read at 0.66 and 0.52); read_top then reads the other one too. At 0.6,
    26 of 1072 first readings on the kits pay for that second reading (157 at 0.9, for no more
    right readings). A reading of no block is left alone: hands cover that top, and the other
    orientation read under them won on 12 of 13 such frames of the kits, wrongly on 11."""
    weak = _best_joint(ev) < float(p.cfg["decision"].get("second_look_below", 0.0))
    return bool((blocks_held(p, ev) & weak).any())


def glyphs_seen_at(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                   slots: Sequence[int]) -> np.ndarray:
    """Per slot position of the face: whether a glyph is read surely there (glyph_seen's test),
    as laid or turned; the glyph model runs once for all. Used past the face's ends, where the
    top's own level has no slot, and to pass over an orientation that shows no glyph at all."""
    if p.models.get("glyph") is None:
        return np.zeros(len(slots), bool)
    return _named_surely(p, _glyph_probs_at(p, ctx, img, z, orient, tuple(slots),
                                            lambda: _glyph_rows(p, ctx, img, z, orient, slots)))


def _glyph_rows(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                slots: Sequence[int]) -> np.ndarray:
    """The glyph features of these slot positions (_glyphs), as laid and turned, a row each."""
    return np.array([f for g in _glyphs(p, ctx.registration, img, z, orient, slots, ctx.tray_bgr, ctx.memo)
                     for f in g[1]])


def _glyph_probs_at(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                    slots: tuple[int, ...], rows) -> np.ndarray:
    """glyph_probs of the glyph features `rows()` gives for these slot positions (as _glyphs
    reads them), once a frame: glyphs_seen_at asks for a face's three before read_top's
    slot_evidence reads them (the retries, the focal alternatives), and the glyph model's
    kernel costs some 100 us a call. (Read-only: a caller that changes them copies first.)"""
    return memoised(ctx.memo, ("glyph probs", float(z), orient, slots, id(ctx.registration)),
                    (p, ctx.registration, img, ctx.tray_bgr),
                 lambda: glyph_probs(p.models.get("glyph"), rows()))


def shifted_face(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                 ev: SlotEvidence) -> tuple[int, SlotEvidence] | None:
    """The face taken one slot over, when the reading says it lies there: a glyph read surely
    just past one end of the face while the slot at the other end holds no block with its glyph.
    A level has three slots, so four glyphs in a row cannot all be on it; seen from aside with
    the focal length a little off, the face the outline fit lines up can lie a whole slot off
    the top (the top's blocks then read one slot over, and its outer block not at all). So the
    face moved must hold that outer block: decision.shift_min_gain blocks more than the face
    found (twin 77 photos 18 and 40, fresh 2026-11-28: a lone block was moved out of its slot
    for a glyph seen past the end that read as no block there, given as sure). A place past the
    end that shows the bare tray is never taken in: what the glyph model read there is the
    tray's grain or a marker, not a block (`bare_tray_at`). Returns (first slot position,
    evidence there) or None."""
    held = blocks_held(p, ev)
    for first, past, other_end in ((1, 3, 0), (-1, -1, 2)):
        # (the bare tray first: it rules out more than half the places looked at, for a third of
        # the glyph's cost)
        if held[other_end] or bare_tray_at(p, ctx, img, z, orient, past, held):
            continue
        if not glyphs_seen_at(p, ctx, img, z, orient, (past,))[0]:
            continue
        ev2 = slot_evidence(p, ctx, img, z, orient, first)
        if blocks_held(p, ev2).sum() >= held.sum() + int(p.cfg["decision"].get("shift_min_gain", 0)):
            return first, ev2
    return None


def _missing_glyphs_seen(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str,
                         slots: Sequence[int]) -> int:
    """How many of a moved face's slots where the face found no block (`slots`) may show a glyph
    (recentred_face): the face's own blocks can at best stay seen, so fewer than its gain here and
    the moved face cannot gain, told without its other slots' glyphs (on the bench's and the
    fresh families' 1,200 photos, 142 of 163 moved faces). Counted up to 1e-9 under
    decision.glyph_seen_above: the glyph model's rows read in a smaller batch differ in the last
    bits (5.6e-17 at most on 2,300 rows), and the three slots' batch decides."""
    if not slots:
        return 0
    best = np.maximum.reduce(_glyph_probs_at(p, ctx, img, z, orient, tuple(slots),
                                             lambda: _glyph_rows(p, ctx, img, z, orient, slots)), axis=1)
    return int(np.count_nonzero(best >= float(p.cfg["decision"].get("glyph_seen_above", 0.0)) - 1e-9))


def recentred_face(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str, first: int,
                   ev: SlotEvidence) -> tuple[FrameContext, SlotEvidence] | None:
    """The face moved onto its blocks' glyphs, when that finds a block the face found missed.

    A block's glyph lies at its centre, so the mean of where the glyph search found the ink of
    the blocks read (`_ink`, slot mm) is how far the face lies off its blocks. The height and
    focal search line a tall top seen from aside up to within a few mm, but some faces lie a
    third of a block off (synthetic 9903/0012: a clear green 2 read empty, its slot's box half
    on the level below's ends). When that mean is decision.recentre_mm or more, a slot where a
    block is missing shows ink, and the face moved by it (the camera moved the other way: the
    tray plane is not read here) holds decision.recentre_min_gain blocks more and its
    `reading_evidence` is more than the face found's plus decision.recentre_gain, the moved face
    is read. That gain is negative (-0.1): the block found costs a little evidence where the
    face found read its slot as surely empty (the level below's ends seen there), and on tall
    tops seen from aside the moved face held every block at up to 0.1 less (synthetic fam20/same
    0068: 0.055 less; docs/vision.md, 2026-11-29 from 16:18 UTC). Returns (the moved face's
    context, its evidence) or None. decision.recentre_mm 0: off."""
    dc = p.cfg["decision"]
    th = float(dc.get("recentre_mm", 0.0))
    gain = int(dc.get("recentre_min_gain", 0))
    held = blocks_held(p, ev)
    if th <= 0 or not held.any() or held.sum() + gain > 3:
        return None
    reg = ctx.registration
    inks = [_ink(p, reg, img, z, orient, first + s, ctx.memo) for s in range(3)]  # (read already: memo)
    if gain > 0 and all(inks[s] is None for s in np.flatnonzero(~held)):
        return None  # no ink where a block is missing: no block to find
    offs = [inks[s] for s in np.flatnonzero(held) if inks[s] is not None]
    if not offs:
        return None
    # (their mean as np.mean takes it, on Python floats: summed in order from the first, then divided)
    da, db = (sum(v[1:], v[0]) / len(offs) for v in zip(*(tuple(map(float, o)) for o in offs)))
    if math.hypot(da, db) < th:
        return None
    d = np.array([da, -db, 0.0]) if orient == "x" else np.array([db, da, 0.0])  # slot mm -> tray mm (slot_frame)
    cam = reg.camera
    moved = Camera(cam.K, cam.rvec, np.asarray(cam.tvec, np.float64).reshape(3) + cam.R @ d)
    ctx2 = FrameContext(replace(reg, camera=moved), ctx.tray_bgr, ctx.gains, ctx.memo)
    # a block held needs its glyph seen: with too few glyphs the moved face cannot gain, and its
    # slots' colour and occupancy (two thirds of a reading) are not cut (5 of 6 moved faces, 0.8 ms each)
    if p.models.get("glyph") is not None and (
            _missing_glyphs_seen(p, ctx2, img, z, orient, [first + int(s) for s in np.flatnonzero(~held)]) < gain
            or glyphs_seen_at(p, ctx2, img, z, orient, (first, first + 1, first + 2)).sum() < held.sum() + gain):
        return None
    ev2 = slot_evidence(p, ctx2, img, z, orient, first)
    if blocks_held(p, ev2).sum() < held.sum() + gain:
        return None
    w = float(dc.get("orientation_empty_weight", 1.0))
    if reading_evidence(as_read(p, ev2), w) <= reading_evidence(as_read(p, ev), w) + float(dc.get("recentre_gain", 0.0)):
        return None
    return ctx2, ev2


def bare_tray_at(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str, position: int,
                 held: np.ndarray) -> bool:
    """Whether the place of a slot just past an end of the face at height z (`position` -1 or 3)
    looks like the bare tray (`tl.slot_tray_fraction` at decision.shift_on_bare_tray_above or
    more), for a face that reads a block, at a height above decision.tray_check_below_levels.

    Past an end of a face lined up one slot off the top lies the top's own outer slot; past an
    end of a face on the top lies what is beside the tower, often the bare tray. Twin 903 photo
    44 (fresh, 2026-11-28): a lone green 2 read right where the face was found, then the glyph
    model named a glyph on the wooden tray just past the face's end, where the colour and glyph
    models read a Wild, and the face was moved one slot onto the tray, given as sure (twin 902
    photos 23 and 61 were moved onto the tray the same way, for no block there: shift_min_gain
    keeps those too). On the first levels a wooden tray can pass for a yellow block's end, so
    there this says nothing."""
    dc = p.cfg["decision"]
    th = float(dc.get("shift_on_bare_tray_above", 1.0))
    if th >= 1.0 or not held.any() or z <= float(dc["tray_check_below_levels"]) * float(p.tray.block_mm[2]):
        return False
    frac = tl.slot_tray_fraction(p.cfg, p.tray, ctx.registration, img, z, orient, ctx.tray_bgr, None, ctx.gains,
                                 position, count=1)  # (that slot's points alone: a third of the pixels tested)
    return bool(frac[0] >= th)


def blocks_held(p: Pipeline, ev: SlotEvidence) -> np.ndarray:
    """Per slot: whether it reads as a block with its glyph seen (as slot_readings reads it)."""
    return (ev.p_occ >= float(p.cfg["decision"]["empty_below"])) & glyph_seen(p, ev)


def reads_a_block(p: Pipeline, ev: SlotEvidence, with_glyph: bool = False) -> bool:
    """Whether some slot reads as a block with its glyph seen: every top level holds one.
    `with_glyph`: as the final reading counts it (occupancy_with_glyph), for the search for a top
    with a block once the first reading found none. There a lone block's slot often falls under
    half on the occupancy model alone (0.18 and 0.50, synthetic 939/0048 and 1029/0071, against
    its glyph and colour at 0.99), and the lone block's own orientation is passed over for the
    level below's, which reads no block either."""
    return bool(blocks_held(p, as_read(p, ev) if with_glyph else ev).any())


def _top_with_a_block(p: Pipeline, img: np.ndarray, reg0: Registration, ctx: FrameContext,
                      cs: plane_height.CoarseSearch, z: float,
                      hands: Sequence = ()) -> tuple[float, FrameContext, tuple] | None:
    """The first reading that finds a block (read_frame's retries): the other orientation at
    height z, then the next best coarse candidates (decision.other_heights), each refined from
    the markers' own registration reg0. Returns (height, context, read_top's result) or None.

    A face a hand lies over (decision.retry_under_hand_share of it the arm's skin,
    `skin_on_face`) reads no block because the fingers hide its glyphs, not because it is the
    wrong face. There a reading elsewhere is kept only when some block in it is read at
    decision.retry_under_hand_sure or more: a block read weakly at the same height across, or on
    a lower level, is most often the level below seen round the hand. (On 86 kits, of 28 tops
    under a hand whose right orientation a retry lost, 22 had found a block read under 0.6; of
    79 it set right, 66 found one read at 0.6 or more.) Else the first reading stays, reported
    as no block seen.

    A level above the chosen candidate is kept only when read surely, judged as the final
    reading judges it: with the frame's `hands` (the counted arms', `hands_of`) known, so that
    with none over the tower the empty slots round a lone block, which show the level below,
    are surely empty (`with_hands_known`). Judged without that, a lone Wild found a level above
    every candidate (bv family-2 0010, 16 levels) was dropped for its two empty slots read at
    0.40 and 0.23, and the level below was read in the wrong orientation.

    Last, the levels above are read where the markers place them, unrefined
    (`_level_above_unrefined`)."""
    dc = p.cfg["decision"]
    tries = int(dc.get("other_heights", 0))
    if tries <= 0:
        return None
    skin = skin_on_face(p, ctx, img, z)
    under_hand = skin is not None and float(np.mean(skin)) >= float(dc.get("retry_under_hand_share", 1.0))
    least = float(dc.get("retry_under_hand_sure", 0.0)) if under_hand else 0.0

    def sure_enough(slots: Sequence[SlotReading]) -> bool:
        return least <= 0 or max((s.confidence for s in slots if s.block is not None), default=0.0) >= least
    found = read_top(p, ctx, img, z, need_block=True)
    if found is not None and sure_enough(slot_readings(p, found[1])):
        return z, ctx, found
    others = plane_height.other_candidates(p.cfg, p.tray, cs, ctx.tray_bgr, p.background, ctx.gains, tries)
    # last, the levels above the chosen candidate: kept only when read surely (the top under a
    # hand read at some height above it can find a block there: the hands then read at that height)
    above = plane_height.levels_above(p.tray, cs, int(p.cfg["decision"].get("levels_above", 0)))
    for k, i in enumerate(others + above):
        z2, reg2 = plane_height.refine_candidate(p.cfg, p.tray, reg0, img.shape, cs, i, ctx.tray_bgr,
                                                 p.background, ctx.gains)
        ctx2 = FrameContext(reg2, ctx.tray_bgr, ctx.gains, ctx.memo)
        found = read_top(p, ctx2, img, z2, need_block=True)
        if found is None:
            continue
        slots = slot_readings(p, found[1])
        if not sure_enough(slots):
            continue
        if k < len(others) or not _uncertainty(p, with_hands_known(p, found[1], slots, hands), found[2])[0]:
            return z2, ctx2, found
    return _level_above_unrefined(p, img, reg0, ctx, z)


def _level_above_unrefined(p: Pipeline, img: np.ndarray, reg0: Registration, ctx: FrameContext,
                           z: float) -> tuple[float, FrameContext, tuple] | None:
    """_top_with_a_block's last try: the faces half a
    level to decision.levels_above_unrefined levels above z, half a level apart, each read where
    the markers' own camera (reg0) places it, not refined. Of the readings that hold
    decision.unrefined_blocks_least blocks read at decision.unrefined_block_sure or more, the one
    whose blocks' confidences sum highest is kept: a top reads best at its own height and fades
    a few mm either way, so the search stops two heights past the best.

    A tall top seen from aside can show no square outline of its own: every coarse peak lies on
    a lower level's outline, and a candidate above it, refined, slides back onto one of them
    (fresh synthetic 29/0060 and 31/0052, 18 and 17 levels, three blocks each: every candidate
    read no block, and the top was reported as not seen). Read where the markers place it, such
    a top's blocks read surely. One block is not enough: with no outline the face's place along
    the level is not known, and a lone block reads as surely one slot over (bv 2/0019: a lone
    green 4 on 17 levels, read in the middle slot from 215 to 265 mm). Under a hand over the
    first face too: two blocks read at 0.8 or more are no finger's edge (on the nine sets three
    tops under a hand gained their blocks and orientation this way, none lost)."""
    dc = p.cfg["decision"]
    count = int(dc.get("levels_above_unrefined", 0))
    if count <= 0:
        return None
    sure, least = float(dc["unrefined_block_sure"]), int(dc["unrefined_blocks_least"])
    level = float(p.tray.block_mm[2])
    z0 = height_seen_by(reg0, ctx.registration, z)
    top = min(level * float(p.cfg["top"]["max_levels"]),
              float(p.cfg["align"]["max_camera_fraction"]) * float(reg0.camera.center[2]))
    ctx0 = FrameContext(reg0, ctx.tray_bgr, ctx.gains, ctx.memo)
    best, best_sum, worse = None, 0.0, 0
    for k in range(1, 2 * count + 1):  # (half a level apart: z need not lie on a level's height)
        z2 = z0 + k * level / 2
        if z2 > top:
            break
        found = read_top(p, ctx0, img, z2, need_block=True)
        read = [] if found is None else [s.confidence for s in slot_readings(p, found[1]) if s.block is not None]
        if sum(c >= sure for c in read) >= least and sum(read) > best_sum:
            best, best_sum, worse = (z2, ctx0, found), sum(read), 0
        elif best is not None:
            worse += 1
            if worse >= 2:  # (past the height where the blocks read best: a top's reading fades either way)
                break
    return best


def doubtful_slots(p: Pipeline, ev: SlotEvidence) -> np.ndarray:
    """Per slot: whether the occupancy model sees a block where no glyph is read (slot_readings
    reads it empty and doubtful): the level below seen through an empty slot, or a face found off
    its place, whose slot cuts across blocks."""
    return (ev.p_occ >= float(p.cfg["decision"]["empty_below"])) & ~glyph_seen(p, ev)


def _better_focal(p: Pipeline, img: np.ndarray, reg0: Registration, ctx: FrameContext,
                  cs: plane_height.CoarseSearch, z: float, orient: str, ev: SlotEvidence) -> tuple[float, FrameContext, tuple] | None:
    """For a reading with a doubtful slot: the face fitted with other focal lengths
    (plane_height.focal_alternatives) and the tall face moved a few mm on its plane
    (plane_height.moved_face: the markers' camera centre a few mm off) read, each kept when its reading holds at least as many
    blocks with their glyphs seen and has no more doubtful slots, one of them strictly (the best
    reading_evidence among such; a reading of no block is none). Seen from far aside, the focal search's grid can leave a tall
    top's face a slot off its place; the reading, not the outline's edge fit, tells which fit
    lies on the top. Returns (height, context, read_top's result) or None."""
    bad = doubtful_slots(p, ev)
    if not bad.any():
        return None
    held, n_bad = int(blocks_held(p, ev).sum()), int(bad.sum())
    w = float(p.cfg["decision"]["orientation_empty_weight"])
    covered = float(p.cfg["skin"]["covered_evidence"])
    best, best_q = None, -np.inf
    alts = plane_height.focal_alternatives(p.cfg, p.tray, reg0, img.shape, cs, z, ctx.registration,
                                           ctx.tray_bgr, p.background, ctx.gains)
    moved = plane_height.moved_face(p.cfg, p.tray, reg0, cs, ctx.tray_bgr, p.background, ctx.gains)
    for z2, reg2 in alts + ([moved] if moved is not None else []):
        ctx2 = FrameContext(reg2, ctx.tray_bgr, ctx.gains, ctx.memo)
        if glyphs_seen_at(p, ctx2, img, z2, orient, (0, 1, 2)).sum() < max(held, 1):
            continue  # too few glyphs there to hold as many blocks (a third of a reading's cost)
        found = read_top(p, ctx2, img, z2)
        h2, b2 = int(blocks_held(p, found[1]).sum()), int(doubtful_slots(p, found[1]).sum())
        q = reading_evidence(found[1], w, covered_slots(p, ctx2, img, z2, found[0]), covered)
        if h2 >= max(held, 1) and b2 <= n_bad and (h2 > held or b2 < n_bad) and q > best_q:
            best, best_q = (z2, ctx2, found), q
    return best


def height_seen_by(reg0: Registration, reg: Registration, z: float) -> float:
    """The height at which the markers' own camera (reg0) sees the top face as large as the
    focal search's camera (reg) sees it at z: the hands are placed through the markers' camera.

    The focal search lines up the top face, not the camera: on the calibration's own camera it
    picked focal lengths 5-15% off on 34 of 80 frames (synthetic 808), placing the camera 25-88 mm
    off, and a hand seen through that camera lies at the wrong height and place. The markers'
    camera is within 6 mm there (16 mm with a camera 2.5% off the calibration's focal length).
    The face's scale about the camera's foot, Cz / (Cz - z), is what the search measured."""
    c0, c = float(reg0.camera.center[2]), float(reg.camera.center[2])
    if reg is reg0 or c <= 0 or not np.isfinite(z):
        return z
    return z * c0 / c


def _lone_block_across(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float,
                       orient: str, up_only: bool = False, first: Sequence[SlotReading] = (),
                       first_ev: SlotEvidence | None = None,
                       first_two: bool = False) -> tuple[str, SlotEvidence, tuple[SlotReading, ...], float] | None:
    """For a reading with a slot of two colours (two_coloured_slots), a glyph at an end of its
    middle block (crossed_middle) or a contested empty slot (contested_empties): the other
    orientation at the same height, kept when it reads a block and no slot of two colours.
    A lone block across the top's end, read in the level below's orientation, leaves that
    level's blocks whole and its own colour and glyph in a slot the occupancy model calls
    empty (synthetic 8702/0017, 8803/0016: on forty kits, 5 tops read right this way, none
    wrong; a contested empty is all but always a wrong reading). Seen from above, a
    lone block across the top lets the level below show through the rest of the face; read in
    the level below's orientation, its blocks come out whole but each holds an end of the lone
    block. Read across, the lone block is one colour and the rest reads empty. (On the kits, the
    other orientation of the correct readings flagged this way read no block at all.)

    When that reads no block, the lone block is read one level up (z plus a block's height): the
    face search lines up the largest face, and that is often the full level below (synthetic
    1129/0026, 1139/0066, one level short), where the lone block, a level nearer the camera,
    is read out of its place and no glyph is seen. So is one whose reading at the height given
    shows a slot of two colours: seen from far aside a level short, the lone block's slot
    takes in some of the level below round it (synthetic 29/0043: one level up it reads whole).

    `up_only`: for a reading that raised no such doubt but whose orientation stays unsure
    (decision.unsure_orientation_read_up): only one level up is read, and kept only when it is
    a sure reading (every slot at decision.uncertain_below or more) with no contested empty
    slot. A tall tower's lone block at one end of the top, seen from aside, leaves the level
    below's three blocks whole beside it (synthetic 31/0074: they read as the top, its
    orientation at 0.59).

    With decision.across_lone_only, a reading across is kept only when it can be the top that
    `first` (the first reading, `first_ev` its evidence) saw the other way
    (`_across_can_be_the_top`); one holding one block that shows two colours is kept when the
    first reading showed two colours too (`first_two`: it had a slot of two colours;
    `_two_colours_both_ways`). Returns (orientation,
    evidence, readings) at the height given or one level up, and that height, or None. When
    neither is kept, the reading across at the height given may still be a lone block whose
    glyph a hand hides (`lone_block_glyph_hidden`)."""
    other = "x" if orient == "y" else "y"
    lone = p.cfg["decision"].get("across_lone_only", False)  # (_across_can_be_the_top)
    for z2 in ((z + float(p.tray.block_mm[2]),) if up_only else (z, z + float(p.tray.block_mm[2]))):
        ev = slot_evidence(p, ctx, img, z2, other)
        if not reads_a_block(p, ev):
            continue
        slots = slot_readings(p, ev)
        if lone and not _across_can_be_the_top(p, ev, slots, first_ev, first):
            continue
        if up_only and (_uncertainty(p, slots, None)[0] or contested_empties(p, ev, slots)):
            continue
        if not two_coloured_slots(p, ev, slots) or (not up_only and _two_colours_both_ways(p, slots, first_two)):
            return other, ev, slots, z2
    if not up_only:
        ev = slot_evidence(p, ctx, img, z, other)
        hidden = lone_block_glyph_hidden(p, ev)
        if hidden is not None:
            return other, ev, hidden, z
    return None


def _two_colours_both_ways(p: Pipeline, across: Sequence[SlotReading], first_two: bool) -> bool:
    """Whether a reading across that holds one block, and shows two colours in it, is still kept
    (decision.across_lone_two_colours): the first reading showed two colours too (`first_two`,
    as read_frame found it: two_coloured_slots of the first reading). A hand over
    one end of a lone block reads as another colour there (skin as red or yellow), so the lone
    block read across shows two colours, as the level below's blocks read the first way do
    (synthetic 31/0027, 4/0016: a yellow Skip and a yellow 2 under a hand, the level below read
    instead). On the 60 kits this kept 2 readings across, both right, and changed none of 26
    kits kept apart."""
    if not p.cfg["decision"].get("across_lone_two_colours", False) or not first_two:
        return False
    return sum(s.block is not None for s in across) == 1


def lone_block_glyph_hidden(p: Pipeline, ev: SlotEvidence) -> tuple[SlotReading, ...] | None:
    """A reading across (`ev`, the other orientation of a doubted reading) that holds one lone
    block at an end of the top whose glyph is not seen: the slots, that block named by its colour
    and the likeliest glyph of that colour, its confidence the models' joint (low: reported
    unsure), or None.

    A hand reaching for the top often lies over the lone block's glyph (a finger on its oval):
    read across, the block's slot then reads empty for want of a glyph, the level below's
    reading stays, and it is wrong in every slot. Taken as such a block when, across, exactly
    one slot, an end one, is more likely a block than not on the occupancy model, of a block
    colour (not the Wild's) at `decision.hidden_glyph_colour_sure` or more, and the middle third
    of its length shows some of a glyph's white field (`decision.hidden_glyph_field` of it:
    8-bit Lab L of 120 or more, chroma under 20, after colour constancy): an arm lying over the
    ends of the level below's blocks reads as one red or yellow slot there too, but shows no
    white. On the 60 kits, of 93 doubted readings that stayed as they were, this named 12 tops
    whose orientation was read wrong (11 under a hand) and turned one right reading (twin
    81/0077); on 26 kits kept apart, 4 and none. `decision.hidden_glyph_field` 0: off."""
    dc = p.cfg["decision"]
    field_share = float(dc.get("hidden_glyph_field", 0.0))
    if field_share <= 0 or ev.labs is None:
        return None
    likely = np.flatnonzero(ev.p_occ >= 0.5)
    if len(likely) != 1 or int(likely[0]) == 1:
        return None
    k = int(likely[0])
    c = int(np.argmax(ev.p_col[k]))
    if COLOR_CLASSES[c] == "wild" or ev.p_col[k, c] < float(dc.get("hidden_glyph_colour_sure", 0.9)):
        return None
    if glyph_field_share(ev.labs[k]) < field_share:
        return None
    slots = list(slot_readings(p, ev))
    if any(s.block is not None for s in slots):  # a reading across with a block is judged as such
        return None
    post, _ = _block_posterior(ev.p_col[k], ev.p_gly[k])
    name = next(n for n, _ in post if n.startswith(COLOR_CLASSES[c] + "-"))
    g = GLYPHS.index(name.split("-", 1)[1])
    conf = float(ev.p_occ[k] * ev.p_col[k, c] * ev.p_gly[k, g])
    slots[k] = SlotReading(Block.parse(name), conf, slots[k].candidates)
    return tuple(slots)


def named_by_colour(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading]) -> list[int]:
    """The slots read as a block whose glyph the glyph model does not see (`glyph_seen`): named
    from their colour alone (`lone_block_glyph_hidden`, `wild_by_its_colour`)."""
    seen = glyph_seen(p, ev)
    return [i for i, s in enumerate(slots) if s.block is not None and not seen[i]]


def glyph_field_share(lab: np.ndarray) -> float:
    """The share of the middle third (along the block) of a slot's 8-bit Lab colour patch that
    is a glyph's white field: L 120 or more, chroma under 20 (a block's glyph lies on a white
    oval at its middle; skin, an arm's shadow and block paint are darker or coloured)."""
    w = lab.shape[1]
    mid = lab[:, w // 3: 2 * w // 3].astype(np.int32)
    chroma2 = (mid[..., 1] - 128) ** 2 + (mid[..., 2] - 128) ** 2
    return float(np.mean((mid[..., 0] >= 120) & (chroma2 < 400)))


def _across_can_be_the_top(p: Pipeline, ev: SlotEvidence, across: Sequence[SlotReading],
                           first_ev: SlotEvidence | None, first: Sequence[SlotReading]) -> bool:
    """Whether a reading across (`ev`, `across`) can be the top that the first reading
    (`first_ev`, `first`) saw the other way. A top that is not full lies on a full level, which
    shows through its empty slots: read in the top's own orientation those read empty, read
    across they are the level below's blocks. So the top's reading holds no more blocks than
    the reading across it (twin 74/0019: the lone green 3 read right, then across as the level
    below's yellow 3, green Reverse and green 4). When both hold one block, of different
    colours, one of them is the level below's middle block, whose glyph lies at the face's
    centre: it is the one whose ends differ more in colour (`end_chroma_gap`), as the lone
    block covers one end of it (twin 74/0020: the red 2, ends 2.7 apart, read across as the
    blue Reverse below, 58.4; twin 79/0064 the other way round, 57.5 and 14.8)."""
    held = [i for i, s in enumerate(across) if s.block is not None]
    before = [i for i, s in enumerate(first) if s.block is not None]
    if first and len(held) > len(before):
        return False
    if (len(held) != 1 or len(before) != 1 or first_ev is None or ev.labs is None or first_ev.labs is None
            or first[before[0]].block.color == across[held[0]].block.color):
        return True
    return end_chroma_gap(p, ev, held[0]) < end_chroma_gap(p, first_ev, before[0])


def read_frame(p: Pipeline, img: np.ndarray, t: float = 0.0, frame_seq: int = -1,
               table: TableMemory | None = None, clock: StageClock | None = None) -> FrameResult:
    """Read one BGR frame. Raises TrayNotFound when the tray's markers cannot be seen.

    A top read with no block at all is no top: when the first height's reading finds no block
    with its glyph, the other orientation is read at that height (a lone block across the top),
    then the next best height candidates (decision.other_heights of them) with both
    orientations, and the first reading that finds a block is kept (last, the levels above where
    the markers place them: `_level_above_unrefined`). Most such frames had the
    tower's base outline or a lower level win over a top whose outline hands cover. Last, with
    decision.slot_shift_check, a face found one slot off the top is read one slot over
    (shifted_face), and a face a few mm off its blocks that misses one is moved onto their
    glyphs (recentred_face). A reading that cannot be one level's blocks (a slot of two
    colours, a glyph at an end of the middle block, a slot read empty where a block's colour and
    glyph are read well: contested_empties) is read across, at its height or one level up
    (_lone_block_across; across, a lone block at an end whose glyph a hand hides is named by its
    colour: lone_block_glyph_hidden); one that stays doubtful, a block named by its colour alone,
    and an empty slot that is contested or partly out of view, is reported unsure with a note
    saying why; a slot still contested after the retries is named by its likeliest block
    (`contested_blocks`), unsure. The frame is straightened through
    the lens first (`straighten`); the result's `image` is the frame as read. `table`: the
    table as play has shown it (`table_memory`; the caller teaches it), for the hands. `clock`:
    lapped at each stage's end (the bench's breakdown of a frame's time, `stage_clock`).

    The arms are found right after the height (the hand mask at the top's first height): their
    colour where they cross the tray is the skin that a hand over the top shows, left out of the
    top's orientation (`skin_on_face`, `covered_slots`); their hands are the frame's when the
    height stays (else the hands are found again at the height read)."""
    if clock:
        clock.start()
    img = straighten(p, img)
    ctx = frame_context(p, img)
    if clock:
        clock.lap(REGISTRATION)
    reg0, tray_bgr, gains = ctx.registration, ctx.tray_bgr, ctx.gains  # reg0: the markers' own camera
    z, reg, cs = top_face_search(p, reg0, img, tray_bgr, gains, bgra=_bgra(ctx.memo, img))
    ctx = FrameContext(reg, tray_bgr, gains, ctx.memo)
    if clock:
        clock.lap(HEIGHT)
    # the arms first (placed through the markers' camera, as the hands always are): their colour
    # is the skin to leave out of the top's reading, and their hands are the frame's when the
    # top's height stays
    ref = table.reference(reg0.H, img.shape) if table is not None else None
    z_hands = height_seen_by(reg0, reg, z)
    means = _cell_means(p, ctx, img)  # (sampled again if the hands are looked for at another height)
    arm_mask = hand_mask(p.cfg, p.tray, reg0, img, tray_bgr, z_hands, p.background, gains, p.hand_grid, ref, means,
                         ctx.memo)
    arms = counted_arms(p.cfg["hands"], arm_entries(p.cfg, p.tray, arm_mask))
    ctx.memo[ARM_LAB] = sk.arm_lab(p.cfg["skin"], arm_mask, arms)
    if clock:
        clock.lap(HANDS)
    orient, ev, o_conf = read_top(p, ctx, img, z)
    if clock:
        clock.lap(TOP)
    if cs is not None and not reads_a_block(p, ev):
        found = _top_with_a_block(p, img, reg0, ctx, cs, z, hands_of(p.cfg["hands"], arms))
        if found is not None:
            z, ctx, (orient, ev, o_conf) = found
            reg = ctx.registration
    if cs is not None:
        found = _better_focal(p, img, reg0, ctx, cs, z, orient, ev)
        if found is not None:
            z, ctx, (orient, ev, o_conf) = found
            reg = ctx.registration
    if clock:
        clock.lap(RETRIES)
    first = 0
    if p.cfg["decision"].get("slot_shift_check", False):
        moved = shifted_face(p, ctx, img, z, orient, ev)
        if moved is not None:
            first, ev = moved
    again = recentred_face(p, ctx, img, z, orient, first, ev)
    if again is not None:
        ctx, ev = again
        reg = ctx.registration
    ev = glyphs_looked_for_again(p, ctx, img, z, orient, first, ev)
    slots = slot_readings(p, ev)
    two = two_coloured_slots(p, ev, slots)
    crossed = first == 0 and not two and crossed_middle(p, ctx, img, z, orient, slots)
    empties = contested_empties(p, ev, slots)
    contested = first == 0 and not two and not crossed and bool(empties)
    read_across = False
    doubted = two or crossed or contested
    # (a reading whose orientation stays unsure may be the level below a lone block: read it one level up)
    unsure_up = (not doubted and p.cfg["decision"].get("unsure_orientation_read_up", False)
                 and o_conf < float(p.cfg["decision"]["uncertain_below"]))
    if (doubted or unsure_up) and first == 0:
        across = _lone_block_across(p, ctx, img, z, orient, up_only=unsure_up, first=slots, first_ev=ev,
                                    first_two=bool(two))
        if across is not None:
            orient, ev, slots, z = across
            o_conf, two, crossed, read_across = 1.0 - o_conf, [], False, True
            empties = contested_empties(p, ev, slots)
    if clock:
        clock.lap(CHECKS)
    z_seen = height_seen_by(reg0, reg, z)
    hands = (hands_of(p.cfg["hands"], arms) if z_seen == z_hands else
             find_hands(p.cfg, p.tray, reg0, img, tray_bgr, z_seen, p.background, gains, p.hand_grid, ref, means,
                        ctx.memo))
    if clock:
        clock.lap(HANDS)
    slots = with_hands_known(p, ev, slots, hands)
    if first == 0 or not hands:  # (a hand's cover is measured on the face as found)
        slots = unread_glyph_blocks(p, ev, slots, covered_slots(p, ctx, img, z, orient) if hands else None, hands)
    slots = contested_blocks(p, ev, slots, empties, hands)
    named = [i for i in empties if slots[i].block is not None]
    empties = [i for i in empties if slots[i].block is None]
    if read_across:
        o_conf = across_in_clear_view(p, slots, hands, o_conf)
    uncertain, note = _uncertainty(p, slots, o_conf, hands,
                                   covered_slots(p, ctx, img, z, orient) if hands and first == 0 else None)
    for doubt in (_slots_note(two, "shows two colours: not one block"),
                  "a glyph at an end of slot 1: a block may lie across it" if crossed else "",
                  _slots_note(empties, "reads empty, but a block's colour and glyph are seen there"),
                  _slots_note(named, "named by its colour and glyph, though the slot looks empty"),
                  _slots_note(empties_out_of_view(p, ctx.registration, z, orient, first, img.shape, slots),
                              "lies partly outside the camera's view"),
                  _slots_note(named_by_colour(p, ev, slots), "named by its colour: its number or symbol is not seen"),
                  _slots_note(empties_under_a_hand(p, ctx, img, z, orient, first, slots),
                              "reads empty, but a hand covers it: a block there may not be seen"),
                  _slots_note(empties_on_the_table(p, ctx, img, z, orient, first, slots),
                              "reads empty, but shows the table beside the tray: the top may lie elsewhere")):
        if doubt:
            uncertain, note = True, _with_note(note, doubt)
    if all(s.block is None for s in slots):  # every top level holds a block: this one is not seen
        uncertain, note = True, _with_note(note, "no block seen on the top")
    reading = TopLevelReading(orient, slots, hands, t, frame_seq, uncertain, note)
    if clock:
        clock.lap(CHECKS)
    return FrameResult(reading, reg, z, o_conf, first, reg0, img)


def empties_on_the_table(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str, first: int,
                         slots: Sequence[SlotReading]) -> list[int]:
    """The slots read empty of a tall top (above decision.tray_check_below_levels) of which
    decision.empty_on_table_share or more looks like the table round the tray sheet
    (`plane_height.table_colour`, in this frame's light): a top's empty slot shows the level
    below, never the table, so the face found lies off the tower (fresh synthetic 23/0046: a
    face found 70 mm too high on a top of two Wilds, read one slot over, its third slot on the
    green table, given as sure)."""
    dc = p.cfg["decision"]
    share = float(dc.get("empty_on_table_share", 1.0))
    empty = [i for i, s in enumerate(slots) if s.block is None]
    if (share >= 1.0 or not empty or len(empty) == len(slots)
            or z <= float(dc["tray_check_below_levels"]) * float(p.tray.block_mm[2])):
        return []
    # only a slot whose line of sight, were the tower not there, meets the tray plane past the
    # sheet can show the table (a few float steps a slot: most frames stop here)
    empty = [i for i in empty if _sight_past_sheet(p, ctx.registration, z, orient, i + first)]
    if not empty:
        return []
    table = plane_height.table_colour(p.cfg, p.tray, ctx.registration, img)
    if table is None:
        return []
    frac = tl.slot_tray_fraction(p.cfg, p.tray, ctx.registration, img, z, orient, table, None, None, first)
    return [i for i in empty if frac[i] >= share]


def _sight_past_sheet(p: Pipeline, reg: Registration, z: float, orient: str, slot: int) -> bool:
    """Whether the line of sight through the middle of a slot at height z meets the tray plane
    beyond the tray sheet (the markers' extent grown by align.sheet_margin_mm)."""
    mid = _slot_outline(tuple(p.tray.block_mm), tuple(p.tray.tower_center), orient, slot).mean(axis=0)
    cx, cy, cz = (float(v) for v in reg.camera.center)
    if cz <= z:
        return True
    k = cz / (cz - z)
    x, y = cx + (float(mid[0]) - cx) * k, cy + (float(mid[1]) - cy) * k
    m = float(p.cfg["align"].get("sheet_margin_mm", 0.0))
    x0, y0, x1, y1 = p.tray.extent()
    return not (x0 - m <= x <= x1 + m and y0 - m <= y <= y1 + m)


def empties_under_a_hand(p: Pipeline, ctx: FrameContext, img: np.ndarray, z: float, orient: str, first: int,
                         slots: Sequence[SlotReading]) -> list[int]:
    """The slots read empty that the arm's skin covers decision.empty_under_hand_share of or more
    (`covered_slots`): fingers over a block hide its colour and glyph, and the occupancy model
    reads skin as no block, surely. On 86 kits, 63 of the 86 photos read wrong and given as sure
    were wrong only in slots a hand hid; a slot read empty with 0.4 of it covered made 62 of the
    86 unsure, and 82 more of the 5,389 right readings (703 were unsure already). Only on the face
    as found (`first` 0); 0: off."""
    share = float(p.cfg["decision"].get("empty_under_hand_share", 0.0))
    if share <= 0 or first != 0:
        return []
    cover = covered_slots(p, ctx, img, z, orient)
    if cover is None:
        return []
    return [i for i, s in enumerate(slots) if s.block is None and cover[i] >= share]


def with_hands_known(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading],
                     hands: Sequence = ()) -> tuple[SlotReading, ...]:
    """The slots once the frame's hands are known (`read_frame` and `read_level` alike): empty
    slots the level below shows through made sure (`empties_seen_through`), then a sure black
    block read as the Wild (`wild_by_its_colour`); both only with no hand over the tower."""
    return wild_by_its_colour(p, ev, empties_seen_through(p, ev, slots, hands), hands)


def unread_glyph_blocks(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading],
                        cover: np.ndarray | None, hands: Sequence = ()) -> tuple[SlotReading, ...]:
    """The slots read empty only because no glyph was named surely there, where the glyph model
    still sees a glyph (its share of the eight glyphs at decision.unread_glyph_present or more:
    its "no glyph" share small) and the occupancy and colour models are sure
    (decision.unread_glyph_occ, decision.unread_glyph_colour): a block, named by its likeliest
    colour and glyph, at no more confidence than its glyph's, so the reading is unsure
    (`named_by_colour` says why). `cover` (per slot, `covered_slots`; None: no hand over the
    face) leaves out slots a hand covers decision.unread_glyph_cover_below or more of (fingers
    over a slot make a glyph-like crop of their own), and with a hand over the tower a slot read
    black is left to `wild_by_its_colour` (dark fingers and their shadow read black).

    Why: through an empty slot the camera sees the level below crosswise, which the glyph
    model learnt as no glyph, so a small no-glyph share is a block's glyph that the model cannot
    name: a yellow 4 whose pale ink hardly shows on its white oval (synthetic family-3 0022:
    occupancy 0.99, yellow 0.97, glyph 4 at 0.31 of 0.89 seen) or a red 3 in an arm's shadow
    (family-4 0023: 4 at 0.40, 1 at 0.23, Draw Two at 0.24). Read empty, such a block was lost
    whatever its glyph; named, it was right in 10 of the 26 slots named on 4,720 photos. 0: off.

    `read_frame` only: the map-guided `read_level` keeps a block only where its glyph is named,
    as the match loop's reader counts a block on the level above a complete top only so
    (`MapGuidedReader.read`). Read across that top, the level above cuts the blocks below
    crosswise: the model sees their glyphs but cannot name them, and named there they made twin
    match 117 miss three turns."""
    dc = p.cfg["decision"]
    present = float(dc.get("unread_glyph_present", 0.0))
    if present <= 0:
        return tuple(slots)
    occ, col = float(dc["unread_glyph_occ"]), float(dc["unread_glyph_colour"])
    bare = float(dc["unread_glyph_cover_below"])
    wild = COLOR_CLASSES.index("wild")
    out = list(slots)
    for i, s in enumerate(slots):
        if (s.block is not None or ev.p_occ[i] < occ or ev.p_col[i].max() < col
                or float(ev.p_gly[i].sum()) < present or (cover is not None and cover[i] >= bare)
                or (hands and int(np.argmax(ev.p_col[i])) == wild)):
            continue
        post, _ = _block_posterior(ev.p_col[i], ev.p_gly[i])
        conf = min(float(ev.p_occ[i] * post[0][1]), float(ev.p_gly[i].max()))
        out[i] = replace(s, block=Block.parse(post[0][0]), confidence=conf)
    return tuple(out)


def empties_seen_through(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading],
                         hands: Sequence = ()) -> tuple[SlotReading, ...]:
    """The empty slots the glyph model reads as no glyph at all, at decision.no_glyph_empty_above
    or more (its NO_GLYPH share), taken as surely empty: that share as their confidence when it
    is higher. Only with no hand over the tower (`hands`, the frame's HandReadings, empty):
    otherwise the slots as read.

    Through an empty slot the camera sees the level below crosswise: seams and colour that the
    occupancy model calls a block (at 0.9 and more), so the slot reads empty only because no
    glyph is seen there, at a confidence of one minus that, and the reading was reported unsure.
    A block's glyph is large and lies at its centre, so with nothing over the top a crop that
    the glyph model learnt as "no glyph" is the level below. On the 62 kits, of the empty
    readings under `uncertain_below` on slots in view in frames with no hand read, 100 empty
    slots had a NO_GLYPH share of 0.7 or more, and no block did (at 0.6: 128 and 1). Under a
    hand it would not hold (at 0.7, 23 hidden blocks against 15 empty slots): a hand hides the
    glyph as well.

    An empty slot still under `uncertain_below` whose two ends are surely two different block
    colours (`two_colours_sureness` at decision.empty_two_colours_sure) is surely empty too, at
    that sureness: a block is one colour from end to end, while through an empty slot the level
    below shows three blocks across it, the ends two of them. On the 62 kits (frames with no
    hand read) this took 34 right readings out of "unsure" at 0.8 (26 at 0.9, 43 at 0.6) and
    made no wrong one sure at any of these; the middle third as a third place to compare took
    48, but made one wrong reading sure (a block's middle is its white glyph field)."""
    dc = p.cfg["decision"]
    th = float(dc.get("no_glyph_empty_above", 1.0))
    sure2 = float(dc.get("empty_two_colours_sure", 0.0))
    if hands or (th >= 1.0 and sure2 <= 0):
        return tuple(slots)
    none = 1.0 - ev.p_gly.sum(axis=1)  # (glyph_probs keeps NO_GLYPH's share out of the eight)
    conf = [float(none[i]) if s.block is None and th < 1.0 and none[i] >= th and none[i] > s.confidence
            else s.confidence for i, s in enumerate(slots)]
    low = float(dc["uncertain_below"])
    doubtful = [i for i, s in enumerate(slots) if s.block is None and conf[i] < low]
    if sure2 > 0 and doubtful and ev.labs is not None and p.models.get("color") is not None:
        pc = end_colours(p, ev, doubtful)
        for k, i in enumerate(doubtful):
            conf[i] = max(conf[i], two_colours_sureness(pc[k, 0], pc[k, 1], sure2))
    return tuple(replace(s, confidence=conf[i]) if conf[i] != s.confidence else s for i, s in enumerate(slots))


def wild_by_its_colour(p: Pipeline, ev: SlotEvidence, slots: Sequence[SlotReading],
                       hands: Sequence = ()) -> tuple[SlotReading, ...]:
    """A slot read empty only because no glyph was seen there, which the occupancy and colour
    models both call a Wild's (decision.wild_colour_sure or more each), read as the Wild, with
    no hand over the tower (`hands` empty) and no other slot read as the Wild. Its confidence is
    the three models' joint (the glyph model's Wild share is under glyph_seen_above, so the
    reading stays unsure).

    The Wild is the set's one black block, so its colour alone names it; but a glyph model
    learnt from a kit of few Wilds reads its many-coloured oval poorly (held-out family 42's
    kit shows the Wild once: its glyph read at 0.19, the Wild in view read empty in 11 of its
    160 photos, 7 of them with no hand read). Under a hand the colour model also calls dark fingers and the level below
    in their shadow "wild" (on the 60 kits, 14 of the 44 such slots under a read hand were the
    Wild), while with no hand read 7 of 8 were (the eighth, under a hand not read, was empty)."""
    th = float(p.cfg["decision"].get("wild_colour_sure", 0.0))
    if th <= 0 or hands or any(s.block is not None and s.block.name == "wild" for s in slots):
        return tuple(slots)
    w, gw = COLOR_CLASSES.index("wild"), GLYPHS.index("wild")
    out = list(slots)
    for i, s in enumerate(slots):
        if s.block is None and ev.p_occ[i] >= th and ev.p_col[i, w] >= th:
            out[i] = replace(s, block=Block.parse("wild"), confidence=float(ev.p_occ[i] * ev.p_col[i, w] * ev.p_gly[i, gw]))
            break
    return tuple(out)


def across_in_clear_view(p: Pipeline, slots: Sequence[SlotReading], hands: Sequence, o_conf: float) -> float:
    """The orientation's confidence for a top read across (`_lone_block_across`): with no hand
    over the tower (`hands` empty) and decision.across_clear_sure on, its reading's least slot
    confidence when that is higher; else `o_conf` (one minus the first orientation's).

    A top is read across only when the first reading cannot be one level's blocks (a slot of
    two colours, a glyph at an end of the middle block, a contested empty slot) and the reading
    across is clean, so the orientation evidence that chose the first is evidence spent. Its one
    minus left every such reading unsure: on the 62 kits all 28 tops read across in frames with
    no hand were right (a lone block across the level below), and 15 of the 34 under a hand were
    wrong, where doubt stays."""
    if hands or not p.cfg["decision"].get("across_clear_sure", False) or not slots:
        return o_conf
    return max(o_conf, min(float(s.confidence) for s in slots))


def _with_note(note: str, more: str) -> str:
    return "; ".join(x for x in (note, more) if x)


def _slots_note(where: Sequence[int], why: str) -> str:
    """The note 'slot 0, 2 <why>' for the slots listed; "" for none."""
    return "slot " + ", ".join(map(str, where)) + " " + why if where else ""
