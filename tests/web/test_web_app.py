"""The status page and JSON API as a browser or a club's script uses them."""

from __future__ import annotations

import http.client
import json

import pytest

from web_ui.app import create_app
from web_ui.hub import TableHub
from web_ui.security import Limit, RateLimiter
from web_ui.server import BackgroundServer

from web_test_helpers import logged_round

PIN = "4821"


@pytest.fixture
def hub():
    return TableHub()


@pytest.fixture
def app(hub, store):
    return create_app(hub, store, PIN, testing=True)


@pytest.fixture
def client(app):
    return app.test_client()


def csrf(client) -> str:
    return client.get("/api/session").get_json()["csrf_token"]


def unlock(client) -> str:
    token = csrf(client)
    assert client.post("/api/unlock", json={"pin": PIN}, headers={"X-CSRFToken": token}).status_code == 200
    return token


def test_pages_render(client, store):
    match_id, round_no, _, _ = logged_round(store)
    for url in ("/", "/history", f"/history/{match_id}/{round_no}"):
        resp = client.get(url)
        assert resp.status_code == 200, url
    assert match_id.encode() in client.get("/history").data
    assert client.get(f"/history/{match_id}/99").status_code == 404


def test_spectators_cannot_act(client, hub):
    resp = client.post("/api/actions", json={"action": "wild_color", "color": "red"}, headers={"X-CSRFToken": csrf(client)})
    assert resp.status_code == 403
    assert "PIN" in resp.get_json()["error"]
    assert hub.actions() == []


def test_the_table_pin_unlocks_control_and_actions_reach_the_loop(client, hub):
    token = unlock(client)
    assert client.get("/api/session").get_json()["table"] is True
    resp = client.post("/api/actions", json={"action": "uno", "caller": "Ben", "offender": "Ana"}, headers={"X-CSRFToken": token})
    assert resp.status_code == 202
    assert [a["action"] for a in hub.actions()] == ["uno"]
    client.post("/api/lock", headers={"X-CSRFToken": token})
    assert client.post("/api/actions", json={"action": "uno", "caller": "Ben", "offender": "Ana"},
                       headers={"X-CSRFToken": token}).status_code == 403


def test_a_spectator_script_is_told_it_needs_the_table(client, hub):
    resp = client.post("/api/actions", json={"action": "uno", "caller": "Ben", "offender": "Ana"})
    assert resp.status_code == 403 and "PIN" in resp.get_json()["error"]
    assert hub.actions() == []


def test_a_wrong_pin_is_refused(client):
    resp = client.post("/api/unlock", json={"pin": "0000"}, headers={"X-CSRFToken": csrf(client)})
    assert resp.status_code == 403
    assert client.get("/api/session").get_json()["table"] is False


def test_requests_without_the_csrf_token_are_refused(client, hub):
    unlock(client)
    resp = client.post("/api/actions", json={"action": "claim_no_match", "player": "Ana"})
    assert resp.status_code == 400
    assert "reload the page" in resp.get_json()["error"]
    assert hub.actions() == []


def test_scripts_may_act_with_the_pin_header_instead_of_a_session(client, hub):
    assert client.post("/api/actions", json={"action": "claim_no_match", "player": "Ana"},
                       headers={"X-Table-PIN": PIN}).status_code == 202
    assert client.post("/api/actions", json={"action": "claim_no_match", "player": "Ana"},
                       headers={"X-Table-PIN": "1111"}).status_code == 403
    assert len(hub.actions()) == 1


def test_invalid_actions_get_a_plain_reason(client):
    resp = client.post("/api/actions", json={"action": "wild_color", "color": "pink"}, headers={"X-Table-PIN": PIN})
    assert resp.status_code == 400
    assert "red, yellow, green or blue" in resp.get_json()["error"]
    resp = client.post("/api/actions", data="not json", headers={"X-Table-PIN": PIN, "Content-Type": "application/json"})
    assert resp.status_code == 400


def test_pin_guessing_is_rate_limited(client):
    token = csrf(client)
    codes = [client.post("/api/unlock", json={"pin": f"{i:04d}"}, headers={"X-CSRFToken": token}).status_code
             for i in range(8)]
    assert codes[:5] == [403] * 5
    assert codes[5:] == [429] * 3
    resp = client.post("/api/unlock", json={"pin": PIN}, headers={"X-CSRFToken": token})
    assert resp.status_code == 429 and int(resp.headers["Retry-After"]) >= 1


def test_token_bucket_refills_with_time():
    now = [0.0]
    limiter = RateLimiter({"action": Limit(burst=2, per_second=1)}, clock=lambda: now[0])
    assert [limiter.allow("a", "action")[0] for _ in range(3)] == [True, True, False]
    assert limiter.allow("b", "action")[0] is True  # another client has its own bucket
    now[0] += 1.0
    assert limiter.allow("a", "action")[0] is True


