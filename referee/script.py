"""`stacko referee script`: replay a recorded match line by line, exactly as the live referee would.

One JSON line out per event line in (CONTRACT.md section 1); a bad line answers `ok: false` with a
message for players, leaves the state as it was, and the replay goes on.
"""

from __future__ import annotations

import json
from typing import IO, Any, Iterable, Iterator

from referee.events import IllegalEvent, parse_event
from referee.match import Match


def error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


class ScriptRunner:
    """Feeds events to a match and answers each with the referee's decision; never raises."""

    def __init__(self) -> None:
        self.match = Match()

    def feed(self, data: object) -> dict[str, Any]:
        try:
            event = parse_event(data)
            self.match = self.match.apply(event)
        except IllegalEvent as exc:
            return error(str(exc))
        return self.match.current.report()

    def feed_line(self, line: str) -> dict[str, Any] | None:
        """One input line; None for blank lines and `#` comments (which print nothing)."""
        text = line.strip()
        if not text or text.startswith("#"):
            return None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return error(f"this line is not valid JSON ({exc.msg} at character {exc.pos + 1})")
        return self.feed(data)


def run_lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    runner = ScriptRunner()
    for line in lines:
        out = runner.feed_line(line)
        if out is not None:
            yield out


def run_stream(stream: IO[str], out: IO[str]) -> None:
    for result in run_lines(stream):
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
        out.flush()
