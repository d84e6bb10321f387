"""The PostgreSQL ``HitStatsStore``: visit sums per URL shared by every node.

Lifecycle: ``store = PostgresHitStatsStore(db)`` over a
:class:`~stoker.backends.postgres.database.PostgresHandle`; ``await store.close()``
closes ``db`` only when the store ``owns`` it.

Invariants (beyond those of :class:`stoker.cache.hits.HitStatsStore`):
- every operation is one statement (one round trip, its own transaction), so
  a flush is counted entirely or not at all;
- ``add`` upserts its rows in URL order: concurrent flushes from several
  nodes lock shared rows in the same order, so they add up without deadlocks;
- ``add_origins`` is two statements (upsert, then trim to the most visited): a trim
  racing another node's upsert may drop a row just added, a few visits of a bound table;
- URLs sort bytewise (``COLLATE "C"``), as on SQLite, so ``top`` breaks ties
  the same way on both backends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from stoker.backends.postgres.database import PostgresHandle
from stoker.cache.hits import MAX_SEEN_ORIGINS, SeenOrigin, countable

_UPSERT: Final = """
INSERT INTO hit_stats (url, hits, misses, last_seen)
SELECT url, hits, misses, $4
FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS t (url, hits, misses)
ORDER BY url
ON CONFLICT (url) DO UPDATE SET
    hits = hit_stats.hits + excluded.hits,
    misses = hit_stats.misses + excluded.misses,
    last_seen = greatest(hit_stats.last_seen, excluded.last_seen)
"""
_TOP: Final = "SELECT url, visits FROM hit_stats ORDER BY visits DESC, url LIMIT $1"
_POPULARITY: Final = "SELECT url, visits FROM hit_stats WHERE url = ANY($1::text[])"
_PRUNE: Final = "DELETE FROM hit_stats WHERE last_seen < $1"
_ORIGIN_UPSERT: Final = """
INSERT INTO seen_origins (origin, visits, last_seen)
SELECT origin, visits, $3
FROM unnest($1::text[], $2::bigint[]) AS t (origin, visits)
ORDER BY origin
ON CONFLICT (origin) DO UPDATE SET
    visits = seen_origins.visits + excluded.visits,
    last_seen = greatest(seen_origins.last_seen, excluded.last_seen)
"""
_ORIGIN_TRIM: Final = """
DELETE FROM seen_origins WHERE origin NOT IN (
    SELECT origin FROM seen_origins ORDER BY visits DESC, origin LIMIT $1)
"""
_ORIGINS: Final = "SELECT origin, visits, last_seen FROM seen_origins ORDER BY visits DESC, origin"
_ORIGIN_PRUNE: Final = "DELETE FROM seen_origins WHERE last_seen < $1"


class PostgresHitStatsStore:
    """``HitStatsStore`` on a PostgreSQL pool (see the module docstring)."""

    def __init__(self, db: PostgresHandle, *, owns: bool = False) -> None:
        self._db = db
        self._owns = owns


    async def add(self, counts: Mapping[str, tuple[int, int]], now: float) -> None:
        rows = [(url, hits, misses) for url, (hits, misses) in sorted(counts.items())
                if countable(url)]
        if rows:
            urls, hits, misses = (list(column) for column in zip(*rows, strict=True))
            await self._db.executor.execute(_UPSERT, urls, hits, misses, now)

    async def top(self, limit: int) -> list[tuple[str, int]]:
        if limit < 1:
            return []
        return [(row["url"], row["visits"]) for row in await self._db.executor.fetch(_TOP, limit)]

    async def popularity(self, urls: Sequence[str]) -> dict[str, int]:
        wanted = [url for url in urls if countable(url)]
        rows = await self._db.executor.fetch(_POPULARITY, wanted)
        found = {row["url"]: row["visits"] for row in rows}
        return {url: found.get(url, 0) for url in urls}

    async def add_origins(self, visits: Mapping[str, int], now: float) -> None:
        if visits:
            origins = sorted(visits)
            await self._db.executor.execute(_ORIGIN_UPSERT, origins,
                                            [visits[origin] for origin in origins], now)
            await self._db.executor.execute(_ORIGIN_TRIM, MAX_SEEN_ORIGINS)

    async def origins(self) -> list[SeenOrigin]:
        return [SeenOrigin(row["origin"], row["visits"], row["last_seen"])
                for row in await self._db.executor.fetch(_ORIGINS)]

    async def prune(self, older_than: float) -> int:
        await self._db.executor.execute(_ORIGIN_PRUNE, older_than)
        status = await self._db.executor.execute(_PRUNE, older_than)
        return int(status.split()[-1])

    async def close(self) -> None:
        if self._owns:
            await self._db.close()
