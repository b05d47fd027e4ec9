"""Glyphs under a lamp of another colour than the calibration's: the tray says what the light
did, and the glyph crop is white-balanced by it before the glyph is read."""

from __future__ import annotations

import cv2
import numpy as np

from vision import top_level as tl
from vision.calibrate import white_balance_above
from vision.reader import default_config

WARM_LAMP = np.array([0.7, 0.95, 1.2], np.float32)  # BGR: blue down by a third, red up by a fifth
BLUE_INK = (200, 90, 30)


def _config() -> dict:
    cfg = default_config()
    cfg["color"]["tray_ref_bgr"] = [200.0, 200.0, 200.0]  # the tray as the calibration kit saw it
    return cfg


def _blue_one() -> np.ndarray:
    """A 32x24 glyph crop in white light: a white field with a blue "1"."""
    img = np.full((24, 32, 3), (235, 235, 235), np.uint8)
    cv2.rectangle(img, (14, 4), (17, 19), BLUE_INK, -1)
    return img


def _under(lamp: np.ndarray, img: np.ndarray) -> np.ndarray:
    return np.clip(img.astype(np.float32) * lamp, 0, 255).astype(np.uint8)


def _ink_contrast(whiteness: np.ndarray) -> float:
    return float(whiteness[2, 2] - whiteness[10, 15])  # the field's whiteness less the ink's


def test_under_a_warm_lamp_a_blue_glyph_stands_out_of_its_field_again_once_white_balanced():
    cfg = _config()
    white, warm = _blue_one(), _under(WARM_LAMP, _blue_one())
    gains = tl.glyph_white_balance(cfg, np.array([200.0, 200.0, 200.0]) * WARM_LAMP)
    assert gains is not None
    in_white = _ink_contrast(tl._whiteness(white))
    assert _ink_contrast(tl._whiteness(warm)) < 0.6 * in_white  # the cream field meets the greyed ink
    assert abs(_ink_contrast(tl._whiteness(warm, gains)) - in_white) < 0.1 * in_white


def test_the_glyph_features_under_the_warm_lamp_come_back_to_those_in_white_light():
    cfg = _config()
    rng = np.random.default_rng(0)
    gains = tl.glyph_white_balance(cfg, np.array([200.0, 200.0, 200.0]) * WARM_LAMP)

    def seen(img):  # as a camera gives it: soft focus and sensor noise
        x = cv2.GaussianBlur(img.astype(np.float32), (0, 0), 1.0) + rng.normal(0, 6, img.shape)
        return np.clip(x, 0, 255).astype(np.uint8)

    for _ in range(3):
        in_white = tl.glyph_features(cfg, seen(_blue_one()))
        as_seen = tl.glyph_features(cfg, seen(_under(WARM_LAMP, _blue_one())))
        balanced = tl.glyph_features(cfg, seen(_under(WARM_LAMP, _blue_one())), gains)
        assert np.linalg.norm(balanced - in_white) < 0.5 * np.linalg.norm(as_seen - in_white)


def test_light_near_the_calibrations_is_read_as_it_is():
    assert tl.glyph_white_balance(_config(), np.array([195.0, 200.0, 210.0])) is None


def test_a_tray_clipped_in_two_channels_says_nothing_of_the_lights_colour():
    cfg = _config()
    assert tl.glyph_white_balance(cfg, np.array([255.0, 255.0, 255.0])) is None
    assert tl.glyph_white_balance(cfg, np.array([140.0, 255.0, 255.0])) is None


def test_a_warm_lamp_that_clips_only_the_red_still_gets_its_white_balance():
    gains = tl.glyph_white_balance(_config(), np.array([140.0, 190.0, 255.0]))
    assert gains is not None and gains[0] > 1.3 and gains[2] < 0.8


def test_no_white_balance_at_all_when_the_config_asks_for_none():
    cfg = _config()
    cfg["glyph"]["white_balance_above"] = None
    assert tl.glyph_white_balance(cfg, np.array([200.0, 200.0, 200.0]) * WARM_LAMP) is None


def test_casts_the_calibration_kit_shows_are_learnt_not_balanced():
    cfg = _config()
    casts = [np.array([200.0, 200.0, 200.0]) * np.array([1 - c, 1.0, 1 + c]) for c in np.linspace(0, 0.25, 20)]
    above = white_balance_above(cfg, casts)
    worst = max(tl.colour_cast(tl.color_gains(cfg, t)) for t in casts)
    assert 1.35 < above <= worst  # the kit's 95th percentile, past the config's 1.35
    # a kit whose casts stay small keeps the config's threshold, and clipped trays are not counted
    mild = [np.array([200.0, 200.0, 200.0])] * 19 + [np.array([255.0, 255.0, 120.0])]
    assert white_balance_above(cfg, mild) == 1.35
