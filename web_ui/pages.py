"""The HTML pages: the live table, the match history, and a logged round step by step."""

from __future__ import annotations

import time

from flask import Blueprint, abort, render_template

from .app import table_context
from .plots import evidence_facts, trace_svg
from .replay import round_steps
from .store import StoreError

pages = Blueprint("pages", __name__)


@pages.app_template_filter("when")
def when(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


@pages.get("/")
def table() -> str:
    return render_template("table.html", has_log=table_context().store is not None)


@pages.get("/history")
def history() -> str:
    store = table_context().store
    if store is None:
        return render_template("history.html", matches=[], standings=[], no_log=True)
    return render_template("history.html", matches=store.matches(), standings=store.standings(), no_log=False)


@pages.get("/history/<match_id>/<int:round_no>")
def round_page(match_id: str, round_no: int) -> str:
    store = table_context().store
    if store is None:
        abort(404)
    try:
        rounds = {r["round"]: r for r in store.rounds(match_id)}
    except StoreError:
        abort(404)
    if round_no not in rounds:
        abort(404)
    steps = round_steps(store, match_id, round_no)
    collapses = [{"seq": s["seq"], "svg": trace_svg(s["evidence"]), "facts": evidence_facts(s["evidence"])}
                 for s in steps if s["event"].get("event") == "collapse" and s["evidence"]]
    return render_template("round.html", match_id=match_id, round=rounds[round_no], steps=steps,
                           players=store.players(match_id), collapses=collapses,
                           rounds=sorted(rounds))
