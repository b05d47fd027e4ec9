"""The end of a round and a match of rounds (RULES.md section 8)."""

from referee_helpers import TOWER, Table, place, pull, setup

COLLAPSE = {"event": "collapse"}


def test_a_collapse_before_anyone_touches_the_tower_is_the_builders_with_no_winner(table):
    out = table(COLLAPSE)
    assert out["over"] is True and out["loser"] == "Ana" and out["winner"] is None
    assert out["turn"] is None


def test_until_the_next_player_touches_it_a_collapse_belongs_to_the_last_placer(table):
    table.turn(1, 0, 7, 0)  # Ana
    table.turn(2, 0, 7, 1)  # Ben (red-2)
    out = table(COLLAPSE)
    assert out["loser"] == "Ben" and out["winner"] == "Ana"
    assert "The tower fell. Ben loses, Ana wins." in out["say"]


def test_once_the_next_player_touches_the_tower_a_collapse_is_theirs(table):
    table.turn(1, 0, 7, 0)
    table.turn(2, 0, 7, 1)
    table({"event": "touch", "player": "Cy"})
    out = table(COLLAPSE)
    assert out["loser"] == "Cy" and out["winner"] == "Ben"


def test_a_collapse_while_pulling_is_the_pullers(table):
    table.turn(1, 0, 7, 0)
    table(pull(2, 0))
    out = table(COLLAPSE)
    assert out["loser"] == "Ben" and out["winner"] == "Ana"


def test_the_winner_is_the_last_player_other_than_the_loser_to_complete_a_turn(table):
    table.turn(1, 0, 7, 0)  # Ana completes
    table(pull(2, 0))
    table(place(7, 1))  # Ben completes
    table({"event": "touch", "player": "Ana"})
    out = table(COLLAPSE)
    assert out["loser"] == "Ana" and out["winner"] == "Ben"


def test_nothing_but_a_new_setup_is_accepted_after_the_round_is_over(table):
    table(COLLAPSE)
    assert table(pull(1, 0))["ok"] is False
    assert table(COLLAPSE)["ok"] is False
    assert table(setup())["ok"] is True


def test_when_no_block_can_be_pulled_any_more_the_placer_wins_and_nobody_loses():
    tower = [["red-1", "red-2", "red-3"], ["blue-1", "blue-2", "blue-3"]]
    t = Table(setup(tower=tower))
    out = t.turn(1, 1, 3, 0)  # the middle of level 1: no other block may be pulled
    assert out["over"] is True and out["winner"] == "Ana" and out["loser"] is None


def test_the_loser_builds_and_starts_the_next_round(table):
    table.turn(1, 0, 7, 0)
    table.turn(2, 0, 7, 1)
    table(COLLAPSE)  # Ben loses
    out = table(setup())
    assert out["turn"] == "Ben"


def test_next_builder_winner_and_rotate():
    t = Table(setup(options={"next_builder": "winner"}))
    t.turn(1, 0, 7, 0)
    t.turn(2, 0, 7, 1)
    t(COLLAPSE)  # Ben loses, Ana wins
    assert t(setup(options={"next_builder": "winner"}))["turn"] == "Ana"
    t = Table(setup(options={"next_builder": "rotate"}))
    t(COLLAPSE)
    assert t(setup(options={"next_builder": "rotate"}))["turn"] == "Ben"


def test_a_match_keeps_standings_across_rounds(table):
    table.turn(1, 0, 7, 0)
    table.turn(2, 0, 7, 1)
    table(COLLAPSE)
    table(setup())
    table(COLLAPSE)  # Ben built and lost again
    match = table.runner.match
    assert match.standing("Ben").losses == 2 and match.standing("Ana").wins == 1


def test_a_setup_lists_seats_clockwise_from_the_builder():
    t = Table(setup(players=["Cy", "Ana", "Ben"]))
    out = t.turn(1, 0, 7, 0)
    assert out["turn"] == "Ana"
