"""Issue #8's done-when: a complete calibration on the twin takes the guided route end to end (markers,
photos of named blocks, load cell, IMU, a test level), `stacko doctor` finds the table ready, and the
twin match then referees with that calibration folder (vision, load-cell scale, detector settings)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

pytest.importorskip("hardware.sim")  # picks the offscreen GL before MuJoCo loads

from calibration.files import CalibrationDir  # noqa: E402
from calibration.guided import QUICK_GAP, QUICK_LEVELS, quick_plan  # noqa: E402
from referee.cli import main  # noqa: E402

LEVELS = QUICK_LEVELS  # the route's default: every color and glyph shows in four levels


def orientation_words(level: int) -> str:
    return "along" if level % 2 else "across"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    cal = tmp_path_factory.mktemp("table") / "cal"
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["calibrate", "--backend", "sim", "--yes", "--seed", "3", "--calibration", str(cal)])
    return code, out.getvalue(), cal


def test_the_guided_route_calibrates_every_part_and_says_how_long_it_takes_a_person(calibrated, capsys):
    code, out, cal = calibrated
    assert code == 0, out
    for step in ("markers", "vision", "loadcell", "imu", "check"):
        assert f"  {step}: GOOD" in out or f"  {step}: USABLE" in out, out
    assert out.index("Step 3 of 5: the blocks' colors and glyphs") < out.index("Step 4 of 5: the IMU")
    assert "in the background: carry on" in out, "the models learn while the person does the IMU and the test level"
    building = sum(1 for _, _, hands in quick_plan([["a", "b", "c"]] * LEVELS) if hands == 0)
    assert out.count(": put ") == building + 1, "one instruction per photo of a level built, and the test level"
    assert "Lay any three blocks as level 2 (across the tray), then on it: Level 3" in out, "tops at several heights"
    height = LEVELS + QUICK_GAP * (LEVELS - 1)
    assert f"Test level {height + 1} ({orientation_words(height + 1)} the tray, on the tower): put" in out
    assert "Calibration complete" in out and "minutes for a person" in out

    statuses = CalibrationDir(cal).statuses()
    assert all(s.ok for s in statuses), [s.problem for s in statuses]
    kit = next(cal.glob("kit-*"))
    labels = json.loads((kit / "labels.json").read_text())
    assert len(labels) == len(list((kit / "images").glob("*.png")))
    assert any(None in lab["slots"] for lab in labels.values()), "part-built levels teach empty slots"
    assert {lab["hands"] for lab in labels.values()} == {0, 1, 2}

    assert main(["doctor", "--backend", "sim", "--json", "--quiet", "--calibration", str(cal),
                 "--log", str(cal.parent / "doctor.sqlite")]) == 0, capsys.readouterr().out


def test_the_twin_match_referees_with_the_guided_calibration(calibrated, tmp_path):
    from referee.loop.demo import DemoOptions, run_demo
    from web_ui.store import MatchStore

    code, out, cal = calibrated
    assert code == 0, out
    log = tmp_path / "match.sqlite"
    result = run_demo(DemoOptions(players=2, seed=11, fast=True, serve=False, quiet=True, log=str(log), max_turns=1,
                                  calibration_dir=str(cal)))
    assert result.match and result.turns >= 1 and result.checks, result.summary()
    assert result.build_errors <= 1, "the referee read the 15-level build with the table's own vision calibration"
    assert any(c.agree for c in result.checks), [(c.truth, c.logged) for c in result.checks]
    events = [e.event for e in MatchStore(log).events(result.match)]
    assert events[0]["event"] == "setup" and len(events[0]["tower"]) == 15
    assert len([e for e in events if e["event"] == "pull"]) >= len(result.checks), "every turn played is in the log"


def test_a_partial_calibration_folder_stops_the_match_with_the_calibrations_own_message(calibrated, tmp_path):
    from calibration.files import CalibrationError
    from referee.loop.demo import DemoOptions, table_calibration

    code, out, cal = calibrated
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "loadcell.json").write_text((cal / "loadcell.json").read_text()[:40])  # cut off mid-file
    with pytest.raises(CalibrationError, match="load-cell calibration.*damaged"):
        table_calibration(DemoOptions(calibration_dir=str(partial)), echo=lambda s: None)
