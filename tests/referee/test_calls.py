"""The call: what the next player must pull (RULES.md sections 3 and 4)."""

from referee_helpers import Table, place, pull, setup


def test_the_builder_starts_with_a_free_pull(table):
    out = table.last
    assert out["turn"] == "Ana"
    assert out["call"] == {"count": 1, "colors": [], "numbers": [], "numbers_only": False, "free": True}
    assert out["direction"] == "clockwise"


def test_a_number_block_calls_its_color_or_its_number_for_the_next_player(table):
    out = table.turn(1, 0, 7, 0)  # Ana: red-1
    assert out["turn"] == "Ben"
    assert out["call"]["colors"] == ["red"] and out["call"]["numbers"] == [1]
    assert "Ben: pull a red block or a 1." in out["say"]


def test_the_same_number_in_another_color_answers(table):
    table.turn(1, 0, 7, 0)  # red-1
    out = table.turn(1, 1, 7, 1)  # Ben: blue-1
    assert out["fouls"] == []
    assert out["turn"] == "Cy" and out["call"]["colors"] == ["blue"]


def test_a_block_in_hand_does_not_change_the_call(table):
    table.turn(1, 0, 7, 0)
    out = table(pull(2, 0))  # Ben holds red-2
    assert out["turn"] == "Ben"
    assert out["call"]["colors"] == ["red"] and out["call"]["numbers"] == [1]


def test_an_action_block_of_the_called_color_answers(table):
    table.turn(1, 0, 7, 0)  # red-1
    out = table.turn(4, 0, 7, 1)  # Ben: red-skip answers red
    assert out["fouls"] == []


def test_draw_two_makes_the_next_player_pull_two_number_blocks_of_its_color():
    t = Table(setup())
    out = t.turn(3, 2, 7, 0)  # Ana: blue-draw2
    assert out["turn"] == "Ben"
    assert out["call"] == {"count": 2, "colors": ["blue"], "numbers": [], "numbers_only": True, "free": False}
    assert "Ben: pull two blue number blocks." in out["say"]
    out = t.turn(1, 1, 7, 1)  # blue-1
    assert out["turn"] == "Ben" and out["call"]["count"] == 1
    out = t.turn(2, 1, 7, 2)  # blue-2, the second block sets Cy's call
    assert out["turn"] == "Cy"
    assert out["call"]["colors"] == ["blue"] and out["call"]["numbers"] == [2]


def test_an_action_block_while_serving_a_draw_two_is_a_foul():
    t = Table(setup())
    t.turn(3, 2, 7, 0)  # blue-draw2
    out = t(pull(4, 2))  # the Wild
    assert out["fouls"] == [{"player": "Ben", "rule": "action-in-draw"}]


def test_reverse_flips_the_direction_and_calls_its_color(table):
    table.turn(1, 2, 7, 0)  # Ana: green-1
    out = table.turn(4, 1, 7, 1)  # Ben: green-reverse
    assert out["direction"] == "counterclockwise"
    assert out["turn"] == "Ana"
    assert out["call"]["colors"] == ["green"] and out["call"]["numbers"] == []


def test_reverse_does_not_answer_a_reverse_call_by_symbol():
    tower = [["red-1", "blue-reverse", "green-1"], ["red-reverse", "blue-2", "green-2"], ["red-3", "yellow-3", "blue-3"]]
    t = Table(setup(tower=tower))
    t.turn(2, 0, 4, 0)  # Ana: red-reverse -> counterclockwise, Cy must pull red
    out = t(pull(1, 1, player="Cy"))  # blue-reverse
    assert out["fouls"] == [{"player": "Cy", "rule": "wrong-block"}]


def test_match_symbols_lets_an_action_block_answer_by_symbol():
    tower = [["red-1", "blue-reverse", "green-1"], ["red-reverse", "blue-2", "green-2"], ["red-3", "yellow-3", "blue-3"]]
    t = Table(setup(tower=tower, options={"match_symbols": True}))
    t.turn(2, 0, 4, 0)
    out = t(pull(1, 1, player="Cy"))
    assert out["fouls"] == []


