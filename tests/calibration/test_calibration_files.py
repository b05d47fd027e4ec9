"""Calibration files: good ones load, bad or partial ones are refused with a message saying what and how to fix."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from calibration.files import (
    CalibrationDir,
    CalibrationError,
    ImuCalibration,
    LoadCellCalibration,
    load_limits,
    validate_tray,
)

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=timezone.utc)
LIMITS = load_limits()


def good_loadcell(**over) -> dict:
    d = LoadCellCalibration(chip="nau7802", offset_counts=81234, counts_per_gram=412.5, noise_grams=0.2,
                            known_grams=500.0, zero_return_grams=0.1, block_measured_grams=17.1,
                            created=NOW - timedelta(days=2)).to_json()
    d.update(over)
    return d


def good_imu(**over) -> dict:
    d = ImuCalibration(sample_hz=1000.0, accel_mean_ms2=(0.05, -0.02, 9.80), accel_noise_ms2=0.02,
                       gyro_bias_dps=(0.3, -0.1, 0.05), gyro_noise_dps=0.05, touch_threshold_ms2=0.15,
                       collapse_threshold_ms2=1.5, created=NOW - timedelta(days=2)).to_json()
    d.update(over)
    return d


def good_tray() -> dict:
    def square(x, y, s=40.0):
        return [[x, y], [x + s, y], [x + s, y + s], [x, y + s]]
    return {"aruco_dictionary": "DICT_4X4_50",
            "markers": {"0": square(0, 0), "1": square(260, 0), "2": square(260, 260), "3": square(0, 260)},
            "tower_center_mm": [150, 150], "block_mm": [75, 25, 15]}


def make_dir(tmp_path, loadcell=None, imu=None, tray=None, vision=True) -> CalibrationDir:
    cal = CalibrationDir(tmp_path, LIMITS)
    for path, data in ((cal.loadcell_path, loadcell or good_loadcell()), (cal.imu_path, imu or good_imu()),
                       (cal.tray_path, tray or good_tray())):
        path.write_text(data if isinstance(data, str) else json.dumps(data))
    if vision:
        cal.vision_path.mkdir(exist_ok=True)
        (cal.vision_path / "config.json").write_text('{"version": 1}')
    # files other commands write are dated by their modification time: date them as made two days
    # before the test's fixed NOW (not today's date, which would lie in NOW's future)
    made = (NOW - timedelta(days=2)).timestamp()
    for path in (cal.tray_path, cal.vision_path / "config.json") if vision else (cal.tray_path,):
        os.utime(path, (made, made))
    return cal


def test_a_complete_fresh_calibration_is_all_ok(tmp_path):
    cal = make_dir(tmp_path)
    statuses = cal.statuses(NOW)
    assert [s.part for s in statuses] == ["tray", "loadcell", "imu", "vision"]
    assert all(s.ok for s in statuses), [s.problem for s in statuses]
    assert cal.loadcell().grams(81234 + 412.5 * 17) == pytest.approx(17.0)


def test_round_trip_keeps_every_value(tmp_path):
    cal = CalibrationDir(tmp_path, LIMITS)
    lc = LoadCellCalibration.from_json(good_loadcell(), LIMITS)
    imu = ImuCalibration.from_json(good_imu(), LIMITS)
    cal.save_loadcell(lc)
    cal.save_imu(imu)
    assert cal.loadcell() == lc
    assert cal.imu() == imu


@pytest.mark.parametrize("damage, words", [
    (lambda d: d.pop("counts_per_gram"), "'counts_per_gram' is missing"),
    (lambda d: d.update(counts_per_gram="lots"), "must be a number"),
    (lambda d: d.update(counts_per_gram=0), "must not be zero"),
    (lambda d: d.update(counts_per_gram=0.5), "counts per gram"),
    (lambda d: d.update(offset_counts=1 << 30), "outside"),
    (lambda d: d.update(chip="hx999"), "expected one of nau7802, hx711"),
    (lambda d: d.update(version=7), "version 7"),
    (lambda d: d.update(kind="imu"), "not a 'loadcell' file"),
    (lambda d: d.update(created="yesterday"), "not a date"),
    (lambda d: d.update(noise_grams=4.0), "one 17 g block would not show clearly"),
    (lambda d: d.update(zero_return_grams=6.0), "the empty tray read +6.0 g"),
    (lambda d: d.update(block_measured_grams=30.0), "one block read as 30.0 g"),
])
def test_bad_loadcell_files_are_refused_with_the_reason(tmp_path, damage, words):
    data = good_loadcell()
    damage(data)
    cal = make_dir(tmp_path, loadcell=data)
    with pytest.raises(CalibrationError) as err:
        cal.loadcell()
    assert words in str(err.value)
    assert "stacko calibrate loadcell" in str(err.value)
    status = cal.status("loadcell", NOW)
    assert not status.ok and words in status.problem


@pytest.mark.parametrize("damage, words", [
    (lambda d: d.update(accel_mean_ms2=[0, 0, 4.0]), "gravity"),
    (lambda d: d.update(accel_noise_ms2=2.0), "the tray shook"),
    (lambda d: d.update(accel_noise_ms2=0.0, gyro_noise_dps=0.0), "stuck"),
    (lambda d: d.update(collapse_threshold_ms2=0.1), "above the touch threshold"),
    (lambda d: d.update(gyro_bias_dps=[1, 2]), "list of 3 numbers"),
    (lambda d: d.pop("sample_hz"), "incomplete"),
])
def test_bad_imu_files_are_refused_with_the_reason(tmp_path, damage, words):
    data = good_imu()
    damage(data)
    with pytest.raises(CalibrationError, match="stacko calibrate imu") as err:
        make_dir(tmp_path, imu=data).imu()
    assert words in str(err.value)


def test_a_truncated_file_is_called_damaged(tmp_path):
    text = json.dumps(good_loadcell())
    cal = make_dir(tmp_path, loadcell=text[: len(text) // 2])
    status = cal.status("loadcell", NOW)
    assert not status.ok
    assert "damaged" in status.problem and "stacko calibrate loadcell" in status.problem


def test_missing_files_name_the_command_that_makes_them(tmp_path):
    cal = CalibrationDir(tmp_path / "nothing", LIMITS)
    for status in cal.statuses(NOW):
        assert not status.ok
        assert "missing" in status.problem
        assert status.fix in status.problem


def test_old_calibration_is_stale_and_future_dates_are_suspicious(tmp_path):
    old = good_loadcell(created=(NOW - timedelta(days=45)).isoformat())
    cal = make_dir(tmp_path, loadcell=old)
    status = cal.status("loadcell", NOW)
    assert not status.ok and "45 days old" in status.problem
    future = good_imu(created=(NOW + timedelta(days=10)).isoformat())
    status = make_dir(tmp_path, imu=future).status("imu", NOW)
    assert not status.ok and "in the future" in status.problem


@pytest.mark.parametrize("damage, words", [
    (lambda d: d["markers"].pop("2"), "marker(s) 2 are missing"),
    (lambda d: d.update(aruco_dictionary="DICT_6X6_250"), "DICT_4X4_50"),
    (lambda d: d["markers"].update({"1": [[0, 0], [1, 0]]}), "four [x, y] corners"),
    (lambda d: d["markers"].update({"1": [[0, 0], [0.01, 0], [0.01, 0.01], [0, 0.01]]}), "millimetres"),
    (lambda d: d.update(block_mm=[75, 25]), "block_mm [length, width, height]"),
])
def test_bad_tray_files_are_refused(damage, words):
    data = good_tray()
    damage(data)
    with pytest.raises(CalibrationError, match="stacko calibrate markers") as err:
        validate_tray(data)
    assert words in str(err.value)


def test_vision_folder_must_hold_readable_settings(tmp_path):
    cal = make_dir(tmp_path)
    (cal.vision_path / "config.json").write_text("{not json")
    assert "damaged" in cal.status("vision", NOW).problem
    (cal.vision_path / "config.json").unlink()
    assert "incomplete" in cal.status("vision", NOW).problem
