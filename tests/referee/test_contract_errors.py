"""CONTRACT.md section 1: every event that cannot be applied answers ok:false and changes nothing."""

import json

import pytest

from referee_helpers import TOWER, Table, lines, place, pull, run_cli, setup

BAD_EVENTS_AT_START = [
    {"event": "dance"},
    {"nonsense": 1},
    {"event": "pull", "level": 99, "slot": 0},
    {"event": "pull", "level": 1, "slot": 3},
    {"event": "pull", "level": 0, "slot": 0},
    {"event": "pull", "slot": 0},
    {"event": "pull", "level": 1},
    {"event": "pull", "level": "one", "slot": 0},
    {"event": "pull", "level": 1, "slot": 0, "block": "blue-3"},
    {"event": "pull", "level": 1, "slot": 0, "block": "purple-9"},
    {"event": "pull", "level": 1, "slot": 0, "player": "Zed"},
    {"event": "place", "level": 7, "slot": 0},
    {"event": "wild_color", "color": "red"},
    {"event": "wild_color"},
    {"event": "penalty_color", "color": "red"},
    {"event": "two_hands"},
    {"event": "uno", "caller": "Ana"},
    {"event": "touch", "player": "Zed"},
    {"event": "claim_no_match"},
]


@pytest.mark.parametrize("event", BAD_EVENTS_AT_START, ids=lambda e: json.dumps(e))
def test_a_bad_event_is_refused_in_words_and_changes_nothing(table, event):
    before = table.round
    out = table(event)
    assert out["ok"] is False
    assert isinstance(out["error"], str) and len(out["error"]) > 10
    assert table.round is before


def test_a_pull_from_an_empty_slot_is_refused(table):
    table.turn(1, 0, 7, 0)
    assert table(pull(1, 0))["ok"] is False


def test_a_pull_while_a_block_is_in_hand_is_refused(table):
    table(pull(1, 0))
    assert table(pull(2, 0))["ok"] is False


def test_placing_onto_an_occupied_slot_is_refused(table):
    table.turn(1, 0, 7, 0)
    table(pull(2, 0))
    out = table(place(7, 0))
    assert out["ok"] is False and "already holds" in out["error"]


def test_placing_into_a_hole_below_the_top_is_refused(table):
    table(pull(1, 0))
    assert table(place(1, 0))["ok"] is False


def test_placing_two_levels_above_the_top_is_refused(table):
    table(pull(1, 0))
    assert table(place(8, 0))["ok"] is False
    assert table(place(7, 0))["ok"] is True


def test_a_refused_event_leaves_the_replay_going_with_the_same_state(table):
    good = Table(setup())
    good.turn(1, 0, 7, 0)
    table(pull(1, 0))
    table(place(9, 0))  # refused
    assert table(place(7, 0)) == good.last


@pytest.mark.parametrize(
    "bad_setup",
    [
        setup(players=["Ana"]),
        setup(players=[f"P{i}" for i in range(11)]),
        setup(players=["Ana", "Ana"]),
        setup(options={"colour_blind": True}),
        setup(options={"foul_penalty": "jail"}),
        setup(options={"wild_timeout_s": -1}),
        setup(options={"auto_uno": "maybe"}),
        setup(options={"next_builder": "oldest"}),
        setup(blocks="deluxe-60"),
        setup(tower=[["red-1", "red-1", "red-1"], ["blue-1", "blue-2", "blue-3"]]),
        setup(tower=[["red-1", "red-2"], ["blue-1", "blue-2", "blue-3"]]),
        setup(tower=[["wild", "red-2", "red-3"], ["blue-1", "blue-2", "blue-3"]], blocks=["red-2", "red-3", "blue-1", "blue-2", "blue-3"]),
    ],
)
def test_a_bad_setup_is_refused_with_a_reason(bad_setup):
    out = Table()(bad_setup)
    assert out["ok"] is False and out["error"]


def test_events_before_a_setup_are_refused():
    assert Table()(pull(1, 0))["ok"] is False


def test_options_with_valid_values_are_accepted():
    out = Table()(setup(options={"match_symbols": True, "wild_timeout_s": 10, "auto_uno": False,
                                  "penalty_color_timeout_s": 5.5, "foul_penalty": "warn", "next_builder": "rotate"}))
    assert out["ok"] is True


def test_a_custom_block_set_is_accepted():
    names = [b for row in TOWER for b in row]
    assert Table()(setup(blocks=names))["ok"] is True
    assert Table()(setup(blocks="sheet-a-42", tower=[["red-1", "red-2", "red-3"], ["blue-1", "blue-2", "blue-3"]]))["ok"]


def test_the_script_command_prints_one_line_per_event_and_skips_comments():
    script = "\n".join([
        "# a comment",
        json.dumps(setup()),
        "",
        "{not json",
        json.dumps(pull(1, 0)),
    ])
    proc = run_cli("referee", "script", "-", input=script)
    assert proc.returncode == 0
    out = lines(proc.stdout)
    assert [o["ok"] for o in out] == [True, False, True]


def test_the_script_command_exits_2_when_the_file_cannot_be_read(tmp_path):
    proc = run_cli("referee", "script", str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr
