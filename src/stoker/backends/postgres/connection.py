"""PostgreSQL pools and numbered migrations (files read by ``stoker.backends.migrations``).

:data:`MIGRATIONS` is the one package of every component's migrations; :func:`migrate`
applies those of one component not yet in ``schema_migrations``, in version order.

Invariants:
- Each migration runs in one transaction together with its ledger row, so a
  crash never leaves one half-applied or applied-but-unrecorded.
- Each migration transaction first takes ``pg_advisory_xact_lock`` on a key
  derived from the component, so nodes starting at once apply it exactly once
  (the later one waits, then sees the ledger row and skips).
- ``schema`` (optional) becomes the connections' ``search_path``: tests and
  benchmarks isolate themselves in a schema of their own.
- asyncpg is imported by :func:`create_pool` alone: :func:`describe` and
  :func:`lock_key` work without the driver (``stoker check`` names stores with them).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stoker.backends.migrations import Migration, migration_files

if TYPE_CHECKING:
    import asyncpg

MIGRATIONS = "stoker.backends.postgres.migrations"
"""The package holding every component's migrations."""

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    component TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (component, version)
)
"""
_LOCK = "SELECT pg_advisory_xact_lock($1)"
_DONE = "SELECT 1 FROM schema_migrations WHERE component = $1 AND version = $2"
_RECORD = "INSERT INTO schema_migrations (component, version, name) VALUES ($1, $2, $3)"
_LOCK_NAMESPACE = 0x5370_6B72  # "Stkr": keeps our keys apart from other advisory-lock users


def lock_key(component: str) -> int:
    """A stable 64-bit advisory lock key for migrating ``component``."""
    return (_LOCK_NAMESPACE << 32) | zlib.crc32(component.encode("utf-8"))


def server_settings(schema: str | None) -> dict[str, str]:
    """Connection settings: the search path when a schema is given."""
    return {"search_path": schema} if schema else {}


async def create_pool(
    url: str, *, schema: str | None = None, min_size: int = 1, max_size: int = 10,
    **options: Any,
) -> asyncpg.Pool:
    """A pool on ``url``; fails with a sentence naming the URL's host when unreachable."""
    import asyncpg

    try:
        return await asyncpg.create_pool(
            url, min_size=min_size, max_size=max_size,
            server_settings=server_settings(schema), **options,
        )
    except (OSError, asyncpg.PostgresError) as exc:
        raise ConnectionError(f"cannot connect to PostgreSQL ({describe(url)}): {exc}") from exc


async def migrate(pool: asyncpg.Pool, component: str) -> list[str]:
    """Apply pending migrations of ``component``; return the names applied."""
    return await apply_migrations(pool, component, migration_files(MIGRATIONS, component))


async def apply_migrations(
    pool: asyncpg.Pool, component: str, migrations: Sequence[Migration]
) -> list[str]:
    """Apply those of ``migrations`` not yet in the ledger, in order; return their names."""
    applied: list[str] = []
    async with pool.acquire() as conn:
        for version, name, sql in migrations:
            async with conn.transaction():
                await conn.execute(_LOCK, lock_key(component))
                await conn.execute(_LEDGER)
                if await conn.fetchval(_DONE, component, version) is None:
                    await conn.execute(sql)
                    await conn.execute(_RECORD, component, version, name)
                    applied.append(name)
    return applied


def describe(url: str) -> str:
    """The URL without its password, safe for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{host}"
