"""The whole frame reader: registration -> top face -> slots -> hands, as a TopLevelReading.

A Pipeline is the loaded calibration folder (config.json, tray.json, model files); read_frame is
a pure function of (pipeline, image). Nothing is cached between frames.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import cv2
import numpy as np

from referee.blocks import Block
from referee.observations import SlotReading, TopLevelReading
from vision import top_level as tl
from vision.background import TrayBackground
from vision.hands import find_hands
from vision.kit import KitError, Tray, load_tray
from vision.models import LinearModel
from vision.tray import Registration, TrayNotFound, make_detector, register

DEFAULT_CONFIG = Path(__file__).with_name("default_config.json")
GLYPHS = ("1", "2", "3", "4", "draw2", "reverse", "skip", "wild")
COLOR_CLASSES = ("red", "yellow", "green", "blue", "wild")
MODEL_NAMES = ("orientation", "occupancy", "color", "glyph")


class CalibrationMissing(RuntimeError):
    """The calibration folder is missing or broken; the message says how to make one."""


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
    models: dict[str, LinearModel] = field(default_factory=dict)
    background: TrayBackground | None = None

    def __post_init__(self) -> None:
        self.detector = make_detector(self.cfg)


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
                models[name] = LinearModel.load(p)
            except (OSError, KeyError, ValueError) as exc:
                raise CalibrationMissing(f"the model file {p} is broken ({exc}): calibrate again") from None
    bg = None
    if (d / "tray_model.npz").is_file():
        try:
            bg = TrayBackground.load(d / "tray_model.npz")
        except (OSError, KeyError, ValueError) as exc:
            raise CalibrationMissing(f"the tray model {d / 'tray_model.npz'} is broken ({exc}): calibrate again") from None
    return Pipeline(merge(default_config(), over), tray, models, bg)


@dataclass(frozen=True)
class FrameResult:
    reading: TopLevelReading
    registration: Registration
    z_top: float
    orientation_p: float  # probability of the chosen orientation


def block_posterior(p_color: np.ndarray, p_glyph: np.ndarray) -> list[tuple[str, float]]:
    """Joint block probabilities from independent colour and glyph probabilities, best first."""
    out = []
    for ci, c in enumerate(COLOR_CLASSES[:4]):
        for gi, g in enumerate(GLYPHS[:7]):
            out.append((f"{c}-{g}", float(p_color[ci] * p_glyph[gi])))
    out.append(("wild", float(p_color[4] * p_glyph[7])))
    total = sum(p for _, p in out) or 1.0
    return sorted(((n, p / total) for n, p in out), key=lambda t: -t[1])


def _class_probs(model: LinearModel | None, X: np.ndarray, classes: tuple[str, ...]) -> np.ndarray:
    """Probabilities in the order of `classes` (a class the model never saw gets ~0)."""
    out = np.full((len(X), len(classes)), 1e-6)
    if model is None:
        return np.full((len(X), len(classes)), 1.0 / len(classes))
    P = model.proba(X)
    for j, c in enumerate(model.classes):
        if c in classes:
            out[:, classes.index(c)] = P[:, j]
    return out / out.sum(axis=1, keepdims=True)


def top_height(p: Pipeline, reg: Registration, img: np.ndarray, tray_bgr: np.ndarray, gains: np.ndarray) -> float:
    bg = p.background if p.cfg["top"].get("height_uses_tray_model", True) else None
    z = tl.silhouette_height(p.cfg, p.tray, reg, img, tray_bgr, bg, gains)
    if p.cfg["align"]["enabled"]:
        z = tl.align_height(p.cfg, p.tray, reg, img, z)
    if not np.isfinite(z):
        z = float(p.cfg["top"]["fallback_levels"]) * p.tray.block_mm[2]
    return z


def slot_features(p: Pipeline, reg: Registration, img: np.ndarray, z: float, orient: str, gains: np.ndarray):
    patches = tl.slot_patches(p.cfg, p.tray, reg, img, z, orient)
    col = np.array([tl.color_features(pa, gains) for pa in patches])
    gly = np.array([tl.glyph_features(p.cfg, pa) for pa in patches])
    occ = np.array([tl.occupancy_features_patch(p.cfg, pa, gains, c) for pa, c in zip(patches, col)])
    return patches, col, gly, occ


def read_frame(p: Pipeline, img: np.ndarray, t: float = 0.0, frame_seq: int = -1) -> FrameResult:
    """Read one BGR frame. Raises TrayNotFound when the tray's markers cannot be seen."""
    if img is None or img.ndim != 3 or img.shape[2] != 3:
        raise ValueError("the frame is not a colour image")
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    reg = register(p.cfg, p.tray, gray, p.detector)
    tray_bgr = tl.tray_color(p.cfg, p.tray, reg, img)
    gains = tl.color_gains(p.cfg, tray_bgr)
    z = top_height(p, reg, img, tray_bgr, gains)
    face = tl.face_image(p.cfg, p.tray, reg, img, z)
    of = tl.orientation_features(p.cfg, p.tray, face)
    po = _class_probs(p.models.get("orientation"), of[None], ("x", "y"))[0]
    # Each orientation's slots are read; the right one shows whole, confidently read blocks
    # (the wrong one cuts across blocks). That evidence joins the face-pattern model.
    lam = float(p.cfg["decision"]["orientation_block_weight"])
    reads = {}
    score = {}
    sure = float(p.cfg["decision"]["orientation_sure_above"])
    for k, o in enumerate(("x", "y")):
        if lam and po[k] < 1 - sure:
            continue  # the face pattern alone is sure enough: read only the other orientation
        _, col, gly, occ = slot_features(p, reg, img, z, o, gains)
        p_occ = _class_probs(p.models.get("occupancy"), occ, ("empty", "block"))[:, 1]
        p_col = _class_probs(p.models.get("color"), col, COLOR_CLASSES)
        p_gly = _class_probs(p.models.get("glyph"), gly, GLYPHS)
        reads[o] = (p_occ, p_col, p_gly)
        best = np.array([max(p_col[s]) * max(p_gly[s]) for s in range(3)])
        score[o] = float(np.log(max(po[k], 1e-6)) + lam * float(np.sum(p_occ * best)))
        if lam == 0:
            break
    orient = max(score, key=score.get) if lam else ("x" if po[0] >= po[1] else "y")
    if lam:
        sx, sy = score.get("x", -np.inf), score.get("y", -np.inf)
        po = np.exp(np.array([sx, sy]) - max(sx, sy))
        po = po / po.sum()
    else:
        _, col, gly, occ = slot_features(p, reg, img, z, orient, gains)
        reads[orient] = (_class_probs(p.models.get("occupancy"), occ, ("empty", "block"))[:, 1],
                         _class_probs(p.models.get("color"), col, COLOR_CLASSES),
                         _class_probs(p.models.get("glyph"), gly, GLYPHS))
    p_occ, p_col, p_gly = reads[orient]
    dc = p.cfg["decision"]
    slots = []
    for s in range(3):
        post = block_posterior(p_col[s], p_gly[s])
        if p_occ[s] < float(dc["empty_below"]):
            slots.append(SlotReading(None, float(1 - p_occ[s]), tuple((n, round(q * p_occ[s], 4)) for n, q in post[:3])))
        else:
            slots.append(SlotReading(Block.parse(post[0][0]), float(p_occ[s] * post[0][1]),
                                     tuple((n, round(q * p_occ[s], 4)) for n, q in post[:3])))
    hands = find_hands(p.cfg, p.tray, reg, img, tray_bgr, z, p.background, gains)
    low = [s for s in slots if s.confidence < float(dc["uncertain_below"])]
    o_conf = float(max(po))
    uncertain = bool(low) or o_conf < float(dc["uncertain_below"])
    note = ""
    if uncertain:
        bits = [f"slot {i} at {s.confidence:.2f}" for i, s in enumerate(slots) if s.confidence < float(dc["uncertain_below"])]
        if o_conf < float(dc["uncertain_below"]):
            bits.append(f"orientation at {o_conf:.2f}")
        note = "low confidence: " + ", ".join(bits)
    reading = TopLevelReading(orient, tuple(slots), hands, t, frame_seq, uncertain, note)
    return FrameResult(reading, reg, z, o_conf)
