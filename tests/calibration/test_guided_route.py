"""The whole guided calibration on the twin, unattended: markers, load cell, IMU, vision (building the
tower level by level), the test-level check; then `stacko doctor` finds the table ready."""

from __future__ import annotations

import json

from calibration.files import CalibrationDir
from referee.cli import main


def test_guided_calibration_end_to_end_on_the_twin_then_doctor_is_happy(tmp_path, capsys):
    cal = tmp_path / "cal"
    # four levels (12 blocks, one photo per block placed) keep the test short; the bench builds all fifteen
    assert main(["calibrate", "--backend", "sim", "--yes", "--seed", "4", "--levels", "4", "--calibration", str(cal)]) == 0
    out = capsys.readouterr().out
    for step in ("markers", "loadcell", "imu", "vision", "check"):
        assert f"  {step}: GOOD" in out or f"  {step}: USABLE" in out, out
    assert "Calibration complete" in out
    assert out.count(": put ") == 12, "each block of the four levels is named once, as it is placed"
    statuses = CalibrationDir(cal).statuses()
    assert all(s.ok for s in statuses), [s.problem for s in statuses]
    kit = next(cal.glob("kit-*"))
    labels = json.loads((kit / "labels.json").read_text())
    assert len(labels) == len(list((kit / "images").glob("*.png"))) == 12 + 2  # and two with hands
    assert any(None in lab["slots"] for lab in labels.values()), "part-built levels teach empty slots"
    assert {lab["hands"] for lab in labels.values()} == {0, 1, 2}

    code = main(["doctor", "--backend", "sim", "--json", "--quiet", "--calibration", str(cal),
                 "--log", str(tmp_path / "m.sqlite")])
    checks = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert code == 0, [c for c in checks if not c["ok"]]