def test_state_is_the_live_report_when_a_loop_publishes(client, hub):
    hub.publish({"ok": True, "turn": "Ben", "direction": "clockwise", "call": {}, "waiting_for": None,
                 "fouls": [], "over": False, "winner": None, "loser": None, "say": ["Ben: pull"]})
    state = client.get("/api/state").get_json()
    assert state["ok"] is True and state["turn"] == "Ben"


def test_state_without_a_loop_is_the_latest_logged_round_replayed(client, store):
    _, _, _, outputs = logged_round(store, seed=11)
    last_ok = [o for o in outputs if o["ok"]][-1]
    state = client.get("/api/state").get_json()
    assert state == last_ok  # exactly the last accepted line `stacko referee script` prints
    table = client.get("/api/table").get_json()
    assert len(table["tower"]) >= 1 and table["players"]


def test_state_with_an_empty_log_is_an_idle_table(client):
    state = client.get("/api/state").get_json()
    assert state["ok"] is True and state["turn"] is None and state["over"] is False


def test_history_api_gives_matches_standings_and_round_steps(client, store):
    match_id, round_no, events, _ = logged_round(store, seed=4)
    matches = client.get("/api/matches").get_json()["matches"]
    assert [m["id"] for m in matches] == [match_id]
    detail = client.get(f"/api/matches/{match_id}/rounds/{round_no}").get_json()
    assert [s["event"] for s in detail["steps"]] == events
    assert len(detail["steps"][0]["tower"]) == 15
    assert client.get("/api/standings").get_json()["standings"]
    assert client.get("/api/matches/nope").status_code == 404


def test_export_api_matches_the_contract(client, store):
    match_id, round_no, events, _ = logged_round(store, seed=4)
    lines = [json.loads(l) for l in client.get(f"/api/export?match={match_id}&format=json").data.decode().splitlines()]
    assert lines[0] == {"match": match_id, "round": round_no, "seq": 1, "event": events[0]}
    assert [l["event"] for l in lines] == events
    csv_text = client.get("/api/export?format=csv").data.decode()
    assert csv_text.splitlines()[0].startswith("match,round,seq")
    assert len(csv_text.splitlines()) == len(events) + 1


def test_openapi_document_lists_every_api_route(app, client):
    doc = client.get("/api/openapi.json").get_json()
    assert doc["openapi"].startswith("3.")
    routes = {r.rule.replace("<", "{").replace(">", "}").replace("int:", "").replace("round_no", "round")
              for r in app.url_map.iter_rules() if r.rule.startswith("/api/")}
    assert routes == set(doc["paths"])


def _read_events(resp: http.client.HTTPResponse, n: int) -> list[tuple[str, dict]]:
    """Read n `state` events (id, data) from a server-sent-events response."""
    out, event_id, data = [], "", None
    while len(out) < n:
        line = resp.fp.readline().decode().rstrip("\n")
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
        elif line == "" and data is not None:
            out.append((event_id, data))
            event_id, data = "", None
    return out


def test_live_stream_delivers_states_and_catches_up_after_a_lost_connection(hub, store):
    app = create_app(hub, store, PIN, keepalive_s=0.5)
    with BackgroundServer(app) as server:
        hub.publish({"ok": True, "turn": "Ana"})
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/api/stream")
        resp = conn.getresponse()
        assert resp.getheader("Content-Type").startswith("text/event-stream")
        [(first_id, first)] = _read_events(resp, 1)
        assert first["report"]["turn"] == "Ana"
        conn.close()  # the phone loses its connection ...
        hub.publish({"ok": True, "turn": "Ben"})
        hub.publish({"ok": True, "turn": "Cy"})
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/api/stream", headers={"Last-Event-ID": first_id})  # ... and comes back
        resp = conn.getresponse()
        assert [d["report"]["turn"] for _, d in _read_events(resp, 2)] == ["Ben", "Cy"]
        conn.close()


def test_a_browser_from_an_earlier_referee_run_starts_from_the_latest_state(hub, store):
    app = create_app(hub, store, PIN, keepalive_s=0.5)
    with BackgroundServer(app) as server:
        for n in ("Ana", "Ben"):
            hub.publish({"ok": True, "turn": n})
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/api/stream", headers={"Last-Event-ID": "deadbeef-1"})
        [(_, data)] = _read_events(conn.getresponse(), 1)
        assert data["report"]["turn"] == "Ben"
        conn.close()


def test_viewers_beyond_the_limit_are_turned_away_politely(hub, store):
    app = create_app(hub, store, PIN, max_viewers=1, keepalive_s=0.5)
    with BackgroundServer(app) as server:
        hub.publish({"ok": True, "turn": "Ana"})
        first = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        first.request("GET", "/api/stream")
        _read_events(first.getresponse(), 1)
        second = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        second.request("GET", "/api/stream")
        resp = second.getresponse()
        assert resp.status == 503 and "too many viewers" in json.loads(resp.read())["error"]
        first.close()
        second.close()
