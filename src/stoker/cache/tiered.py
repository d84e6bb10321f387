"""Two cache tiers behind one ``CacheStore``: memory L1 in front of a persistent L2.

Read: L1 hit → return | L1 miss → L2 → promote the live variants into L1 →
return.  A failing L2 read is logged and answered as a miss (the proxy then
goes to the origin rather than failing the request).  Entries carry
absolute timestamps, so a promoted copy keeps exactly its *remaining*
lifetime.

Write: ``put`` writes L1 synchronously and queues the L2 write; the caller
never waits for disk.  Invalidations (``delete``, ``delete_primary``,
``soften``, ``delete_except_version``) apply to L1 at once, then go through
the same queue for L2 and are awaited.

Invariants:
- ONE writer task applies L2 operations in FIFO order; an operation leaves
  the queue only once it has succeeded, so a later operation never overtakes
  an earlier one (a queued ``put`` can never resurrect an entry in L2 after a
  later ``delete``).
- A failing L2 operation is logged on ``stoker.cache`` and retried with
  exponential backoff (``retry_delay`` doubling up to ``max_retry_delay``,
  slept on the injected clock); it is never dropped and never raised to the
  caller.  Consequently an awaited invalidation (and ``flush``, ``stats``,
  the ``refs_for_*`` queries, ``close``) waits while L2 is down.
- Promotion never undoes a write: an L2 result is copied into L1 only if no
  L2 operation touching that primary key (or all keys) was queued when the
  read began and no operation at all was queued while it ran.
- L1 ⊆ L2 up to queued operations: every L1 entry was written through or
  promoted from L2, and removals reach both tiers in order.  Hence the count
  an invalidation returns, the distinct refs changed across both tiers, is
  ``max(l1 count, l2 count)``.  Entries L2 dropped on its own (its
  ``max_bytes`` eviction, another process) while L1 still holds them can make
  that count low by those entries.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from stoker.cache.entry import CacheEntry
from stoker.cache.memory import MemoryStore
from stoker.cache.store import CacheStore, EntryRef, sorted_refs
from stoker.clock import Clock

T = TypeVar("T")

log = logging.getLogger("stoker.cache")

ALL_KEYS = None
"""``keys`` of an operation that may touch any primary key."""


@dataclass(slots=True)
class _Op:
    """One queued L2 operation."""

    label: str
    run: Callable[[], Awaitable[object]]
    keys: frozenset[str] | None
    done: asyncio.Future[Any] | None


class TieredStore:
    """L1 + L2 as one store.  See the module docstring for invariants."""

    def __init__(
        self,
        l1: MemoryStore,
        l2: CacheStore,
        clock: Clock,
        *,
        retry_delay: float = 0.5,
        max_retry_delay: float = 30.0,
    ) -> None:
        self._l1 = l1
        self._l2 = l2
        self._clock = clock
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._ops: deque[_Op] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._epoch = 0
        self._dirty: dict[str, int] = {}
        self._dirty_all = 0

    # -- reads ---------------------------------------------------------------

    def get_l1(self, primary_key: str) -> list[CacheEntry] | None:
        """The hot path: L1 only, synchronous (None on an L1 miss)."""
        return self._l1.get_nowait(primary_key)

    def touch(self, entry: CacheEntry) -> None:
        """Mark ``entry`` most recently used among its key's variants (L1 order)."""
        self._l1.touch_nowait(entry.primary_key, entry.variant)

    async def get(self, primary_key: str) -> list[CacheEntry]:
        hit = self._l1.get_nowait(primary_key)
        if hit is not None:
            return hit
        epoch = self._epoch
        clean = self._dirty_all == 0 and primary_key not in self._dirty
        try:
            entries = await self._l2.get(primary_key)
        except Exception:
            log.warning("L2 cache read failed; serving it as a miss", exc_info=True)
            return []
        if clean and epoch == self._epoch:
            for entry in entries:
                self._l1.put_nowait(entry)
        return entries

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        await self.flush()
        found = await self._l2.refs_for_tags(tags)
        return sorted_refs(self._l1.refs_for_tags_nowait(tags).union(found))

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        await self.flush()
        found = await self._l2.refs_for_url_prefix(prefix)
        return sorted_refs(self._l1.refs_for_url_prefix_nowait(prefix).union(found))

    async def stats(self) -> dict[str, int]:
        """L2 figures (after a flush), plus ``l1_entries``, ``l1_bytes`` and ``pending``."""
        await self.flush()
        l1 = self._l1.stats_nowait()
        combined = dict(await self._l2.stats())
        combined.update(l1_entries=l1["entries"], l1_bytes=l1["bytes"], pending=self.pending())
        return combined

    def pending(self) -> int:
        """L2 operations queued or in progress (for status pages)."""
        return len(self._ops)

    # -- writes --------------------------------------------------------------

    async def put(self, entry: CacheEntry) -> None:
        """Write L1 now; queue the L2 write (not awaited)."""
        self._l1.put_nowait(entry)
        self._enqueue(
            _Op("put", lambda: self._l2.put(entry), frozenset((entry.primary_key,)), None)
        )

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        refs = list(refs)
        in_l1 = self._l1.delete_nowait(refs)
        keys = frozenset(ref.primary_key for ref in refs)
        return max(in_l1, await self._submit("delete", lambda: self._l2.delete(refs), keys))

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        keys = frozenset(primary_keys)
        in_l1 = self._l1.delete_primary_nowait(keys)
        in_l2 = await self._submit("delete_primary", lambda: self._l2.delete_primary(keys), keys)
        return max(in_l1, in_l2)

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        refs = list(refs)
        in_l1 = self._l1.soften_nowait(refs, now)
        keys = frozenset(ref.primary_key for ref in refs)
        return max(in_l1, await self._submit("soften", lambda: self._l2.soften(refs, now), keys))

    async def delete_except_version(self, version: str) -> int:
        in_l1 = self._l1.delete_except_version_nowait(version)
        in_l2 = await self._submit(
            "delete_except_version", lambda: self._l2.delete_except_version(version), ALL_KEYS
        )
        return max(in_l1, in_l2)

    async def flush(self) -> None:
        """Wait until every operation queued so far has reached L2."""
        await self._submit("flush", _nothing, frozenset())

    async def close(self) -> None:
        """Flush, stop the writer, close L2."""
        await self.flush()
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.wait([self._writer])
            self._writer = None
        await self._l2.close()

    # -- the L2 writer ----------------------------------------------------------

    async def _submit(
        self, label: str, run: Callable[[], Awaitable[T]], keys: frozenset[str] | None
    ) -> T:
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._enqueue(_Op(label, run, keys, done))
        return await done

    def _enqueue(self, op: _Op) -> None:
        self._ops.append(op)
        self._epoch += 1
        if op.keys is None:
            self._dirty_all += 1
        else:
            for key in op.keys:
                self._dirty[key] = self._dirty.get(key, 0) + 1
        if self._writer is None or self._writer.done():
            self._wake = asyncio.Event()
            self._writer = asyncio.get_running_loop().create_task(
                self._drain(self._wake), name="stoker-cache-l2-writer"
            )
        elif self._wake is not None:
            self._wake.set()

    async def _drain(self, wake: asyncio.Event) -> None:
        while True:
            if not self._ops:
                wake.clear()
                await wake.wait()
                continue
            op = self._ops[0]
            result = await self._apply(op)
            self._ops.popleft()
            self._settle(op)
            if op.done is not None and not op.done.done():
                op.done.set_result(result)

    async def _apply(self, op: _Op) -> object:
        """Run ``op`` until it succeeds, backing off between failures."""
        delay = self._retry_delay
        failures = 0
        while True:
            try:
                return await op.run()
            except Exception:
                failures += 1
                log.warning(
                    "L2 cache %s failed (attempt %d); retrying in %.2fs",
                    op.label, failures, delay, exc_info=True,
                )  # fmt: skip
            await self._clock.sleep(delay)
            delay = min(delay * 2, self._max_retry_delay)

    def _settle(self, op: _Op) -> None:
        if op.keys is None:
            self._dirty_all -= 1
            return
        for key in op.keys:
            left = self._dirty[key] - 1
            if left:
                self._dirty[key] = left
            else:
                del self._dirty[key]


async def _nothing() -> None:
    """The no-op a flush queues as a barrier."""
