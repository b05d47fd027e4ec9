"""Calibration from a labelled kit: `stacko calibrate vision KIT --out DIR`.

Learns, from the kit's own photos: the camera's focal length (all views of the markers), the
tray's colour under the kit's light (the colour-constancy reference), the orientation, occupancy,
colour and glyph classifiers (with small geometric and light jitter so a few dozen photos are
enough), and the hand thresholds (a small grid search on the kit's hand counts). Writes DIR with
config.json (all thresholds), tray.json, the model files and report.json.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import cv2
import numpy as np

from referee.blocks import Block
from vision import patch_features as pf
from vision import painted
from vision import top_level as tl
from vision.hands import find_hands, hand_grid
from vision.kit import Kit, KitError, Label, load_kit
from vision.models import train_kernel, train_linear
from vision.background import learn_background
from vision.reader import GLYPHS, NO_GLYPH, Pipeline, default_config, has_colour, merge, one_blas_thread, top_height
from vision.lens import fit_lens, lens_from_config
from vision.tray import TrayNotFound, calibrate_focal, correspondences, detect_markers, make_detector, register

MIN_IMAGES = 6


@dataclass
class Prepared:
    name: str
    img: np.ndarray
    reg: object
    tray_bgr: np.ndarray
    z: float
    only_slot: int | None = None  # a painted copy (painted_wilds): only this slot is trained on


def _glyph_of(block) -> str:
    return block.glyph


def _color_of(block) -> str:
    return "wild" if block.color is None else block.color.value


def label_fit_height(cfg: dict, kit: Kit, p: Prepared, z0: float) -> float:
    """The height near z0 at which the labelled slots' boundaries sit best on image edges.

    The label says which slots hold a block and which way they lie, so the boundary lines that
    must be edges are known; only their height is searched. Training on patches cut at this
    height teaches the models well-aligned blocks rather than the read-time estimate's slips."""
    lab = kit.labels[p.name]
    occ = tuple(int(b is not None) for b in lab.slots)
    if not any(occ):
        return z0
    segs = next(s for o, s in tl.BOUNDARY_SETS if o == occ)
    level = kit.tray.block_mm[2]
    w = float(cfg["calibration"]["height_refine_mm"])
    zs = np.arange(max(level * 0.5, z0 - w), z0 + w + 1e-6, float(cfg["align"]["fine_step_mm"]) / 2)
    st = tl.segment_strengths(cfg, kit.tray, p.reg, tl.edge_image(p.img), lab.orientation, zs)
    return float(zs[int(np.argmax(st[:, segs].mean(axis=1)))])


def painted_wilds(cfg: dict, kit: Kit, prepared: list, rng: np.random.Generator) -> list[tuple[Prepared, Label]]:
    """For a kit that shows no Wild in a photo without hands: calibration.painted_wilds copies of
    clear photos with one colour block repainted as a Wild (vision.painted), each labelled so.

    A set has one Wild, so a kit may show it on no clear top (the twin's shows it once, under
    fingers) and the models then never learn it: a Wild reads as empty or as a blue block."""
    want = int(cfg["calibration"].get("painted_wilds", 0))
    clear = [p for p in prepared if kit.labels[p.name].hands == 0]
    have = sum(1 for p in clear for b in kit.labels[p.name].slots if b is not None and _color_of(b) == "wild")
    items = [(p, p.z, kit.labels[p.name].orientation, s, _color_of(b)) for p in clear
             for s, b in enumerate(kit.labels[p.name].slots) if b is not None and _color_of(b) != "wild"]
    if want <= 0 or have > 0 or not items:  # a clear Wild is copied as it is (rare_copies): its own look beats a painting
        return []
    ref = painted.body_colours(cfg, kit.tray, items)
    out = []
    for k in rng.permutation(len(items)):
        p, z, orient, slot, _ = items[k]
        img = painted.painted_image(cfg, kit.tray, p, z, orient, slot, ref)
        if img is None:
            continue
        lab = kit.labels[p.name]
        slots = tuple(Block.parse("wild") if i == slot else b for i, b in enumerate(lab.slots))
        out.append((Prepared(f"{p.name}#wild{len(out)}", img, p.reg, p.tray_bgr, p.z, slot),
                    Label(lab.orientation, slots, 0)))  # type: ignore[arg-type]
        if len(out) >= want:
            break
    return out


