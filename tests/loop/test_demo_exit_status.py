"""`stacko demo` exits 0 when the match ended as asked, so a script can run a short demo."""

from __future__ import annotations

from referee.commands import demo_exit_status
from referee.loop.demo import DemoResult


def test_a_match_with_a_loser_ended_as_asked():
    assert demo_exit_status(DemoResult(winner="Ana", loser="Ben", turns=14, match="m"), max_turns=200) == 0


def test_a_demo_cut_at_its_max_turns_ended_as_asked():
    assert demo_exit_status(DemoResult(winner=None, loser=None, turns=6, match="m"), max_turns=6) == 0


def test_a_match_that_stopped_short_of_both_is_a_failure():
    assert demo_exit_status(DemoResult(winner=None, loser=None, turns=3, match="m"), max_turns=6) == 1
