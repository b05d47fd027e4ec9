"""The hub hands every viewer every state, catches reconnecting viewers up, and never lets a slow
viewer hold up the referee; requests from the page reach the loop only when well-formed."""

from __future__ import annotations

import pytest

from web_ui.actions import ActionError, action_to_event, parse_action
from web_ui.hub import TableHub


def report(turn: str) -> dict:
    return {"ok": True, "turn": turn, "say": [f"{turn}: pull any block"]}


def test_every_viewer_gets_every_published_state_in_order():
    hub = TableHub()
    viewers = [hub.subscribe() for _ in range(3)]
    for name in ("Ana", "Ben", "Cy"):
        hub.publish(report(name), report(name)["say"])
    for v in viewers:
        got = [v.get(0.1)["report"]["turn"] for _ in range(3)]
        assert got == ["Ana", "Ben", "Cy"]


def test_a_reconnecting_viewer_catches_up_from_its_last_seen_state():
    hub = TableHub()
    seqs = [hub.publish(report(n)) for n in ("Ana", "Ben", "Cy", "Dee")]
    v = hub.subscribe(last_seq=seqs[1])
    assert [v.get(0.1)["report"]["turn"] for _ in range(2)] == ["Cy", "Dee"]
    assert v.get(0.01) is None


def test_a_new_viewer_starts_from_the_latest_state():
    hub = TableHub()
    for n in ("Ana", "Ben"):
        hub.publish(report(n))
    v = hub.subscribe()
    assert v.get(0.1)["report"]["turn"] == "Ben"
    assert v.get(0.01) is None


def test_a_new_viewer_gets_the_current_round_so_far():
    hub = TableHub()
    hub.publish({"ok": True, "turn": "Old", "match": "m1", "round": 1})
    for n in ("Ana", "Ben"):
        hub.publish({"ok": True, "turn": n, "match": "m1", "round": 2})
    v = hub.subscribe()
    assert [v.get(0.1)["report"]["turn"] for _ in range(2)] == ["Ana", "Ben"]
    assert v.get(0.01) is None


def test_a_viewer_too_far_behind_for_the_history_gets_the_latest_state():
    hub = TableHub(history=3)
    for i in range(10):
        hub.publish(report(f"P{i}"))
    v = hub.subscribe(last_seq=2)
    assert v.get(0.1)["report"]["turn"] == "P9"


def test_a_slow_viewer_is_dropped_instead_of_blocking_the_referee():
    hub = TableHub(viewer_queue=4)
    slow = hub.subscribe()
    for i in range(10):
        hub.publish(report(f"P{i}"))
    assert slow.closed.is_set()
    assert hub.viewers == 0


def test_the_camera_frame_is_kept_with_the_state_that_brought_it():
    hub = TableHub()
    hub.publish(report("Ana"))
    seq = hub.publish(report("Ben"), frame_jpeg=b"\xff\xd8jpeg")
    hub.publish(report("Cy"))
    assert hub.frame() == (seq, b"\xff\xd8jpeg")
    assert hub.latest()["frame"] == seq


def test_page_requests_reach_the_loop_in_order():
    hub = TableHub()
    hub.submit({"action": "wild_color", "color": "Red", "player": "Ana"})
    hub.submit({"action": "uno", "caller": "Ben", "offender": "Ana"})
    got = hub.actions()
    assert [a["action"] for a in got] == ["wild_color", "uno"]
    assert got[0]["color"] == "red"
    assert action_to_event(got[0]) == {"color": "red", "player": "Ana", "event": "wild_color"}
    assert hub.actions() == []


@pytest.mark.parametrize("bad, words", [
    ({"action": "wild_color", "color": "purple"}, "red, yellow, green or blue"),
    ({"action": "uno", "caller": "Ana", "offender": "Ana"}, "on themselves"),
    ({"action": "uno", "caller": "Ana"}, "offender"),
    ({"action": "players", "players": ["Ana"]}, "2 to 10 players"),
    ({"action": "players", "players": ["Ana", "ana"]}, "same name"),
    ({"action": "players", "players": ["Ana", "<script>"]}, "letters, digits"),
    ({"action": "claim_no_match", "player": "x" * 40}, "at most"),
    ({"action": "self_destruct"}, "unknown request"),
    (["not", "an", "object"], "JSON object"),
])
def test_malformed_requests_are_refused_in_words(bad, words):
    with pytest.raises(ActionError, match=words):
        parse_action(bad)


def test_a_full_action_queue_says_the_referee_is_busy():
    hub = TableHub(action_queue=2)
    for _ in range(2):
        hub.submit({"action": "claim_no_match", "player": "Ana"})
    with pytest.raises(ActionError, match="busy"):
        hub.submit({"action": "claim_no_match", "player": "Ana"})
