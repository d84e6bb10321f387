"""Which drivers a configuration needs and the one sentence when they are missing."""

from __future__ import annotations

import pytest

from stoker.backends.choice import choose
from stoker.backends.drivers import FIX, installed, missing, needed
from stoker.config.settings import settings_from

DATABASE = "postgresql://stoker:pw@db.example/stoker"
L2 = "redis://cache.example:6379/0"


def test_sqlite_alone_needs_no_driver() -> None:
    settings = settings_from({})
    assert needed(settings, choose(settings)) == []
    assert missing(settings, choose(settings), lambda _: False) is None


@pytest.mark.parametrize(("values", "absent", "said"), [
    ({"database_url": DATABASE}, {"asyncpg"},
     'database_url = "postgresql://…" needs the PostgreSQL driver (asyncpg)'),
    ({"database_url": DATABASE, "l2_url": L2}, {"redis"},
     'l2_url = "redis://…" needs the Redis driver (redis-py)'),
    ({"database_url": DATABASE, "l2_url": L2}, {"asyncpg", "redis"},
     'database_url = "postgresql://…" needs the PostgreSQL driver (asyncpg) and '
     'l2_url = "redis://…" needs the Redis driver (redis-py)'),
])
def test_a_missing_driver_names_its_setting_and_the_extra(
        values: dict[str, str], absent: set[str], said: str) -> None:
    settings = settings_from(values)
    found = missing(settings, choose(settings), lambda module: module not in absent)
    assert found == f"{said}, not installed: {FIX}"
    assert "stoker[cluster]" in found
    assert "pw" not in found and "example" not in found  # never the URL's host or password


def test_installed_drivers_are_not_mentioned() -> None:
    settings = settings_from({"database_url": DATABASE, "l2_url": L2})
    assert missing(settings, choose(settings), lambda _: True) is None


def test_installed_finds_modules_without_importing_them() -> None:
    assert installed("sqlite3")
    assert not installed("stoker_no_such_driver")
