"""Shared helpers for the status-page and match-log tests."""

from __future__ import annotations

import pytest

from web_ui.store import MatchStore


@pytest.fixture
def store(tmp_path):
    s = MatchStore(tmp_path / "log.sqlite")
    yield s
    s.close()


