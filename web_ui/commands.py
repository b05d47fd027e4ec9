"""`stacko log ...`, `stacko serve` and `stacko bench web`."""

from __future__ import annotations

import argparse
import json
import os
import sys


def _add_log(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log", metavar="PATH", help="the match log (SQLite); default: $STACKO_LOG or the user's data directory")


def _open_store(args: argparse.Namespace, must_exist: bool = True):
    from pathlib import Path

    from .store import MatchStore, StoreError, default_log_path

    path = Path(args.log) if args.log else default_log_path()
    if must_exist and not path.exists():
        raise SystemExit(_fail(f"there is no match log at {path}"))
    try:
        return MatchStore(path)
    except StoreError as exc:
        raise SystemExit(_fail(str(exc))) from None


def _fail(message: str) -> int:
    print(f"stacko: {message}", file=sys.stderr)
    return 2


def register(groups) -> None:
    groups.group("log", "the match log: list, show, replay, export")
    p = groups.subcommand("log", "list", "list logged matches with their rounds", _log_list)
    _add_log(p)
    p.add_argument("--json", action="store_true", help="one JSON object per match")
    p = groups.subcommand("log", "show", "show the events of a match (default: the latest)", _log_show)
    _add_log(p)
    p.add_argument("--match", metavar="ID")
    p.add_argument("--round", type=int, metavar="N")
    p = groups.subcommand("log", "replay", "re-run the rules engine over logged rounds and report changed decisions", _log_replay)
    _add_log(p)
    p.add_argument("--match", metavar="ID", help="default: the latest match")
    p.add_argument("--round", type=int, metavar="N", help="default: every round of the match")
    p = groups.subcommand("log", "export", "export logged events (JSON lines as CONTRACT section 3, or CSV)", _log_export)
    _add_log(p)
    p.add_argument("--match", metavar="ID", help="default: every match")
    p.add_argument("--format", choices=("json", "csv"), default="json")

    p = groups.command("serve", "serve the status page, history and JSON API", _serve)
    _add_log(p)
    p.add_argument("--port", type=int, default=int(os.environ.get("STACKO_PORT", "8000")),
                   help="port (default: $STACKO_PORT or 8000, as the Pi service)")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default: all, so tablets can reach it)")
    p.add_argument("--pin", help="the table PIN (default: a random one, printed at start)")
    p.add_argument("--no-follow", action="store_true",
                   help="do not follow the log live (by default a referee writing the same log shows up live)")

    p = groups.subcommand("bench", "web", "N concurrent live-page viewers on loopback: publish-to-arrival delay", _bench_web)
    p.add_argument("--viewers", type=int, default=50)
    p.add_argument("--events", type=int, default=40)
    p.add_argument("--rate", type=float, default=10.0, help="events published per second")
    p.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")


def _log_list(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        for m in store.matches():
            if args.json:
                print(json.dumps(m, ensure_ascii=False))
                continue
            rounds = "; ".join(
                f"round {r['round']}: " + ((f"{r['winner'] or 'no winner'} won, {r['loser'] or 'nobody'} lost"
                                            + (f" ({r['reason']})" if r["reason"] else "")) if r["finished"] else "in play")
                + f", {r['events']} events" + (f" ({r['voided']} voided)" if r.get("voided") else "")
                for r in m["rounds"]) or "no rounds"
            print(f"{m['id']}  {', '.join(m['players'])}  {'' if m['finished'] else '[not finished] '}{rounds}")
    return 0


def _pick_match(store, match_id: str | None) -> str:
    from .store import StoreError

    match_id = match_id or store.latest_match_id()
    if match_id is None:
        raise SystemExit(_fail(f"the match log {store.path} holds no match"))
    try:
        store.match(match_id)
    except StoreError as exc:
        raise SystemExit(_fail(str(exc)))
    return match_id


def _log_show(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        match_id = _pick_match(store, args.match)
        info = store.match(match_id)
        print(f"match {match_id}: {', '.join(info['players'])}")
        for e in store.events(match_id, args.round, include_voided=True):
            fields = " ".join(f"{k}={json.dumps(v) if isinstance(v, (list, dict)) else v}"
                              for k, v in e.event.items() if k not in ("event", "tower"))
            out = e.output or {}
            decision = ("refused: " + str(out.get("error"))) if out and not out.get("ok") else " / ".join(out.get("say") or [])
            fouls = ", ".join(f"{f.get('player')} {f.get('rule')}" for f in out.get("fouls") or [])
            print(f"  r{e.round} #{e.seq:<3} {e.event.get('event'):<14} {fields}"
                  + (f"  -> {decision}" if decision else "") + (f"  [foul: {fouls}]" if fouls else "")
                  + ("  [evidence]" if e.evidence else "")
                  + (f"  [VOIDED: {e.void['reason'] or 'taken back'}]" if e.voided else ""))
    return 0


def _log_replay(args: argparse.Namespace) -> int:
    from .replay import EngineMissing, replay_round

    with _open_store(args) as store:
        match_id = _pick_match(store, args.match)
        rounds = [args.round] if args.round else [r["round"] for r in store.rounds(match_id)]
        changed = 0
        for round_no in rounds:
            try:
                report = replay_round(store, match_id, round_no)
            except EngineMissing as exc:
                return _fail(str(exc))
            for line in report:
                print(json.dumps(line, ensure_ascii=False))
            changed += len(report)
            n = len(store.events(match_id, round_no))
            voided = len(store.events(match_id, round_no, include_voided=True)) - n
            print(f"match {match_id} round {round_no}: {n} events" + (f" ({voided} voided, left out)" if voided else "") + ", "
                  + (f"{len(report)} decided differently now" if report else "every decision the same"), file=sys.stderr)
    return 1 if changed else 0


def _log_export(args: argparse.Namespace) -> int:
    from .api import export_csv
    from .store import StoreError

    with _open_store(args) as store:
        try:
            rows = store.iter_events(args.match)
            if args.format == "json":
                for r in rows:
                    sys.stdout.write(json.dumps(r.export(), ensure_ascii=False) + "\n")
            else:
                sys.stdout.write(export_csv(list(rows)))
        except StoreError as exc:
            return _fail(str(exc))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .app import create_app
    from .follow import LogFollower
    from .hub import TableHub
    from .server import serve_forever

    store = _open_store(args, must_exist=False)
    hub = TableHub()
    app = create_app(hub, store, args.pin)
    follower = None if args.no_follow else LogFollower(store, hub).start()
    print(f"Stacko Referee status page on http://{args.host}:{args.port}/  (log: {store.path})", flush=True)
    print(f"Table PIN: {app.config['TABLE_PIN']}", flush=True)
    try:
        serve_forever(app, args.host, args.port)
    finally:
        if follower is not None:
            follower.stop()
    return 0


def _bench_web(args: argparse.Namespace) -> int:
    from .bench import run_bench

    result = run_bench(viewers=args.viewers, events=args.events, rate=args.rate, timeout=args.timeout)
    print(json.dumps(result))
    return 0 if result.get("complete") else 1
