"""``PendingUrls`` on PostgreSQL (``database_url``); see :mod:`stoker.warm.pending`.

A view over a :class:`~stoker.backends.postgres.database.PostgresHandle`; ``aclose``
closes the handle only when the store ``owns`` it.
"""

from __future__ import annotations

from collections.abc import Sequence

from stoker.backends.postgres.database import PostgresHandle

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
OLDEST = "SELECT url FROM warm_pending ORDER BY added_at, url LIMIT $1"


class PostgresPendingUrls:
    """Pending re-warm URLs in one PostgreSQL table."""

    def __init__(self, db: PostgresHandle, *, owns: bool = False) -> None:
        self._db = db
        self._owns = owns
        self._closed = False


    async def add(self, urls: Sequence[str], now: float) -> int:
        status = await self._db.executor.execute(INSERT, list(dict.fromkeys(urls)), now)
        return int(status.rsplit(" ", 1)[1])

    async def take(self, limit: int = 100_000) -> list[str]:
        rows = await self._db.executor.fetch(TAKE, max(1, limit))
        return [row["url"] for row in sorted(rows, key=lambda r: (r["added_at"], r["url"]))]

    async def count(self) -> int:
        return int(await self._db.executor.fetchval(COUNT))

    async def oldest(self, limit: int) -> list[str]:
        rows = await self._db.executor.fetch(OLDEST, max(0, limit))
        return [row["url"] for row in rows]

    async def aclose(self) -> None:
        if self._owns and not self._closed:
            self._closed = True
            await self._db.close()
