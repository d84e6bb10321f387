"""The ``CacheStore`` port: what every cache tier (memory, SQLite, Redis) offers.

Every backend passes the same contract suite (``tests/contract``).

Invariants every implementation keeps:
- ``(primary_key, variant)`` identifies an entry; ``put`` replaces in place.
- ``get`` never returns an entry whose ``keep_until`` has passed (per the
  store's injected clock); it may delete such entries lazily.
- Tag matching is exact: tag ``post-1`` never selects an entry tagged only
  ``post-10``.
- ``add_codings`` changes only the version it names: never an entry stored
  since, nor one deleted (it is not brought back).
- Deleting an entry that owns a ``body_file`` removes that file only in the
  tier that owns bodies (the persistent one); the memory tier never deletes files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from operator import itemgetter
from typing import NamedTuple, Protocol

from stoker.cache.entry import CacheEntry
from stoker.http.encoding import Encoded


class EntryRef(NamedTuple):
    """The identity of one stored entry.

    A tuple, so hashing, comparing and sorting the tens of thousands a purge handles
    run at C speed (on the event loop and on L2's thread, where Python work holds the
    GIL the loop waits for).
    """

    primary_key: str
    variant: str


PRIMARY_KEY: Callable[[EntryRef], str] = itemgetter(0)
"""``ref.primary_key`` as a C function, for ``map`` over thousands of refs."""


def sorted_refs(refs: Iterable[EntryRef]) -> list[EntryRef]:
    """Refs in a stable order (primary key, then variant), as every tier returns them."""
    return sorted(refs)


_MAKE_REF: Callable[[Sequence[str]], EntryRef] = partial(tuple.__new__, EntryRef)


def as_refs(pairs: Iterable[Sequence[str]]) -> list[EntryRef]:
    """``(primary_key, variant)`` pairs (tuples or lists) as refs, in their order; every
    step runs in C (``tuple.__new__`` is what ``EntryRef._make`` calls, less its frame)."""
    return list(map(_MAKE_REF, pairs))


class CacheStore(Protocol):
    """One cache tier."""

    async def get(self, primary_key: str) -> list[CacheEntry]:
        """All live variants stored under ``primary_key`` (empty list when none)."""

    def read_now(self, primary_key: str) -> list[CacheEntry] | None:
        """What :meth:`get` would return, read without waiting, or ``None`` when this tier
        cannot read without waiting (a thread or a network round trip): use :meth:`get`."""

    async def put(self, entry: CacheEntry) -> None:
        """Insert or replace the entry ``(entry.primary_key, entry.variant)``."""

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        """:meth:`put` each of ``entries``, in order; all or none where the tier has
        transactions (SQLite: one)."""

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        """Delete these entries; return how many existed."""

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        """Delete every variant of these primary keys; return how many existed."""

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        """Entries carrying any of ``tags`` (exact match)."""

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        """Entries whose absolute ``url`` starts with ``prefix``."""

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        """Soft purge: set ``fresh_until = min(fresh_until, now)``; return how many changed."""

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        """Give the stored entry ``encoded`` (and no codings due) if it is still ``entry``'s
        version (:meth:`CacheEntry.same_version`) with codings due; else change nothing."""

    async def delete_except_version(self, version: str) -> int:
        """Delete entries whose primary key does not start with ``f"{version}|"``."""

    async def stats(self) -> dict[str, int]:
        """At least ``{"entries": n, "bytes": m}``."""

    async def count(self) -> int:
        """``stats()["entries"]``, without adding up the bytes (a purge-all waits on it)."""

    async def close(self) -> None:
        """Release connections/threads; flush pending writes."""
