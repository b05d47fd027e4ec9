"""The quick vision route and the time model that says how long the guided calibration takes a person.

The whole route on the twin, followed by a match refereed with its calibration, is in
test_guided_then_match.py; these tests need no rendering.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from calibration.files import CalibrationError
from calibration.guided import (QUICK_SPLITS, check_blocks, quick_build, quick_plan, quick_tower,
                                route_tower)
from calibration.person_time import PersonTimeModel, TimeLedger
from calibration.steps import Action
from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET

SET = Counter(b.name for b in BLOCK_SETS[DEFAULT_BLOCK_SET].blocks)


def colors_and_glyphs(names):
    colors, glyphs = Counter(), Counter()
    for name in names:
        color, _, glyph = name.partition("-")
        colors[color] += 1
        glyphs[glyph or name] += 1
    return colors, glyphs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("levels, per_color, per_glyph", [(4, 2, 1), (5, 3, 2)])
def test_the_quick_levels_show_every_color_and_glyph_about_equally_often(seed, levels, per_color, per_glyph):
    tower = quick_tower(random.Random(seed), levels)
    names = [n for level in tower for n in level]
    assert len(tower) == levels and all(len(level) == 3 and None not in level for level in tower)
    assert all(Counter(names)[n] <= SET[n] for n in names), "only blocks the box holds, each at most as often"
    colors, glyphs = colors_and_glyphs(names)
    assert set(colors) == {"red", "yellow", "green", "blue", "wild"}
    assert set(glyphs) == {"1", "2", "3", "4", "draw2", "reverse", "skip", "wild"}
    assert min(colors[c] for c in ("red", "yellow", "green", "blue")) >= per_color
    assert min(glyphs[g] for g in ("1", "2", "3", "4", "draw2", "reverse", "skip")) >= per_glyph


def test_the_quick_plan_photographs_every_level_complete_and_the_part_built_tops_play_leaves():
    tower = [[f"a{k}", f"b{k}", f"c{k}"] for k in range(5)]
    plan = quick_plan(tower)
    no_hands = [(k, filled) for k, filled, h in plan if h == 0]
    assert [k for k, filled in no_hands if filled == (0, 1, 2)] == [1, 2, 3, 4, 5]
    part_built = {filled for _, filled in no_hands if filled != (0, 1, 2)}
    assert {(1,), (0, 2), (2,)} <= part_built  # a lone middle, two sides with a gap, a lone side block
    assert sorted(h for _, _, h in plan if h) == [1, 2]
    assert len(plan) <= 2 * len(tower) + 2, "at most two photos a level, plus the two with hands"
    assert all(sum(len(p) for p in split) == 3 for split in QUICK_SPLITS)


def test_the_quick_route_lays_a_level_of_any_blocks_between_named_ones_so_tops_are_seen_at_several_heights():
    tower, plan = route_tower("quick", 5, None)
    named = sorted({k for k, _, _ in plan})
    assert named == [1, 3, 5, 7] and len(tower) == 7
    assert not Counter(n for level in tower for n in level) - SET, "every block laid is one the box holds"
    assert all(len(level) == 3 and None not in level for level in tower)
    with pytest.raises(CalibrationError, match="more blocks than the box holds"):
        quick_build(random.Random(0), 8, 3)


def test_the_tower_route_still_builds_every_block_once():
    tower, plan = route_tower("tower", 3, None)
    assert Counter(n for level in tower for n in level if n) == SET
    assert sum(1 for _, _, h in plan if h == 0) == 45


def test_unknown_routes_and_impossible_level_counts_are_refused_in_words():
    with pytest.raises(CalibrationError, match="unknown calibration route 'fast'"):
        route_tower("fast", 0, None)
    with pytest.raises(CalibrationError, match="1 to 15 levels"):
        quick_tower(random.Random(0), 16)


def test_the_test_level_uses_blocks_the_photos_never_showed():
    tower = route_tower("quick", 2, None)[0]
    level = check_blocks(tower, tower, 2)
    left = SET - Counter(n for lv in tower for n in lv)
    assert level is not None and not Counter(level) - left
    full = route_tower("tower", 1, None)[0]
    assert check_blocks(full, full, 1) is None, "with every block in the standing tower, the top is read again"
    assert check_blocks([], full, 1) is not None, "with the tower taken off, any three blocks will do"


def test_an_instruction_costs_its_reading_its_handling_and_its_blocks():
    model = PersonTimeModel.load()
    v = model.values
    lay = Action("build_level", "Level 2: put red-1 in slot 0 and red-2 in slot 2.", data={"placed": 2, "photo": True})
    parts = model.instruction_s(lay)
    assert parts["reading"] == v["read_instruction_s"] + 2 * v["read_per_named_block_s"]
    assert parts["blocks"] == 2 * (v["find_named_block_s"] + v["lay_block_s"])
    assert parts["confirm"] == v["photo_s"]
    fill = Action("build_level", "Lay any three blocks as level 2, then on it: Level 3: put red-1 in slot 1.",
                  data={"placed": 1, "laid_any": 3, "photo": True})
    assert model.instruction_s(fill)["blocks"] == v["find_named_block_s"] + 4 * v["lay_block_s"], "any block: no search"
    weight = model.instruction_s(Action("put_weight", "Put the known weight on.", 500.0))
    assert weight == {"reading": v["read_instruction_s"], "handling": model.actions["put_weight"], "blocks": 0.0,
                      "confirm": v["confirm_s"]}
    with pytest.raises(CalibrationError, match="no time for the instruction 'juggle'"):
        model.instruction_s(Action("juggle", "Juggle three blocks."))


def test_learning_in_the_background_only_costs_the_person_the_part_they_wait_for():
    ledger = TimeLedger(PersonTimeModel.load())
    slowdown = ledger.model.values["learning_slowdown_on_pi"]
    assert ledger.learning("vision", 30.0, on_pi=False, overlapped_s=50.0) == pytest.approx(max(0.0, 30 * slowdown - 50))
    assert ledger.learning("vision", 30.0, on_pi=True, overlapped_s=10.0) == pytest.approx(20.0)
    assert ledger.summary()["learning_on_pi_s"] == pytest.approx(30 * slowdown + 30)


def test_a_damaged_time_model_is_refused_with_its_name(tmp_path):
    bad = tmp_path / "person_time.json"
    bad.write_text(json.dumps({"read_instruction_s": "three"}))
    with pytest.raises(CalibrationError, match="'read_instruction_s' must be a number of seconds"):
        PersonTimeModel.load(bad)
    bad.write_text("{not json")
    with pytest.raises(CalibrationError, match="cannot read the calibration time model"):
        PersonTimeModel.load(bad)
