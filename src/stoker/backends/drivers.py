"""The drivers a configuration needs beyond a plain install: PostgreSQL's (asyncpg) and
Redis's (redis-py), the ``stoker[cluster]`` extra (``pyproject.toml``).  One node on the
embedded SQLite stores needs neither, so nothing imports them until a backend asks.

Invariants: :func:`missing` is pure (what is installed is its argument) and says, in one
sentence, for each driver :func:`~stoker.backends.choice.choose`'s choice needs and is
missing, the setting that asked for it, then the one fix (install the extra);
:func:`require_drivers` raises that as a :class:`SettingsError` (``stoker serve``,
:func:`stoker.backends.open`, :func:`stoker.backends.open_database` call it before opening
anything; ``stoker check`` shows it as a failed check).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from stoker.backends.choice import Choice, choose
from stoker.config.settings import Settings, SettingsError

EXTRA: Final = "stoker[cluster]"
FIX: Final = f"pipx install '{EXTRA}' (or pip install '{EXTRA}')"
"""How a missing driver is installed (the extra carries both drivers)."""


@dataclass(frozen=True)
class Driver:
    """A driver: the module it is imported as, and its name for people."""

    module: str
    name: str


POSTGRES: Final = Driver("asyncpg", "the PostgreSQL driver (asyncpg)")
REDIS: Final = Driver("redis", "the Redis driver (redis-py)")


def needed(settings: Settings, choice: Choice) -> list[tuple[Driver, str]]:
    """Each driver ``choice`` needs with the setting that asked for it, as it is written
    (``database_url = "postgresql://…"``; never the URL's host or password).  The
    notifier and the fetch leases need no other (the settings' checks give a PostgreSQL
    notifier ``database_url``, a Redis one ``l2_url``, a Redis tier both).  Pure."""
    asked: list[tuple[Driver, str]] = []
    if choice.database == "postgres":
        asked.append((POSTGRES, _written("database_url", settings.database_url)))
    if choice.tier == "redis":
        asked.append((REDIS, _written("l2_url", settings.l2_url)))
    return asked


def missing(settings: Settings, choice: Choice,
            installed: Callable[[str], bool]) -> str | None:
    """One sentence naming each setting whose driver ``choice`` needs and is not
    ``installed`` (by its module's name), the driver, and the fix; ``None`` when none is
    missing.  Pure."""
    lacking = [f"{written} needs {driver.name}"
               for driver, written in needed(settings, choice) if not installed(driver.module)]
    return f"{' and '.join(lacking)}, not installed: {FIX}" if lacking else None


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (found, not imported)."""
    return importlib.util.find_spec(module) is not None


def require_drivers(settings: Settings) -> None:
    """Raise a :class:`SettingsError` naming the setting and the fix when the backends
    ``settings`` choose need a driver that is not installed."""
    found = missing(settings, choose(settings), installed)
    if found is not None:
        raise SettingsError(found)


def _written(name: str, url: str | None) -> str:
    scheme = (url or "").partition("://")[0]
    return f'{name} = "{scheme}://…"' if scheme else name
