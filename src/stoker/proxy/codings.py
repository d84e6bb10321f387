"""Compressed forms of stored entries, made on demand, once per stored response.

A miss stores its body identity-only and, when it may be compressed, marks the
entry ``codings_due`` (:mod:`stoker.proxy.fetch`): the miss's response never
waits for compression, nor pays its CPU for clients that never ask for a
coding.  The first request that accepts a coding the entry may get
(:func:`~stoker.proxy.hit.form_for` finds it due) makes its br and gzip forms in a
worker thread, is answered in its coding, and gives the stored entry its forms (L1 at once, L2
queued), so later requests are served them from cache.  A miss whose own client
accepts a coding starts that compression in the background after its response
has ended (:meth:`Codings.prefetch`), ready for the client's next request.

Invariants:
- One compression per stored response at a time: requests for the codings of
  one version (:meth:`~stoker.cache.entry.CacheEntry.same_version`) while its
  compression runs wait for that one.
- The forms reach the store through
  :meth:`~stoker.cache.port.Cache.add_codings`, which changes only
  the version that was compressed: never an entry stored since, and never one
  purged or deleted meanwhile (a purge is not undone; the request that waited
  is still answered with the forms it waited for, as a miss in flight during a
  purge is).
- A compression that fails is logged; the entry is then served identity and
  stored with no forms (it is not tried again).
"""

from __future__ import annotations

import asyncio
import logging

from stoker.cache.entry import CacheEntry
from stoker.cache.port import Cache
from stoker.http.encoding import Encoded, compress

log = logging.getLogger("stoker.proxy")

FlightKey = tuple[str, str, float]


class Codings:
    """Makes stored entries' compressed forms, once each.  See the module docstring."""

    def __init__(self, store: Cache) -> None:
        self._store = store
        self._flights: dict[FlightKey, tuple[CacheEntry, asyncio.Task[Encoded]]] = {}
        self._tasks: set[asyncio.Task[Encoded]] = set()

    async def coded(self, entry: CacheEntry) -> CacheEntry:
        """``entry`` with its compressed forms (made now, or by the compression of its
        version already running); ``entry`` itself when none are due."""
        if not entry.codings_due:
            return entry
        task = self._flight(entry)
        return entry.with_codings(await asyncio.shield(task))

    def prefetch(self, entry: CacheEntry) -> None:
        """Start making ``entry``'s forms in the background (if due and not running)."""
        if entry.codings_due:
            self._flight(entry)

    def pending(self) -> int:
        """Compressions running now."""
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for the compressions running (shutdown and tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _flight(self, entry: CacheEntry) -> asyncio.Task[Encoded]:
        """The compression of ``entry``'s version: the one running, else a new one."""
        key = (entry.primary_key, entry.variant, entry.stored_at)
        running = self._flights.get(key)
        if running is not None and running[0].same_version(entry):
            return running[1]
        task = asyncio.get_running_loop().create_task(self._make(entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if running is None:  # another body under the same key and time: not shared
            self._flights[key] = (entry, task)
            task.add_done_callback(lambda _: self._flights.pop(key, None))
        return task

    async def _make(self, entry: CacheEntry) -> Encoded:
        assert entry.body is not None  # only inline bodies are ever due
        try:
            encoded = await asyncio.to_thread(compress, entry.body)
        except Exception:
            log.exception("compressing %s failed; it is served identity", entry.url)
            encoded = ()
        await self._store.add_codings(entry, encoded)
        return encoded
