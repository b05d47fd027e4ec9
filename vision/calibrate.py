"""Calibration from a labelled kit: `stacko calibrate vision KIT --out DIR`.

Learns, from the kit's own photos: the camera's focal length (all views of the markers), the
tray's colour under the kit's light (the colour-constancy reference), the orientation, occupancy,
colour and glyph classifiers (with small geometric and light jitter so a few dozen photos are
enough), and the hand thresholds (a small grid search on the kit's hand counts). Writes DIR with
config.json (all thresholds), tray.json, the model files and report.json.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from vision import top_level as tl
from vision.hands import find_hands
from vision.kit import Kit, KitError, load_kit
from vision.models import train_linear
from vision.background import learn_background
from vision.reader import Pipeline, default_config, merge, read_frame, top_height
from vision.tray import TrayNotFound, calibrate_focal, correspondences, detect_markers, make_detector, register

MIN_IMAGES = 6


@dataclass
class Prepared:
    name: str
    img: np.ndarray
    reg: object
    tray_bgr: np.ndarray
    z: float


def _glyph_of(block) -> str:
    return block.glyph


def _color_of(block) -> str:
    return "wild" if block.color is None else block.color.value


def _glyph_option(o) -> dict:
    return {"crop_x": float(o[0]), "crop_y": float(o[1]), "width": int(o[2]), "height": int(o[3])}


def jitter_patch(patch: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A block a few mm / degrees off its slot, as the camera will also see it."""
    h, w = patch.shape[:2]
    M = cv2.getRotationMatrix2D((w / 2, h / 2), rng.uniform(-4, 4), rng.uniform(0.93, 1.07))
    M[:, 2] += rng.uniform(-3, 3, 2)
    return cv2.warpAffine(patch, M, (w, h), borderMode=cv2.BORDER_REPLICATE)


def glyph_training_set(cfg: dict, patches, rng) -> tuple[list, list]:
    X, Y = [], []
    n_aug = int(cfg["calibration"]["glyph_augment"])
    for patch, glyph, _ in patches:
        for q in [patch] + [jitter_patch(patch, rng) for _ in range(n_aug)]:
            for r in (q, np.ascontiguousarray(q[::-1, ::-1])):
                X.append(tl.glyph_features(cfg, r))
                Y.append(glyph)
    return X, Y


def choose_glyph_crop(cfg: dict, patches, rng, log) -> tuple:
    """The glyph crop and feature size that cross-validate best across images (each print differs)."""
    options = [tuple(o) for o in cfg["calibration"]["glyph_crops"]]
    names = sorted({n for _, _, n in patches})
    if len(names) < 6 or len(options) == 1 or len({g for _, g, _ in patches}) < 2:
        return options[0]
    folds = {n: i % 3 for i, n in enumerate(rng.permutation(names))}
    best = None
    for crop in options:
        c = merge(cfg, {"glyph": _glyph_option(crop), "calibration": {"glyph_augment": 1}})
        right = total = 0
        for k in range(3):
            train = [t for t in patches if folds[t[2]] != k]
            test = [t for t in patches if folds[t[2]] == k]
            if len({g for _, g, _ in train}) < 2 or not test:
                continue
            X, Y = glyph_training_set(c, train, rng)
            m = train_linear(np.array(X), Y, C=float(cfg["calibration"]["C"]["glyph"]))
            P = m.proba(np.array([tl.glyph_features(c, t[0]) for t in test]))
            pred = np.array(m.classes)[np.argmax(P, axis=1)]
            right += int(np.sum(pred == np.array([t[1] for t in test])))
            total += len(test)
        acc = right / max(1, total)
        if best is None or acc > best[0]:
            best = (acc, crop)
    log(f"glyph crop {best[1]} chosen ({best[0]:.3f} cross-validated across images)")
    return best[1]


