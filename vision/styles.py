"""A renderer's or a camera's look, put on whole kits: tone curve, saturation, colour cast, JPEG,
defocus, vignetting and colour fringes (`stacko bench vision --style`, `stacko vision synthkit --style`).

Why: the acceptance kit comes from another renderer, and every threshold here was set on our two
(the synthetic kits and the twin). Inverting a tone curve put on the bench's kits gave back their
readings to a slot or two, so what such a look costs is the pipeline's, not the pictures'
(docs/vision.md, 2026-11-30). A style is a pure function of (settings, image), as the vision
stages are, and it is put on the calibration kit and the kits scored alike: a table calibrates
from photos of its own camera.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import cv2
import numpy as np


def _gamma(img: np.ndarray, g: float) -> np.ndarray:
    """Each 8-bit value v -> 255 (v / 255)^g: above 1 darker mid-tones (a renderer's linear
    output shown as it is), below 1 lighter ones."""
    lut = np.round((np.arange(256) / 255.0) ** g * 255.0).astype(np.uint8)
    return cv2.LUT(img, lut)


def _saturation(img: np.ndarray, k: float) -> np.ndarray:
    """Colour saturation times k (HSV), brightness kept."""
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
    hsv[..., 1] = np.clip(hsv[..., 1].astype(np.float32) * k, 0, 255).astype(np.uint8)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)


def _cast(img: np.ndarray, k: float) -> np.ndarray:
    """A white balance off towards warm light: red times k, blue divided by it (clipped, as a
    camera clips)."""
    return np.clip(img.astype(np.float32) * np.array([1.0 / k, 1.0, k], np.float32), 0, 255).astype(np.uint8)


def _jpeg(img: np.ndarray, q: float) -> np.ndarray:
    """Saved as JPEG at quality q and read back (blocks, colour at half resolution)."""
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(round(q))])
    if not ok:
        raise ValueError("OpenCV could not encode the image as JPEG")
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)


def _defocus(img: np.ndarray, sigma: float) -> np.ndarray:
    """A lens out of focus: Gaussian blur of sigma px over the whole frame."""
    return cv2.GaussianBlur(img, (0, 0), sigma)


def _vignette(img: np.ndarray, k: float) -> np.ndarray:
    """Light falling off towards the corners: the corners times 1 - k."""
    h, w = img.shape[:2]
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((x - w / 2) / (w / 2)) ** 2 + ((y - h / 2) / (h / 2)) ** 2
    f = 1.0 - k * np.clip(r2 / 2.0, 0.0, 1.0)
    return np.clip(img * f[..., None], 0, 255).astype(np.uint8)


def _fringe(img: np.ndarray, px: float) -> np.ndarray:
    """Lateral colour fringes: blue moved px one way along x, red the other."""
    h, w = img.shape[:2]
    b, g, r = cv2.split(img)

    def moved(c: np.ndarray, d: float) -> np.ndarray:
        return cv2.warpAffine(c, np.float32([[1, 0, d], [0, 1, 0]]), (w, h), borderMode=cv2.BORDER_REPLICATE)

    return cv2.merge([moved(b, px), g, moved(r, -px)])


@dataclass(frozen=True)
class Effect:
    apply: Callable[[np.ndarray, float], np.ndarray]
    low: float
    high: float
    identity: float
    what: str


EFFECTS: dict[str, Effect] = {
    "gamma": Effect(_gamma, 0.3, 3.0, 1.0, "tone curve exponent (1.6: darker mid-tones)"),
    "saturation": Effect(_saturation, 0.2, 2.0, 1.0, "colour saturation factor (0.6: paler colours)"),
    "cast": Effect(_cast, 0.7, 1.4, 1.0, "warm cast: red times it, blue divided by it"),
    "jpeg": Effect(_jpeg, 10.0, 100.0, 100.0, "JPEG quality (35: heavy compression)"),
    "defocus": Effect(_defocus, 0.0, 5.0, 0.0, "Gaussian blur sigma in px"),
    "vignette": Effect(_vignette, 0.0, 0.9, 0.0, "light lost at the corners (0.5: half)"),
    "fringe": Effect(_fringe, 0.0, 4.0, 0.0, "colour fringe shift in px"),
}
ORDER = ("defocus", "fringe", "vignette", "cast", "gamma", "saturation", "jpeg")  # optics, sensor, then encoding


@dataclass(frozen=True)
class Style:
    """Named effects with their settings, put on in ORDER (the optics first, the file last)."""

    effects: tuple[tuple[str, float], ...] = ()

    @property
    def name(self) -> str:
        return ",".join(f"{k}={v:g}" for k, v in self.effects) or "none"


def parse_style(spec: str) -> Style:
    """'gamma=1.6,jpeg=35' -> Style. Raises ValueError naming what is wrong and what is allowed."""
    got: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if key not in EFFECTS:
            raise ValueError(f"unknown style effect {key!r}: use {', '.join(EFFECTS)} (as effect=value)")
        if not sep:
            raise ValueError(f"style effect {key!r} needs a value, as {key}=value ({EFFECTS[key].what})")
        try:
            v = float(value)
        except ValueError:
            raise ValueError(f"style effect {key}: {value!r} is not a number") from None
        e = EFFECTS[key]
        if not (e.low <= v <= e.high):
            raise ValueError(f"style effect {key}={v:g} is out of range {e.low:g}-{e.high:g} ({e.what})")
        if key in got:
            raise ValueError(f"style effect {key} given twice")
        got[key] = v
    return Style(tuple((k, got[k]) for k in ORDER if k in got and got[k] != EFFECTS[k].identity))


def apply_style(style: Style, img: np.ndarray) -> np.ndarray:
    """The image (8-bit BGR) with the style's effects put on, in order; the input is not changed."""
    out = img
    for key, v in style.effects:
        out = EFFECTS[key].apply(out, v)
    return out


def style_kit(style: Style, kit: str | Path) -> int:
    """Every image of a kit folder (images/*) rewritten with the style, and the style recorded in
    the kit's style.json. Returns how many images were rewritten."""
    kit = Path(kit)
    n = 0
    for path in sorted((kit / "images").iterdir()):
        img = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if img is None:
            continue
        if not cv2.imwrite(str(path), apply_style(style, img)):
            raise OSError(f"could not write {path}")
        n += 1
    (kit / "style.json").write_text(json.dumps({"style": style.name}) + "\n")
    return n
