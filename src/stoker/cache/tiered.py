"""Two cache tiers behind one ``CacheStore``: memory L1 in front of a persistent L2.

Read: L1 hit → return | L1 miss → L2 → promote the live variants into L1 →
return.  A failing L2 read is logged and answered as a miss (the proxy then
goes to the origin rather than failing the request).  Entries carry
absolute timestamps, so a promoted copy keeps exactly its *remaining*
lifetime.

Write: ``put`` (and ``add_codings``) writes L1 synchronously and queues the
L2 write; the caller never waits for disk.  Invalidations (``delete``, ``delete_primary``,
``soften``, ``delete_except_version``) apply to L1 at once, then go through
the same queue for L2 and are awaited.  A recorded purge (``purge``, given the
ledger's :class:`~stoker.cache.ledger.PurgeMark`) changes L1 in steps and
returns once L2's covered entries are looked up; its L2 changes go on in the
background as one queued operation.

Invariants:
- ONE writer task applies L2 operations in FIFO order; an operation leaves
  the queue only once it has succeeded or (a put only) been dropped, so a
  later operation never overtakes an earlier one (a queued ``put`` can never
  resurrect an entry in L2 after a later ``delete``).  Consecutive puts at the
  head of the queue are written by one L2 call (``put_many``, one SQLite
  transaction, up to :data:`PUT_BATCH`), so a burst of misses costs L2 one
  commit and one thread hand-off per batch, not per entry.
- The queue is bounded: the puts it holds (``add_codings`` counts as a put
  here) total at most ``max_queue_bytes``
  (``CacheEntry.meta_size``, the bytes the queue keeps in memory).  When a
  put would exceed that, the OLDEST queued puts are dropped (L1 keeps them,
  L2 forgets them; counted in ``dropped`` and logged once per burst).
  Invalidations, flushes and version operations are never dropped.
- A failing L2 operation is logged on ``stoker.cache`` and retried with
  exponential backoff (``retry_delay`` doubling up to ``max_retry_delay``,
  slept on the injected clock) until it succeeds or, if it is a put, is
  dropped; it is never raised to the caller.
- An awaited operation (an invalidation, ``flush``, ``stats``, the
  ``refs_for_*`` queries, ``close``) fails with :class:`L2WriteTimeout` once
  it has waited ``write_timeout`` seconds on the injected clock's monotonic
  time.  The deadline is checked whenever an L2 attempt fails and whenever an
  operation is queued; an L2 call that hangs without failing is bounded by
  the caller (``Stoker.close`` uses ``shutdown_timeout``).  A timed-out
  operation stays queued and still reaches L2 in order.
- Promotion never undoes a write: an L2 result is copied into L1 only if no
  L2 operation touching that primary key (or all keys) was queued when the
  read began and no operation at all was queued while it ran.  A purge's
  operation touches no key in this sense: its mark screens reads instead.
- Nothing purged is read back from L2: from ``purge`` until its L2 operation
  has left the queue, every L2 read (``get``, ``get_l2``) drops the entries
  the mark covers (hard) or returns them stale from the purge (soft), using
  every mark active when the read began or ended.  A screened result is what
  L2 holds once the operation is done, so promoting it is safe.
- No O(entries) step on the event loop: ``purge`` and
  ``delete_except_version`` work through L1 in steps of ``step_budget``
  seconds (:class:`~stoker.cache.steps.Steps`, :data:`L1_CHUNK` entries or
  keys at a time), yielding between steps, and change L2 :data:`L2_CHUNK`
  entries per call on L2's thread, so request-path reads run in between.  A
  purge's L2 changes start once its L1 steps are done, or its L1 part deferred (its
  L2 lookup runs alongside them).
- A purge of tags or URLs (no prefixes, not everything) does not walk L1 before
  it returns: it hands L1 the covered entries as one deferred purge
  (:meth:`~stoker.cache.memory.MemoryStore.defer_purge_nowait`), in force for every
  L1 read from then on, and applies it in the background in steps of
  ``settle_budget`` seconds, each followed by ``settle_pause`` seconds for requests.
  ``flush`` waits for those too; ``close`` stops them (what is left dies with L1).
  The purge's L2 chunks rest as long as each took (:func:`l2_pause`) while no other
  operation is queued behind them.
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

import asyncio
import logging
import math
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, TypeVar

from stoker.cache.entry import CacheEntry
from stoker.cache.ledger import PurgeMark
from stoker.cache.memory import MemoryStore
from stoker.cache.steps import STEP_BUDGET, Steps
from stoker.cache.store import PRIMARY_KEY, CacheStore, EntryRef, sorted_refs
from stoker.clock import Clock
from stoker.http.encoding import Encoded

T = TypeVar("T")

log = logging.getLogger("stoker.cache")

ALL_KEYS = None
"""``keys`` of an operation that may touch any primary key."""
DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024
DEFAULT_WRITE_TIMEOUT = 10.0
SETTLE_BUDGET = 0.0005
"""Seconds of event-loop time one background step of a deferred L1 purge may use."""
SETTLE_PAUSE = 0.002
"""Seconds a deferred L1 purge leaves the loop to requests after each of its steps."""
L1_CHUNK = 50
"""L1 entries changed (or primary keys scanned) between two looks at the clock in a purge
or reclaim; a step takes as many chunks as fit its time budget (:mod:`stoker.cache.steps`)."""
L2_CHUNK = 100
"""L2 entries changed per L2 call of a purge or reclaim (request-path reads run between)."""
PUT_BATCH = 64
"""Most queued puts written in one L2 call (one SQLite transaction)."""


class L2WriteTimeout(Exception):
    """An awaited L2 operation did not complete within ``write_timeout``."""


@dataclass(slots=True, eq=False)
class _Op:
    """One queued L2 operation."""

    label: str
    run: Callable[[], Awaitable[object]]
    keys: frozenset[str] | None
    done: asyncio.Future[Any] | None = None
    size: int = 0
    """Queue bytes of a put (only puts, which have ``size > 0``, may be dropped)."""
    deadline: float = math.inf
    """Monotonic time by which ``done`` must be settled."""
    dropped: bool = False
    shadow: int | None = None
    """The key in ``TieredStore._shadows`` of the purge this op applies to L2."""
    entry: CacheEntry | None = None
    """The entry a put writes (while it is not dropped): consecutive puts are batched."""


class Purged(NamedTuple):
    """What :meth:`TieredStore.purge` found: distinct entries covered (the larger tier's
    count) and their primary keys, sorted."""

    entries: int
    primary_keys: list[str]


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
        max_queue_bytes: int = DEFAULT_QUEUE_BYTES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        step_budget: float = STEP_BUDGET,
        settle_budget: float = SETTLE_BUDGET,
        settle_pause: float = SETTLE_PAUSE,
        after_soft_step: Callable[[], None] | None = None,
    ) -> None:
        """``after_soft_step`` runs after each step of a soft purge, which copies the
        entries it makes stale (the serving process's collector policy passes one:
        :func:`stoker.heap.set_aside_young`)."""
        self._l1 = l1
        self._after_soft_step = after_soft_step
        self._l2 = l2
        self._clock = clock
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._max_queue_bytes = max_queue_bytes
        self._write_timeout = write_timeout
        self._steps = Steps(clock.monotonic, step_budget)
        self._settle_steps = Steps(clock.monotonic, settle_budget, settle_pause)
        self._settling: set[asyncio.Task[None]] = set()
        self._ops: deque[_Op] = deque()
        self._puts: deque[_Op] = deque()  # queued puts not yet applied or dropped, in order
        self._awaited: deque[_Op] = deque()  # queued awaited ops not yet settled, in order
        self._queued_bytes = 0
        self._noops = 0  # flush barriers and dropped puts still in ``_ops``
        self._burst = 0  # puts dropped since the queue last ran empty
        self._last_error: Exception | None = None
        self._closed = False
        self._writer: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._epoch = 0
        self._dirty: dict[str, int] = {}
        self._dirty_all = 0
        self._shadows: dict[int, PurgeMark] = {}
        self._shadow_seq = 0
        self.dropped = 0
        """Puts dropped (queue full, or after close) since this store was made."""

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
        except Exception:
            log.warning("L2 cache read failed; serving it as a miss", exc_info=True)
            return []
        if entries is None:
            return None
        if self._shadows:
            entries = _screen(entries, self._shadows.values())
        if self._untouched(primary_key):  # and nothing ran between the read and here
            for entry in entries:
                self._l1.put_nowait(entry)
        return entries

    async def get(self, primary_key: str) -> list[CacheEntry]:
        hit = self._l1.get_nowait(primary_key)
        if hit is not None:
            return hit
        epoch = self._epoch
        clean = self._untouched(primary_key)
        try:
            entries = await self.get_l2(primary_key)
        except Exception:
            log.warning("L2 cache read failed; serving it as a miss", exc_info=True)
            return []
        if clean and epoch == self._epoch:
            for entry in entries:
                self._l1.put_nowait(entry)
        return entries

    async def get_l2(self, primary_key: str) -> list[CacheEntry]:
        """L2's live variants of ``primary_key`` as readers must see them: purges whose L2
        part is still running (when the read began or ended) applied."""
        shadows = self._shadows.copy()
        entries = await self._l2.get(primary_key)
        shadows.update(self._shadows)
        return _screen(entries, shadows.values()) if shadows else entries

    def _untouched(self, primary_key: str) -> bool:
        """No L2 operation touching ``primary_key`` (or every key) is queued: what L2 holds
        for it may be promoted into L1."""
        return self._dirty_all == 0 and primary_key not in self._dirty

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
        L2's (expired entries not yet dropped included)."""
        return max(self._l1.stats_nowait()["entries"], await self._l2.count())

    def pending(self) -> int:
        """L2 operations queued or in progress, flush barriers not counted (for status pages)."""
        return len(self._ops) - self._noops

    def pending_bytes(self) -> int:
        """Bytes of the puts queued for L2 (bounded by ``max_queue_bytes``)."""
        return self._queued_bytes

    # -- writes --------------------------------------------------------------

    async def put(self, entry: CacheEntry) -> None:
        """Write L1 now; queue the L2 write (not awaited)."""
        self._l1.put_nowait(entry)
        if self._closed:
            self.dropped += 1
            return
        self._enqueue(_Op("put", lambda: self._l2.put(entry), frozenset((entry.primary_key,)),
                          size=entry.meta_size(), entry=entry))

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        """:meth:`put` each (the writer batches consecutive puts anyway)."""
        for entry in entries:
            await self.put(entry)

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        """Give ``entry``'s stored version its compressed forms (as
        :meth:`~stoker.cache.store.CacheStore.add_codings`): L1 now, L2 queued (not
        awaited; dropped like a put when the queue is full: L2 then keeps them due)."""
        self._l1.add_codings_nowait(entry, encoded)
        if self._closed:
            self.dropped += 1
            return
        size = 256 + sum(len(data) for _, data in encoded)
        self._enqueue(_Op("add_codings", lambda: self._l2.add_codings(entry, encoded),
                          frozenset((entry.primary_key,)), size=size))

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
        """Delete entries of other versions in steps (L1 keys in event-loop steps of
        ``step_budget``, :data:`L2_CHUNK` entries per queued L2 delete), then L2's
        stragglers."""
        prefix = f"{version}|"
        in_l1 = 0
        async for keys in self._steps.chunks(self._l1.primary_keys_nowait(), L1_CHUNK):
            in_l1 += self._l1.delete_primary_nowait([key for key in keys
                                                     if not key.startswith(prefix)])
        found = await self._submit("refs_for_url_prefix",
                                   lambda: self._l2.refs_for_url_prefix(""), frozenset())
        in_l2 = 0
        for refs in _chunks([ref for ref in found if not ref.primary_key.startswith(prefix)],
                            L2_CHUNK):
            in_l2 += await self._submit("delete", partial(self._l2.delete, refs),
                                        frozenset(ref.primary_key for ref in refs))
        in_l2 += await self._submit(
            "delete_except_version", lambda: self._l2.delete_except_version(version), ALL_KEYS
        )
        return max(in_l1, in_l2)

    async def purge(self, mark: PurgeMark) -> Purged:
        """Apply a recorded purge (not of everything hard: that is a version bump).

        L1 changes in event-loop steps of ``step_budget``; returns once L1 is done and
        L2's covered entries have been looked up.  L2 changes continue in the
        background, one queued operation in :data:`L2_CHUNK` steps; until it is done,
        :meth:`get_l2` applies ``mark`` to what it reads.
        """
        found: asyncio.Future[list[EntryRef]] = asyncio.get_running_loop().create_future()
        l1_done = asyncio.Event()
        self._shadow_seq += 1
        self._queue_awaited(_Op("purge", partial(self._purge_l2, mark, l1_done, found),
                                frozenset(), found, shadow=self._shadow_seq))
        self._shadows[self._shadow_seq] = mark  # before any await: reads are screened
        try:
            if mark.prefixes or mark.everything:
                in_l1, l1_keys = await self._purge_l1(mark)
            else:
                in_l1, l1_keys = self._defer_l1(mark)
        finally:
            l1_done.set()
        in_l2 = await found
        keys = list(dict.fromkeys(map(PRIMARY_KEY, in_l2)))  # sorted, as in_l2 is
        only_l1 = l1_keys.difference(keys)  # dropped puts
        if only_l1:
            keys = sorted(keys + list(only_l1))
        return Purged(max(in_l1, len(in_l2)), keys)

    async def flush(self) -> None:
        """Wait until every operation queued so far has reached L2 (or was dropped), and
        every deferred L1 purge made so far is applied."""
        if self._settling:
            await asyncio.gather(*self._settling)
        if self._ops or self._closed:
            await self._submit("flush", _nothing, frozenset())

    async def close(self, *, flush: bool = True) -> None:
        """Stop applying deferred L1 purges (they stay in force for L1's reads), flush
        (unless ``flush=False``), stop the writer, close L2 (idempotent).

        Whether the flush succeeds, fails (:class:`L2WriteTimeout`) or is
        cancelled, the writer is stopped and L2 closed; what stayed unwritten
        is logged.
        """
        if self._closed:
            return
        for task in self._settling:  # L1 goes with the process: what is left needs no work
            task.cancel()
        await asyncio.gather(*self._settling, return_exceptions=True)
        try:
            if flush:
                await self.flush()
        finally:
            self._closed = True
            await self._stop()

    # -- the L2 writer ----------------------------------------------------------

    async def _submit(
        self, label: str, run: Callable[[], Awaitable[T]], keys: frozenset[str] | None
    ) -> T:
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue_awaited(_Op(label, run, keys, done))
        return await done

    def _queue_awaited(self, op: _Op) -> None:
        """Queue ``op``, whose ``done`` its caller awaits, with its ``write_timeout``."""
        if self._closed:
            raise RuntimeError(f"cache store used after close(): cannot {op.label}")
        op.deadline = self._clock.monotonic() + self._write_timeout
        self._enqueue(op)

    # -- purges ----------------------------------------------------------------

    async def _purge_l1(self, mark: PurgeMark) -> tuple[int, set[str]]:
        """Apply ``mark`` to L1 in steps; return how many live entries it covered, and
        their primary keys."""
        found = [self._l1.tagged_nowait(sorted(mark.tags))]
        async for keys in self._steps.chunks(sorted(mark.keys), L1_CHUNK):
            found.append([EntryRef(entry.primary_key, entry.variant)
                          for key in keys for entry in self._l1.get_nowait(key) or ()])
        if mark.prefixes or mark.everything:
            prefixes = ("",) if mark.everything else mark.prefixes
            async for keys in self._steps.chunks(self._l1.primary_keys_nowait(), L1_CHUNK):
                found.extend(list(self._l1.refs_for_url_prefix_nowait(prefix, keys))
                             for prefix in prefixes)
        covered, primary_keys = 0, set[str]()
        async for chunk in self._steps.chunks(_union(found), L1_CHUNK,
                                              self._after_soft_step if mark.soft else None):
            live = self._l1.purge_nowait(chunk, mark.now if mark.soft else None)
            covered += len(live)
            primary_keys.update(map(PRIMARY_KEY, live))
        return covered, primary_keys

    def _defer_l1(self, mark: PurgeMark) -> tuple[int, set[str]]:
        """Hand L1 ``mark`` (tags and keys only) as a deferred purge, applied in the
        background; return the entries it covers (expired ones not yet dropped included)
        and their primary keys."""
        refs = self._l1.covered_nowait(sorted(mark.tags), sorted(mark.keys))
        covered, primary_keys = len(refs), {key for key, _ in refs}
        deferred = self._l1.defer_purge_nowait(refs, mark.now if mark.soft else None)

        def settle() -> bool:
            self._l1.settle_nowait(deferred, L1_CHUNK)
            return bool(deferred.refs)

        task = asyncio.get_running_loop().create_task(self._settle_steps.repeat(
            settle, self._after_soft_step if mark.soft else None))  # soft: copies
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)
        return covered, primary_keys

    async def _purge_l2(self, mark: PurgeMark, l1_done: asyncio.Event,
                        found: asyncio.Future[list[EntryRef]]) -> None:
        """The queued L2 part of :meth:`purge`: look up (answering ``found``), then, once
        L1's walk is done or its purge deferred (so the event loop's walk and the L2 thread
        do not contend for the GIL), change :data:`L2_CHUNK` entries per call, resting
        after each as :func:`l2_pause` says (a retry after a failure looks up again)."""
        refs = await self._l2_refs(mark)
        if not found.done():
            found.set_result(refs)
        await l1_done.wait()
        for chunk in _chunks(refs, L2_CHUNK):
            started = self._clock.monotonic()
            if mark.soft:
                await self._l2.soften(chunk, mark.now)
            else:
                await self._l2.delete(chunk)
            waiting = len(self._ops) - 1 - self._noops  # flush barriers hold nothing back
            await asyncio.sleep(l2_pause(self._clock.monotonic() - started, waiting))

    async def _l2_refs(self, mark: PurgeMark) -> list[EntryRef]:
        found = [await self._l2.refs_for_tags(sorted(mark.tags))] if mark.tags else []
        for prefix in ("",) if mark.everything else mark.prefixes:
            found.append(await self._l2.refs_for_url_prefix(prefix))
        for key in sorted(mark.keys):
            found.append([EntryRef(entry.primary_key, entry.variant)
                          for entry in await self._l2.get(key)])
        return _union(found)

    def _enqueue(self, op: _Op) -> None:
        self._ops.append(op)
        if op.run is _nothing:
            self._noops += 1
        self._mark_dirty(op)
        if op.size:
            self._puts.append(op)
            self._queued_bytes += op.size
            self._shed()
        if op.done is not None:
            self._awaited.append(op)
        self._expire()
        self._wake_writer()

    def _mark_dirty(self, op: _Op) -> None:
        """Record that ``op`` may change its keys in L2 (undone by :meth:`_settle`)."""
        self._epoch += 1
        if op.keys is None:
            self._dirty_all += 1
        else:
            for key in op.keys:
                self._dirty[key] = self._dirty.get(key, 0) + 1

    def _wake_writer(self) -> None:
        if self._writer is None or self._writer.done():
            self._wake = asyncio.Event()
            self._writer = asyncio.get_running_loop().create_task(
                self._drain(self._wake), name="stoker-cache-l2-writer"
            )
        elif self._wake is not None:
            self._wake.set()

    def _shed(self) -> None:
        """Drop the oldest queued puts until the queue is within ``max_queue_bytes``."""
        while self._queued_bytes > self._max_queue_bytes and self._puts:
            op = self._puts.popleft()
            op.dropped = True
            op.run, op.entry = _nothing, None  # let go of the entry
            self._queued_bytes -= op.size
            self._noops += 1
            self.dropped += 1
            self._burst += 1
            if self._burst == 1:
                log.warning(
                    "L2 write queue is full (l2_queue_max_bytes=%d); dropping the oldest "
                    "queued cache writes until L2 catches up (last L2 error: %r)",
                    self._max_queue_bytes, self._last_error,
                )  # fmt: skip

    async def _drain(self, wake: asyncio.Event) -> None:
        while True:
            if not self._ops:
                self._end_burst()
                wake.clear()
                await wake.wait()
                continue
            batch = self._put_batch()
            if len(batch) > 1:
                if not _all_dropped(batch):
                    await self._apply("put", partial(self._put_many, batch),
                                      partial(_all_dropped, batch))
                for op in batch:
                    self._ops.popleft()
                    self._finish(op, None)
                continue
            op = self._ops[0]
            result = None if op.dropped else await self._apply(
                op.label, op.run, partial(_all_dropped, [op]))
            self._ops.popleft()
            self._finish(op, result)

    async def _put_many(self, batch: list[_Op]) -> None:
        """Write the entries of ``batch``'s puts not dropped (by the time of this attempt)."""
        await self._l2.put_many([op.entry for op in batch if op.entry is not None])

    def _put_batch(self) -> list[_Op]:
        """The puts at the head of the queue (up to :data:`PUT_BATCH`, dropped ones
        included: they are finished in order, not written)."""
        batch: list[_Op] = []
        for op in self._ops:
            if op.label != "put" or len(batch) == PUT_BATCH:
                break
            batch.append(op)
        return batch

    async def _apply(self, label: str, run: Callable[[], Awaitable[object]],
                     dropped: Callable[[], bool]) -> object:
        """Run ``run`` until it succeeds (or, puts, they are ``dropped``), backing off between
        failures; ``run`` is called anew on each attempt."""
        delay = self._retry_delay
        failures = 0
        while True:
            try:
                result = await run()
            except Exception as error:
                failures += 1
                self._last_error = error
                log.warning(
                    "L2 cache %s failed (attempt %d); retrying in %.2fs",
                    label, failures, delay, exc_info=True,
                )  # fmt: skip
            else:
                self._last_error = None
                return result
            self._expire()
            await self._clock.sleep(self._backoff(delay))
            self._expire()
            if dropped():
                return None
            delay = min(delay * 2, self._max_retry_delay)

    def _backoff(self, delay: float) -> float:
        """``delay``, cut short to wake at the earliest waiter's deadline."""
        if not self._awaited:
            return delay
        return max(0.0, min(delay, self._awaited[0].deadline - self._clock.monotonic()))

    def _expire(self) -> None:
        """Fail every awaited operation whose deadline has passed (it stays queued)."""
        now = self._clock.monotonic()
        while self._awaited and self._awaited[0].deadline <= now:
            op = self._awaited.popleft()
            if op.done is not None and not op.done.done():
                op.done.set_exception(L2WriteTimeout(
                    f"the L2 store did not accept writes for {self._write_timeout:g} s "
                    f"(l2_write_timeout): {op.label} is still queued behind {self.pending()} "
                    f"operations and will reach L2 when it recovers; last L2 error: "
                    f"{self._last_error!r}"))

    def _finish(self, op: _Op, result: object) -> None:
        """Account for ``op`` leaving the queue head and hand its result to its waiter."""
        self._settle(op)
        if op.shadow is not None:
            del self._shadows[op.shadow]
        if op.run is _nothing:
            self._noops -= 1
        elif op.size:
            self._puts.popleft()  # the oldest queued put is this one (FIFO)
            self._queued_bytes -= op.size
        if self._awaited and self._awaited[0] is op:
            self._awaited.popleft()
        if op.done is not None and not op.done.done():
            op.done.set_result(result)

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

    def _end_burst(self) -> None:
        if self._burst:
            log.warning("L2 write queue drained; %d cache writes were dropped while it was "
                        "full", self._burst)
            self._burst = 0

    async def _stop(self) -> None:
        """Stop the writer, fail what it left queued (logged), close L2."""
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.wait([self._writer])
            self._writer = None
        self._abandon()
        await self._l2.close()

    def _abandon(self) -> None:
        left = [op for op in self._ops if not op.dropped]
        kinds = Counter(op.label for op in left if op.run is not _nothing)
        if kinds:
            log.warning(
                "cache store closed with %d L2 operations not written (%s; %d bytes of "
                "puts); L2 keeps what it had before them",
                kinds.total(), ", ".join(f"{n} {label}" for label, n in sorted(kinds.items())),
                self._queued_bytes,
            )  # fmt: skip
        for op in left:
            if op.done is not None and not op.done.done():
                op.done.set_exception(RuntimeError(f"cache store closed before its {op.label} "
                                                   "reached L2"))
        self._ops.clear()
        self._puts.clear()
        self._awaited.clear()
        self._queued_bytes = self._noops = 0
        self._dirty.clear()
        self._dirty_all = 0