def _blocks_showing(kit: Kit, prepared: list, glyph: str) -> int:
    """How many labelled blocks (over all images) carry this glyph."""
    return sum(1 for p in prepared for b in kit.labels[p.name].slots if b is not None and _glyph_of(b) == glyph)


def degrade(img: np.ndarray, rng: np.random.Generator, blur_max_px: float, noise_max: float) -> np.ndarray:
    """A crop as a blurrier, noisier camera would give it."""
    x = img.astype(np.float32)
    s = rng.uniform(0, blur_max_px)
    if s > 0.3:
        x = cv2.GaussianBlur(x, (0, 0), s)
    x += rng.normal(0, rng.uniform(0, noise_max), x.shape).astype(np.float32)
    return np.clip(x, 0, 255).astype(np.uint8)


def white_balance_above(cfg: dict, trays_bgr: list[np.ndarray]) -> float | None:
    """The colour cast (top_level.colour_cast) past which glyphs are read white-balanced
    (top_level.glyph_white_balance): the config's, or the kit's own casts'
    glyph.white_balance_percentile when higher (of its photos whose tray is clear: tray_clear).
    Why: casts the kit shows, the glyph model learns as they are; white balance only has to
    undo a light the kit never saw."""
    gc = cfg["glyph"]
    above, pct = gc.get("white_balance_above"), gc.get("white_balance_percentile")
    casts = [tl.colour_cast(tl.color_gains(cfg, t)) for t in trays_bgr if tl.tray_clear(cfg, t)]
    if above is None or pct is None or not casts:
        return above
    return max(float(above), float(np.percentile(casts, float(pct))))


