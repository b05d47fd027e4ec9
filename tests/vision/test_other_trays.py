"""A table's own tray need not be ours: a larger sheet, bigger markers with other ids and the
tower's place off the sheet's middle, all as its kit's tray.json says (CONTRACT.md section 2).
Calibration and reading take every size and place from there, so such a kit reads as ours do."""

from __future__ import annotations

import json
import math

import cv2
import pytest

from tests.vision.conftest import QUICK
from vision.kit import Tray, load_kit
from vision.reader import load_pipeline, read_frame
from vision.synthkit import SynthOptions, default_tray, write_kit


def other_tray() -> Tray:
    """A 330 mm sheet with 40 mm markers 10-13 in its corners and the tower 35 mm east and 15 mm
    north of its middle."""
    base = default_tray(size_mm=330.0, marker_mm=40.0, inset_mm=12.0)
    markers = {10 + k: base.markers[k] for k in range(4)}
    return Tray("DICT_4X4_50", markers, (200.0, 180.0), base.block_mm)


@pytest.fixture(scope="module")
def other_table(tmp_path_factory):
    from vision.calibrate import calibrate_kit

    root = tmp_path_factory.mktemp("other-tray")
    tray = other_tray()
    calib = write_kit(root / "calib", 24, seed=41, opt=SynthOptions(hide_marker_prob=0.0), tray=tray)
    test = write_kit(root / "test", 10, seed=42, opt=SynthOptions(hide_marker_prob=0.0), tray=tray)
    calibrate_kit(calib, root / "cal", log=lambda m: None, overrides=QUICK)
    return root / "cal", test


def test_the_kits_tray_json_describes_the_other_tray(other_table):
    _, test = other_table
    raw = json.loads((test / "tray.json").read_text())
    assert sorted(raw["markers"]) == ["10", "11", "12", "13"]
    assert raw["tower_center_mm"] == [200.0, 180.0]


def test_calibration_keeps_the_kits_own_tray(other_table):
    cal, _ = other_table
    tray = load_pipeline(cal).tray
    assert sorted(tray.markers) == [10, 11, 12, 13]
    assert tray.tower_center == (200.0, 180.0)


def test_a_tower_off_the_middle_of_a_larger_tray_is_read_and_its_hands_counted(other_table):
    cal, test = other_table
    pipe = load_pipeline(cal)
    kit = load_kit(test)
    right = slots = orient = hands = 0
    for name, label in kit.labels.items():
        res = read_frame(pipe, cv2.imread(str(kit.image_path(name))))  # the tray is found in every photo
        assert set(res.registration.marker_ids) <= {10, 11, 12, 13}
        assert math.isfinite(res.z_top)  # a height was found
        reading = res.reading
        orient += reading.orientation == label.orientation
        hands += len(reading.hands) == label.hands
        for got, want in zip(reading.slots, label.slots):
            slots += 1
            right += (got.block.name if got.block else None) == (want.name if want else None)
    assert orient >= 8, f"orientation right on {orient} of {len(kit.labels)} photos"
    assert right >= 0.8 * slots, f"{right} of {slots} slots read right"
    assert hands >= 7, f"hands counted right on {hands} of {len(kit.labels)} photos"
