"""Small kits rendered by the independent synthetic renderer, shared by the vision tests."""

from __future__ import annotations

import pytest

from vision.synthkit import SynthOptions, write_kit


# A small hand-threshold grid and fewer glyph variants: the full search is the bench's business.
QUICK = {"calibration": {
    "glyph_augment": 2,
    "hand_grid": {"chroma": [0.05], "two_arm_width_mm": [140], "plane_above_top_mm": [35]},
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


@pytest.fixture
def pipe(calibration):
    """The small kit's calibration loaded afresh for each test (a test may change its settings)."""
    from vision.reader import load_pipeline

    return load_pipeline(calibration)


@pytest.fixture
def lone_read(calibration, small_kit):
    """The small kit's photo of a lone red 1 along y in slot 0, its pipeline and its reading."""
    import cv2

    from vision.reader import load_pipeline, read_frame

    pipe = load_pipeline(calibration)
    img = cv2.imread(str(small_kit / "images" / "0015.png"))
    return pipe, img, read_frame(pipe, img)