def rare_copies(cfg: dict, count: int, clear: int | None = None) -> int:
    """How many times over each block of a class is shown to a model, the class seen on `count`
    labelled blocks, `clear` of them in photos without hands (all when None): a class under
    calibration.rare_class_blocks blocks is made up to that many with jittered copies of its
    clear blocks (a class seen once, in a photo without hands: `rare` times); other blocks once.

    class_weight "balanced" weighs a rare class up, but the weight falls on one or two crops:
    the model learns those pixels (and the kernel model's landmarks, drawn at random from the
    samples, hardly ever land on them), not the class, and a Wild seen once in the kit read as
    empty or as no glyph at all on other cameras. Only blocks in photos without hands are
    copied: a hand may lie over the block, and copies of it teach the hand as the class (the
    twin kit's one Wild, under fingers, made slots under hands read as Wilds)."""
    rare = int(cfg["calibration"].get("rare_class_blocks", 0))
    clear = count if clear is None else int(clear)
    if rare <= 0 or count >= rare or clear <= 0:
        return 1
    return max(1, -(-(rare - (count - clear)) // clear))


def glyph_training_set(cfg: dict, tray, samples, rng, rare_rng=None, clear=None) -> tuple[list, list]:
    """Glyph features of every labelled block, as laid and turned 180 degrees, plus crops moved
    a few mm / degrees (a block off its slot, a height a little off). A glyph seen on fewer than
    calibration.rare_class_blocks blocks gets more moved and degraded crops per block (rare_copies),
    drawn from `rare_rng` so the other classes' crops stay as they were; `clear` says per sample
    whether its photo is without hands (all when None), and only those are copied."""
    X, Y = [], []
    n_aug = int(cfg["calibration"]["glyph_augment"])
    jc = cfg["calibration"]["glyph_jitter"]
    clear = [True] * len(samples) if clear is None else list(clear)
    blocks = Counter(s[4] for s in samples)
    blocks_clear = Counter(s[4] for s, c in zip(samples, clear) if c)
    rare_rng = rng if rare_rng is None else rare_rng
    for (p, z, orient, slot, glyph), c in zip(samples, clear):
        mats = [None] + [tl.jitter_matrix(rng, float(jc["shift_mm"]), float(jc["deg"]), float(jc["scale"])) for _ in range(n_aug)]
        extra = (rare_copies(cfg, blocks[glyph], blocks_clear[glyph]) - 1) * (n_aug + 1) if c else 0
        mats += [tl.jitter_matrix(rare_rng, float(jc["shift_mm"]), float(jc["deg"]), float(jc["scale"])) for _ in range(extra)]
        wb = tl.glyph_white_balance(cfg, p.tray_bgr)  # (as the reader reads the photo)
        for k, J in enumerate(mats):
            crop = tl.glyph_crop(cfg, tray, p.reg, p.img, z, orient, slot, J)
            if k:  # other cameras: softer focus and more sensor noise than the kit's
                crop = degrade(crop, rng if k <= n_aug else rare_rng, float(jc["blur_max_px"]), float(jc["noise_max"]))
            for r in (crop, np.ascontiguousarray(crop[::-1, ::-1])):
                X.append(tl.glyph_features(cfg, r, wb))
                Y.append(glyph)
    return X, Y


def no_glyph_training_set(cfg: dict, tray, samples) -> tuple[list, list]:
    """Glyph features of crops that hold no glyph, as the reader meets them, labelled NO_GLYPH
    (`calibration.no_glyph`): each block's two ends (the crop slid along it to its end, where a
    block has no glyph), the empty outer slots (the level below seen crosswise: the ends of its
    blocks; an empty middle slot shows the glyph of the level below's middle block, so it is
    left out) and the bare tray two slot widths out from the tower on each side. `samples`:
    (prepared photo, height, orientation, slot, offset along and across the slot in mm); each
    crop as laid and turned.

    Without them the model meets a crop with no glyph only at reading time, where it falls to
    its prior, and where that lands depends on the kit: on one calibration of eight (synthetic
    seed 2001, a 320 mm tray) it was a sure 4 (0.60-0.66), bare tray and block ends read as a 4,
    and 43% of its kits' visible slots went wrong (99.0% with these crops). A softer, noisier
    copy of each, as the glyphs get, made more wrong readings sure on the fresh kits."""
    X, Y = [], []
    for p, z, orient, slot, off in samples:
        crop = tl.glyph_crop(cfg, tray, p.reg, p.img, z, orient, slot, offset=off)
        wb = tl.glyph_white_balance(cfg, p.tray_bgr)
        for r in (crop, np.ascontiguousarray(crop[::-1, ::-1])):
            X.append(tl.glyph_features(cfg, r, wb))
            Y.append(NO_GLYPH)
    return X, Y


def occupancy_views(cfg: dict, patch: np.ndarray, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The slot patch `n` times for the occupancy model: the first `occupancy_degrade` as softer,
    noisier cameras give it (`occupancy_jitter`), the rest as the kit's camera took it.

    The occupancy features weigh seams and edges against the patch's texture; a kit's sharp,
    clean empty slots teach a model that reads the blurred seams of the level below (seen
    through an empty slot by a softer camera) as a whole block."""
    k = min(n, int(cfg["calibration"].get("occupancy_degrade", 0)))
    jc = cfg["calibration"].get("occupancy_jitter", {})
    return [degrade(patch, rng, float(jc.get("blur_max_px", 0.0)), float(jc.get("noise_max", 0.0))) if i < k else patch
            for i in range(n)]


def slot_samples(cfg: dict, patch: np.ndarray, view: np.ndarray, gains: np.ndarray,
                 colour_gains: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The colour features of a slot's colour patch (under `colour_gains`, else `gains`) and the
    occupancy features of its occupancy view under `gains`; when both are the same patch under
    the same gains one Lab conversion serves both."""
    labs = pf.patch_labs([patch], gains if colour_gains is None else colour_gains)
    cf = pf.color_features(labs)[0]
    if view is patch and colour_gains is None:
        labs_o, cf_o = labs, cf
    else:
        labs_o = pf.patch_labs([view], gains)
        cf_o = pf.color_features(labs_o)[0]
    return cf, pf.occupancy_features(cfg, labs_o, cf_o[None])[0]


HAND_GRID_KEYS = ("chroma", "two_arm_width_mm", "plane_above_top_mm")


def _why_no_markers(cfg: Mapping, kit: Kit, images: Sequence[np.ndarray], det) -> str:
    """The reason the reader gives most often for the kit's photos that showed too few markers
    (`tray.register`: a mirrored picture, another tray sheet's markers, a dark picture...), as
    the end of the calibration's error; "" when none gives one."""
    reasons = Counter()
    for img in images:
        try:
            register(cfg, kit.tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), det)
        except TrayNotFound as exc:
            reasons[str(exc).removeprefix("cannot find the tray: ")] += 1
    if not reasons:
        return ""
    reason, n = reasons.most_common(1)[0]
    return f". In {n} of them: {reason}"


def pick_hand_settings(right: Mapping[tuple[float, float, float], Sequence[bool]], defaults: Mapping, grid: Mapping,
                       z: float) -> tuple[float, float, float]:
    """The hand settings (chroma, two-arm width, plane height) a calibration keeps, from which of
    the kit's photos each setting tried counts right (`right`: per setting, per photo).

    The defaults stay unless a setting's gain over them is no accident: of the photos where the
    two differ, it counts b right that the defaults miss and c the other way, and b - c must reach
    `z` times sqrt(b + c) (calibration.hand_grid_z; McNemar's test for paired counts). The
    largest such gain wins, ties to the setting nearest the defaults (in grid spans).

    A count alone moved on noise. On fifteen calibrations (fourteen fresh synthetic kits of 60
    photos and the twin's), each read against the kits it never saw (two each, and the twin's
    twelve), every setting the old rule picked away from the defaults (a photo or two more,
    `margin` photos a grid span) read them worse or the same: 2,010 hands exact against the
    defaults' 2,016 of 2,240 synthetic photos, 2,067 against 2,073 "two or more". With z 2.5 no
    setting moves on those kits; a larger kit with a real gain still moves them. A default off
    the grid is kept as it is."""
    wanted = tuple(defaults[k] for k in HAND_GRID_KEYS)
    base = next((k for k in right if k == wanted), None)  # (the grid's own numbers: 140, not 140.0)
    if base is None:
        return tuple(float(v) for v in wanted)

    def distance(setting) -> float:
        return sum(abs(v - float(defaults[k])) / (max(grid[k]) - min(grid[k]) or 1.0)
                   for k, v in zip(HAND_GRID_KEYS, setting))

    ref = list(right[base])
    best, gain = base, 0
    for setting, mine in right.items():
        b = sum(m and not o for m, o in zip(mine, ref))
        c = sum(o and not m for m, o in zip(mine, ref))
        if b - c > 0 and b - c >= z * math.sqrt(b + c) and (b - c, -distance(setting)) > (gain, -distance(best)):
            best, gain = setting, b - c
    return best


def _train(cfg: dict, kit: Kit, prepared: list, bg, rng, log) -> tuple[dict, dict, dict]:
    """Heights fitted to the labels, features with jitter from every labelled image, then the four classifiers."""
    cfg = json.loads(json.dumps(cfg))
    pipe = Pipeline(cfg, kit.tray, {}, bg)
    for p in prepared:
        p.z = label_fit_height(cfg, kit, p, top_height(pipe, p.reg, p.img, p.tray_bgr, tl.color_gains(cfg, p.tray_bgr)))

    X = {"orientation": [], "occupancy": [], "color": [], "glyph": []}
    Y = {k: [] for k in X}
    glyph_samples = []
    no_glyph_samples = []
    end = float(kit.tray.block_mm[0]) / 2 - float(cfg["glyph"]["crop_w_mm"]) / 2  # a block's end, for a glyph crop
    jit_z = [float(v) for v in cfg["calibration"]["z_jitter_mm"]]
    n_gain = int(cfg["calibration"]["gain_jitter_samples"])
    gsig = float(cfg["calibration"]["gain_jitter"])
    occ_rng = rng.spawn(1)[0]  # its own stream: the other models' jitter stays as it was
    rare_rng = rng.spawn(1)[0]  # the rare classes' extra copies: their own stream too
    labels = dict(kit.labels)
    for q, lab in painted_wilds(cfg, kit, prepared, rng.spawn(1)[0]):
        labels[q.name] = lab
        prepared = prepared + [q]
    light_rng = rng.spawn(1)[0]  # the whole light's brightness (brightness_jitter): its own stream too
    bsig = float(cfg["calibration"].get("brightness_jitter", 0.0))
    oj = cfg["calibration"].get("occupancy_jitter", {})
    soft_blur, soft_noise = float(oj.get("blur_max_px", 0.0)), float(oj.get("noise_max", 0.0))
    colours = Counter(_color_of(b) for p in prepared for b in labels[p.name].slots if b is not None)
    colours_clear = Counter(_color_of(b) for p in prepared if labels[p.name].hands == 0
                            for b in labels[p.name].slots if b is not None)
    for p in prepared:
        lab = labels[p.name]
        base_gains = tl.color_gains(cfg, p.tray_bgr)
        for dz in jit_z:
            z = max(kit.tray.block_mm[2] * 0.5, p.z + dz)
            face = tl.face_image(cfg, kit.tray, p.reg, p.img, z)
            for k in range(4 if p.only_slot is None else 0):  # a painted copy: its one slot only
                rot = np.ascontiguousarray(np.rot90(face, k))
                o = lab.orientation if k % 2 == 0 else ("y" if lab.orientation == "x" else "x")
                X["orientation"].append(tl.orientation_features(cfg, kit.tray, rot))
                Y["orientation"].append(o)
            occ_patches, _, again = tl.slot_cuts(cfg, kit.tray, p.reg, p.img, z, lab.orientation)
            followed = [again.get(s, occ) for s, occ in enumerate(occ_patches)]  # colour patches, as the reader cuts them
            for s, (patch, occ_patch) in enumerate(zip(followed, occ_patches)):
                block = lab.slots[s]
                if p.only_slot not in (None, s):
                    continue
                views = occupancy_views(cfg, occ_patch, n_gain, occ_rng)
                for view in views:
                    gains = base_gains * np.exp(rng.normal(0, gsig, 3)).astype(np.float32)
                    light = gains * np.float32(np.exp(light_rng.normal(0, bsig))) if bsig > 0 else None
                    cf, occ = slot_samples(cfg, patch, view, gains, light)
                    X["occupancy"].append(occ)
                    Y["occupancy"].append("empty" if block is None else "block")
                    if block is not None:
                        X["color"].append(cf)
                        Y["color"].append(_color_of(block))
                if block is None or lab.hands > 0:
                    continue
                # a colour seen on few blocks (the Wild): more copies, as softer, noisier cameras and other light give them
                c = _color_of(block)
                for _ in range((rare_copies(cfg, colours[c], colours_clear[c]) - 1) * n_gain):
                    gains = base_gains * np.exp(rare_rng.normal(0, gsig, 3)).astype(np.float32)
                    soft = degrade(patch, rare_rng, soft_blur, soft_noise)
                    soft_o = soft if occ_patch is patch else degrade(occ_patch, rare_rng, soft_blur, soft_noise)
                    cf, occ = slot_samples(cfg, soft, soft_o, gains)
                    X["color"].append(cf)
                    Y["color"].append(c)
                    X["occupancy"].append(occ)
                    Y["occupancy"].append("block")
        for s, block in enumerate(lab.slots):
            if block is not None and p.only_slot in (None, s):
                glyph_samples.append((p, p.z, lab.orientation, s, _glyph_of(block)))
            if p.only_slot is None and lab.hands == 0:  # (a hand may lie over the slot)
                if block is not None:
                    no_glyph_samples += [(p, p.z, lab.orientation, s, (d, 0.0)) for d in (-end, end)]
                elif s != 1:
                    no_glyph_samples.append((p, p.z, lab.orientation, s, (0.0, 0.0)))
        if p.only_slot is None and lab.hands == 0:  # the bare tray two slots out from the tower, each way
            no_glyph_samples += [(p, 0.0, lab.orientation, s, (0.0, 0.0)) for s in (-2, 4)]
    X["glyph"], Y["glyph"] = glyph_training_set(cfg, kit.tray, glyph_samples, rng, rare_rng,
                                                [labels[s[0].name].hands == 0 for s in glyph_samples])
    if cfg["calibration"].get("no_glyph", False):
        xn, yn = no_glyph_training_set(cfg, kit.tray, no_glyph_samples)
        X["glyph"] += xn
        Y["glyph"] += yn
    report: dict = {}
    models = {}
    C = cfg["calibration"]["C"]
    gk = cfg["calibration"]["glyph_kernel"]
    for name in ("orientation", "occupancy", "color", "glyph"):
        counts = Counter(Y[name])
        if len(counts) < 2:
            log(f"warning: the kit shows only {sorted(counts) or 'no'} for {name}; that model is left out")
            continue
        if name in cfg["calibration"]["kernel_models"]:
            model = train_kernel(np.array(X[name]), Y[name], C=float(gk["C"]), landmarks=int(gk["landmarks"]),
                                 gamma_scale=float(gk["gamma_scale"]))
        else:
            model = train_linear(np.array(X[name]), Y[name], C=float(C[name]))
        models[name] = model
        acc = float(np.mean(np.array(model.classes)[np.argmax(model.proba(np.array(X[name])), axis=1)] == np.array(Y[name])))
        report[name] = {"samples": len(Y[name]), "classes": dict(counts), "train_accuracy": round(acc, 4)}
        log(f"{name}: {len(Y[name])} samples, classes {dict(sorted(counts.items()))}, training accuracy {acc:.3f}")
    return models, report, cfg


def _learn_lens(cfg: dict, views: list, w: int, h: int, focal: float, log) -> dict:
    """Fit the lens's radial distortion to the markers' corners and keep it in cfg["camera"] when
    it fits them clearly better than a pinhole (calibration.lens). What was found, for the report."""
    lc = cfg["calibration"].get("lens", {})
    if not lc.get("fit", True):
        return {"fitted": False}
    fit = fit_lens(views, w, h, focal)
    if fit is None:
        return {"fitted": False}
    out = {"fitted": True, "radial": [round(v, 5) for v in fit.radial], "rms_px": round(fit.rms_px, 3),
           "pinhole_rms_px": round(fit.pinhole_rms_px, 3), "kept": False}
    if fit.keeps_distortion(float(lc.get("min_gain_px", 0.3)), float(lc.get("max_ratio", 0.7))):
        cfg["camera"].update(focal_px=fit.focal_px, radial=[fit.radial[0], fit.radial[1]], height=int(h))
        out["kept"] = True
        log(f"camera: the lens bends lines (k1 {fit.radial[0]:+.3f}, k2 {fit.radial[1]:+.3f}; marker fit "
            f"{fit.pinhole_rms_px:.2f} -> {fit.rms_px:.2f} px rms): frames are straightened, "
            f"focal length {fit.focal_px:.1f} px")
    return out


def register_for_learning(cfg: dict, tray, gray: np.ndarray, det) -> object:
    """The tray's registration in a kit photo, from calibration.min_markers markers at least.
    One marker places the camera well enough to read a frame, not to learn from it: its loose
    tilt moves every crop a little (twin 5's one such photo cost twin 123 seven slots)."""
    need = int(cfg["calibration"].get("min_markers", 2))
    return register(merge(cfg, {"tray": {"min_markers": need}}), tray, gray, det)


def calibrate_kit(kit_path: str | Path, out: str | Path, log=print, seed: int = 0, overrides: dict | None = None) -> dict:
    """Learn everything the reader needs from a labelled kit and write it to `out`.

    `overrides` merge into the default config first (e.g. fewer height variants in quick tests).
    OpenCV and the BLAS behind NumPy and scikit-learn run on one thread meanwhile (as they were
    before, afterwards): on several threads their reductions sum in a varying order, and the same
    photos gave calibrations that differed (the focal length in its ninth digit, and from it
    every model a little); on one they are the same byte for byte, and calibration took no
    longer (12 s against 14 s for 60 photos)."""
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        with one_blas_thread():
            return _calibrate_kit(kit_path, out, log, seed, overrides)
    finally:
        cv2.setNumThreads(threads)


def log_few_photos(cfg: dict, found: int, log) -> None:
    """Warn a table whose kit has fewer photos than `calibration.enough_images` in which the tray
    was found: it calibrates, but reads worse. On the 34 calibration kits cut from 60 photos to
    30, the slots in view read right fell by 0.6-0.9 points (98.8% -> 98.1% on the 62 kits'
    synthetic ones, 98.6% -> 97.7% on the fresh; the twin's 100% -> 99.3%), mostly through the
    glyph model and the focal length, which learn from every photo; more jittered copies of the
    same photos did not make it up (docs/vision.md, 2026-11-28)."""
    enough = int(cfg["calibration"].get("enough_images", 0))
    if 0 < found < enough:
        log(f"warning: the tray was found in {found} of the kit's photos; a calibration from so few reads the "
            f"blocks less well (from 30 photos some 0.7 points fewer slots than from 60): {enough} or more "
            "photos read best")


def _calibrate_kit(kit_path: str | Path, out: str | Path, log, seed: int, overrides: dict | None) -> dict:
    kit = load_kit(kit_path)
    if len(kit.labels) < MIN_IMAGES:
        raise KitError(f"the kit has {len(kit.labels)} labelled images; calibration needs at least {MIN_IMAGES}")
    cfg = merge(default_config(), overrides or {})
    det = make_detector(cfg)
    rng = np.random.default_rng(seed)

    # 1. read every image, find the markers, learn the focal length from all views
    images, views, sizes, unplaced = {}, [], set(), []
    for name in kit.labels:
        img = cv2.imread(str(kit.image_path(name)), cv2.IMREAD_COLOR)
        if img is None:
            raise KitError(f"the kit image {kit.image_path(name)} cannot be read as an image")
        if not has_colour(img):
            raise KitError(f"the kit image {kit.image_path(name)} has no colour (a black-and-white photo): "
                           "calibration learns the blocks' colours from colour photos")
        images[name] = img
        sizes.add(img.shape[:2])
        obj, pix, ids = correspondences(kit.tray, detect_markers(det, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), kit.tray.markers))
        if len(ids) >= 2:
            views.append((obj, pix))
        else:
            unplaced.append(name)
    if len(sizes) != 1:
        raise KitError("the kit's images must all have the same size (one camera)")
    h, w = next(iter(sizes))
    if len(views) < max(3, len(images) // 2):
        raise KitError(f"the tray's markers are visible in only {len(views)} of {len(images)} images: check tray.json "
                       f"(marker ids and corners) against the photos{_why_no_markers(cfg, kit, [images[n] for n in unplaced], det)}")
    focal, rms = calibrate_focal(kit.tray, views, w, h, 0.9 * w)
    cfg["camera"]["focal_px"] = focal
    cfg["camera"]["width"] = int(w)
    log(f"camera: focal length {focal:.1f} px (marker fit {rms:.2f} px rms) from {len(views)} views")
    lens_report = _learn_lens(cfg, views, w, h, focal, log)
    if lens_report.get("kept"):  # every later step sees the photos as the reader will see frames
        lens = lens_from_config(cfg["camera"])
        images = {name: lens.straighten(img) for name, img in images.items()}

    # 2. registration, tray colour and top height per image
    prepared: list[Prepared] = []
    skipped = []
    for name, img in images.items():
        try:
            reg = register_for_learning(cfg, kit.tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), det)
        except TrayNotFound as exc:
            skipped.append((name, str(exc)))
            continue
        tray_bgr = tl.tray_color(cfg, kit.tray, reg, img)
        prepared.append(Prepared(name, img, reg, tray_bgr, 0.0))
    if len(prepared) < MIN_IMAGES:
        raise KitError(f"the tray was found in only {len(prepared)} images; calibration needs {MIN_IMAGES}")
    log_few_photos(cfg, len(prepared), log)
    cfg["color"]["tray_ref_bgr"] = [float(v) for v in np.median([p.tray_bgr for p in prepared], axis=0)]
    cfg["glyph"]["white_balance_above"] = white_balance_above(cfg, [p.tray_bgr for p in prepared])
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    bg = learn_background(kit.tray, [(p.img, p.reg, tl.color_gains(cfg, p.tray_bgr)) for p in prepared],
                          float(cfg["calibration"]["tray_model_px_per_mm"]))
    bg.save(outdir / "tray_model.npz")
    report: dict = {"images": len(images), "used": len(prepared), "skipped": skipped,
                    "focal_px": float(cfg["camera"]["focal_px"]), "lens": lens_report, "models": {}}
    models, mreport, cfg = _train(cfg, kit, prepared, bg, rng, log)
    report["height_method"] = str(cfg["top"].get("height_method", "outline"))
    report["models"] = mreport
    for name in ("orientation", "occupancy", "color", "glyph"):
        path = outdir / f"{name}.npz"
        if name in models:
            models[name].save(path)
        elif path.exists():
            path.unlink()
    # the hands are looked for above the height the reader will find, as in play
    pipe = Pipeline(cfg, kit.tray, models, bg)
    for p in prepared:
        p.z = top_height(pipe, p.reg, p.img, p.tray_bgr, tl.color_gains(cfg, p.tray_bgr))
    for c in ("red", "yellow", "green", "blue"):
        if c not in mreport.get("color", {}).get("classes", {}):
            log(f"warning: no {c} block is labelled in the kit, so {c} cannot be recognised")
    for name in GLYPHS:
        shown = _blocks_showing(kit, prepared, name)
        if 0 < shown < int(cfg["calibration"]["min_blocks_per_glyph"]):
            log(f"warning: the kit shows a {name} glyph on only {shown} block(s); a few more photos with it "
                f"make it read surely (the twin's 48-photo kits with one Wild read Wilds as empty)")
        if 0 < shown < int(cfg["calibration"].get("rare_class_blocks", 0)) and not _blocks_showing(
                kit, [p for p in prepared if kit.labels[p.name].hands == 0], name):
            log(f"warning: every {name} block in the kit is in a photo with hands, which may cover it, so its "
                f"crops are not multiplied (calibration.rare_class_blocks): add a photo of it without hands")

    # 4. hand thresholds: small grid search on the kit's hand counts
    grid = cfg["calibration"]["hand_grid"]
    cells = hand_grid(cfg["hands"], kit.tray, bg)  # the search varies no setting of the cells themselves

    def counted_right(hc: dict) -> list[bool]:
        return [len(find_hands(hc, kit.tray, p.reg, p.img, p.tray_bgr, p.z, bg, tl.color_gains(cfg, p.tray_bgr), cells))
                == kit.labels[p.name].hands for p in prepared]

    right = {setting: counted_right(merge(cfg, {"hands": dict(zip(HAND_GRID_KEYS, setting))}))
             for setting in itertools.product(*(grid[k] for k in HAND_GRID_KEYS))}
    chroma, width, above = pick_hand_settings(right, cfg["hands"], grid, float(cfg["calibration"]["hand_grid_z"]))
    picked = right.get((chroma, width, above)) or counted_right(cfg)  # (defaults off the grid: as they are)
    accuracy = sum(picked) / len(prepared)
    cfg["hands"].update(dict(zip(HAND_GRID_KEYS, (chroma, width, above))))
    report["hands_train_accuracy"] = round(accuracy, 4)
    report["hand_grid_right"] = {",".join(map(str, k)): sum(v) for k, v in right.items()}  # photos counted right per setting
    log(f"hands: chroma {chroma}, two arms from {width} mm, plane {above} mm above the top: "
        f"{accuracy:.3f} exact on the kit")

    # 5. write the folder
    (outdir / "tray.json").write_text(json.dumps(kit.tray.to_json(), indent=1) + "\n", encoding="utf-8")
    over = {k: cfg[k] for k in ("camera", "color", "hands", "glyph", "top", "align")}
    over["calibrated_from"] = str(Path(kit_path))
    (outdir / "config.json").write_text(json.dumps(over, indent=1) + "\n", encoding="utf-8")
    (outdir / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if skipped:
        log(f"{len(skipped)} images skipped: " + "; ".join(f"{n}: {e}" for n, e in skipped[:5]))
    return report
