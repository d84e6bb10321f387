"""The SQLite ``HitStatsStore``: visit sums per URL in ``data_dir/stoker.db``.

Lifecycle: ``store = await SqliteHitStatsStore.open(path)``; ``await store.close()``.

Invariants (beyond those of :class:`stoker.cache.hits.HitStatsStore`):
- a view over a :class:`~stoker.backends.sqlite.database.SqliteHandle`, whose one
  thread owns the only connection, so the event loop never blocks on SQLite; the
  schema comes from the ``hits`` migrations; ``close`` closes the handle only when
  the store ``owns`` it;
- ``add`` is one ``BEGIN IMMEDIATE`` transaction of upserts: a flush is counted
  entirely or not at all, and processes sharing the file serialise at its start;
- ``visits`` is a stored generated column (``hits + misses``), indexed for ``top``;
- ``add_origins`` upserts and trims ``seen_origins`` in one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Final

from stoker.backends.sqlite.connection import immediate
from stoker.backends.sqlite.database import SqliteHandle
from stoker.cache.hits import MAX_SEEN_ORIGINS, SeenOrigin, countable

_UPSERT: Final = """
INSERT INTO hit_stats (url, hits, misses, last_seen) VALUES (?, ?, ?, ?)
ON CONFLICT (url) DO UPDATE SET
    hits = hits + excluded.hits,
    misses = misses + excluded.misses,
    last_seen = max(last_seen, excluded.last_seen)
"""
_TOP: Final = "SELECT url, visits FROM hit_stats ORDER BY visits DESC, url LIMIT ?"
_POPULARITY: Final = """
SELECT url, visits FROM hit_stats WHERE url IN (SELECT value FROM json_each(?))
"""
_PRUNE: Final = "DELETE FROM hit_stats WHERE last_seen < ?"
_ORIGIN_UPSERT: Final = """
INSERT INTO seen_origins (origin, visits, last_seen) VALUES (?, ?, ?)
ON CONFLICT (origin) DO UPDATE SET
    visits = visits + excluded.visits,
    last_seen = max(last_seen, excluded.last_seen)
"""
_ORIGIN_TRIM: Final = """
DELETE FROM seen_origins WHERE origin NOT IN (
    SELECT origin FROM seen_origins ORDER BY visits DESC, origin LIMIT ?)
"""
_ORIGINS: Final = "SELECT origin, visits, last_seen FROM seen_origins ORDER BY visits DESC, origin"
_ORIGIN_PRUNE: Final = "DELETE FROM seen_origins WHERE last_seen < ?"


class SqliteHitStatsStore:
    """``HitStatsStore`` on a SQLite file (see the module docstring)."""

    def __init__(self, db: SqliteHandle, *, owns: bool = False) -> None:
        self._db = db
        self._owns = owns

    async def add(self, counts: Mapping[str, tuple[int, int]], now: float) -> None:
        rows = [(url, hits, misses, now) for url, (hits, misses) in sorted(counts.items())
                if countable(url)]
        if rows:
            await self._db.run(lambda conn: _write(conn, rows))

    async def top(self, limit: int) -> list[tuple[str, int]]:
        if limit < 1:
            return []
        rows = await self._db.run(lambda conn: conn.execute(_TOP, (limit,)).fetchall())
        return [(url, visits) for url, visits in rows]

    async def popularity(self, urls: Sequence[str]) -> dict[str, int]:
        wanted = json.dumps([url for url in urls if countable(url)])
        rows = await self._db.run(lambda conn: conn.execute(_POPULARITY, (wanted,)).fetchall())
        found = dict(rows)
        return {url: found.get(url, 0) for url in urls}

    async def add_origins(self, visits: Mapping[str, int], now: float) -> None:
        rows = [(origin, count, now) for origin, count in sorted(visits.items())]
        if rows:
            await self._db.run(lambda conn: _write_origins(conn, rows))

    async def origins(self) -> list[SeenOrigin]:
        rows = await self._db.run(lambda conn: conn.execute(_ORIGINS).fetchall())
        return [SeenOrigin(origin, visits, last_seen) for origin, visits, last_seen in rows]

    async def prune(self, older_than: float) -> int:
        return await self._db.run(lambda conn: _delete(conn, older_than))

    async def close(self) -> None:
        if self._owns:
            await self._db.close()


def _write(conn: sqlite3.Connection, rows: list[tuple[str, int, int, float]]) -> None:
    with immediate(conn):
        conn.executemany(_UPSERT, rows)


def _write_origins(conn: sqlite3.Connection, rows: list[tuple[str, int, float]]) -> None:
    with immediate(conn):
        conn.executemany(_ORIGIN_UPSERT, rows)
        conn.execute(_ORIGIN_TRIM, (MAX_SEEN_ORIGINS,))


def _delete(conn: sqlite3.Connection, older_than: float) -> int:
    with immediate(conn):
        conn.execute(_ORIGIN_PRUNE, (older_than,))
        return conn.execute(_PRUNE, (older_than,)).rowcount
