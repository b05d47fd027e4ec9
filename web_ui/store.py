"""The match log: every referee event of every round, kept in SQLite so nothing is lost.

Why SQLite in WAL mode with a commit per event: the referee may lose power or be killed at any
moment (a Pi under a table), and a dispute about a collapse is settled from the log. Each append
is its own transaction, so whatever the referee had decided before it died is on disk.
The events table is append-only (triggers refuse UPDATE and DELETE).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

APP_NAME = "stacko-referee"
LOG_FILE_NAME = "matches.sqlite"
LOG_ENV = "STACKO_LOG"


class StoreError(Exception):
    """A match-log problem; the message is for the people at the table."""


def default_log_path() -> Path:
    """$STACKO_LOG, else matches.sqlite in the user's data directory (platformdirs)."""
    env = os.environ.get(LOG_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME)) / LOG_FILE_NAME


# Each migration moves the schema from version i to i + 1; PRAGMA user_version holds the version.
MIGRATIONS: tuple[str, ...] = (
    # 1: matches, players, rounds and append-only events.
    """
    CREATE TABLE players (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
    );
    CREATE TABLE matches (
        id TEXT PRIMARY KEY,
        created REAL NOT NULL,
        options TEXT NOT NULL DEFAULT '{}',
        finished REAL
    );
    CREATE TABLE match_players (
        match_id TEXT NOT NULL REFERENCES matches(id),
        seat INTEGER NOT NULL,
        player_id INTEGER NOT NULL REFERENCES players(id),
        PRIMARY KEY (match_id, seat)
    );
    CREATE TABLE rounds (
        match_id TEXT NOT NULL REFERENCES matches(id),
        round_no INTEGER NOT NULL,
        started REAL NOT NULL,
        finished REAL,
        winner TEXT,
        loser TEXT,
        PRIMARY KEY (match_id, round_no)
    );
    CREATE TABLE events (
        match_id TEXT NOT NULL,
        round_no INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        t REAL NOT NULL,
        event TEXT NOT NULL,
        evidence TEXT,
        PRIMARY KEY (match_id, round_no, seq),
        FOREIGN KEY (match_id, round_no) REFERENCES rounds(match_id, round_no)
    );
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'the match log is append-only'); END;
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'the match log is append-only'); END;
    """,
    # 2: keep the referee's decision with each event (so `log replay` can compare) and why a round ended.
    """
    ALTER TABLE events ADD COLUMN output TEXT;
    ALTER TABLE rounds ADD COLUMN reason TEXT;
    CREATE INDEX rounds_by_finish ON rounds(finished);
    """,
    # 3: corrections without losing anything. A void takes a logged event back (the event row stays;
    # the void says when and why); the table's answers to the referee's questions are kept as asked.
    """
    CREATE TABLE voids (
        match_id TEXT NOT NULL,
        round_no INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        t REAL NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        detail TEXT,
        PRIMARY KEY (match_id, round_no, seq),
        FOREIGN KEY (match_id, round_no, seq) REFERENCES events(match_id, round_no, seq)
    );
    CREATE TRIGGER voids_no_update BEFORE UPDATE ON voids
        BEGIN SELECT RAISE(ABORT, 'the match log is append-only'); END;
    CREATE TRIGGER voids_no_delete BEFORE DELETE ON voids
        BEGIN SELECT RAISE(ABORT, 'the match log is append-only'); END;
    CREATE TABLE answers (
        id INTEGER PRIMARY KEY,
        match_id TEXT,
        round_no INTEGER,
        t REAL NOT NULL,
        question TEXT NOT NULL,
        option TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        events TEXT
    );
    CREATE TRIGGER answers_no_update BEFORE UPDATE ON answers
        BEGIN SELECT RAISE(ABORT, 'the match log is append-only'); END;
    CREATE TRIGGER answers_no_delete BEFORE DELETE ON answers
        BEGIN SELECT RAISE(ABORT, 'the match log is append-only'); END;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class LoggedEvent:
    """One row of the log: the CONTRACT section 1 event and what the referee decided about it."""

    match: str
    round: int
    seq: int
    t: float
    event: dict
    evidence: dict | None
    output: dict | None
    void: dict | None = None  # {"t", "reason", "source", "detail"} when the referee took it back

    @property
    def voided(self) -> bool:
        return self.void is not None

    def export(self) -> dict:
        """The CONTRACT section 3 export line."""
        return {"match": self.match, "round": self.round, "seq": self.seq, "event": self.event}


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"the {what} cannot be written to the match log: {exc}") from None


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def new_match_id(now: float | None = None) -> str:
    """A sortable, readable id: date-time plus a random suffix (two tables never collide)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(2)}"