async def _nothing() -> None:
    """The no-op a flush queues as a barrier (and a dropped put becomes)."""


def _chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start:start + size] for start in range(0, len(items), size)]


def _all_dropped(ops: list[_Op]) -> bool:
    return all(op.dropped for op in ops)


def l2_pause(took: float, waiting: int) -> float:
    """Seconds a purge's L2 part rests after a chunk that took ``took`` seconds, with
    ``waiting`` operations queued behind it: as long as the chunk took (L2's thread then
    uses at most half the CPU the hits share with it), or none when operations wait, so
    writes queued behind a purge are not held back longer."""
    return 0.0 if waiting else max(took, 0.0)


def _union(found: list[list[EntryRef]]) -> list[EntryRef]:
    """The distinct refs of ``found``, sorted (a lone non-empty list as is: each tier's
    lookups give distinct refs, and L2's sorted)."""
    lists = [refs for refs in found if refs]
    if len(lists) == 1:
        return lists[0]
    return sorted_refs({ref for refs in lists for ref in refs})


def _screen(entries: list[CacheEntry], marks: Collection[PurgeMark]) -> list[CacheEntry]:
    """``entries`` with ``marks`` applied: covered ones dropped (hard) or softened."""
    screened = []
    for entry in entries:
        for mark in marks:
            if mark.covers(entry):
                if not mark.soft:
                    break
                entry = entry.softened(mark.now)
        else:
            screened.append(entry)
    return screened
