"""Two cache tiers behind one ``CacheStore``: memory L1 in front of a persistent L2.

Read: L1 hit → return | L1 miss → L2 → promote the live variants into L1 →
return.  A failing L2 read is answered as a miss (the proxy then goes to the
origin rather than failing the request) and logged as
:class:`~stoker.resilience.repeats.Repeats` says: not a line per request.  Entries carry
absolute timestamps, so a promoted copy keeps exactly its *remaining*
lifetime.

Write: ``put`` (and ``add_codings``) writes L1 synchronously and queues the
L2 write; the caller never waits for disk.  Invalidations (``delete``, ``delete_primary``,
``soften``, ``delete_except_version``) apply to L1 at once, then go through
the same queue for L2 and are awaited.  A recorded purge (``purge``, given a
:class:`~stoker.purge.list.PurgeMark` of L1's
:class:`~stoker.purge.list.PurgeList`) is carried out by the
:class:`~stoker.purge.applier.PurgeApplier`, in both tiers, in slices.

Invariants:
- L2 operations go through one :class:`~stoker.cache.l2_queue.L2WriteQueue`
  (its invariants: FIFO order, puts batched, bounded by bytes with the oldest
  puts dropped, retried with backoff, awaited ones failing with
  :class:`~stoker.cache.l2_queue.L2WriteTimeout` at their deadline, still
  queued).  The awaited ones here are the invalidations, ``flush``, ``stats``,
  the ``refs_for_*`` queries and ``close``.
- Promotion never undoes a write: an L2 result is copied into L1 only if no
  L2 operation touching that primary key (or all keys) was queued when the
  read began and no operation at all was queued while it ran (the queue's
  ``untouched`` and ``epoch``).  A purge's operation touches no key in this
  sense: its mark screens reads instead.
- Nothing purged is read back from L2: from ``purge`` until its L2 operation
  has left the queue, the mark is one the purge list has not seen applied to L2
  (:meth:`~stoker.purge.list.PurgeList.unapplied`), and every L2 read
  (``get``, ``get_l2``, ``read_now``) is screened with those marks
  (:func:`~stoker.purge.list.screen`: covered entries dropped, hard, or
  stale from the purge, soft), taking every mark unapplied when the read began or
  ended.  A screened result is what L2 holds once the operation is done, so
  promoting it is safe.
- Nothing older than a purge is read back from L2 after its operation either, even
  when L2 lost what its lookup needed (an evicted Redis tag set) or a write the
  purge did not see landed later: every L2 read is also judged by the marks in force
  for it (:attr:`~stoker.purge.list.PurgeList.bans`: every mark this process
  recorded, its own and those its relay put in force), which drop or soften an entry
  stored at or before a mark that covers it (:mod:`stoker.purge.bans`).  With
  no mark recorded that costs nothing; with marks, one comparison for an entry
  stored after all of them.
- A put is judged again right before it is written to L2
  (:class:`~stoker.cache.l2_queue.L2WriteQueue`, by the marks recorded since it was
  queued): one queued while L2 was down never writes back what a purge covered.
- No O(entries) step on the event loop: ``delete_except_version`` works through
  L1's keys in steps of ``step_budget`` seconds (:class:`~stoker.cache.steps.Steps`,
  :data:`~stoker.purge.applier.L1_CHUNK` keys at a time) and deletes from L2
  :data:`~stoker.purge.applier.L2_CHUNK` entries per call on L2's thread, so
  request-path reads run in between; ``purge`` keeps the applier's invariants.
  ``flush`` waits for the applier's background L1 steps too; ``close`` stops them
  (the marks stay in force for L1's reads; what is left dies with L1).
- L1 ⊆ L2 up to queued and dropped puts: every L1 entry was written through
  or promoted from L2, and removals reach both tiers in order.  Hence the
  count an invalidation returns, the distinct refs changed across both
  tiers, is ``max(l1 count, l2 count)`` (for ``purge``: the live entries it
  covered in L1, against those L2's lookup found).  Entries L2 lacks (dropped puts, its
  ``max_bytes`` eviction, another process) while L1 still holds them can make
  that count low by those entries.
- After :meth:`TieredStore.close` puts reach L1 only (counted as dropped) and
  awaited operations raise ``RuntimeError``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from stoker.cache.entry import CacheEntry
from stoker.cache.l2_queue import ALL_KEYS, DEFAULT_POLICY, L2WriteQueue, QueuePolicy
from stoker.cache.memory import MemoryStore
from stoker.cache.port import Purged
from stoker.cache.steps import STEP_BUDGET, Steps
from stoker.cache.store import CacheStore, EntryRef, sorted_refs
from stoker.clock import Clock
from stoker.http.encoding import Encoded
from stoker.purge.applier import (
    L1_CHUNK,
    L2_CHUNK,
    SETTLE_BUDGET,
    SETTLE_PAUSE,
    PurgeApplier,
    chunks,
)
from stoker.purge.list import L2, PurgeList, PurgeMark
from stoker.resilience.repeats import Repeats

log = logging.getLogger("stoker.cache")


class TieredStore:
    """L1 + L2 as one store.  See the module docstring for invariants."""

    def __init__(
        self,
        l1: MemoryStore,
        l2: CacheStore,
        clock: Clock,
        *,
        queue: QueuePolicy = DEFAULT_POLICY,
        step_budget: float = STEP_BUDGET,
        settle_budget: float = SETTLE_BUDGET,
        settle_pause: float = SETTLE_PAUSE,
        after_soft_step: Callable[[], None] | None = None,
    ) -> None:
        """``after_soft_step`` runs after each step of a soft purge, which copies the
        entries it makes stale (the serving process's collector policy passes one:
        :func:`stoker.server.heap.set_aside_young`); ``queue`` is the
        :class:`~stoker.cache.l2_queue.L2WriteQueue`'s policy.  The marks given to
        :meth:`purge` are those of ``l1``'s purge list."""
        self._l1 = l1
        self._l2 = l2
        self._clock = clock
        self._queue = L2WriteQueue(l2, clock, queue, l1.purges)
        self._reads = Repeats(log, "L2 cache read", "serving it as a miss", clock)
        self._steps = Steps(clock.monotonic, step_budget)
        self._purges = l1.purges
        self._applier = PurgeApplier(
            l1, l2, self._queue, clock, steps=self._steps,
            background=Steps(clock.monotonic, settle_budget, settle_pause),
            after_soft_step=after_soft_step)

    @property
    def purges(self) -> PurgeList:
        """The purge list this store applies marks from (see :meth:`purge`)."""
        return self._purges

    @property
    def l1(self) -> MemoryStore:
        """The memory tier, for its figures (reads and writes go through this store)."""
        return self._l1

    @property
    def dropped(self) -> int:
        """Puts dropped (queue full, or after close) since this store was made."""
        return self._queue.dropped

    # -- reads ---------------------------------------------------------------

    def get_l1(self, primary_key: str) -> list[CacheEntry] | None:
        """The hot path: L1 only, synchronous (None on an L1 miss)."""
        return self._l1.get_nowait(primary_key)

    def touch(self, entry: CacheEntry) -> None:
        """Mark ``entry`` most recently used among its key's variants (L1 order)."""
        self._l1.touch_nowait(entry.primary_key, entry.variant)

    def read_now(self, primary_key: str) -> list[CacheEntry] | None:
        """:meth:`get` without waiting: L1, else L2 where it reads inline (promoted as by
        :meth:`get`); ``None`` when L2 cannot be read without waiting."""
        hit = self._l1.get_nowait(primary_key)
        if hit is not None:
            return hit
        try:
            entries = self._l2.read_now(primary_key)
        except Exception as error:
            self._reads.failed(error)
            return []
        if entries is None:
            return None
        self._reads.answered()
        entries = self._purges.screen_l2(entries, self._purges.unapplied(L2))
        if self._queue.untouched(primary_key):  # and nothing ran between the read and here
            for entry in entries:
                self._l1.put_nowait(entry)
        return entries

    async def get(self, primary_key: str) -> list[CacheEntry]:
        hit = self._l1.get_nowait(primary_key)
        if hit is not None:
            return hit
        epoch = self._queue.epoch
        clean = self._queue.untouched(primary_key)
        try:
            entries = await self.get_l2(primary_key)
        except Exception as error:
            self._reads.failed(error)
            return []
        self._reads.answered()
        if clean and epoch == self._queue.epoch:
            for entry in entries:
                self._l1.put_nowait(entry)
        return entries

    async def get_l2(self, primary_key: str) -> list[CacheEntry]:
        """L2's live variants of ``primary_key`` as readers must see them: purges whose L2
        part is still running (when the read began or ended) applied, and the marks in
        force judging what was stored before them."""
        before = self._purges.unapplied(L2)
        entries = await self._l2.get(primary_key)
        after = self._purges.unapplied(L2)
        if after != before:
            after = list({mark.seq: mark for mark in [*before, *after]}.values())
        return self._purges.screen_l2(entries, after)

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        await self.flush()
        found = await self._l2.refs_for_tags(tags)
        return sorted_refs(self._l1.refs_for_tags_nowait(tags).union(found))

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        await self.flush()
        found = await self._l2.refs_for_url_prefix(prefix)
        return sorted_refs(self._l1.refs_for_url_prefix_nowait(prefix).union(found))

    async def stats(self) -> dict[str, int]:
        """L2 figures (after a flush), plus ``l1_entries``, ``l1_bytes``, ``pending``,
        ``pending_bytes`` and ``l2_dropped``."""
        await self.flush()
        l1 = self._l1.stats_nowait()
        combined = dict(await self._l2.stats())
        combined.update(l1_entries=l1["entries"], l1_bytes=l1["bytes"], pending=self.pending(),
                        pending_bytes=self.pending_bytes(), l2_dropped=self.dropped)
        return combined

    async def count(self) -> int:
        """Entries stored now, not waiting for queued writes: the larger of L1's count and
        L2's (expired entries not yet dropped included); L1's alone while L2 does not
        answer (the queue's last attempt failed, or the count does)."""
        in_l1 = self._l1.stats_nowait()["entries"]
        if self._queue.failing:
            return in_l1
        try:
            return max(in_l1, await self._l2.count())
        except Exception as error:
            log.warning("L2 did not count its entries (%s: %s); counting L1's alone",
                        type(error).__name__, error)
            return in_l1

    def pending(self) -> int:
        """L2 operations queued or in progress, flush barriers not counted (for status pages)."""
        return self._queue.pending()

    def pending_bytes(self) -> int:
        """Bytes of the puts queued for L2 (bounded by ``max_queue_bytes``)."""
        return self._queue.pending_bytes()

    # -- writes --------------------------------------------------------------

    async def put(self, entry: CacheEntry) -> None:
        """Write L1 now; queue the L2 write (not awaited)."""
        self._l1.put_nowait(entry)
        self._queue.put(entry)

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        """:meth:`put` each (the writer batches consecutive puts anyway)."""
        for entry in entries:
            await self.put(entry)

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        """Give ``entry``'s stored version its compressed forms (as
        :meth:`~stoker.cache.store.CacheStore.add_codings`): L1 now, L2 queued (not
        awaited; dropped like a put when the queue is full: L2 then keeps them due)."""
        self._l1.add_codings_nowait(entry, encoded)
        self._queue.add_codings(entry, encoded)

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        refs = list(refs)
        in_l1 = self._l1.delete_nowait(refs)
        keys = frozenset(ref.primary_key for ref in refs)
        in_l2 = await self._queue.submit("delete", lambda: self._l2.delete(refs), keys)
        return max(in_l1, in_l2)

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        keys = frozenset(primary_keys)
        in_l1 = self._l1.delete_primary_nowait(keys)
        in_l2 = await self._queue.submit("delete_primary",
                                         lambda: self._l2.delete_primary(keys), keys)
        return max(in_l1, in_l2)

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        refs = list(refs)
        in_l1 = self._l1.soften_nowait(refs, now)
        keys = frozenset(ref.primary_key for ref in refs)
        in_l2 = await self._queue.submit("soften", lambda: self._l2.soften(refs, now), keys)
        return max(in_l1, in_l2)

    async def delete_except_version(self, version: str) -> int:
        """Delete entries of other versions in steps (L1 keys in event-loop steps of
        ``step_budget``, :data:`L2_CHUNK` entries per queued L2 delete), then L2's
        stragglers."""
        prefix = f"{version}|"
        in_l1 = 0
        async for keys in self._steps.chunks(self._l1.primary_keys_nowait(), L1_CHUNK):
            in_l1 += self._l1.delete_primary_nowait([key for key in keys
                                                     if not key.startswith(prefix)])
        found = await self._queue.submit("refs_for_url_prefix",
                                         lambda: self._l2.refs_for_url_prefix(""), frozenset())
        in_l2 = 0
        for refs in chunks([ref for ref in found if not ref.primary_key.startswith(prefix)],
                            L2_CHUNK):
            in_l2 += await self._queue.submit("delete", partial(self._l2.delete, refs),
                                              frozenset(ref.primary_key for ref in refs))
        in_l2 += await self._queue.submit(
            "delete_except_version", lambda: self._l2.delete_except_version(version), ALL_KEYS
        )
        return max(in_l1, in_l2)

    async def purge(self, mark: PurgeMark) -> Purged:
        """Apply a recorded purge (of everything hard only when the cache version could not
        be bumped), as
        :meth:`~stoker.purge.applier.PurgeApplier.apply`: in force for every read
        from the call on; returns once L1's walk is done or handed to the background and
        L2's covered entries are looked up."""
        return await self._applier.apply(mark)

    async def written(self, primary_key: str) -> None:
        """Return once what was queued for ``primary_key`` has reached L2 (or was dropped)."""
        await self._queue.settled(primary_key)

    async def flush(self) -> None:
        """Wait until every operation queued so far has reached L2 (or was dropped), and
        every purge's background L1 steps started so far are done."""
        await self._applier.flush()
        await self._queue.flush()

    async def close(self, *, flush: bool = True) -> None:
        """Stop the purges' background L1 steps (their marks stay in force for L1's reads), flush
        (unless ``flush=False``), stop the writer, close L2 (idempotent).

        Whether the flush succeeds, fails (:class:`~stoker.cache.l2_queue.L2WriteTimeout`) or is
        cancelled, the writer is stopped and L2 closed; what stayed unwritten
        is logged.
        """
        if self._queue.closed:
            return
        await self._applier.close()  # L1 goes with the process: what is left needs no work
        try:
            if flush:
                await self.flush()
        finally:
            await self._queue.close()
            await self._l2.close()