class MatchStore:
    """The match log. Safe to share between the match loop and the web server's threads."""

    def __init__(self, path: str | Path | None = None, *, synchronous: str = "FULL"):
        self.path = Path(path) if path is not None else default_log_path()
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise StoreError(f"unknown SQLite synchronous mode {synchronous!r}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=10)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the match log {self.path}: {exc}") from None
        self._lock = threading.RLock()
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"{self.path} is not a readable match log: {exc}") from None

    # -- schema ---------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        with self._lock:
            version = self.schema_version
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the match log {self.path} was written by a newer referee (schema {version}, "
                    f"this one knows up to {SCHEMA_VERSION}); update the referee"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                # executescript runs the whole migration, version bump included, as one transaction.
                try:
                    self._db.executescript(
                        "BEGIN IMMEDIATE;\n" + MIGRATIONS[target - 1] + f"\nPRAGMA user_version={target};\nCOMMIT;")
                except sqlite3.Error:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "MatchStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, sql_params: Sequence[tuple[str, tuple]]) -> None:
        """Run statements as one committed transaction."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for sql, params in sql_params:
                    self._db.execute(sql, params)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"could not write to the match log {self.path}: {exc}") from None

    # -- writing --------------------------------------------------------------------------
    def new_match(self, players: Sequence[str], options: dict | None = None, *, match_id: str | None = None,
                  t: float | None = None) -> str:
        """Start a match with players in seat order (clockwise, first builds); returns its id."""
        names = [str(p).strip() for p in players]
        if not 2 <= len(names) <= 10:
            raise StoreError(f"a match needs 2 to 10 players, not {len(names)}")
        if any(not n for n in names) or len(set(names)) != len(names):
            raise StoreError("every player needs a name, and no two players the same name")
        match_id = match_id or new_match_id(t)
        now = time.time() if t is None else t
        with self._lock:
            self._write(
                [("INSERT INTO matches(id, created, options) VALUES (?, ?, ?)", (match_id, now, _dumps(options or {}, "options")))]
                + [("INSERT OR IGNORE INTO players(name) VALUES (?)", (n,)) for n in names]
                + [
                    ("INSERT INTO match_players(match_id, seat, player_id) SELECT ?, ?, id FROM players WHERE name = ?", (match_id, seat, n))
                    for seat, n in enumerate(names)
                ]
            )
        return match_id

    def new_round(self, match_id: str, t: float | None = None) -> int:
        """Open the next round of a match; returns its number (1 for the first)."""
        with self._lock:
            self._require_match(match_id)
            row = self._db.execute("SELECT COALESCE(MAX(round_no), 0) FROM rounds WHERE match_id = ?", (match_id,)).fetchone()
            round_no = int(row[0]) + 1
            self._write([("INSERT INTO rounds(match_id, round_no, started) VALUES (?, ?, ?)",
                          (match_id, round_no, time.time() if t is None else t))])
        return round_no

    def append(self, match_id: str, round_no: int, event: dict, evidence: dict | None = None,
               t: float | None = None, output: dict | None = None) -> int:
        """Log one referee event (CONTRACT section 1 object), committed before returning its seq.

        `evidence`: what made the referee see it (sensor traces of a collapse, readings);
        `output`: the referee's decision (section 1 output) so replays can be compared.
        """
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            raise StoreError('an event must be an object with an "event" name, like {"event": "pull", ...}')
        if evidence is not None and not isinstance(evidence, dict):
            raise StoreError("evidence must be an object (or nothing)")
        event_text = _dumps(event, "event")
        evidence_text = None if evidence is None else _dumps(evidence, "evidence")
        output_text = None if output is None else _dumps(output, "referee output")
        with self._lock:
            row = self._db.execute("SELECT finished FROM rounds WHERE match_id = ? AND round_no = ?", (match_id, round_no)).fetchone()
            if row is None:
                raise StoreError(f"match {match_id} has no round {round_no}")
            seq = int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE match_id = ? AND round_no = ?",
                                       (match_id, round_no)).fetchone()[0]) + 1
            self._write([(
                "INSERT INTO events(match_id, round_no, seq, t, event, evidence, output) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (match_id, round_no, seq, time.time() if t is None else t, event_text, evidence_text, output_text),
            )])
        return seq

    def finish_round(self, match_id: str, round_no: int, winner: str | None, loser: str | None,
                     reason: str = "", t: float | None = None) -> None:
        """Record how a round ended (winner/loser may be None: no winner, nobody lost)."""
        with self._lock:
            self._write([(
                "UPDATE rounds SET finished = ?, winner = ?, loser = ?, reason = ? WHERE match_id = ? AND round_no = ?",
                (time.time() if t is None else t, winner, loser, reason, match_id, round_no),
            )])

    def finish_match(self, match_id: str, t: float | None = None) -> None:
        with self._lock:
            self._require_match(match_id)
            self._write([("UPDATE matches SET finished = ? WHERE id = ?", (time.time() if t is None else t, match_id))])

    def void(self, match_id: str, round_no: int, seq: int, reason: str = "", source: str = "",
             detail: dict | None = None, *, reopen_round: bool = False, t: float | None = None) -> None:
        """Take a logged event back: the event row stays, a void row says when and why.

        `reopen_round`: the voided event had ended the round, so the round is open again (its
        former result is kept in the void's `detail`)."""
        detail_text = None if detail is None else _dumps(detail, "void detail")
        with self._lock:
            row = self._db.execute(
                "SELECT (SELECT 1 FROM voids v WHERE v.match_id = e.match_id AND v.round_no = e.round_no AND v.seq = e.seq) "
                "FROM events e WHERE e.match_id = ? AND e.round_no = ? AND e.seq = ?", (match_id, round_no, seq)).fetchone()
            if row is None:
                raise StoreError(f"match {match_id} round {round_no} has no event {seq} to take back")
            if row[0]:
                raise StoreError(f"event {seq} of round {round_no} was already taken back")
            statements = [("INSERT INTO voids(match_id, round_no, seq, t, reason, source, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (match_id, round_no, seq, time.time() if t is None else t, reason, source, detail_text))]
            if reopen_round:
                statements.append(("UPDATE rounds SET finished = NULL, winner = NULL, loser = NULL, reason = NULL "
                                   "WHERE match_id = ? AND round_no = ?", (match_id, round_no)))
            self._write(statements)

    def voids_after(self, rowid: int) -> list[tuple[int, str, int, int]]:
        """Voids written after `rowid` (a cursor, as `events_after`): (rowid, match, round, seq)."""
        with self._lock:
            rows = self._db.execute("SELECT rowid, match_id, round_no, seq FROM voids WHERE rowid > ? ORDER BY rowid",
                                    (rowid,)).fetchall()
        return [(int(r[0]), r[1], int(r[2]), int(r[3])) for r in rows]

    def last_void_rowid(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM voids").fetchone()[0])

    def record_answer(self, match_id: str | None, round_no: int | None, question: dict, option: str,
                      source: str = "", events: list[dict] | None = None, t: float | None = None) -> int:
        """Keep the table's answer to a referee question (and the events it led to); returns its id."""
        with self._lock:
            self._write([("INSERT INTO answers(match_id, round_no, t, question, option, source, events) VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (match_id, round_no, time.time() if t is None else t, _dumps(question, "question"), str(option),
                           source, None if events is None else _dumps(events, "answer's events")))])
            return int(self._db.execute("SELECT MAX(id) FROM answers").fetchone()[0])

    def answers(self, match_id: str | None = None) -> list[dict]:
        """The logged answers, oldest first: {"id", "match", "round", "t", "question", "option", "source", "events"}."""
        sql = "SELECT id, match_id, round_no, t, question, option, source, events FROM answers"
        params: tuple = ()
        if match_id is not None:
            sql, params = sql + " WHERE match_id = ?", (match_id,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", params).fetchall()
        return [{"id": r[0], "match": r[1], "round": r[2], "t": r[3], "question": _loads(r[4]), "option": r[5],
                 "source": r[6], "events": _loads(r[7])} for r in rows]

    # -- reading --------------------------------------------------------------------------
    def _require_match(self, match_id: str) -> None:
        if self._db.execute("SELECT 1 FROM matches WHERE id = ?", (match_id,)).fetchone() is None:
            raise StoreError(f"no match {match_id!r} in the match log {self.path}")

    def players(self, match_id: str) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT p.name FROM match_players mp JOIN players p ON p.id = mp.player_id WHERE mp.match_id = ? ORDER BY mp.seat",
                (match_id,)).fetchall()
        return [r[0] for r in rows]

    def rounds(self, match_id: str) -> list[dict]:
        with self._lock:
            self._require_match(match_id)
            rows = self._db.execute(
                "SELECT r.round_no, r.started, r.finished, r.winner, r.loser, r.reason, "
                "(SELECT COUNT(*) FROM events e WHERE e.match_id = r.match_id AND e.round_no = r.round_no), "
                "(SELECT COUNT(*) FROM voids v WHERE v.match_id = r.match_id AND v.round_no = r.round_no) "
                "FROM rounds r WHERE r.match_id = ? ORDER BY r.round_no", (match_id,)).fetchall()
        # "events": those that stand (voided ones are counted apart)
        return [{"round": r[0], "started": r[1], "finished": r[2], "winner": r[3], "loser": r[4],
                 "reason": r[5] or "", "events": r[6] - r[7], "voided": r[7]} for r in rows]

    def match(self, match_id: str) -> dict:
        with self._lock:
            self._require_match(match_id)
            created, options, finished = self._db.execute(
                "SELECT created, options, finished FROM matches WHERE id = ?", (match_id,)).fetchone()
            return {"id": match_id, "created": created, "finished": finished, "options": _loads(options),
                    "players": self.players(match_id), "rounds": self.rounds(match_id)}

    def matches(self) -> list[dict]:
        """All matches, newest first, each with players and round results."""
        with self._lock:
            ids = [r[0] for r in self._db.execute("SELECT id FROM matches ORDER BY created DESC, id DESC").fetchall()]
            return [self.match(i) for i in ids]

    def latest_match_id(self) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT id FROM matches ORDER BY created DESC, id DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def events(self, match_id: str, round_no: int | None = None, *, include_voided: bool = False) -> list[LoggedEvent]:
        """Logged events, oldest first (by round, then seq). Voided events (taken back by an undo)
        are left out unless `include_voided`: then they come with `void` set."""
        return list(self.iter_events(match_id, round_no, include_voided=include_voided))

    def iter_events(self, match_id: str | None = None, round_no: int | None = None, *,
                    include_voided: bool = False) -> Iterator[LoggedEvent]:
        sql = ("SELECT e.match_id, e.round_no, e.seq, e.t, e.event, e.evidence, e.output, v.t, v.reason, v.source, v.detail "
               "FROM events e LEFT JOIN voids v ON v.match_id = e.match_id AND v.round_no = e.round_no AND v.seq = e.seq")
        where, params = [], []
        if match_id is not None:
            where.append("e.match_id = ?")
            params.append(match_id)
        if round_no is not None:
            where.append("e.round_no = ?")
            params.append(round_no)
        if not include_voided:
            where.append("v.seq IS NULL")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY (SELECT created FROM matches m WHERE m.id = e.match_id), e.match_id, e.round_no, e.seq"
        with self._lock:
            if match_id is not None:
                self._require_match(match_id)
            rows = self._db.execute(sql, params).fetchall()
        for m, r, s, t, ev, evid, out, vt, vreason, vsource, vdetail in rows:
            void = None if vt is None else {"t": vt, "reason": vreason, "source": vsource, "detail": _loads(vdetail)}
            yield LoggedEvent(m, r, s, t, json.loads(ev), _loads(evid), _loads(out), void)

    def events_after(self, rowid: int, limit: int = 1000) -> list[tuple[int, LoggedEvent]]:
        """Events appended after `rowid` (0: from the start), oldest first, with their rowids.

        Rows are only ever appended, so the rowid is a cursor another process can follow."""
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, match_id, round_no, seq, t, event, evidence, output FROM events WHERE rowid > ? "
                "ORDER BY rowid LIMIT ?", (rowid, limit)).fetchall()
        return [(r[0], LoggedEvent(r[1], r[2], r[3], r[4], json.loads(r[5]), _loads(r[6]), _loads(r[7]))) for r in rows]

    def last_rowid(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM events").fetchone()[0])

    def latest_round_start_rowid(self) -> int:
        """The cursor just before the newest round's first event (to show that round from its start)."""
        with self._lock:
            row = self._db.execute("SELECT match_id, round_no FROM events ORDER BY rowid DESC LIMIT 1").fetchone()
            if row is None:
                return 0
            first = self._db.execute("SELECT MIN(rowid) FROM events WHERE match_id = ? AND round_no = ?", row).fetchone()
        return int(first[0]) - 1

    def unfinished_match(self) -> dict | None:
        """The newest match not marked finished, with its open round and that round's events (to resume)."""
        with self._lock:
            row = self._db.execute("SELECT id FROM matches WHERE finished IS NULL ORDER BY created DESC, id DESC LIMIT 1").fetchone()
            if row is None:
                return None
            info = self.match(row[0])
            open_rounds = [r["round"] for r in info["rounds"] if r["finished"] is None]
            info["open_round"] = open_rounds[-1] if open_rounds else None
            info["events"] = [e.event for e in self.events(row[0], info["open_round"])] if open_rounds else []
            return info

    def standings(self, match_id: str | None = None) -> list[dict]:
        """Per player: matches played, rounds won and lost, fouls (from the logged decisions)."""
        with self._lock:
            params: tuple = ()
            match_filter = ""
            if match_id is not None:
                self._require_match(match_id)
                match_filter, params = " WHERE mp.match_id = ?", (match_id,)
            names = [r[0] for r in self._db.execute(
                "SELECT DISTINCT p.name FROM match_players mp JOIN players p ON p.id = mp.player_id" + match_filter
                + " ORDER BY p.name", params).fetchall()]
            table = {n: {"player": n, "matches": 0, "rounds": 0, "wins": 0, "losses": 0, "fouls": 0} for n in names}
            for (name, count) in self._db.execute(
                    "SELECT p.name, COUNT(DISTINCT mp.match_id) FROM match_players mp JOIN players p ON p.id = mp.player_id"
                    + match_filter + " GROUP BY p.name", params).fetchall():
                table[name]["matches"] = count
            round_sql = "SELECT r.match_id, r.winner, r.loser FROM rounds r" + (" WHERE r.match_id = ?" if match_id else "")
            for m, winner, loser in self._db.execute(round_sql, params).fetchall():
                for n in self.players(m):
                    if n in table:
                        table[n]["rounds"] += 1
                if winner in table:
                    table[winner]["wins"] += 1
                if loser in table:
                    table[loser]["losses"] += 1
            out_sql = ("SELECT e.output FROM events e WHERE e.output IS NOT NULL AND NOT EXISTS (SELECT 1 FROM voids v "
                       "WHERE v.match_id = e.match_id AND v.round_no = e.round_no AND v.seq = e.seq)"
                       + (" AND e.match_id = ?" if match_id else ""))
            for (out,) in self._db.execute(out_sql, params).fetchall():
                for foul in (json.loads(out).get("fouls") or []):
                    who = foul.get("player") if isinstance(foul, dict) else None
                    if who in table:
                        table[who]["fouls"] += 1
        return sorted(table.values(), key=lambda s: (-s["wins"], s["losses"], s["player"]))
