"""L2 on SQLite: the persistent cache tier, owner of body files.

Lifecycle: ``store = await SqliteCacheStore.open(path, bodies, clock)`` (or
construct it and ``await store.start()``); ``await store.close()`` at the end.
The constructor touches nothing on disk.

Invariants:
- Every write, and every read but the ones below, runs on ONE dedicated
  worker thread that owns the only writing connection of this store, so writes
  never interleave; a coroutine cancelled while awaiting does not interrupt a
  transaction already handed to the thread.  That thread runs below the event
  loop's priority (:func:`~stoker.backends.sqlite.connection.yield_to_the_loop`).
- The reads a client waits on, a purge's lookups (``refs_for_tags``,
  ``refs_for_url_prefix``), ``count`` (a purge-all's) and ``stats``, run on a second
  thread, read-only, at the loop's priority: they queue behind no write, and a
  busy loop does not starve them (a 10,000-entry tag lookup, ~6 ms of CPU, took
  40-120 ms at the writer's priority under a hit load).  Each sees what was
  committed when it began, so every write whose ``await`` returned before it was
  called (:class:`~stoker.cache.tiered.TieredStore` runs a purge's lookup once
  the writes queued before it are done).
- With ``inline_reads`` (the default) :meth:`SqliteCacheStore.get` runs its
  one primary-key SELECT on the caller's thread (the event loop; the one that
  called ``start``, which opened the connection), on a read-only connection
  of its own (:func:`connect_reader`): no thread hand-off per hit, the
  commonest L2 operation.  It may run while the worker thread is inside a
  write transaction: in WAL mode it sees exactly what was committed when it
  began (never a row a committed delete removed, never half a transaction)
  and waits for no lock (busy fails at once, and a failing read is a miss to
  :class:`~stoker.cache.tiered.TieredStore`).
- The inline reads of one loop iteration share ONE read transaction: the first
  begins it, and a callback it schedules ends it, in the next iteration before
  anything scheduled after it runs (each transaction costs two lock system
  calls).  So a read sees every commit made before the iteration's first read;
  and every commit a coroutine can have heard of: the worker thread reports a
  commit through the loop's queue, after it, so a report that comes after that
  first read also comes after the callback that ends the transaction, and the
  coroutine it resumes reads in a transaction begun later.
  The price: while it reads, the event loop does nothing else.  An indexed
  read of a row whose pages are in the OS page cache costs ~5 µs; a body
  kept in a body file is never read here (only the row naming it), but an
  inline body of up to ``body_file_threshold`` bytes is, so a row that must
  come from a slow disk (rotating, network, throttled volumes, an L2 much
  larger than the RAM caching it) stalls every request for that disk's
  latency.  On such disks set ``inline_reads`` false: ``get`` then runs on
  the worker thread like everything else, ~40 µs of CPU more per hit.
- SQL is module constants with bound parameters only.  A batch (the refs to delete
  or soften, the tags to look up) is ONE parameter, a JSON array read with
  ``json_each``, and a lookup answers in ONE row (:data:`AS_JSON`): the worker
  thread crosses the GIL once per statement, not once per row, so it never
  queues behind a busy event loop thousands of times in one purge.
- An entry row and its ``cache_tags`` rows change in one transaction (tags
  are removed by ``ON DELETE CASCADE``), so the tag index is always exact.
- A body file is removed only after the transaction that stopped referencing
  it has committed: a crash can orphan a file, never leave a row pointing at
  a removed file.  Deletes remove the files of the rows they delete; ``put``
  removes the replaced row's file when the name changed.
- Rows past ``keep_until`` are absent for every read (``stats`` and ``count`` include
  them until they are evicted);
  :meth:`SqliteCacheStore.evict` removes them (and enforces ``max_bytes``).
- Orphaned body files (no row references them: a crash between a body
  file's rename and its row insert, a put the L2 queue dropped) are removed
  by :meth:`SqliteCacheStore.sweep_orphans` at ``start`` and then by
  ``evict`` every ``ORPHAN_GRACE`` seconds; only files unchanged for
  ``ORPHAN_GRACE`` are swept, so a body whose row is still being written
  (or waits in the L2 queue) is kept.  The sweep reads the references and
  removes files on the worker thread, so no put interleaves.
- A row's layout is :mod:`~stoker.backends.entry_rows`'s: the fields SQL
  reads or changes are columns, the rest one ``record``, so any entry
  round-trips.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from stoker.backends.entry_rows import (
    INSERT_ENTRY,
    SELECT_LIVE,
    encode_codings,
    entry_from_row,
    entry_to_row,
)
from stoker.backends.sqlite.connection import (
    SqliteThread,
    connect_reader,
    immediate,
    json_array,
)
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.store import EntryRef, as_refs, sorted_refs
from stoker.clock import Clock
from stoker.http.encoding import Encoded

COMPONENT = "cache"
ORPHAN_GRACE = 3600.0
"""Seconds a body file must have been unchanged before an orphan sweep may remove it."""

log = logging.getLogger("stoker.cache")

ADD_CODINGS = """
UPDATE cache_entries SET encoded = ?, codings_due = 0, size_bytes = size_bytes + ?
WHERE primary_key = ? AND variant = ? AND stored_at = ? AND body = ? AND codings_due = 1
  AND keep_until > ?
