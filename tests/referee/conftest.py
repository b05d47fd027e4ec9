import pytest

from referee_helpers import Table, setup


@pytest.fixture
def table():
    """A three-player table (Ana builds) on the six-level tower of referee_helpers.TOWER."""
    return Table(setup())
