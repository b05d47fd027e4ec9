"""The benchmark's own kits: an unseen table's camera, and the calibration table's camera again."""

import json

from vision.bench import default_test_kits, kit_focal
from vision.synthkit import SynthOptions, default_tray, write_kit


def _focals(kit) -> set[float]:
    return {round(v["f"], 6) for v in json.loads((kit / "truth.json").read_text()).values()}


def test_a_kit_can_be_rendered_with_a_given_camera(tmp_path):
    kit = write_kit(tmp_path / "k", 2, seed=5, opt=SynthOptions(), tray=default_tray(), focal=612.5)
    assert _focals(kit) == {612.5}


def test_the_default_unseen_kits_are_another_camera_and_the_calibration_camera(tmp_path):
    calib = write_kit(tmp_path / "calib", 2, seed=101, opt=SynthOptions(), tray=default_tray())
    other, same = default_test_kits(tmp_path, 2, str(calib), default_tray())
    f_calib = kit_focal(str(calib))
    assert f_calib is not None
    assert _focals(tmp_path / "unseen-same-camera-kit") == {round(f_calib, 6)}
    assert kit_focal(same) == f_calib
    assert kit_focal(other) != f_calib


def test_a_kit_without_truth_has_no_known_focal_length(tmp_path):
    (tmp_path / "labels.json").write_text("{}")
    assert kit_focal(str(tmp_path)) is None
    (tmp_path / "truth.json").write_text("not json")
    assert kit_focal(str(tmp_path)) is None
