"""End to end on recorded twin matches: what the referee calls against what really happened.

Each file in tests/loop/recorded/ is a whole twin match (`stacko demo --record`, seeds and skills
in its header): every reading of the camera pipeline and every sensor event as the live referee
got them, the players' checks, and the twin's ground truth. Replaying them runs the real match loop
(fusion, session, engine) in a few seconds each, so the suite checks the referee's calls on many
matches without MuJoCo.

Issue #6 asks for every turn to equal the truth: every turn the referee calls on its own, every
turn as logged (the referee may ask the table, one tap on the page, where its senses cannot
settle a reading), every "two hands" penalty and every collapse's loser. Remake them (after a
large change to the fusion: the readings were taken with the live referee's map as the height
hint) with
`stacko bench match --matches 21 --seed 101 --players 3 --max-turns 8 --skill mixed --workers 2 --record tests/loop/recorded`
and, for more collapses, `stacko bench match --matches 4 --seed 122 --players 3 --max-turns 20 --skill careless --workers 2 --record tests/loop/recorded-long`
and `stacko bench match --matches 1 --seed 118 --players 3 --max-turns 60 --skill careless --record tests/loop/recorded-long`
(a block that slid off the top as its player let go: the fall the players reported is his).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from referee.loop.demo import truth_loser
from referee.loop.recorded import read_recording, replay_recording

RECORDED = sorted((Path(__file__).parent / "recorded").glob("*.jsonl.gz"))
# Long matches of careless players (20 turns at most, to a collapse): the tower grows past 19
# levels, where the camera misreads glyphs more often; they give the suite its collapses.
LONG = sorted((Path(__file__).parent / "recorded-long").glob("*.jsonl.gz"))
ALL = RECORDED + LONG


@lru_cache(maxsize=None)
def replayed(path: Path):
    return replay_recording(path)


def all_checks():
    return [c for p in RECORDED for c in replayed(p).checks]


def test_there_are_at_least_twenty_recorded_matches():
    assert len(RECORDED) >= 20


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_replaying_a_match_calls_at_least_as_many_turns_right_as_the_live_referee(path):
    header, _ = read_recording(path)
    assert sum(c.agree for c in replayed(path).checks) >= header["live"]["agree"]


def test_every_turn_the_referee_calls_on_its_own_is_right():
    """On its own: no question on the page at all (a turn whose follow-up question the referee settled
    itself, after the table named the block, counts as asked)."""
    seen = [c for c in all_checks() if c.how == "seen"]
    assert len(seen) >= 139  # of 155 turns (131 with the vision of 2026-11-24 afternoon)
    assert [c for c in seen if not c.agree] == []


def test_the_place_is_called_soon_after_the_block_is_let_go():
    """Issue #6: release to the call (a replay answers the referee's questions at once, so an asked
    turn counts until its question; at the table the tap comes on top)."""
    lat = sorted(x for p in RECORDED for x in replayed(p).release_latency_s)
    assert len(lat) >= 155
    assert lat[len(lat) // 2] <= 0.085
    assert lat[int(0.95 * len(lat))] <= 0.16


def test_the_referee_asks_the_table_only_where_its_senses_cannot_settle_the_turn():
    """Each question stops the game for a tap on the page (issue #6: the call within 300 ms)."""
    assert sum(replayed(p).questions for p in RECORDED) <= 19  # 29 with the vision of 2026-11-24 afternoon


def test_every_turn_ends_up_logged_as_it_happened():
    """Seen, asked on the page, or told by a player: the log says what happened."""
    checks = all_checks()
    assert [c for c in checks if not c.agree] == []
    assert sum(c.how == "told" for c in checks) == 0  # the referee never left a turn for a player to tell


def _truth_of(path):
    header, records = read_recording(path)
    return header, records, header["truth"], header["players"]


def test_nobody_is_penalised_for_two_hands_they_did_not_use():
    for path in ALL:
        _, _, truth, names = _truth_of(path)
        used = {names[t["seat"]] for t in truth if t["type"] == "two_hands"}
        called = {e.get("player") for e in replayed(path).events if e["event"] == "two_hands"}
        assert called <= used, path.stem


def test_every_player_who_uses_two_hands_gets_the_penalty():
    """A penalty is served after the turn; a pull that topples the tower ends the round instead."""
    used = hit = 0
    for path in ALL:
        _, _, truth, names = _truth_of(path)
        events = replayed(path).events
        fell = next((e["t"] for e in truth if e["type"] == "collapse"), float("inf"))
        for t in (t for t in truth if t["type"] == "two_hands" and not _same_turn(truth, t["t"], fell)):
            used += 1
            hit += any(e["event"] == "two_hands" and e.get("player") == names[t["seat"]] for e in events)
    assert used >= 5, "too few recorded two-hand pulls to judge"
    assert hit == used


def _same_turn(truth, t_a, t_b):
    """No place between the two moments: they belong to the same turn."""
    lo, hi = sorted((t_a, t_b))
    return hi != float("inf") and not any(e["type"] == "place" and lo <= e["t"] <= hi for e in truth)


def test_every_collapse_ends_the_round_blamed_on_the_player_at_the_tower():
    collapses = right = 0
    for path in ALL:
        _, records, truth, names = _truth_of(path)
        collapse = next((e for e in truth if e["type"] == "collapse"), None)
        if collapse is None:
            continue
        collapses += 1
        result = replayed(path)
        assert result.loser is not None, path.stem
        turns = [(t, p["seat"]) for kind, t, p in records if kind == "turn"]
        right += result.loser == truth_loser(truth, turns, names)
    assert collapses >= 4, "too few recorded collapses to judge"
    assert right == collapses


def test_a_knock_on_the_table_is_not_a_collapse():
    knocks = 0
    for path in ALL:
        _, _, truth, _ = _truth_of(path)
        if any(e["type"] == "collapse" for e in truth):
            continue
        knocks += sum(e["type"] == "knock" for e in truth)
        assert not any(e["event"] == "collapse" for e in replayed(path).events), path.stem
    assert knocks > 0, "no recorded match without a collapse has a knock"


def test_each_matchs_logged_events_replay_through_the_script_command_to_the_same_loser_and_winner():
    """CONTRACT.md section 3: the log's events, fed to `stacko referee script`, give the same end."""
    import json

    from referee.script import run_lines

    for path in ALL:
        result = replayed(path)
        outputs = list(run_lines(json.dumps(e) for e in result.events))
        assert outputs and all(o["ok"] for o in outputs), path.stem
        assert (outputs[-1]["winner"], outputs[-1]["loser"]) == (result.winner, result.loser), path.stem


def test_no_turn_of_the_long_careless_matches_is_called_wrong_on_the_referees_own():
    """Past 19 levels glyphs are misread surely (blue 3 for blue 1): such a reading is cross-checked
    against where the block came out, and asked where that cannot tell the runner-up apart."""
    wrong = [c for p in LONG for c in replayed(p).checks if c.how == "seen" and c.logged and not c.agree]
    assert wrong == []


def test_every_turn_of_the_long_careless_matches_is_logged_right():
    """Towers past 19 levels, where glyphs are misread surely more often: all 49 turns logged as
    they happened (34 of 37 on the set recorded with the vision of 2026-11-24 morning; the turn
    whose block fell off the top as it was let go is judged by its loser, not here)."""
    checks = [c for p in LONG for c in replayed(p).checks]
    assert len(LONG) >= 5 and len(checks) >= 49
    assert [c for c in checks if not c.agree] == []


def test_a_call_every_answer_agrees_on_is_announced_before_the_table_answers():
    """Issue #6: the players tap their answer a second after the question (at the latest before they
    check the referee's map). Where the question is only which of two identical blocks was pulled and
    either answer makes the same call, the call is announced with the question, not after the tap:
    15 of the 19 questions, so 4 calls wait for a tap (8 of 29 on the set recorded with the vision
    of 2026-11-24 afternoon); the log still ends up right turn by turn, and 95% of the places are
    called within 0.3 s of the release even though the players take a second to answer."""
    results = [replay_recording(p, answer_delay_s=1.0) for p in RECORDED]
    checks = [c for r in results for c in r.checks]
    assert [c for c in checks if not c.agree] == []
    early = sum(r.early_calls for r in results)
    assert early >= 15
    assert sum(r.questions for r in results) - early <= 4
    lat = sorted(x for r in results for x in r.release_latency_s)
    assert lat[len(lat) // 2] <= 0.085
    assert lat[int(0.95 * len(lat))] <= 0.3  # 0.15 s
