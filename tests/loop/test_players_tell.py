"""What the players do on the page when the referee's map does not show the turn just played:
a call that named the wrong one of two blocks alike is taken back and told right (never told
again on top of itself, which made a foul out of turn); a turn the referee missed is told."""

from web_ui.hub import TableHub
from web_ui.store import MatchStore

from referee.loop.demo import misread_call, players_tell
from referee.loop.session import RefereeSession

from tests.loop.test_session import FakeClock, FakeSpeaker

NAMES = ["Ana", "Ben", "Cy"]
TWO_RED_TWOS = [  # level 2 holds two red 2s side by side
    ["red-1", "blue-1", "green-1"],
    ["red-2", "red-2", "green-2"],
    ["red-3", "yellow-3", "wild"],
    ["red-skip", "green-reverse", "blue-draw2"],
]
# what the table did: Ana pulled the red 2 in slot 0 and put it on top
TRUTH = [{"type": "pull", "level": 2, "slot": 0, "block": "red-2", "seat": 0},
         {"type": "place", "level": 5, "slot": 1}]


def _table(tmp_path):
    store = MatchStore(tmp_path / "log.sqlite")
    speaker = FakeSpeaker()
    session = RefereeSession(store, TableHub(), speaker, FakeClock())
    session.start_match(NAMES)
    session.start_round(TWO_RED_TWOS)
    return session, store, speaker


def test_a_call_of_the_other_block_alike_is_taken_back_and_told_right_without_a_foul(tmp_path):
    session, store, speaker = _table(tmp_path)
    # the referee called the red 2 beside it
    session.submit({"event": "pull", "level": 2, "slot": 1, "player": "Ana", "block": "red-2"})
    session.submit({"event": "place", "level": 5, "slot": 1})
    assert misread_call(session.round_events, TRUTH, NAMES)
    assert players_tell(session, TRUTH, NAMES) == "corrected"
    pull, place = session.round_events[-2:]
    assert (pull["level"], pull["slot"], pull["player"]) == (2, 0, "Ana") and (place["level"], place["slot"]) == (5, 1)
    assert session.round.turn == "Ben"  # Ana's one turn, no foul out of turn, no penalty
    assert not any("Foul" in line for line, _ in speaker.lines)
    kept = store.events(session.match_id, include_voided=True)
    assert sum(e.voided for e in kept) == 2  # the wrong call stays in the log, voided
    assert kept[-1].evidence["source"] == "player report: the referee called this turn wrongly"


def test_a_turn_the_referee_did_not_call_is_told(tmp_path):
    session, _, _ = _table(tmp_path)
    assert not misread_call(session.round_events, TRUTH, NAMES)
    assert players_tell(session, TRUTH, NAMES) == "told"
    pull, place = session.round_events[-2:]
    assert (pull["level"], pull["slot"]) == (2, 0) and (place["level"], place["slot"]) == (5, 1)


def test_a_call_that_matches_the_table_is_no_misread(tmp_path):
    session, _, _ = _table(tmp_path)
    session.submit({"event": "pull", "level": 2, "slot": 0, "player": "Ana", "block": "red-2"})
    session.submit({"event": "place", "level": 5, "slot": 1})
    assert not misread_call(session.round_events, TRUTH, NAMES)
    other = [dict(TRUTH[0], seat=1), TRUTH[1]]  # a pull by another player than the call's is not this call
    assert not misread_call(session.round_events, other, NAMES)
