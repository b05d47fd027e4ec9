"""Small kits rendered by the independent synthetic renderer, shared by the vision tests."""

from __future__ import annotations

import pytest

from vision.synthkit import SynthOptions, write_kit


# One height method and one glyph crop: the choice among several is the bench's business.
QUICK = {"calibration": {
    "height_variants": [{"name": "silhouette", "top": {"height_uses_tray_model": False}, "align": {"enabled": False}}],
    "glyph_crops": [[0.45, 0.85, 48, 32]],
    "hand_grid": {"chroma": [0.08], "two_arm_width_mm": [140], "plane_above_top_mm": [35]},
}}


@pytest.fixture(scope="session")
def small_kit(tmp_path_factory):
    return write_kit(tmp_path_factory.mktemp("kit") / "kit", 24, seed=3, opt=SynthOptions(hide_marker_prob=0.0))


@pytest.fixture(scope="session")
def calibration(small_kit, tmp_path_factory):
    from vision.calibrate import calibrate_kit

    out = tmp_path_factory.mktemp("cal") / "cal"
    calibrate_kit(small_kit, out, log=lambda m: None, overrides=QUICK)
    return out
