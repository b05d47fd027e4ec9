"""The colour model is taught the light brighter and dimmer than the kit's, so a green block in a
light that blows out the tray (its colour constancy then short) is still green, not yellow."""

from __future__ import annotations

import numpy as np

from vision.calibrate import slot_samples
from vision.models import train_linear
from vision.reader import default_config

# the kit's blocks in a dim room: a yellow block is darker than a green one lit well
KIT_LIGHT = {"green": (40, 110, 30), "yellow": (20, 120, 140), "red": (30, 30, 130), "blue": (120, 50, 20)}


def _patch(bgr, rng: np.random.Generator) -> np.ndarray:
    p = np.array(bgr, np.float32)[None, None] + rng.normal(0, 4, (31, 94, 3))
    return np.clip(p, 0, 255).astype(np.uint8)


def _colour_model(cfg: dict, seed: int = 1):
    """A colour model trained as calibration trains it: each patch under jittered channel gains,
    its colour features under the whole light's brightness jitter too."""
    rng = np.random.default_rng(seed)
    sig, bsig = float(cfg["calibration"]["gain_jitter"]), float(cfg["calibration"]["brightness_jitter"])
    X, Y = [], []
    for _ in range(30):
        for name, bgr in KIT_LIGHT.items():
            patch = _patch(bgr, rng)
            gains = np.exp(rng.normal(0, sig, 3)).astype(np.float32)
            light = gains * np.float32(np.exp(rng.normal(0, bsig))) if bsig > 0 else None
            cf, _ = slot_samples(cfg, patch, patch, gains, light)
            X.append(cf)
            Y.append(name)
    return train_linear(np.array(X), Y)


def test_a_green_block_in_brighter_light_than_the_kits_is_read_green():
    cfg = default_config()
    model = _colour_model(cfg)
    bright_green = _patch((90, 245, 70), np.random.default_rng(0))
    cf, _ = slot_samples(cfg, bright_green, bright_green, np.ones(3, np.float32))
    p = dict(zip(model.classes, model.proba(cf[None])[0]))
    assert p["green"] > 0.9


def test_the_occupancy_features_keep_the_slots_own_light():
    cfg = default_config()
    patch = _patch(KIT_LIGHT["green"], np.random.default_rng(2))
    ones = np.ones(3, np.float32)
    cf, occ = slot_samples(cfg, patch, patch, ones)
    cf2, occ2 = slot_samples(cfg, patch, patch, ones, ones * np.float32(1.5))
    assert np.allclose(occ, occ2)  # the brightness jitter is the colour model's alone
    assert not np.allclose(cf, cf2)