"""
INSERT_TAG = "INSERT OR IGNORE INTO cache_tags (tag, primary_key, variant) VALUES (?, ?, ?)"
REFS = "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each({})"
"""The ``(primary_key, variant)`` pairs of one JSON array parameter (:func:`json_array` of
refs), formatted with that parameter's placeholder."""
DELETE_REF = """
DELETE FROM cache_entries WHERE primary_key = ? AND variant = ?
RETURNING keep_until, body_file
"""
DELETE_REFS = f"""
DELETE FROM cache_entries WHERE (primary_key, variant) IN ({REFS.format("?")})
RETURNING keep_until, body_file
"""
DELETE_PRIMARY = """
DELETE FROM cache_entries WHERE primary_key IN (SELECT value FROM json_each(?))
RETURNING keep_until, body_file
"""
DELETE_OTHER_VERSIONS = """
DELETE FROM cache_entries WHERE substr(primary_key, 1, ?) <> ?
RETURNING keep_until, body_file
"""
DELETE_EXPIRED = "DELETE FROM cache_entries WHERE keep_until <= ? RETURNING keep_until, body_file"
SOFTEN_REFS = f"""
UPDATE cache_entries
SET fresh_until = :now,
    stale_until = CASE WHEN stale_ok THEN stale_until ELSE MIN(stale_until, :now) END,
    error_until = CASE WHEN stale_ok THEN error_until ELSE MIN(error_until, :now) END
WHERE (primary_key, variant) IN ({REFS.format(":refs")}) AND fresh_until > :now
  AND keep_until > :clock_now
"""
AS_JSON = "SELECT json_group_array(primary_key), json_group_array(variant) FROM ({})"
"""Wraps a ``SELECT primary_key, variant`` so its rows come back as ONE row: the keys and
the variants as two aligned JSON arrays of strings (decoded, they are two lists of
untracked strings: no container per row for the garbage collector to count).  The
queries have no ``DISTINCT``: its temporary B-tree took two thirds of a 10,000-entry tag
lookup (19 ms with it, 6 without).  Only a lookup of several tags can repeat a ref (an
entry carrying two of them); :meth:`SqliteCacheStore._select_refs` drops the repeats
then, at C speed, once they are sorted."""
SELECT_TAGGED = AS_JSON.format("""
SELECT t.primary_key, t.variant FROM cache_tags AS t
JOIN cache_entries AS e ON e.primary_key = t.primary_key AND e.variant = t.variant
WHERE t.tag IN (SELECT value FROM json_each(?)) AND e.keep_until > ?
""")
SELECT_URL_RANGE = AS_JSON.format("""
SELECT primary_key, variant FROM cache_entries
WHERE url >= ? AND url < ? AND keep_until > ?
""")
SELECT_URL_FROM = AS_JSON.format("""
SELECT primary_key, variant FROM cache_entries WHERE url >= ? AND keep_until > ?
""")
SELECT_BODY_FILES = "SELECT body_file FROM cache_entries WHERE body_file IS NOT NULL"
SELECT_STATS = "SELECT COUNT(*), COALESCE(SUM(size_bytes), 0) FROM cache_entries"
SELECT_COUNT = "SELECT COUNT(*) FROM cache_entries"
SELECT_OLDEST = """
SELECT primary_key, variant, size_bytes FROM cache_entries ORDER BY stored_at, rowid
"""

