"""Calibration refuses kits it cannot learn from, with messages that say what to fix."""

from __future__ import annotations

import json
import shutil

import pytest

from vision.calibrate import calibrate_kit
from vision.kit import KitError


def _copy(kit, tmp_path):
    dst = tmp_path / "kit"
    shutil.copytree(kit, dst)
    return dst


def test_missing_labels_file_is_named(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    (kit / "labels.json").unlink()
    with pytest.raises(KitError, match="labels.json"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_a_black_and_white_photo_in_the_kit_is_named(small_kit, tmp_path):
    import cv2

    kit = _copy(small_kit, tmp_path)
    photo = sorted((kit / "images").iterdir())[3]
    grey = cv2.cvtColor(cv2.imread(str(photo)), cv2.COLOR_BGR2GRAY)
    cv2.imwrite(str(photo), cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR))  # saved as colour, three equal channels
    with pytest.raises(KitError, match=f"{photo.name} has no colour"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_unknown_block_name_is_rejected(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    labels = json.loads((kit / "labels.json").read_text())
    first = next(iter(labels))
    labels[first]["slots"][1] = "purple-9"
    (kit / "labels.json").write_text(json.dumps(labels))
    with pytest.raises(KitError, match="purple"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_bad_orientation_and_hands_are_rejected(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    labels = json.loads((kit / "labels.json").read_text())
    first = next(iter(labels))
    labels[first]["orientation"] = "z"
    (kit / "labels.json").write_text(json.dumps(labels))
    with pytest.raises(KitError, match="orientation"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)
    labels[first]["orientation"] = "x"
    labels[first]["hands"] = -1
    (kit / "labels.json").write_text(json.dumps(labels))
    with pytest.raises(KitError, match="hands"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_a_labelled_image_that_is_missing_is_named(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    victim = sorted((kit / "images").iterdir())[0]
    victim.unlink()
    with pytest.raises(KitError, match=victim.name):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_too_few_images_are_refused(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    labels = json.loads((kit / "labels.json").read_text())
    keep = dict(list(labels.items())[:3])
    (kit / "labels.json").write_text(json.dumps(keep))
    with pytest.raises(KitError, match="at least"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_a_tray_file_for_another_sheet_is_refused(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    tray = json.loads((kit / "tray.json").read_text())
    tray["markers"] = {str(int(k) + 10): v for k, v in tray["markers"].items()}  # ids not on this sheet
    (kit / "tray.json").write_text(json.dumps(tray))
    with pytest.raises(KitError, match=r"not this tray's \(10, 11, 12, 13\)"):  # and which markers it saw
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_a_kit_shot_through_a_mirroring_camera_is_told_to_turn_mirroring_off(small_kit, tmp_path):
    import cv2

    kit = _copy(small_kit, tmp_path)
    for photo in (kit / "images").iterdir():
        cv2.imwrite(str(photo), cv2.flip(cv2.imread(str(photo)), 1))
    with pytest.raises(KitError, match="the picture is mirrored"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_a_broken_tray_file_is_refused(small_kit, tmp_path):
    kit = _copy(small_kit, tmp_path)
    (kit / "tray.json").write_text("{not json")
    with pytest.raises(KitError, match="not valid JSON"):
        calibrate_kit(kit, tmp_path / "out", log=lambda m: None)


def test_calibration_writes_config_models_and_report(calibration):
    names = {p.name for p in calibration.iterdir()}
    assert {"config.json", "tray.json", "report.json", "tray_model.npz", "color.npz", "glyph.npz", "orientation.npz"} <= names
    cfg = json.loads((calibration / "config.json").read_text())
    assert cfg["camera"]["focal_px"] > 0
    assert "chroma" in cfg["hands"]


def test_calibration_counts_the_blocks_showing_each_glyph_so_it_can_warn_of_rare_ones(small_kit):
    """A glyph seen on one block only (the twin's Wild in a 48-photo kit) is read badly: the
    calibration counts blocks per glyph over all labelled images to say so."""
    from types import SimpleNamespace

    from vision.calibrate import _blocks_showing
    from vision.kit import load_kit

    kit = load_kit(small_kit)
    prepared = [SimpleNamespace(name=n) for n in kit.labels]
    want = {}
    for lab in kit.labels.values():
        for b in lab.slots:
            if b is not None:
                want[b.glyph] = want.get(b.glyph, 0) + 1
    for glyph, n in want.items():
        assert _blocks_showing(kit, prepared, glyph) == n
    assert _blocks_showing(kit, prepared[:1], "no-such-glyph") == 0


def test_the_same_photos_give_the_same_calibration_byte_for_byte(small_kit, calibration, tmp_path):
    """A table calibrated twice from the same photos reads the same: OpenCV's threads, which sum
    in a varying order, are kept to one while calibrating."""
    import cv2

    from tests.vision.conftest import QUICK
    from vision.calibrate import calibrate_kit

    before = cv2.getNumThreads()
    again = tmp_path / "again"
    calibrate_kit(small_kit, again, log=lambda m: None, overrides=QUICK)
    assert cv2.getNumThreads() == before  # the caller's threads as they were
    names = sorted(f.name for f in calibration.iterdir())
    assert names == sorted(f.name for f in again.iterdir())
    for name in names:
        assert (calibration / name).read_bytes() == (again / name).read_bytes(), name


def test_a_kit_of_few_photos_calibrates_but_the_table_is_told_it_reads_worse():
    from vision.calibrate import log_few_photos
    from vision.reader import default_config

    cfg = default_config()
    enough = cfg["calibration"]["enough_images"]
    said: list[str] = []
    log_few_photos(cfg, 24, said.append)
    assert len(said) == 1 and "found in 24 of the kit's photos" in said[0] and f"{enough} or more" in said[0]
    said.clear()
    log_few_photos(cfg, enough, said.append)
    log_few_photos({"calibration": {"enough_images": 0}}, 24, said.append)  # (0: never said)
    assert said == []


def test_calibration_counts_the_photos_the_tray_was_found_in_before_it_warns(small_kit, tmp_path, monkeypatch):
    import vision.calibrate

    class Counted(Exception):
        pass

    def stop_there(cfg, found, log):
        raise Counted(found)

    monkeypatch.setattr(vision.calibrate, "log_few_photos", stop_there)
    with pytest.raises(Counted) as got:
        calibrate_kit(small_kit, tmp_path / "out", log=lambda m: None)
    assert got.value.args[0] == len(json.loads((small_kit / "labels.json").read_text()))  # every photo shows the tray
