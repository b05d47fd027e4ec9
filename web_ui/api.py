"""The JSON API (/api/...): table state, live stream, the page's requests, the match history.

Documented in web_ui/openapi.py, served at /api/openapi.json so a club can pull its results.
"""

from __future__ import annotations

import csv
import io
import json
import time

from flask import Blueprint, Response, abort, jsonify, request, session, stream_with_context
from flask_wtf.csrf import generate_csrf

from .actions import ActionError
from .app import NOT_TABLE, PIN_HEADER, is_table, table_context
from .replay import round_steps, state_from_log
from .security import check_pin
from .store import StoreError

api = Blueprint("api", __name__, url_prefix="/api")

IDLE_STATE = {
    "ok": True, "turn": None, "direction": "clockwise",
    "call": {"count": 0, "colors": [], "numbers": [], "numbers_only": False, "free": True},
    "waiting_for": None, "fouls": [], "over": False, "winner": None, "loser": None,
    "say": ["No round is being played."],
}


def _error(message: str, status: int) -> Response:
    response = jsonify({"ok": False, "error": message})
    response.status_code = status
    return response


def _store():
    store = table_context().store
    if store is None:
        abort(_error("this referee keeps no match log", 404))
    return store


def current_state() -> dict:
    """The live table if a match loop publishes, else the latest logged round re-run, else idle."""
    ctx = table_context()
    latest = ctx.hub.latest()
    if latest is not None:
        state = dict(latest["report"])
    elif ctx.store is not None:
        try:
            state = state_from_log(ctx.store) or dict(IDLE_STATE)
        except StoreError:
            state = dict(IDLE_STATE)
    else:
        state = dict(IDLE_STATE)
    state["ok"] = True
    return state


# The keys of a CONTRACT section 1 output line, in its order: /api/state gives exactly these.
CONTRACT_KEYS = ("ok", "turn", "direction", "call", "waiting_for", "fouls", "over", "winner", "loser", "say")


@api.get("/state")
def state() -> Response:
    """The table state exactly in the CONTRACT section 1 output shape."""
    full = current_state()
    return jsonify({k: full.get(k, IDLE_STATE[k]) for k in CONTRACT_KEYS})


@api.get("/table")
def table() -> Response:
    """The full table report: /api/state plus tower, hand, players, match and round when known."""
    return jsonify(current_state())


@api.get("/session")
def session_info() -> Response:
    """Whether this browser may control the table, and the CSRF token its requests must carry."""
    return jsonify({"table": is_table(), "csrf_token": generate_csrf()})


@api.post("/unlock")
def unlock() -> Response:
    data = request.get_json(silent=True) or {}
    ctx = table_context()
    if not check_pin(ctx.pin, data.get("pin")):
        return _error("wrong PIN: it is shown on the referee's console", 403)
    session["table"] = ctx.fingerprint
    return jsonify({"ok": True, "table": True})


@api.post("/lock")
def lock() -> Response:
    session.pop("table", None)
    return jsonify({"ok": True, "table": False})


@api.post("/actions")
def submit_action() -> Response:
    if not is_table():
        return _error(NOT_TABLE, 403)
    data = request.get_json(silent=True)
    if data is None:
        return _error("send the request as JSON", 400)
    try:
        action = table_context().hub.submit(data, source="api" if PIN_HEADER in request.headers else "page")
    except ActionError as exc:
        return _error(str(exc), 400)
    return jsonify({"ok": True, "action": action}), 202


def _parse_last_event_id(hub_epoch: str) -> int | None:
    raw = request.headers.get("Last-Event-ID") or request.args.get("since") or ""
    epoch, _, seq = raw.partition("-")
    if epoch != hub_epoch or not seq.isdigit():
        return None  # another referee run, or nothing seen yet: start from the latest state
    return int(seq)


def _sse(message: dict) -> str:
    return f"id: {message['epoch']}-{message['seq']}\nevent: state\ndata: {message['data']}\n\n"


