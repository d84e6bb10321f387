"""``PendingUrls`` on PostgreSQL (``database_url``); see :mod:`stoker.warm.pending`."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from stoker.backends.postgres.connection import migrate

MIGRATIONS_PACKAGE = "stoker.backends.postgres.pending_migrations"
COMPONENT = "pending"

INSERT = """
INSERT INTO warm_pending (url, added_at) SELECT unnest($1::text[]), $2
ON CONFLICT (url) DO NOTHING
"""
TAKE = """
DELETE FROM warm_pending WHERE url IN (
    SELECT url FROM warm_pending ORDER BY added_at, url LIMIT $1 FOR UPDATE SKIP LOCKED
) RETURNING url, added_at
"""
COUNT = "SELECT count(*) FROM warm_pending"


class PostgresPendingUrls:
    """Pending re-warm URLs in one PostgreSQL table."""

    def __init__(self, pool: asyncpg.Pool, *, owns_pool: bool = False) -> None:
        self._pool = pool
        self._owns_pool = owns_pool
        self._closed = False

    @classmethod
    async def open(cls, pool: asyncpg.Pool, *, owns_pool: bool = False) -> PostgresPendingUrls:
        """Migrate, then wrap ``pool``."""
        await migrate(pool, COMPONENT, MIGRATIONS_PACKAGE)
        return cls(pool, owns_pool=owns_pool)

    async def add(self, urls: Sequence[str], now: float) -> int:
        status = await self._pool.execute(INSERT, list(dict.fromkeys(urls)), now)
        return int(status.rsplit(" ", 1)[1])

    async def take(self, limit: int = 100_000) -> list[str]:
        rows = await self._pool.fetch(TAKE, max(1, limit))
        return [row["url"] for row in sorted(rows, key=lambda r: (r["added_at"], r["url"]))]

    async def count(self) -> int:
        return int(await self._pool.fetchval(COUNT))

    async def aclose(self) -> None:
        if self._owns_pool and not self._closed:
            self._closed = True
            await self._pool.close()
