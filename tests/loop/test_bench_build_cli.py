"""`stacko bench build` refuses settings it cannot play, in words, before any twin is built."""

from __future__ import annotations

import pytest

from referee.cli import main


@pytest.mark.parametrize("args, says", [
    (["--seeds", "x"], "--seeds is FIRST-LAST"),
    (["--levels", "16"], "--levels is 1 to 15"),
    (["--levels", "3", "--unseen", "5"], "--unseen levels must be among the levels laid"),
    (["--frames-per-level", "1"], "--frames-per-level must be 2 or more"),
    (["--levels", "5", "--load-cell-stops-at", "6"], "--load-cell-stops-at is a level laid"),
    (["--no-load-cell", "--load-cell-stops-at", "2"], "--load-cell-stops-at is a level laid (1 to --levels), with the load cell"),
])
def test_settings_it_cannot_play_are_refused_with_a_reason(args, says, capsys):
    assert main(["bench", "build", *args]) == 2
    assert says in capsys.readouterr().err
