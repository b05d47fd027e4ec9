"""Fouls and penalties (RULES.md sections 6 and 7)."""

from referee_helpers import Table, place, pull, setup


def penalty_color(color, **kw):
    return {"event": "penalty_color", "color": color, **kw}


def test_a_wrong_block_costs_two_number_blocks_of_the_callers_color(table):
    table.turn(1, 0, 7, 0)  # Ana: red-1 -> Ben: red or 1
    out = table(pull(2, 1))  # Ben: blue-2
    assert out["fouls"] == [{"player": "Ben", "rule": "wrong-block"}]
    out = table(place(7, 1))
    assert out["waiting_for"] == "penalty_color" and out["turn"] == "Cy"  # the next seat names it
    out = table(penalty_color("green"))
    assert out["turn"] == "Ben"
    assert out["call"] == {"count": 2, "colors": ["green"], "numbers": [], "numbers_only": True, "free": False}
    table.turn(1, 2, 7, 2)  # green-1
    out = table.turn(2, 2, 8, 0)  # green-2: penalty served, Cy's call is from the blue 2
    assert out["turn"] == "Cy"
    assert out["call"]["colors"] == ["blue"] and out["call"]["numbers"] == [2]


def test_with_foul_penalty_warn_a_foul_is_only_announced():
    t = Table(setup(options={"foul_penalty": "warn"}))
    t.turn(1, 0, 7, 0)
    out = t(pull(2, 1))
    assert out["fouls"] == [{"player": "Ben", "rule": "wrong-block"}]
    out = t(place(7, 1))
    assert out["waiting_for"] is None and out["turn"] == "Cy"
    assert out["call"]["colors"] == ["blue"]


def test_pulling_from_the_highest_completed_level_is_a_foul(table):
    out = table(pull(6, 0))
    assert out["fouls"] == [{"player": "Ana", "rule": "level"}]


def test_pulling_from_the_incomplete_top_level_is_a_foul(table):
    table.turn(1, 0, 7, 0)  # level 7 has one block; highest completed is 6
    out = table(pull(7, 0, player="Ben"))
    assert {"player": "Ben", "rule": "level"} in out["fouls"]


def test_starting_a_new_level_early_is_a_foul(table):
    table.turn(1, 0, 7, 0)
    table(pull(2, 0))  # Ben: red-2
    out = table(place(8, 1))
    assert out["fouls"] == [{"player": "Ben", "rule": "early-level"}]


def test_one_pull_commits_at_most_two_fouls_and_the_turn_one_penalty(table):
    table.turn(1, 0, 7, 0)  # red-1
    out = table(pull(6, 1))  # Ben: green-4 from the highest completed level, not red/1
    assert sorted(f["rule"] for f in out["fouls"]) == ["level", "wrong-block"]
    out = table(place(7, 1))
    assert out["waiting_for"] == "penalty_color"
    table(penalty_color("blue"))
    table.turn(1, 1, 7, 2)
    out = table.turn(2, 1, 8, 0)
    assert out["turn"] == "Cy" and out["waiting_for"] is None  # one penalty only


def test_out_of_turn_block_sets_nothing_and_its_penalty_is_served_at_once(table):
    table.turn(1, 0, 7, 0)  # Ana: red-1 -> Ben
    out = table(pull(5, 0, player="Cy"))  # Cy grabs yellow-1
    assert out["fouls"] == [{"player": "Cy", "rule": "out-of-turn"}]
    assert out["turn"] == "Ben"
    out = table(place(7, 1))
    assert out["waiting_for"] == "penalty_color"
    assert out["turn"] == "Ana"  # the seat after Cy names the color
    out = table(penalty_color("blue"))
    assert out["turn"] == "Cy" and out["call"]["count"] == 2
    table.turn(1, 1, 7, 2)  # blue-1
    out = table.turn(2, 1, 8, 0)  # blue-2
    assert out["turn"] == "Ben"
    assert out["call"]["colors"] == ["red"] and out["call"]["numbers"] == [1]
    assert out["direction"] == "clockwise"


def test_out_of_turn_pulls_are_not_judged_on_identity(table):
    table.turn(1, 0, 7, 0)
    out = table(pull(2, 1, player="Cy"))  # blue-2 answers nothing, but only out-of-turn counts
    assert [f["rule"] for f in out["fouls"]] == ["out-of-turn"]


