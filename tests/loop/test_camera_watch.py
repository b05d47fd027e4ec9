"""The camera's outages as the table hears of them: once, with the reason, and their end."""

from __future__ import annotations

from types import SimpleNamespace

from referee.loop.camera_watch import CameraWatch, sentence
from referee.loop.session import RefereeSession


def _session():
    """A session whose speaker keeps what it was given to say (`.lines`)."""
    lines = []
    said = SimpleNamespace(lines=lines, say=lambda text, urgent=False: lines.append(text))
    return RefereeSession(speaker=said, clock=SimpleNamespace(now=lambda: 0.0)), said


def test_an_outage_the_build_told_of_ends_when_play_first_reads_a_frame():
    """The builder confirmed while the camera was blind: play's own watch saw no outage, but its
    first frame read takes the card off the page and says the camera sees again."""
    session, said = _session()
    build = CameraWatch(session)
    for k in range(60):
        build.unreadable(k / 10, k, "cannot find the tray: the picture is almost black")
    assert session.camera_problem == "Cannot find the tray: the picture is almost black."
    play = CameraWatch(session)
    play.readable(6.1)
    assert session.camera_problem is None
    assert said.lines == ["The camera cannot see the tower. Cannot find the tray: the picture is almost black.",
                          "The camera sees the tower again."]


def test_a_new_reason_is_said_on_the_console_but_the_table_hears_of_the_outage_once():
    session, said = _session()
    notes = []
    session.echo = notes.append
    watch = CameraWatch(session, blind_after_s=1.0)
    for k in range(30):
        watch.unreadable(k / 10, k, "no tray" if k < 15 else "the picture is mirrored")
    assert [n.split("unreadable: ")[1] for n in notes if "unreadable" in n] == ["no tray", "the picture is mirrored"]
    assert len(said.lines) == 1 and watch.told == 1


def test_a_reason_is_said_as_a_sentence():
    assert sentence("cannot find the tray: it is dark") == "Cannot find the tray: it is dark."
    assert sentence("Done.") == "Done." and sentence("  ") == ""