def _train(cfg: dict, kit: Kit, prepared: list, bg, rng, log) -> tuple[dict, dict, dict]:
    """Features with jitter from every labelled image, then the four classifiers."""
    cfg = json.loads(json.dumps(cfg))
    pipe = Pipeline(cfg, kit.tray, {}, bg)
    for p in prepared:
        p.z = top_height(pipe, p.reg, p.img, p.tray_bgr, tl.color_gains(cfg, p.tray_bgr))

    # 3. features with jitter, then the four classifiers
    X = {"orientation": [], "occupancy": [], "color": [], "glyph": []}
    glyph_patches: list[tuple[np.ndarray, str, str]] = []
    Y = {k: [] for k in X}
    jit_z = [float(v) for v in cfg["calibration"]["z_jitter_mm"]]
    n_gain = int(cfg["calibration"]["gain_jitter_samples"])
    gsig = float(cfg["calibration"]["gain_jitter"])
    for p in prepared:
        lab = kit.labels[p.name]
        base_gains = tl.color_gains(cfg, p.tray_bgr)
        for dz in jit_z:
            z = max(kit.tray.block_mm[2], p.z + dz)
            face = tl.face_image(cfg, kit.tray, p.reg, p.img, z)
            for k in range(4):
                rot = np.ascontiguousarray(np.rot90(face, k))
                o = lab.orientation if k % 2 == 0 else ("y" if lab.orientation == "x" else "x")
                X["orientation"].append(tl.orientation_features(cfg, kit.tray, rot))
                Y["orientation"].append(o)
            patches = tl.slot_patches(cfg, kit.tray, p.reg, p.img, z, lab.orientation)
            for s, patch in enumerate(patches):
                block = lab.slots[s]
                for _ in range(n_gain):
                    gains = base_gains * np.exp(rng.normal(0, gsig, 3)).astype(np.float32)
                    cf = tl.color_features(patch, gains)
                    X["occupancy"].append(tl.occupancy_features_patch(cfg, patch, gains, cf))
                    Y["occupancy"].append("empty" if block is None else "block")
                    if block is not None:
                        X["color"].append(cf)
                        Y["color"].append(_color_of(block))
                if block is not None:
                    glyph_patches.append((patch, _glyph_of(block), p.name))
    crop = choose_glyph_crop(cfg, glyph_patches, rng, log)
    cfg["glyph"].update(_glyph_option(crop))
    X["glyph"], Y["glyph"] = glyph_training_set(cfg, glyph_patches, rng)
    report: dict = {}
    models = {}
    C = cfg["calibration"]["C"]
    for name in ("orientation", "occupancy", "color", "glyph"):
        counts = Counter(Y[name])
        if len(counts) < 2:
            log(f"warning: the kit shows only {sorted(counts) or 'no'} for {name}; that model is left out")
            continue
        model = train_linear(np.array(X[name]), Y[name], C=float(C[name]))
        models[name] = model
        acc = float(np.mean(np.array(model.classes)[np.argmax(model.proba(np.array(X[name])), axis=1)] == np.array(Y[name])))
        report[name] = {"samples": len(Y[name]), "classes": dict(counts), "train_accuracy": round(acc, 4)}
        log(f"{name}: {len(Y[name])} samples, classes {dict(sorted(counts.items()))}, training accuracy {acc:.3f}")
    return models, report, cfg


