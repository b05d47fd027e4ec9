"""The Flask app factory: live table page, history pages and the JSON API.

Why a factory taking the hub, the store and the PIN: the match loop, `stacko serve`, the tests and
the benchmark each build their own app around their own hub and log, with no module-level state.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from flask import Flask, current_app, jsonify, request, session
from flask_wtf.csrf import CSRFError, CSRFProtect

from .hub import TableHub
from .security import DEFAULT_LIMITS, Limit, RateLimiter, check_pin, pin_fingerprint
from .store import MatchStore

PIN_HEADER = "X-Table-PIN"
NOT_TABLE = "only the table can do that: unlock with the PIN shown on the referee's console"


@dataclass
class TableContext:
    """What every request handler needs; kept on the app (app.extensions["stacko"])."""

    hub: TableHub
    store: MatchStore | None
    pin: str
    limiter: RateLimiter
    fingerprint: str
    max_viewers: int
    keepalive_s: float


def table_context() -> TableContext:
    return current_app.extensions["stacko"]


def is_table() -> bool:
    """True when this request comes from the table: an unlocked session, or the PIN in a header."""
    ctx = table_context()
    header = request.headers.get(PIN_HEADER)
    if header is not None:
        return check_pin(ctx.pin, header)
    return session.get("table") == ctx.fingerprint


def client_key() -> str:
    return request.remote_addr or "unknown"


def create_app(hub: TableHub | None = None, store: MatchStore | None = None, pin: str | None = None, *,
               secret_key: str | None = None, limits: dict[str, Limit] | None = None,
               max_viewers: int = 200, keepalive_s: float = 15.0, testing: bool = False) -> Flask:
    """Build the status page. `pin`: the table PIN (a random one when None; read it back from
    app.config["TABLE_PIN"] to show it on the console). `store` may be None (no history)."""
    from .security import new_pin

    app = Flask(__name__)
    secret = secret_key or secrets.token_hex(32)
    table_pin = pin or new_pin()
    app.config.update(
        SECRET_KEY=secret,
        TABLE_PIN=table_pin,
        TESTING=testing,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        WTF_CSRF_CHECK_DEFAULT=False,   # checked in before_request, so PIN-header API clients can skip it
        WTF_CSRF_TIME_LIMIT=None,       # a tablet keeps the page open for a whole evening
        WTF_CSRF_SSL_STRICT=False,      # the table's LAN is plain HTTP
        MAX_CONTENT_LENGTH=64 * 1024,
    )
    app.json.sort_keys = False  # keep the CONTRACT's field order
    csrf = CSRFProtect(app)
    app.extensions["stacko"] = TableContext(
        hub=hub or TableHub(), store=store, pin=table_pin,
        limiter=RateLimiter(DEFAULT_LIMITS if limits is None else limits),
        fingerprint=pin_fingerprint(secret, table_pin), max_viewers=max_viewers, keepalive_s=keepalive_s,
    )

    @app.before_request
    def guard() -> object:
        ctx = table_context()
        path = request.path
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            kind = "unlock" if path.endswith("/unlock") else "action"
        elif path.startswith("/api/") and path != "/api/stream":
            kind = "api"
        else:
            kind = ""
        if kind:
            allowed, wait = ctx.limiter.allow(client_key(), kind)
            if not allowed:
                response = jsonify({"ok": False, "error": "too many requests; wait a moment and try again"})
                response.status_code = 429
                response.headers["Retry-After"] = str(max(1, round(wait)))
                return response
        if request.method == "POST" and path == "/api/actions" and not is_table():
            response = jsonify({"ok": False, "error": NOT_TABLE})
            response.status_code = 403
            return response
        if request.method == "POST" and PIN_HEADER not in request.headers:
            csrf.protect()
        return None

    @app.errorhandler(CSRFError)
    def csrf_error(exc: CSRFError) -> object:
        return jsonify({"ok": False, "csrf": True,
                        "error": "this page's security token is missing or out of date; reload the page and try again"}), 400

    @app.errorhandler(404)
    def not_found(exc: Exception) -> object:
        if request.path.startswith("/api/"):
            return jsonify({"ok": False, "error": "no such thing here"}), 404
        return exc  # type: ignore[return-value]

    @app.errorhandler(413)
    def too_large(exc: Exception) -> object:
        return jsonify({"ok": False, "error": "that request is too large"}), 413

    from .api import api
    from .pages import pages

    app.register_blueprint(api)
    app.register_blueprint(pages)
    return app
