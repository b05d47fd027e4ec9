"""The occupancy model is taught slots as softer, noisier cameras see them, not only the kit's own."""

from __future__ import annotations

import cv2
import numpy as np

from vision.calibrate import occupancy_views
from vision.reader import default_config


def _empty_slot_patch() -> np.ndarray:
    """An empty slot seen from above: three blocks of the level below across it, sharp seams between."""
    patch = np.zeros((31, 94, 3), np.uint8)
    patch[:, :31] = (40, 40, 200)
    patch[:, 31:63] = (40, 200, 220)
    patch[:, 63:] = (40, 40, 200)
    return patch


def _seam_sharpness(patch: np.ndarray) -> float:
    gray = cv2.cvtColor(patch, cv2.COLOR_BGR2GRAY).astype(np.float32)
    return float(np.abs(np.diff(gray, axis=1)).max(axis=1).mean())


def test_calibration_shows_the_occupancy_model_blurred_and_noisy_slots_too():
    """Switched on (calibration.occupancy_degrade; off by default, see docs/vision.md)."""
    cfg = default_config()
    cfg["calibration"]["occupancy_degrade"] = 2
    patch = _empty_slot_patch()
    views = occupancy_views(cfg, patch, 3, np.random.default_rng(0))
    assert len(views) == 3
    k = int(cfg["calibration"]["occupancy_degrade"])  # some views as another camera gives them, the kit's own kept
    for v in views[:k]:
        assert v.shape == patch.shape and v.dtype == np.uint8
        assert not np.array_equal(v, patch)
    assert all(v is patch for v in views[k:])
    # the degraded views, over many draws, soften the seams on average
    rng = np.random.default_rng(1)
    soft = [_seam_sharpness(occupancy_views(cfg, patch, 1, rng)[0]) for _ in range(20)]
    assert np.mean(soft) < _seam_sharpness(patch)


def test_no_degraded_views_when_switched_off():
    cfg = default_config()
    cfg["calibration"]["occupancy_degrade"] = 0
    patch = _empty_slot_patch()
    assert all(v is patch for v in occupancy_views(cfg, patch, 3, np.random.default_rng(0)))
