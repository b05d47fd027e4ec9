"""The camera's outages: runs of frames the vision pipeline could not read, said to the right people.

An unreadable frame is normal (a hand over every marker for a moment) and goes to the console
once per reason, not once a frame: a camera set to mirror its picture fails ten times a second.
A run that lasts `blind_after_s` of frame time means the referee is blind, which the table must
know: it is announced once, with the reader's reason in words, and so is its end; meanwhile the
reason stands on the page (`RefereeSession.camera_problem`, the table state's "camera"). Used by the
match loop (`table_loop.TableLoop`) and by the build at a real table (`run._read_tower`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class CameraOutage:
    """A run of frames the camera could not read, from the first (`since`, frame time)."""

    since: float
    reason: str
    frames: int = 0
    told: bool = False  # announced to the table


class CameraWatch:
    def __init__(self, session: Any, blind_after_s: float | None = 5.0):
        self.session = session  # its note() is the console, its announce() the page and the speaker
        self.blind_after_s = blind_after_s
        self.outage: CameraOutage | None = None
        self.told = 0  # outages announced

    def unreadable(self, t: float, seq: int, reason: str) -> None:
        """A frame (taken at t) the reader could not read, and why in words."""
        out = self.outage
        if out is None:
            out = self.outage = CameraOutage(t, reason)
        if out.frames == 0 or reason != out.reason:
            self.session.note(f"camera frame {seq} unreadable: {reason}")
            out.reason = reason
        out.frames += 1
        if not out.told and self.blind_after_s is not None and t - out.since >= self.blind_after_s:
            out.told = True
            self.told += 1
            self.session.camera_problem = sentence(reason)  # on the page while it lasts
            self.session.announce([f"The camera cannot see the tower. {sentence(reason)}"])

    def readable(self, t: float) -> None:
        """A frame read: the end of an outage, announced if the table was told of one (by this
        watch, or by the build's before play began: the page's card goes either way)."""
        out, self.outage = self.outage, None
        if out is not None and out.frames > 1:
            self.session.note(f"camera reads again after {out.frames} unreadable frames ({t - out.since:.1f} s)")
        if getattr(self.session, "camera_problem", None):
            self.session.camera_problem = None
            self.session.announce(["The camera sees the tower again."])


def sentence(reason: str) -> str:
    """A reader's reason as a sentence to say ("cannot find the tray: ..." -> "Cannot find the tray: ...")."""
    reason = reason.strip()
    if not reason:
        return ""
    reason = reason[0].upper() + reason[1:]
    return reason if reason.endswith((".", "!", "?")) else reason + "."