@api.get("/stream")
def stream() -> Response:
    """Server-sent events: one `state` event per published table state; catches up on reconnect."""
    ctx = table_context()
    if ctx.hub.viewers >= ctx.max_viewers:
        return _error("too many viewers right now; try again later", 503)
    hub, keepalive = ctx.hub, ctx.keepalive_s
    sub = hub.subscribe(_parse_last_event_id(hub.epoch))
    fallback = None
    if not hub.live:
        fallback = {"seq": 0, "epoch": hub.epoch, "t": time.time(), "say": [], "frame": None, "report": current_state()}
        fallback["say"] = fallback["report"].get("say", [])

    def events():
        try:
            yield "retry: 1000\n\n"
            if fallback is not None:
                yield f"event: state\ndata: {json.dumps(fallback, default=str)}\n\n"
            while not sub.closed.is_set() or not sub.queue.empty():
                message = sub.get(timeout=keepalive)
                yield ": keep-alive\n\n" if message is None else _sse(message)
        finally:
            hub.unsubscribe(sub)

    return Response(stream_with_context(events()), mimetype="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@api.get("/frame.jpg")
def frame() -> Response:
    seq, jpeg = table_context().hub.frame()
    if jpeg is None:
        return _error("no camera frame yet", 404)
    return Response(jpeg, mimetype="image/jpeg", headers={"Cache-Control": "no-store", "X-Frame-Seq": str(seq)})


# -- history ----------------------------------------------------------------------------------
@api.get("/matches")
def matches() -> Response:
    return jsonify({"ok": True, "matches": _store().matches()})


@api.get("/matches/<match_id>")
def match(match_id: str) -> Response:
    try:
        info = _store().match(match_id)
    except StoreError as exc:
        return _error(str(exc), 404)
    info["standings"] = _store().standings(match_id)
    return jsonify({"ok": True, "match": info})


@api.get("/matches/<match_id>/rounds/<int:round_no>")
def round_detail(match_id: str, round_no: int) -> Response:
    store = _store()
    try:
        rounds = {r["round"]: r for r in store.rounds(match_id)}
    except StoreError as exc:
        return _error(str(exc), 404)
    if round_no not in rounds:
        return _error(f"match {match_id} has no round {round_no}", 404)
    return jsonify({"ok": True, "match": match_id, "round": rounds[round_no], "players": store.players(match_id),
                    "steps": round_steps(store, match_id, round_no)})


@api.get("/standings")
def standings() -> Response:
    return jsonify({"ok": True, "standings": _store().standings()})


@api.get("/export")
def export() -> Response:
    """The log as CONTRACT section 3 JSON lines (format=json) or CSV (format=csv)."""
    store = _store()
    match_id = request.args.get("match") or None
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "csv"):
        return _error("format must be json or csv", 400)
    try:
        rows = list(store.iter_events(match_id))
    except StoreError as exc:
        return _error(str(exc), 404)
    if fmt == "json":
        body = "".join(json.dumps(r.export(), ensure_ascii=False) + "\n" for r in rows)
        return Response(body, mimetype="application/x-ndjson")
    return Response(export_csv(rows), mimetype="text/csv")


CSV_COLUMNS = ("match", "round", "seq", "time", "event", "fields", "ok", "turn", "fouls", "say")


def export_csv(rows) -> str:
    """One CSV row per logged event: the event's fields and the referee's decision, for spreadsheets."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        fields = {k: v for k, v in r.event.items() if k != "event"}
        o = r.output or {}
        fouls = "; ".join(f"{f.get('player')}: {f.get('rule')}" for f in o.get("fouls") or [] if isinstance(f, dict))
        writer.writerow([r.match, r.round, r.seq, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(r.t)) + f".{int(r.t % 1 * 1000):03d}Z",
                         r.event.get("event"), json.dumps(fields, ensure_ascii=False), "" if not o else str(bool(o.get("ok"))).lower(),
                         o.get("turn") or "", fouls, " | ".join(o.get("say") or [])])
    return out.getvalue()


@api.get("/openapi.json")
def openapi() -> Response:
    from .openapi import openapi_document

    return jsonify(openapi_document())
