"""The ``Cache`` port: the cache as the proxy layer uses it.

What the pipeline, the fetcher, the codings, the fast path and the purger call, and
nothing more; :class:`~stoker.cache.tiered.TieredStore` implements it (the assembly,
``stoker.app.stoker``, builds one).

Invariants every implementation keeps:
- ``get_l1``, ``read_now`` and ``touch`` never wait; ``put`` and ``add_codings``
  return before anything slower than memory is written.
- Invalidations (``delete``, ``delete_primary``, ``purge``, ``delete_except_version``)
  are in force for every read that starts once they have returned.
- A purge's mark (recorded in the :class:`~stoker.purge.list.PurgeList` the
  cache was built with) screens every read (``get``, ``get_l2``, ``read_now``) from the
  call on: nothing it covers is read back unpurged.  ``purge`` does not wait for an L2
  that does not answer (``Purged.l2_pending``): the mark screens L2's reads until its
  L2 part is done, and what was stored before it for as long as it can be read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

from stoker.cache.entry import CacheEntry
from stoker.cache.store import EntryRef
from stoker.http.encoding import Encoded
from stoker.purge.list import PurgeMark


class Purged(NamedTuple):
    """What :meth:`Cache.purge` found: distinct entries covered (the larger tier's
    count) and their primary keys, sorted; ``l2_pending`` when L2 did not answer the
    lookup (the count and keys are then L1's, and L2's part runs once L2 answers)."""

    entries: int
    primary_keys: list[str]
    l2_pending: bool = False


class Cache(Protocol):
    """The cache the proxy layer reads and writes."""

    def get_l1(self, primary_key: str) -> list[CacheEntry] | None:
        """The memory tier's live variants of ``primary_key``; ``None`` when it has none."""

    def read_now(self, primary_key: str) -> list[CacheEntry] | None:
        """What :meth:`get` would return, read without waiting, or ``None`` when that
        needs a wait (then use :meth:`get`)."""

    async def get(self, primary_key: str) -> list[CacheEntry]:
        """All live variants stored under ``primary_key`` (empty list when none)."""

    async def get_l2(self, primary_key: str) -> list[CacheEntry]:
        """The persistent tier's live variants of ``primary_key``, purges in progress
        applied (never copied into the memory tier)."""

    def touch(self, entry: CacheEntry) -> None:
        """Mark ``entry`` most recently used among its key's variants."""

    async def put(self, entry: CacheEntry) -> None:
        """Insert or replace the entry ``(entry.primary_key, entry.variant)``."""

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        """Give ``entry``'s stored version ``encoded`` (as
        :meth:`~stoker.cache.store.CacheStore.add_codings`)."""

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        """Delete these entries; return how many existed."""

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        """Delete every variant of these primary keys; return how many existed."""

    async def purge(self, mark: PurgeMark) -> Purged:
        """Apply a recorded purge (not of everything hard: that is a version bump)."""

    async def delete_except_version(self, version: str) -> int:
        """Delete entries whose primary key does not start with ``f"{version}|"``."""

    async def count(self) -> int:
        """Entries stored now, not waiting for queued writes."""

    async def written(self, primary_key: str) -> None:
        """Return once every write of ``primary_key`` made so far has reached every tier."""

    async def flush(self) -> None:
        """Wait until every write made so far has reached every tier."""
