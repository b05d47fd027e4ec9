"""Calibration steps on the twin's emulated chips: good tables calibrate, bad ones are refused and say why."""

from __future__ import annotations

import json

import pytest

from calibration.files import CalibrationDir, load_limits
from calibration.guided import TerminalGuide, photo_plan, run_guided
from calibration.twin_table import LOADCELL_ADDRESS
from deploy.rig import TwinRig
from referee.cli import main

LIMITS = load_limits()


def guided(tmp_path, steps, rig=None, known=500.0):
    rig = rig or TwinRig(seed=2)
    said: list[str] = []
    try:
        results = run_guided(rig, CalibrationDir(tmp_path, LIMITS), LIMITS, TerminalGuide(rig, False, out=said.append),
                             known, steps=steps)
    finally:
        rig.close()
    return results, "\n".join(said)


def test_sensor_steps_calibrate_the_twin_and_one_block_shows_clearly(tmp_path):
    results, said = guided(tmp_path, ("markers", "loadcell", "imu"))
    assert [r.ok for r in results] == [True, True, True], said
    cal = CalibrationDir(tmp_path, LIMITS)
    lc = cal.loadcell()
    assert lc.counts_per_gram == pytest.approx(429.5, rel=0.01)  # the emulated NAU7802's true scale at gain 128
    assert lc.block_measured_grams == pytest.approx(17.0, abs=1.0)
    assert 17.0 / lc.noise_grams >= LIMITS["loadcell"]["min_block_to_noise"]
    imu = cal.imu()
    assert imu.gravity_ms2 == pytest.approx(9.81, abs=0.2)
    assert imu.collapse_threshold_ms2 > imu.touch_threshold_ms2 > imu.accel_noise_ms2
    assert cal.tray()["aruco_dictionary"] == "DICT_4X4_50"
    assert cal.detectors_path() == tmp_path / "detectors.json"
    assert CalibrationDir(tmp_path / "elsewhere", LIMITS).detectors_path().name == "detectors.json"
    detectors = json.loads((tmp_path / "detectors.json").read_text())
    defaults = json.loads(open("calibration/defaults/detectors.json").read())
    assert detectors["imu"]["impact_g"] >= defaults["imu"]["impact_g"]
    assert "Put ONE block on the tray" in said and "GOOD" in said


def test_a_noisy_load_cell_is_refused_and_nothing_is_saved(tmp_path):
    rig = TwinRig(seed=3)
    rig.table.bus.devices[LOADCELL_ADDRESS].noise_g = 4.0  # a rubbing tray / long untwisted wires
    results, said = guided(tmp_path, ("loadcell",), rig)
    assert not results[0].ok
    assert "would not show clearly" in said
    assert not (tmp_path / "loadcell.json").exists()


def test_a_shaking_table_fails_the_imu_step(tmp_path):
    rig = TwinRig(seed=4)
    rig.table.tray.still_noise_ms2 = 1.5  # someone leaning on the table
    results, said = guided(tmp_path, ("imu",), rig)
    assert not results[0].ok
    assert "the tray shook" in said
    assert not (tmp_path / "imu.json").exists()


def test_a_too_light_known_weight_is_refused(tmp_path):
    results, said = guided(tmp_path, ("loadcell",), known=20.0)
    assert not results[0].ok and "too light" in said


def test_a_missing_chip_stops_the_route_with_the_wiring_hint(tmp_path):
    results, said = guided(tmp_path, ("markers", "loadcell", "imu"), TwinRig(seed=1, without=("loadcell",)))
    assert [r.ok for r in results] == [True, False]
    assert "NAU7802" in said and "Calibration stopped at step 2" in said


def test_calibrate_commands_run_unattended_on_the_twin(tmp_path, capsys):
    assert main(["calibrate", "loadcell", "--backend", "sim", "--yes", "--calibration", str(tmp_path)]) == 0
    assert main(["calibrate", "imu", "--backend", "sim", "--yes", "--calibration", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "loadcell: GOOD" in out and "imu: GOOD" in out
    assert (tmp_path / "loadcell.json").exists() and (tmp_path / "imu.json").exists()


def test_the_photo_plan_shows_one_photo_per_block_placed_and_some_hands():
    tower = [[f"b{i}", f"c{i}", f"d{i}"] for i in range(15)]
    plan = photo_plan(tower)
    no_hands = [(k, filled) for k, filled, h in plan if h == 0]
    assert len(no_hands) == 45  # each block once
    assert [k for k, filled in no_hands if filled == (0, 1, 2)] == list(range(1, 16))
    assert {filled for _, filled in no_hands if len(filled) == 1} == {(0,), (1,), (2,)}  # lone side and middle blocks
    assert {h for _, _, h in plan} == {0, 1, 2}


def test_json_mode_gives_a_page_every_instruction_and_result(tmp_path, capsys):
    assert main(["calibrate", "loadcell", "--backend", "sim", "--json", "--calibration", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    dos = [line["do"] for line in lines if "do" in line]
    assert dos == ["empty_tray", "put_weight", "remove_weight", "put_block", "remove_block"]
    assert all(line["seconds"] > 0 for line in lines if "do" in line), "the page can show the time each one takes"
    assert any("minutes for a person" in line.get("say", "") for line in lines)
    step = [line for line in lines if "step" in line]
    assert step[0]["step"] == "loadcell" and step[0]["ok"] and step[0]["grade"] in ("good", "usable")
