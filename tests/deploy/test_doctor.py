"""`stacko doctor` on the twin: everything present and calibrated -> exit 0; each missing part -> its own message."""

from __future__ import annotations

import json

import pytest

from calibration.files import CalibrationDir, load_limits
from calibration.guided import TerminalGuide, run_guided
from deploy.rig import TwinRig
from referee.cli import main

LIMITS = load_limits()


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A calibration folder made by the guided route's sensor steps on the twin, plus a vision folder."""
    path = tmp_path_factory.mktemp("cal")
    rig = TwinRig(seed=5)
    try:
        results = run_guided(rig, CalibrationDir(path, LIMITS), LIMITS, TerminalGuide(rig, False, out=lambda s: None),
                             500.0, steps=("markers", "loadcell", "imu"))
    finally:
        rig.close()
    assert all(r.ok for r in results), [r.lines for r in results]
    (path / "vision").mkdir()
    (path / "vision" / "config.json").write_text('{"version": 1}')  # stands in for `stacko calibrate vision`'s output
    return path


def doctor(capsys, *args: str) -> tuple[int, dict[str, dict]]:
    code = main(["doctor", "--backend", "sim", "--json", *args])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return code, {c["part"]: c for c in lines}


def test_all_parts_present_and_calibrated_is_all_good(capsys, calibrated, tmp_path):
    code, checks = doctor(capsys, "--calibration", str(calibrated), "--log", str(tmp_path / "m.sqlite"))
    bad = {k: v for k, v in checks.items() if not v["ok"]}
    assert code == 0, bad
    assert {"camera", "imu", "loadcell", "buttons", "speaker", "disk",
            "calibration:tray", "calibration:loadcell", "calibration:imu", "calibration:vision"} <= set(checks)
    assert "all four markers" in checks["camera"]["found"]


@pytest.mark.parametrize("part, words, fix_words", [
    ("camera", "no camera was found", "ribbon cable"),
    ("imu", "IMU (MPU-6050) does not answer", "i2cdetect -y 1` must show 68"),
    ("loadcell", "load-cell ADC (NAU7802) does not answer", "i2cdetect -y 1` must show 2a"),
    ("speaker", "no sound output found", "speaker"),
    ("buttons", "no buttons are set up", "wire the buttons"),
])
def test_each_missing_part_gets_its_own_message(capsys, calibrated, tmp_path, part, words, fix_words):
    code, checks = doctor(capsys, "--calibration", str(calibrated), "--without", part, "--log", str(tmp_path / "m.sqlite"))
    assert code == 1
    assert not checks[part]["ok"]
    assert words in checks[part]["found"]
    assert fix_words in checks[part]["fix"]
    others = [k for k, v in checks.items() if not v["ok"] and k != part]
    assert others == [], f"only {part} should fail, also failed: {others}"


def test_missing_calibration_names_the_command_for_each_file(capsys, tmp_path):
    code, checks = doctor(capsys, "--calibration", str(tmp_path / "none"), "--quiet", "--log", str(tmp_path / "m.sqlite"))
    assert code == 1
    for part, command in (("tray", "stacko calibrate markers"), ("loadcell", "stacko calibrate loadcell"),
                          ("imu", "stacko calibrate imu"), ("vision", "stacko calibrate vision")):
        c = checks[f"calibration:{part}"]
        assert not c["ok"] and "missing" in c["found"] and command in c["found"] + c["fix"]
    assert checks["loadcell"]["ok"] and "not calibrated yet" in checks["loadcell"]["found"]


def test_a_damaged_calibration_file_fails_the_doctor(capsys, calibrated, tmp_path):
    broken = tmp_path / "cal"
    broken.mkdir()
    for p in calibrated.iterdir():
        if p.is_file():
            (broken / p.name).write_bytes(p.read_bytes())
    (broken / "vision").mkdir()
    (broken / "vision" / "config.json").write_text("{}")
    (broken / "imu.json").write_text((calibrated / "imu.json").read_text()[:-40])
    code, checks = doctor(capsys, "--calibration", str(broken), "--quiet", "--log", str(tmp_path / "m.sqlite"))
    assert code == 1
    assert "damaged" in checks["calibration:imu"]["found"]
    assert checks["calibration:loadcell"]["ok"]


def test_too_little_disk_space_is_reported(capsys, calibrated, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(16e9, 15.9e9, 100e6))
    code, checks = doctor(capsys, "--calibration", str(calibrated), "--quiet", "--log", str(tmp_path / "m.sqlite"))
    assert code == 1 and not checks["disk"]["ok"]
    assert "100 MB free" in checks["disk"]["found"] and "free space" in checks["disk"]["fix"]


def test_without_is_refused_on_the_real_pi(capsys):
    assert main(["doctor", "--backend", "pi", "--without", "imu"]) == 2
    assert "--without only works with --backend sim" in capsys.readouterr().out


def test_buttons_are_pressed_one_by_one_on_request(capsys, calibrated, tmp_path):
    code, checks = doctor(capsys, "--calibration", str(calibrated), "--press-buttons", "--quiet", "--log", str(tmp_path / "m.sqlite"))
    assert checks["buttons"]["ok"] and "buttons respond" in checks["buttons"]["found"]