def test_two_hands_earn_uno_and_the_next_seat_names_the_color(table):
    table(pull(1, 0))
    out = table({"event": "two_hands", "player": "Ana"})
    assert out["fouls"] == [{"player": "Ana", "rule": "two-hands"}]
    assert any("Uno!" in s for s in out["say"])
    out = table(place(7, 0))
    assert out["waiting_for"] == "penalty_color" and out["turn"] == "Ben"
    out = table(penalty_color("blue", player="Ben"))
    assert out["turn"] == "Ana" and out["call"]["colors"] == ["blue"] and out["call"]["numbers_only"] is True


def test_two_hands_are_penalised_once_per_turn_however_often_seen(table):
    table(pull(1, 0))
    table({"event": "two_hands", "player": "Ana"})
    out = table({"event": "two_hands", "player": "Ana"})
    assert out["fouls"] == []
    out = table({"event": "uno", "caller": "Cy", "offender": "Ana"})
    assert out["fouls"] == []


def test_a_turn_earns_at_most_one_penalty_for_two_hands_and_a_wrong_block(table):
    table.turn(1, 0, 7, 0)
    table(pull(2, 1))  # Ben: wrong block
    out = table({"event": "two_hands", "player": "Ben"})
    assert out["fouls"] == [{"player": "Ben", "rule": "two-hands"}]
    table(place(7, 1))
    table(penalty_color("red"))
    table.turn(1, 1, 7, 2)  # blue-1? any: red asked, blue-1 is a foul but no new penalty
    out = table.turn(3, 0, 8, 0)
    assert out["turn"] == "Cy" and out["waiting_for"] is None


def test_a_players_uno_call_lets_the_caller_name_the_color(table):
    table(pull(1, 0))
    out = table({"event": "uno", "caller": "Cy", "offender": "Ana"})
    assert out["fouls"] == [{"player": "Ana", "rule": "two-hands"}]
    out = table(place(7, 0))
    assert out["waiting_for"] == "penalty_color" and out["turn"] == "Cy"


def test_nobody_calls_uno_on_themselves(table):
    out = table({"event": "uno", "caller": "Ana", "offender": "Ana"})
    assert out["ok"] is False


def test_with_auto_uno_off_only_a_players_call_counts():
    t = Table(setup(options={"auto_uno": False}))
    t(pull(1, 0))
    out = t({"event": "two_hands", "player": "Ana"})
    assert out["fouls"] == []
    out = t({"event": "uno", "caller": "Ben", "offender": "Ana"})
    assert out["fouls"] == [{"player": "Ana", "rule": "two-hands"}]


def test_the_wilds_color_is_named_before_the_penalty_color(table):
    table(pull(4, 2))  # Ana: wild
    table({"event": "two_hands", "player": "Ana"})
    out = table(place(7, 0))
    assert out["waiting_for"] == "wild_color" and out["turn"] == "Ana"
    out = table({"event": "wild_color", "color": "green"})
    assert out["waiting_for"] == "penalty_color" and out["turn"] == "Ben"
    table(penalty_color("red"))
    table.turn(1, 0, 7, 1)  # red-1
    out = table.turn(2, 0, 7, 2)  # red-2
    assert out["turn"] == "Ben" and out["call"]["colors"] == ["green"]


def test_the_penalty_does_not_change_the_call_or_the_skip(table):
    table(pull(4, 0))  # Ana: red-skip
    table({"event": "two_hands", "player": "Ana"})
    table(place(7, 0))
    table(penalty_color("blue"))
    table.turn(1, 1, 7, 1)
    out = table.turn(2, 1, 7, 2)
    assert out["turn"] == "Cy"  # Ben is still skipped
    assert out["call"]["colors"] == ["red"]


def test_a_late_uno_before_the_next_pull_is_served_at_once(table):
    table.turn(1, 0, 7, 0)
    out = table({"event": "uno", "caller": "Cy", "offender": "Ana"})
    assert out["waiting_for"] == "penalty_color" and out["turn"] == "Cy"
    table(penalty_color("blue"))
    table.turn(1, 1, 7, 1)
    out = table.turn(2, 1, 7, 2)
    assert out["turn"] == "Ben" and out["call"]["colors"] == ["red"] and out["call"]["numbers"] == [1]


def test_a_warned_foul_says_there_is_no_penalty():
    t = Table(setup(options={"foul_penalty": "warn"}))
    t.turn(1, 0, 7, 0)
    out = t(pull(2, 1))
    assert any("no penalty" in s for s in out["say"])
