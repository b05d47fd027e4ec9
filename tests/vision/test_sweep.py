"""`python -m vision.sweep`: settings tried on many kits, totals per setting."""

from __future__ import annotations

import json

import pytest

from vision.sweep import apply, kit_counts, main, parse_settings, sweep


def test_each_value_of_a_setting_is_its_own_setting():
    got = parse_settings(["hands.table_reach_mm=30,45", "align.focal_factors=[0.9,1.0],[1.0]"])
    assert got == [("hands.table_reach_mm=30", {"hands.table_reach_mm": 30}),
                   ("hands.table_reach_mm=45", {"hands.table_reach_mm": 45}),
                   ("align.focal_factors=[0.9,1.0]", {"align.focal_factors": [0.9, 1.0]}),
                   ("align.focal_factors=[1.0]", {"align.focal_factors": [1.0]})]


@pytest.mark.parametrize("spec", ["hands.table_reach_mm", "table_reach_mm=30", "hands.table_reach_mm=thirty"])
def test_a_malformed_setting_is_refused_in_words(spec):
    with pytest.raises(ValueError):
        parse_settings([spec])


def test_a_setting_the_config_does_not_have_is_refused_not_swept_as_nothing():
    with pytest.raises(KeyError, match="hands.table_rech_mm"):
        apply({"hands": {"table_reach_mm": 30}}, {"hands.table_rech_mm": 45})


def test_applying_a_setting_leaves_the_calibration_as_it_was():
    cfg = {"hands": {"table_reach_mm": 30}}
    assert apply(cfg, {"hands.table_reach_mm": 45}) == {"hands": {"table_reach_mm": 45}}
    assert cfg == {"hands": {"table_reach_mm": 30}}


def test_counts_take_only_slots_hands_hide_by_at_most_a_tenth():
    row = {"slot_ok": [True, False, False], "hidden": [0.0, 0.5, 0.05], "orientation_ok": False, "hands": 2,
           "truth": {"slots": ["red-1", "blue-2", None], "hands": 1}, "hands_ok": False, "two_ok": False}
    unknown = dict(row, hidden=None)  # a twin photo with hands: how much they hide is not known
    c = kit_counts([row, unknown, {"image": "x.png", "error": "cannot find the tray"}])
    assert (c["images"], c["errors"], c["slots_visible"], c["slots_right"]) == (3, 1, 2, 1)
    assert (c["orientations_visible"], c["orientations_right"]) == (1, 0)
    assert (c["hands_exact"], c["two_right"], c["two_false"], c["two_missed"]) == (0, 0, 2, 0)


def test_a_sweep_reads_every_kit_with_every_setting(calibration, small_kit):
    lines = sweep([(str(calibration), str(small_kit))],
                  parse_settings(["hands.palm_min_mm2=750", "hands.min_area_mm2=1000000"]))
    base, same, blind = lines
    assert base["setting"] == "as calibrated" and base["images"] == 24
    # the calibration's own value again reads exactly alike; an arm's blob larger than the tray sees no hand
    assert {k: v for k, v in same.items() if k != "setting"} == {k: v for k, v in base.items() if k != "setting"}
    assert blind["hands_exact"] < base["hands_exact"] and blind["slots_right"] == base["slots_right"]


def test_the_command_prints_one_line_a_setting(calibration, small_kit, capsys):
    assert main(["--kit", str(calibration), str(small_kit), "--set", "decision.empty_below=0.4"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["setting"] for x in lines] == ["as calibrated", "decision.empty_below=0.4"]


def test_the_command_says_what_is_wrong(calibration, small_kit, tmp_path, capsys):
    assert main(["--kit", str(calibration), str(small_kit), "--set", "decision.emptybelow=0.4"]) == 2
    assert "no setting decision.emptybelow" in capsys.readouterr().err
    assert main(["--kit", str(tmp_path), str(small_kit)]) == 2
    assert "not a calibration folder" in capsys.readouterr().err


def test_kits_read_at_once_add_up_as_read_one_by_one(calibration, small_kit):
    pair = (str(calibration), str(small_kit))
    one = sweep([pair], [])[0]
    two = sweep([pair, pair], [], workers=2)[0]
    assert {k: 2 * v for k, v in one.items() if k != "setting"} == {k: v for k, v in two.items() if k != "setting"}
