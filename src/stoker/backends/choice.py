"""The one place that decides which backend serves each port, from the settings.

- ``database`` (the job queue and the warmer's stores, the audit log, the purge bus, the
  cache version's record): PostgreSQL with ``database_url``, else SQLite in ``data_dir``
  (``stoker.db``; the bus in ``cache.db``; the version in ``cache-version.json``).
- ``tier`` (the persistent cache tier): Redis with ``l2_url``, else ``data_dir/cache.db``.
- ``leases`` (fetch leases, shared where the tier is): PostgreSQL with a Redis tier (the
  nodes sharing it), else ``cache.db`` (the processes of one machine).
- ``notifier``: the ``notifier`` setting; ``auto`` is Redis with ``l2_url``, else
  PostgreSQL with ``database_url``, else this process alone (``poll`` too).

:func:`choose` is pure; a setting it cannot use is a :class:`SettingsError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from stoker.config.settings import Settings, SettingsError

POSTGRES_SCHEMES: Final = ("postgresql", "postgres")
"""The schemes of a ``database_url`` (asyncpg's)."""


@dataclass(frozen=True)
class Choice:
    """Which backend serves each port (see the module docstring)."""

    database: Literal["sqlite", "postgres"]
    tier: Literal["sqlite", "redis"]
    notifier: Literal["local", "postgres", "redis"]

    @property
    def leases(self) -> Literal["sqlite", "postgres"]:
        """Where the fetch leases are: beside the shared tier's members."""
        return "postgres" if self.tier == "redis" else "sqlite"


def choose(settings: Settings) -> Choice:
    """The backends ``settings`` ask for (the settings' own checks already refused a
    notifier or a Redis tier without its server); a ``database_url`` that is not a
    PostgreSQL URL is refused naming the setting."""
    if settings.database_url:
        scheme, sep, _ = settings.database_url.partition("://")
        if scheme not in POSTGRES_SCHEMES:
            got = f"a {scheme}:// URL" if sep else "no URL scheme"
            raise SettingsError(f"database_url: expected postgresql://user@host/database, "
                                f"got {got}")
    return Choice(database="postgres" if settings.database_url else "sqlite",
                  tier="redis" if settings.l2_url else "sqlite",
                  notifier=_notifier(settings))


def _notifier(settings: Settings) -> Literal["local", "postgres", "redis"]:
    if settings.notifier == "redis" or (settings.notifier == "auto" and settings.l2_url):
        return "redis"
    if settings.notifier == "postgres" or (settings.notifier == "auto" and
                                           settings.database_url):
        return "postgres"
    return "local"