_MAX_CODE_POINT = 0x10FFFF

Deleted = list[tuple[float, str | None]]
"""``(keep_until, body_file)`` of deleted rows."""


class SqliteCacheStore:
    """The SQLite cache tier.  See the module docstring for lifecycle and invariants."""

    def __init__(
        self, path: Path, bodies: BodyStore, clock: Clock, max_bytes: int | None = None,
        *, inline_reads: bool = True,
    ) -> None:
        self._bodies = bodies
        self._clock = clock
        self._max_bytes = max_bytes
        self._db = SqliteThread(path, COMPONENT, (COMPONENT,))
        self._lookups = SqliteThread(path, f"{COMPONENT}-lookups", background=False)
        """Reads a client waits on (a purge's lookups, the entry count), at the loop's
        priority and behind nobody's writes (see the module docstring)."""
        self._inline_reads = inline_reads
        self._reader: sqlite3.Cursor | None = None
        """A cursor of the inline reader's connection (one cursor for every read)."""
        self._next_sweep = 0.0

    @classmethod
    async def open(
        cls, path: Path, bodies: BodyStore, clock: Clock, max_bytes: int | None = None,
        *, inline_reads: bool = True,
    ) -> SqliteCacheStore:
        """Construct and :meth:`start` a store."""
        store = cls(path, bodies, clock, max_bytes, inline_reads=inline_reads)
        await store.start()
        return store

    async def start(self) -> None:
        """Start the worker thread, connect, apply pending migrations, open the inline
        reader (on the calling thread) and sweep orphaned body files (idempotent)."""
        await self._db.start()
        await self._lookups.start()
        if self._inline_reads and self._reader is None:
            self._reader = connect_reader(self._db.path).cursor()
        await self.sweep_orphans(self._clock.now())

    async def close(self) -> None:
        """Close the connections and stop the worker thread."""
        if self._reader is not None:
            self._reader.connection.close()
            self._reader = None
        await self._lookups.close()
        await self._db.close()

    # -- CacheStore ----------------------------------------------------------

    async def get(self, primary_key: str) -> list[CacheEntry]:
        """The live variants of ``primary_key``, read inline (see the module docstring) or,
        without ``inline_reads``, on the worker thread."""
        entries = self.read_now(primary_key)
        if entries is not None:
            return entries
        now = self._clock.now()
        rows = await self._db.run(
            lambda conn: conn.execute(SELECT_LIVE, (primary_key, now)).fetchall()
        )
        return [entry_from_row(primary_key, row) for row in rows]

    def read_now(self, primary_key: str) -> list[CacheEntry] | None:
        """:meth:`get`, inline (``None`` without ``inline_reads``), in this loop iteration's
        read transaction (see the module docstring)."""
        reader = self._reader
        if reader is None:
            return None
        if not reader.connection.in_transaction:
            reader.execute("BEGIN")
            asyncio.get_running_loop().call_soon(self._end_read, reader)
        rows = reader.execute(SELECT_LIVE, (primary_key, self._clock.now())).fetchall()
        return [entry_from_row(primary_key, row) for row in rows]

    @staticmethod
    def _end_read(reader: sqlite3.Cursor) -> None:
        """End the loop iteration's read transaction (unless the store closed meanwhile)."""
        with contextlib.suppress(sqlite3.ProgrammingError):  # a closed connection
            reader.execute("COMMIT")

    async def put(self, entry: CacheEntry) -> None:
        await self._db.run(lambda conn: self._put(conn, [entry]))

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        await self._db.run(lambda conn: self._put(conn, entries))

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        blob = encode_codings(encoded)
        params = (blob, len(blob or b""), entry.primary_key, entry.variant, entry.stored_at,
                  entry.body, self._clock.now())
        await self._db.run(lambda conn: _update_count(conn, ADD_CODINGS, [params]))

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        return await self._delete(DELETE_REFS, [(json_array(refs),)])

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        return await self._delete(DELETE_PRIMARY, [(json_array(primary_keys),)])

    async def delete_except_version(self, version: str) -> int:
        prefix = f"{version}|"
        return await self._delete(DELETE_OTHER_VERSIONS, [(len(prefix), prefix)])

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        params = {"now": now, "refs": json_array(refs), "clock_now": self._clock.now()}
        return await self._db.run(lambda conn: _update_count(conn, SOFTEN_REFS, [params]))

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        now = self._clock.now()
        return await self._select_refs(SELECT_TAGGED, (json_array(tags), now),
                                       distinct=len(tags) > 1)

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        now = self._clock.now()
        upper = _prefix_upper_bound(prefix)
        if upper is None:
            return await self._select_refs(SELECT_URL_FROM, (prefix, now))
        return await self._select_refs(SELECT_URL_RANGE, (prefix, upper, now))

    async def stats(self) -> dict[str, int]:
        """Stored entries (expired ones not yet evicted included) and header+body bytes."""
        count, size = await self._lookups.run(
            lambda conn: conn.execute(SELECT_STATS).fetchone())
        return {"entries": int(count), "bytes": int(size)}

    async def count(self) -> int:
        """Stored entries, counted in the smallest index (summing ``size_bytes`` reads
        every row: 20 ms against 0.2 for 10,000 entries of 20 KB)."""
        (count,) = await self._lookups.run(lambda conn: conn.execute(SELECT_COUNT).fetchone())
        return int(count)

    # -- maintenance ---------------------------------------------------------

    async def evict(self, now: float) -> int:
        """Delete entries past ``keep_until`` then, if ``max_bytes`` is set, the oldest
        ``stored_at`` until within it; return how many were deleted.  Also sweeps orphaned
        body files once ``ORPHAN_GRACE`` has passed since the last sweep."""
        evicted = await self._db.run(lambda conn: len(self._evict(conn, now)))
        if now >= self._next_sweep:
            await self.sweep_orphans(now)
        return evicted

    async def sweep_orphans(self, now: float) -> int:
        """Remove body files no row references, unchanged for ``ORPHAN_GRACE`` before ``now``;
        return how many."""
        removed = await self._db.run(lambda conn: self._sweep_orphans(conn, now - ORPHAN_GRACE))
        self._next_sweep = now + ORPHAN_GRACE
        if removed:
            log.info("removed %d orphaned body files from %s", removed, self._bodies.directory)
        return removed

    # -- worker-thread side ----------------------------------------------------

    def _put(self, conn: sqlite3.Connection, entries: Sequence[CacheEntry]) -> None:
        """Replace ``entries`` in one transaction; then remove the body files the replaced
        rows named and the new ones do not."""
        replaced: list[str] = []
        with immediate(conn):
            for entry in entries:
                old = conn.execute(DELETE_REF, (entry.primary_key, entry.variant)).fetchall()
                conn.execute(INSERT_ENTRY, entry_to_row(entry))
                conn.executemany(INSERT_TAG, [(tag, entry.primary_key, entry.variant)
                                              for tag in entry.tags])
                replaced += (name for _, name in old if name and name != entry.body_file)
        self._remove_files(replaced)

    async def _delete(self, sql: str, params: list[tuple[Any, ...]]) -> int:
        """Run a deleting statement per parameter tuple; count the live rows it removed."""
        now = self._clock.now()
        deleted = await self._db.run(lambda conn: self._delete_rows(conn, sql, params))
        return sum(1 for keep_until, _ in deleted if keep_until > now)

    def _delete_rows(
        self, conn: sqlite3.Connection, sql: str, params: Iterable[tuple[Any, ...]]
    ) -> Deleted:
        deleted: Deleted = []
        with immediate(conn):
            for args in params:
                deleted.extend(conn.execute(sql, args).fetchall())
        self._remove_files(name for _, name in deleted)
        return deleted

    def _evict(self, conn: sqlite3.Connection, now: float) -> Deleted:
        deleted = self._delete_rows(conn, DELETE_EXPIRED, [(now,)])
        if self._max_bytes is not None:
            oldest = _oldest_over(conn, self._max_bytes)
            deleted += self._delete_rows(conn, DELETE_REFS, [(json_array(oldest),)])
        return deleted

    def _sweep_orphans(self, conn: sqlite3.Connection, older_than: float) -> int:
        referenced = {name for (name,) in conn.execute(SELECT_BODY_FILES)}
        return self._bodies.sweep_orphans_blocking(referenced, older_than)

    def _remove_files(self, names: Iterable[str | None]) -> None:
        for name in names:
            if name is not None:
                self._bodies.remove_blocking(name)

    async def _select_refs(self, sql: str, args: tuple[Any, ...], *,
                           distinct: bool = False) -> list[EntryRef]:
        """The refs ``sql`` (an :data:`AS_JSON` query) answers, sorted, repeats dropped
        where ``distinct`` says it may repeat one.

        One row, so one ``sqlite3_step``: the lookup thread releases the GIL for the
        whole query and takes it back once, then decodes and sorts at C speed.  The rows
        come in sorted runs (one per tag; a prefix's in URL order, their keys' order
        within a cache version), which the sort merges in linear time; a set would
        scramble them (9 ms instead of 1 for 10,000).  Row by row, it would take the GIL
        back after every row, each time waiting for a busy event loop to let go of it.
        """
        def select(conn: sqlite3.Connection) -> list[EntryRef]:
            keys, variants = conn.execute(sql, args).fetchone()
            refs = sorted_refs(refs_letting_go(json.loads(keys), json.loads(variants)))
            return list(dict.fromkeys(refs)) if distinct else refs

        return await self._lookups.run(select)  # sorted on that thread, not the event loop


