"""`stacko vision overlay DIR IMAGE... --out FILE` draws what the pipeline saw on each image, side
by side in one picture; an image it cannot read is left out with a word why, the rest still drawn."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from referee.cli import main
from vision.overlay import overlay_sheet


def test_overlay_draws_each_image_in_rows_of_columns(calibration, small_kit, tmp_path, capsys):
    images = sorted(str(p) for p in (small_kit / "images").iterdir())[:4]
    out = tmp_path / "overlay.png"
    assert main(["vision", "overlay", str(calibration), *images, "--out", str(out), "--columns", "3"]) == 0
    sheet = cv2.imread(str(out))
    h, w = cv2.imread(images[0]).shape[:2]
    assert sheet.shape[:2] == (2 * h, 3 * w)  # four frames: a row of three, then one and two blanks
    first = cv2.imread(images[0])
    assert np.abs(sheet[:h, :w].astype(int) - first).max() > 100  # the reading is drawn over the frame
    assert not sheet[h:, w:].any()


def test_an_unreadable_image_is_left_out_with_a_reason(calibration, small_kit, tmp_path, capsys):
    good = sorted(str(p) for p in (small_kit / "images").iterdir())[0]
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png")
    out = tmp_path / "overlay.png"
    assert main(["vision", "overlay", str(calibration), str(bad), good, "--out", str(out)]) == 0
    assert "broken.png: cannot read the image, left out" in capsys.readouterr().err
    assert cv2.imread(str(out)).shape[:2] == cv2.imread(good).shape[:2]


def test_no_readable_image_is_an_error_in_words(calibration, tmp_path, capsys):
    assert main(["vision", "overlay", str(calibration), str(tmp_path / "none.png"), "--out", str(tmp_path / "o.png")]) == 2
    assert "nothing was drawn" in capsys.readouterr().err
    assert not (tmp_path / "o.png").exists()


def test_a_sheet_needs_a_frame():
    with pytest.raises(ValueError, match="no frames"):
        overlay_sheet([], 3)
