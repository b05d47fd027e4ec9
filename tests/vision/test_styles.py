"""A renderer's or camera's look put on kits (`vision/styles.py`), for `stacko bench vision --style`."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from referee.cli import main
from vision.styles import apply_style, parse_style, style_kit


def _ramp() -> np.ndarray:
    """A colour picture with every grey level along x and a red, a green and a blue band."""
    img = np.repeat(np.tile(np.arange(256, dtype=np.uint8), (60, 1))[..., None], 3, axis=2)
    img[:20, :, 2] = 220
    img[20:40, :, 1] = 200
    img[40:, :, 0] = 230
    return img


def test_a_style_reads_as_written_and_in_the_order_light_goes():
    s = parse_style("jpeg=35, gamma=1.6,defocus=1")
    assert s.effects == (("defocus", 1.0), ("gamma", 1.6), ("jpeg", 35.0))  # optics, sensor, file
    assert s.name == "defocus=1,gamma=1.6,jpeg=35"
    assert parse_style("").effects == () and parse_style("gamma=1").effects == ()  # no change is no style


@pytest.mark.parametrize("spec, words", [
    ("blur=2", "unknown style effect 'blur'"),
    ("gamma", "needs a value"),
    ("gamma=dark", "is not a number"),
    ("gamma=9", "out of range 0.3-3"),
    ("jpeg=40,jpeg=50", "given twice"),
])
def test_a_wrong_style_is_refused_in_words(spec, words):
    with pytest.raises(ValueError, match=words):
        parse_style(spec)


def test_a_darker_tone_curve_keeps_black_and_white_and_darkens_the_middle():
    img = _ramp()
    out = apply_style(parse_style("gamma=1.6"), img)
    assert out[30, 0, 0] == 0 and out[30, 255, 0] == 255
    assert out[50, 128, 1] == round((128 / 255) ** 1.6 * 255)
    assert img[50, 128, 1] == 128  # the input is left as it was


def test_paler_colours_keep_their_brightness_and_lose_half_their_saturation():
    img = _ramp()
    out = apply_style(parse_style("saturation=0.5"), img)
    s_in = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)[..., 1].astype(float)
    s_out = cv2.cvtColor(out, cv2.COLOR_BGR2HSV)[..., 1].astype(float)
    colourful = s_in > 100
    assert np.allclose(s_out[colourful], s_in[colourful] * 0.5, atol=4)
    assert np.abs(out.max(axis=2).astype(int) - img.max(axis=2)).max() <= 2  # HSV value kept


def test_compression_and_defocus_change_the_pixels_and_a_cast_warms_them():
    img = _ramp()
    assert np.abs(apply_style(parse_style("jpeg=20"), img).astype(int) - img).max() > 10
    blurred = apply_style(parse_style("defocus=2"), img)
    assert blurred[19, 128, 2] < img[19, 128, 2]  # the red band's edge is spread
    warm = apply_style(parse_style("cast=1.2"), img[40:])
    assert warm[..., 2].mean() > img[40:, :, 2].mean() and warm[..., 0].mean() < img[40:, :, 0].mean()


def test_a_styled_kit_keeps_its_labels_and_says_its_style(tmp_path):
    kit = tmp_path / "kit"
    (kit / "images").mkdir(parents=True)
    cv2.imwrite(str(kit / "images" / "0001.png"), _ramp())
    (kit / "labels.json").write_text("{}")
    assert style_kit(parse_style("gamma=0.6"), kit) == 1
    assert json.loads((kit / "style.json").read_text()) == {"style": "gamma=0.6"}
    again = cv2.imread(str(kit / "images" / "0001.png"))
    assert again[50, 128, 1] == round((128 / 255) ** 0.6 * 255)
    assert (kit / "labels.json").read_text() == "{}"


def test_the_bench_puts_the_style_on_every_kit_it_draws(tmp_path, capsys):
    code = main(["bench", "vision", "--images", "6", "--style", "gamma=1.5", "--work", str(tmp_path)])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert len(lines) == 2 and all(line["style"] == "gamma=1.5" for line in lines)
    for kit in ("calib-kit", "unseen-kit", "unseen-same-camera-kit"):
        assert json.loads((tmp_path / kit / "style.json").read_text()) == {"style": "gamma=1.5"}
    assert (tmp_path / "calibration").is_dir()


def test_the_bench_refuses_a_style_on_kits_given_by_hand_and_a_wrong_style(tmp_path, capsys):
    assert main(["bench", "vision", "--style", "gamma=1.5", "--test-kit", str(tmp_path), "--work", str(tmp_path)]) == 2
    assert "--style restyles the kits the bench draws" in capsys.readouterr().err
    assert main(["bench", "vision", "--style", "gamma=0.1", "--work", str(tmp_path)]) == 2
    assert "out of range" in capsys.readouterr().err


def test_a_synthetic_kit_can_be_drawn_in_another_renderers_look(tmp_path, capsys):
    plain, styled = tmp_path / "plain", tmp_path / "styled"
    assert main(["vision", "synthkit", str(plain), "--images", "2", "--seed", "5"]) == 0
    assert main(["vision", "synthkit", str(styled), "--images", "2", "--seed", "5", "--style", "gamma=1.6"]) == 0
    a, b = (cv2.imread(str(k / "images" / "0001.png")) for k in (plain, styled))
    assert np.array_equal(apply_style(parse_style("gamma=1.6"), a), b)
    assert not (plain / "style.json").exists() and (styled / "style.json").exists()
    assert main(["vision", "synthkit", str(tmp_path / "bad"), "--style", "gamma"]) == 2
    assert "needs a value" in capsys.readouterr().err


def test_the_commands_help_names_every_style_effect():
    # (the help is written out so that `stacko` does not load OpenCV at start: it must not fall behind)
    from vision.commands import _style_help
    from vision.styles import EFFECTS
    assert all(name in _style_help() for name in EFFECTS)