# -- helpers (pure or per-connection) ------------------------------------------


def _update_count(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> int:
    changed = 0
    with immediate(conn):
        for args in params:
            changed += conn.execute(sql, args).rowcount
    return changed


def _oldest_over(conn: sqlite3.Connection, max_bytes: int) -> list[tuple[str, str]]:
    """The oldest refs whose removal brings the stored bytes within ``max_bytes``."""
    _, total = conn.execute(SELECT_STATS).fetchone()
    excess = int(total) - max_bytes
    refs: list[tuple[str, str]] = []
    for key, variant, size in conn.execute(SELECT_OLDEST):
        if excess <= 0:
            break
        refs.append((key, variant))
        excess -= int(size)
    return refs


REF_SLICE = 1000
"""Refs a worker thread makes between two offers of the GIL to the event loop."""


def refs_letting_go(keys: Sequence[str], variants: Sequence[str]) -> list[EntryRef]:
    """``as_refs(zip(keys, variants))`` made on a worker thread :data:`REF_SLICE` at a time,
    offering the GIL to the event loop between slices: one C call holds the GIL until it
    returns, and 10,000 refs are ~4 ms of one (on a slow core), which the loop would wait
    through.  Measured on one core, a loop ticking while a thread made and sorted 10,000
    refs 20 times woke at most 6.6-9.5 ms late, against 11.7-15.8 ms in one call."""
    if len(keys) != len(variants):
        raise ValueError(f"{len(keys)} keys but {len(variants)} variants")
    refs: list[EntryRef] = []
    for start in range(0, len(keys), REF_SLICE):
        if start:
            time.sleep(0)  # releases the GIL, which a waiting loop may take
        end = start + REF_SLICE
        refs.extend(as_refs(zip(keys[start:end], variants[start:end], strict=True)))
    return refs


def _prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` (None: none).

    SQLite's BINARY collation compares UTF-8 bytes, which orders like code points.
    """
    stripped = prefix.rstrip(chr(_MAX_CODE_POINT))
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates cannot be encoded; skip the block
        following = 0xE000
    return stripped[:-1] + chr(following)