def test_skip_passes_over_the_next_player(table):
    table.turn(1, 0, 7, 0)  # Ana: red-1
    out = table.turn(4, 0, 7, 1)  # Ben: red-skip -> Cy skipped, Ana pulls red
    assert out["turn"] == "Ana"
    assert out["call"]["colors"] == ["red"]
    assert any("Cy is skipped" in s for s in out["say"])


def test_the_wild_waits_for_its_puller_to_name_a_color(table):
    out = table.turn(4, 2, 7, 0)  # Ana: wild
    assert out["waiting_for"] == "wild_color" and out["turn"] == "Ana"
    assert out["call"]["count"] == 0
    rejected = table(pull(1, 0, player="Ben"))
    assert rejected["ok"] is False
    out = table({"event": "wild_color", "color": "yellow"})
    assert out["turn"] == "Ben" and out["waiting_for"] is None
    assert out["call"]["colors"] == ["yellow"] and out["call"]["numbers"] == []


def test_the_wild_answers_any_call(table):
    table.turn(1, 0, 7, 0)  # red-1
    out = table(pull(4, 2))  # Ben: wild
    assert out["fouls"] == []


def test_only_the_wilds_puller_names_its_color(table):
    table.turn(4, 2, 7, 0)
    out = table({"event": "wild_color", "color": "red", "player": "Ben"})
    assert out["ok"] is False
    assert table.round.waiting_for == "wild_color"


def test_two_players_reverse_acts_as_a_draw_two_and_keeps_the_direction():
    t = Table(setup(players=["Ana", "Ben"]))
    t.turn(1, 2, 7, 0)  # Ana: green-1
    out = t.turn(4, 1, 7, 1)  # Ben: green-reverse
    assert out["direction"] == "clockwise"
    assert out["turn"] == "Ana"
    assert out["call"] == {"count": 2, "colors": ["green"], "numbers": [], "numbers_only": True, "free": False}


def test_two_players_skip_acts_as_a_draw_two():
    t = Table(setup(players=["Ana", "Ben"]))
    out = t.turn(4, 0, 7, 0)  # Ana: red-skip
    assert out["turn"] == "Ben"
    assert out["call"]["count"] == 2 and out["call"]["numbers_only"] is True and out["call"]["colors"] == ["red"]


# A tower where nothing answers "red or 3" once Ana has pulled the red 3.
NO_ANSWER = [["blue-1", "blue-2", "blue-4"], ["green-1", "red-3", "green-2"], ["yellow-1", "yellow-2", "yellow-3"]]


def test_a_free_pull_is_announced_when_no_available_block_answers():
    t = Table(setup(tower=NO_ANSWER))
    out = t.turn(2, 1, 4, 0)
    assert out["turn"] == "Ben"
    assert out["call"]["free"] is True
    assert any("Free pull" in s for s in out["say"])
    out = t(pull(1, 0))  # any available block is fine
    assert out["fouls"] == []


def test_a_draw_two_with_no_answer_becomes_any_available_number_block():
    tower = [["blue-1", "blue-2", "blue-4"], ["green-1", "red-draw2", "green-2"], ["yellow-1", "yellow-2", "yellow-3"]]
    t = Table(setup(tower=tower))
    out = t.turn(2, 1, 4, 0)
    assert out["call"]["free"] is True and out["call"]["numbers_only"] is True and out["call"]["count"] == 2


def test_claim_no_match_is_refused_naming_a_block_that_answers(table):
    table.turn(1, 0, 7, 0)  # red-1
    out = table({"event": "claim_no_match", "player": "Ben"})
    assert out["ok"] is True
    assert out["call"]["free"] is False
    assert any("refused" in s for s in out["say"])


def test_claim_no_match_is_granted_when_the_map_shows_nothing():
    t = Table(setup(tower=NO_ANSWER))
    t.turn(2, 1, 4, 0)
    out = t({"event": "claim_no_match", "player": "Ben"})
    assert out["call"]["free"] is True


def test_only_the_player_to_pull_may_claim_no_match(table):
    assert table({"event": "claim_no_match", "player": "Cy"})["ok"] is False
