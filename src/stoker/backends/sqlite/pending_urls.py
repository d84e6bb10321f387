"""``PendingUrls`` on SQLite (``data_dir/stoker.db``); see :mod:`stoker.warm.pending`.

A view over a :class:`~stoker.backends.sqlite.database.SqliteHandle` (the database or one
of its transactions); ``aclose`` closes the handle only when the store ``owns`` it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from stoker.backends.sqlite.connection import immediate, json_array
from stoker.backends.sqlite.database import SqliteHandle

INSERT = """
INSERT OR IGNORE INTO warm_pending (url, added_at) SELECT value, ? FROM json_each(?)
"""
"""One statement for any number of URLs (a JSON array): one GIL hand-off, not one per URL."""
TAKE = """
DELETE FROM warm_pending WHERE url IN (
    SELECT url FROM warm_pending ORDER BY added_at, url LIMIT ?
) RETURNING url, added_at
"""
COUNT = "SELECT count(*) FROM warm_pending"
OLDEST = "SELECT url FROM warm_pending ORDER BY added_at, url LIMIT ?"


class SqlitePendingUrls:
    """Pending re-warm URLs in one SQLite table, on the handle's thread."""

    def __init__(self, db: SqliteHandle, *, owns: bool = False) -> None:
        self._db = db
        self._owns = owns

    async def add(self, urls: Sequence[str], now: float) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with immediate(conn):
                return conn.execute(INSERT, (now, json_array(urls))).rowcount

        return await self._db.run(work)

    async def take(self, limit: int = 100_000) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            with immediate(conn):
                rows = conn.execute(TAKE, (max(1, limit),)).fetchall()
            return [url for url, _ in sorted(rows, key=lambda row: (row[1], row[0]))]

        return await self._db.run(work)

    async def count(self) -> int:
        return int(await self._db.run(lambda conn: conn.execute(COUNT).fetchone()[0]))

    async def oldest(self, limit: int) -> list[str]:
        rows = await self._db.run(lambda conn: conn.execute(OLDEST, (max(0, limit),)).fetchall())
        return [url for (url,) in rows]

    async def aclose(self) -> None:
        if self._owns:
            await self._db.close()