def calibrate_kit(kit_path: str | Path, out: str | Path, log=print, seed: int = 0, overrides: dict | None = None) -> dict:
    """Learn everything the reader needs from a labelled kit and write it to `out`.

    `overrides` merge into the default config first (e.g. fewer height variants in quick tests)."""
    kit = load_kit(kit_path)
    if len(kit.labels) < MIN_IMAGES:
        raise KitError(f"the kit has {len(kit.labels)} labelled images; calibration needs at least {MIN_IMAGES}")
    cfg = merge(default_config(), overrides or {})
    det = make_detector(cfg)
    rng = np.random.default_rng(seed)

    # 1. read every image, find the markers, learn the focal length from all views
    images, views, sizes = {}, [], set()
    for name in kit.labels:
        img = cv2.imread(str(kit.image_path(name)), cv2.IMREAD_COLOR)
        if img is None:
            raise KitError(f"the kit image {kit.image_path(name)} cannot be read as an image")
        images[name] = img
        sizes.add(img.shape[:2])
        obj, pix, ids = correspondences(kit.tray, detect_markers(det, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)))
        if len(ids) >= 2:
            views.append((obj, pix))
    if len(sizes) != 1:
        raise KitError("the kit's images must all have the same size (one camera)")
    h, w = next(iter(sizes))
    if len(views) < max(3, len(images) // 2):
        raise KitError(f"the tray's markers are visible in only {len(views)} of {len(images)} images: check tray.json "
                       "(marker ids and corners) against the photos")
    focal, rms = calibrate_focal(kit.tray, views, w, h, 0.9 * w)
    cfg["camera"]["focal_px"] = focal
    cfg["camera"]["width"] = int(w)
    log(f"camera: focal length {focal:.1f} px (marker fit {rms:.2f} px rms) from {len(views)} views")

    # 2. registration, tray colour and top height per image
    prepared: list[Prepared] = []
    skipped = []
    for name, img in images.items():
        try:
            reg = register(cfg, kit.tray, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), det)
        except TrayNotFound as exc:
            skipped.append((name, str(exc)))
            continue
        tray_bgr = tl.tray_color(cfg, kit.tray, reg, img)
        prepared.append(Prepared(name, img, reg, tray_bgr, 0.0))
    if len(prepared) < MIN_IMAGES:
        raise KitError(f"the tray was found in only {len(prepared)} images; calibration needs {MIN_IMAGES}")
    cfg["color"]["tray_ref_bgr"] = [float(v) for v in np.median([p.tray_bgr for p in prepared], axis=0)]
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    bg = learn_background(kit.tray, [(p.img, p.reg, tl.color_gains(cfg, p.tray_bgr)) for p in prepared],
                          float(cfg["calibration"]["tray_model_px_per_mm"]))
    bg.save(outdir / "tray_model.npz")
    report: dict = {"images": len(images), "used": len(prepared), "skipped": skipped, "focal_px": focal, "models": {}}
    # The top's height: silhouette rays (good with a near camera) or the square outline's edge fit
    # (good with a far one). Train with each and keep the one that reads the kit better.
    best = None
    variants = cfg["calibration"]["height_variants"]
    if len(variants) == 1:  # nothing to choose: train once
        vcfg = merge(cfg, {"top": variants[0]["top"], "align": variants[0]["align"]})
        models, mreport, vcfg = _train(vcfg, kit, prepared, bg, np.random.default_rng(seed), log)
        variants = []
        best = (1.0, {"name": cfg["calibration"]["height_variants"][0]["name"]}, vcfg)
    order = list(np.random.default_rng(seed).permutation(len(prepared)))
    halves = [[prepared[i] for i in order[::2]], [prepared[i] for i in order[1::2]]]
    for variant in variants:
        vcfg = merge(cfg, {"top": variant["top"], "align": variant["align"]})
        right = total = 0
        for k in (0, 1):  # two-fold: train on one half of the kit, read the other
            models, _, fcfg = _train(vcfg, kit, halves[k], bg, np.random.default_rng(seed), lambda m: None)
            pipe = Pipeline(fcfg, kit.tray, models, bg)
            for p in halves[1 - k]:
                try:
                    r = read_frame(pipe, p.img).reading
                except (TrayNotFound, ValueError):
                    continue
                lab = kit.labels[p.name]
                right += sum(a == (b.name if b else None) for a, b in zip(r.names, lab.slots)) + 3 * (r.orientation == lab.orientation)
                total += 6
        acc = right / max(1, total)
        log(f"height by {variant['name']}: {acc:.3f} of slots and orientation read right on held-out kit images")
        if best is None or acc > best[0]:
            best = (acc, variant, vcfg)
    _, variant, vcfg = best
    if variants:
        models, mreport, vcfg = _train(vcfg, kit, prepared, bg, np.random.default_rng(seed), log)
    best = (best[0], variant["name"], models, mreport, vcfg)
    _, method, models, mreport, cfg = best
    report["height_method"] = method
    report["models"] = mreport
    for name in ("orientation", "occupancy", "color", "glyph"):
        path = outdir / f"{name}.npz"
        if name in models:
            models[name].save(path)
        elif path.exists():
            path.unlink()
    for p in prepared:
        p.z = top_height(Pipeline(cfg, kit.tray, models, bg), p.reg, p.img, p.tray_bgr, tl.color_gains(cfg, p.tray_bgr))
    for c in ("red", "yellow", "green", "blue"):
        if c not in mreport.get("color", {}).get("classes", {}):
            log(f"warning: no {c} block is labelled in the kit, so {c} cannot be recognised")

    # 4. hand thresholds: small grid search on the kit's hand counts
    grid = cfg["calibration"]["hand_grid"]
    best = None
    for chroma in grid["chroma"]:
        for width in grid["two_arm_width_mm"]:
            for above in grid["plane_above_top_mm"]:
                hc = merge(cfg, {"hands": {"chroma": chroma, "two_arm_width_mm": width, "plane_above_top_mm": above}})
                right = 0
                for p in prepared:
                    n = len(find_hands(hc, kit.tray, p.reg, p.img, p.tray_bgr, p.z, bg, tl.color_gains(cfg, p.tray_bgr)))
                    right += n == kit.labels[p.name].hands
                score = right / len(prepared)
                if best is None or score > best[0] + 1e-9:
                    best = (score, chroma, width, above)
    cfg["hands"].update({"chroma": best[1], "two_arm_width_mm": best[2], "plane_above_top_mm": best[3]})
    report["hands_train_accuracy"] = round(best[0], 4)
    log(f"hands: chroma {best[1]}, two arms from {best[2]} mm, plane {best[3]} mm above the top: "
        f"{best[0]:.3f} exact on the kit")

    # 5. write the folder
    (outdir / "tray.json").write_text(json.dumps(kit.tray.to_json(), indent=1) + "\n", encoding="utf-8")
    over = {k: cfg[k] for k in ("camera", "color", "hands", "glyph", "top", "align")}
    over["calibrated_from"] = str(Path(kit_path))
    (outdir / "config.json").write_text(json.dumps(over, indent=1) + "\n", encoding="utf-8")
    (outdir / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if skipped:
        log(f"{len(skipped)} images skipped: " + "; ".join(f"{n}: {e}" for n, e in skipped[:5]))
    return report
