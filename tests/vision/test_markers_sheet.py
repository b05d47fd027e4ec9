"""`stacko calibrate markers` prints a true-scale sheet whose markers match its tray.json."""

from __future__ import annotations

import json

import cv2
import numpy as np

from referee.cli import main
from vision.kit import load_tray
from vision.reader import default_config
from vision.tray import detect_markers, make_detector


def test_sheet_png_is_true_scale_and_its_markers_match_tray_json(tmp_path, capsys):
    assert main(["calibrate", "markers", "--out", str(tmp_path), "--dpi", "150"]) == 0
    png = tmp_path / "tray-sheet.png"
    img = cv2.imread(str(png), cv2.IMREAD_GRAYSCALE)
    ppm = 150 / 25.4
    assert abs(img.shape[1] - 280 * ppm) <= 2
    tray = load_tray(tmp_path / "tray.json")
    found = detect_markers(make_detector(default_config()), img)
    assert sorted(found) == sorted(tray.markers)
    for mid, corners_px in found.items():
        expect = np.column_stack([tray.markers[mid][:, 0] * ppm, (280 - tray.markers[mid][:, 1]) * ppm])
        assert np.abs(corners_px - expect).max() < 3.0  # same corners, same order
    assert (tmp_path / "tray-sheet.pdf").read_bytes().startswith(b"%PDF")


def test_impossible_sheet_sizes_are_refused(tmp_path, capsys):
    assert main(["calibrate", "markers", "--out", str(tmp_path), "--marker-mm", "5"]) == 2
    assert "markers" in capsys.readouterr().err
