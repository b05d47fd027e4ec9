"""The OpenAPI 3.1 description of the JSON API, served at /api/openapi.json."""

from __future__ import annotations

ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict, description: str = "OK") -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict:
    words = {400: "invalid request", 403: "needs the table PIN", 404: "not found", 429: "rate limited", 503: "too many viewers"}
    return {str(c): _json(ERROR, words[c]) for c in codes}


def openapi_document() -> dict:
    state = {"$ref": "#/components/schemas/TableState"}
    match_id = {"name": "match_id", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Stacko Referee", "version": "1",
                 "description": "The live table, the page's requests to the referee, and the match history. "
                                "Requests that change a game need the table: a session unlocked with POST /api/unlock "
                                "(and the X-CSRFToken header from GET /api/session), or the X-Table-PIN header."},
        "paths": {
            "/api/state": {"get": {"summary": "Current table state, exactly the CONTRACT section 1 output keys (ok: true)",
                                   "responses": {"200": _json(state)}}},
            "/api/table": {"get": {"summary": "Current table state with tower, hand, players, match and round",
                                   "responses": {"200": _json(state)}}},
            "/api/stream": {"get": {
                "summary": "Server-sent events: a `state` event per published table state",
                "description": "Event data: {seq, epoch, t, report: TableState, say: [..], frame: seq of the last camera "
                               "frame or null}. Reconnect with Last-Event-ID (or ?since=EPOCH-SEQ) to catch up.",
                "responses": {"200": {"description": "text/event-stream", "content": {"text/event-stream": {}}},
                              **_errors(503)}}},
            "/api/frame.jpg": {"get": {"summary": "The last camera frame, detections drawn",
                                       "responses": {"200": {"description": "JPEG", "content": {"image/jpeg": {}}},
                                                     **_errors(404)}}},
            "/api/session": {"get": {"summary": "Whether this browser controls the table; its CSRF token",
                                     "responses": {"200": _json({"type": "object", "properties": {
                                         "table": {"type": "boolean"}, "csrf_token": {"type": "string"}}})}}},
            "/api/unlock": {"post": {"summary": "Unlock control with the table PIN (rate limited)",
                                     "requestBody": {"content": {"application/json": {"schema": {
                                         "type": "object", "required": ["pin"], "properties": {"pin": {"type": "string"}}}}}},
                                     "responses": {"200": _json({"type": "object"}), **_errors(400, 403, 429)}}},
            "/api/lock": {"post": {"summary": "Give up control in this browser", "responses": {"200": _json({"type": "object"})}}},
            "/api/actions": {"post": {"summary": "Ask the referee: a color, 'Uno!', 'no match', the players, an answer to its question, undo, or an event by hand",
                                      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Action"}}}},
                                      "responses": {"202": _json({"type": "object"}, "queued for the referee"),
                                                    **_errors(400, 403, 429)}}},
            "/api/matches": {"get": {"summary": "All logged matches, newest first",
                                     "responses": {"200": _json({"type": "object", "properties": {
                                         "matches": {"type": "array", "items": {"$ref": "#/components/schemas/Match"}}}})}}},
            "/api/matches/{match_id}": {"get": {"summary": "One match with its rounds and standings",
                                                "parameters": [match_id],
                                                "responses": {"200": _json({"type": "object"}), **_errors(404)}}},
            "/api/matches/{match_id}/rounds/{round}": {"get": {
                "summary": "A logged round step by step: each event, the decision, the tower after it, evidence",
                "parameters": [match_id, {"name": "round", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "responses": {"200": _json({"type": "object"}), **_errors(404)}}},
            "/api/standings": {"get": {"summary": "Per player: matches, rounds, wins, losses, fouls",
                                       "responses": {"200": _json({"type": "object", "properties": {"standings": {
                                           "type": "array", "items": {"$ref": "#/components/schemas/Standing"}}}})}}},
            "/api/export": {"get": {
                "summary": "The log: JSON lines {match, round, seq, event} (CONTRACT section 3) or CSV",
                "parameters": [{"name": "match", "in": "query", "schema": {"type": "string"}},
                               {"name": "format", "in": "query", "schema": {"enum": ["json", "csv"], "default": "json"}}],
                "responses": {"200": {"description": "export", "content": {"application/x-ndjson": {}, "text/csv": {}}},
                              **_errors(400, 404)}}},
            "/api/openapi.json": {"get": {"summary": "This document", "responses": {"200": _json({"type": "object"})}}},
        },
        "components": {"schemas": {
            "Error": {"type": "object", "properties": {"ok": {"const": False}, "error": {"type": "string"}}},
            "Call": {"type": "object", "properties": {
                "count": {"type": "integer"}, "colors": {"type": "array", "items": {"type": "string"}},
                "numbers": {"type": "array", "items": {"type": "integer"}}, "numbers_only": {"type": "boolean"},
                "free": {"type": "boolean"}}},
            "TableState": {"type": "object", "required": ["ok", "turn", "direction", "call", "waiting_for", "fouls", "over"],
                           "properties": {
                "ok": {"type": "boolean"}, "turn": {"type": ["string", "null"]},
                "direction": {"enum": ["clockwise", "counterclockwise"]}, "call": {"$ref": "#/components/schemas/Call"},
                "waiting_for": {"enum": [None, "wild_color", "penalty_color"]},
                "fouls": {"type": "array", "items": {"type": "object", "properties": {
                    "player": {"type": "string"}, "rule": {"type": "string"}}}},
                "over": {"type": "boolean"}, "winner": {"type": ["string", "null"]}, "loser": {"type": ["string", "null"]},
                "say": {"type": "array", "items": {"type": "string"}},
                "tower": {"type": "array", "description": "levels bottom first, each 3 block names or null",
                          "items": {"type": "array", "items": {"type": ["string", "null"]}}},
                "hand": {"description": "the block in hand (name) or null"},
                "players": {"type": "array", "items": {"type": "string"}, "description": "seat order"},
                "match": {"type": "string"}, "round": {"type": "integer"},
                "question": {"description": "the referee's open question or null",
                             "oneOf": [{"type": "null"}, {"type": "object", "required": ["id", "text", "options", "labels"], "properties": {
                                 "id": {"type": "string"}, "text": {"type": "string"},
                                 "options": {"type": "array", "items": {"type": "string"}},
                                 "labels": {"type": "array", "items": {"type": "string"}}}}]},
                "legal_pulls": {"type": "array", "description": "pulls the player to act may make without a foul",
                                "items": {"type": "object", "properties": {"level": {"type": "integer"}, "slot": {"type": "integer"},
                                                                           "block": {"type": "string"}}}},
                "place_options": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                "can_undo": {"type": "boolean"}}},
            "Action": {"oneOf": [
                {"type": "object", "required": ["action", "color"], "properties": {
                    "action": {"enum": ["wild_color", "penalty_color"]},
                    "color": {"enum": ["red", "yellow", "green", "blue"]}, "player": {"type": "string"}}},
                {"type": "object", "required": ["action", "caller", "offender"], "properties": {
                    "action": {"const": "uno"}, "caller": {"type": "string"}, "offender": {"type": "string"}}},
                {"type": "object", "required": ["action", "player"], "properties": {
                    "action": {"const": "claim_no_match"}, "player": {"type": "string"}}},
                {"type": "object", "required": ["action", "players"], "properties": {
                    "action": {"const": "players"},
                    "players": {"type": "array", "minItems": 2, "maxItems": 10, "items": {"type": "string"}}}},
                {"type": "object", "required": ["action", "question", "option"], "description":
                    "an answer to the referee's open question (report key 'question'); a stale or repeated one is refused", "properties": {
                    "action": {"const": "answer"}, "question": {"type": "string"}, "option": {"type": "string"}}},
                {"type": "object", "required": ["action"], "description": "take back the last accepted event of the round",
                 "properties": {"action": {"const": "undo"}}},
                {"type": "object", "required": ["action", "event"], "description": "a referee event entered by hand "
                    "(CONTRACT section 1, not setup); the engine decides", "properties": {
                    "action": {"const": "event"}, "event": {"type": "object", "required": ["event"]}}},
            ]},
            "Match": {"type": "object", "properties": {
                "id": {"type": "string"}, "created": {"type": "number"}, "finished": {"type": ["number", "null"]},
                "options": {"type": "object"}, "players": {"type": "array", "items": {"type": "string"}},
                "rounds": {"type": "array", "items": {"type": "object", "properties": {
                    "round": {"type": "integer"}, "winner": {"type": ["string", "null"]},
                    "loser": {"type": ["string", "null"]}, "reason": {"type": "string"}, "events": {"type": "integer"},
                    "voided": {"type": "integer"}}}}}},
            "Standing": {"type": "object", "properties": {
                "player": {"type": "string"}, "matches": {"type": "integer"}, "rounds": {"type": "integer"},
                "wins": {"type": "integer"}, "losses": {"type": "integer"}, "fouls": {"type": "integer"}}},
        }},
    }
