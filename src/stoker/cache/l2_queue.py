"""The L2 write queue: one writer task applying a tier's L2 operations in order.

A caller queues a put (not awaited) or an awaited operation (an invalidation, a
query that must see every write queued before it, a flush barrier) and goes on; the
writer applies them to L2 one after another.

Invariants:
- ONE writer task applies L2 operations in FIFO order; an operation leaves
  the queue only once it has succeeded or (a put only) been dropped, so a
  later operation never overtakes an earlier one (a queued ``put`` can never
  resurrect an entry in L2 after a later ``delete``).  Consecutive puts at the
  head of the queue are written by one L2 call (``put_many``, one SQLite
  transaction, up to :data:`PUT_BATCH`), so a burst of misses costs L2 one
  commit and one thread hand-off per batch, not per entry.
- A queued put never writes back what a purge covered: right before each attempt
  its entry is judged by the marks the purge list (given ``purges``) recorded since the
  put was queued (:meth:`~stoker.purge.list.PurgeList.check`; whoever queued it
  judged it up to then, the fetch with no ``await`` before the put): not written
  (hard), written softened (soft), or as it is.  A put queued while L2 was down and
  written on its recovery after a purge, this process's or one its relay put in force,
  is caught so.
- The queue is bounded: the puts it holds (``add_codings`` counts as a put
  here) total at most ``max_queue_bytes``
  (``CacheEntry.meta_size``, the bytes the queue keeps in memory).  When a
  put would exceed that, the OLDEST queued puts are dropped (L2 forgets them;
  counted in ``dropped`` and logged once per burst, the burst ending when the
  queue runs empty).  Awaited operations are never dropped.
- A failing L2 operation is logged on ``stoker.cache`` as
  :class:`~stoker.resilience.repeats.Repeats` says (when the failures start, every
  ``SAY_EVERY`` seconds with a count, when a write succeeds again: never a line per
  attempt) and retried with exponential backoff (``retry_delay`` doubling up to ``max_retry_delay``,
  slept on the injected clock) until it succeeds or, if it is a put, is
  dropped; it is never raised to the caller.
- An awaited operation fails with :class:`L2WriteTimeout` once it has waited
  ``write_timeout`` seconds on the injected clock's monotonic time.  The
  deadline is checked whenever an L2 attempt fails and whenever an operation
  is queued (a backoff is cut short to wake at the earliest deadline); an L2
  call that hangs without failing is bounded by the caller (``Stoker.close``
  uses ``shutdown_timeout``).  A timed-out operation stays queued and still
  reaches L2 in order.
- Every queued operation names the primary keys it may change in L2 (or
  :data:`ALL_KEYS`); :meth:`L2WriteQueue.untouched` is true for a key only while
  no queued operation names it, and :attr:`L2WriteQueue.epoch` changes whenever an
  operation is queued.  A tier copies an L2 read into L1 only if the key was
  untouched when the read began and the epoch is unchanged after it: promotion
  never undoes a queued write.
- After :meth:`L2WriteQueue.close` puts are counted as dropped, awaited
  operations raise ``RuntimeError``, and what was left queued is logged and its
  waiters failed.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from stoker.cache.entry import CacheEntry
from stoker.cache.store import CacheStore
from stoker.clock import Clock
from stoker.http.encoding import Encoded
from stoker.purge.list import PurgeList
from stoker.resilience.repeats import Repeats

T = TypeVar("T")

log = logging.getLogger("stoker.cache")

ALL_KEYS = None
"""``keys`` of an operation that may touch any primary key."""
DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024
DEFAULT_WRITE_TIMEOUT = 10.0
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
    left: Callable[[], object] | None = None
    """Called once the operation has left the queue's head (succeeded or dropped)."""
    entry: CacheEntry | None = None
    """The entry a put writes (while it is not dropped): consecutive puts are batched."""
    since: int = 0
    """The purge list's sequence when a put was queued (its entry was judged up to it)."""


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """How an :class:`L2WriteQueue` retries, bounds and times out (see the module
    invariants)."""

    retry_delay: float = 0.5
    max_retry_delay: float = 30.0
    max_queue_bytes: int = DEFAULT_QUEUE_BYTES
    write_timeout: float = DEFAULT_WRITE_TIMEOUT


DEFAULT_POLICY = QueuePolicy()


class L2WriteQueue:
    """The queued writes to one L2.  See the module docstring for invariants."""

    def __init__(self, l2: CacheStore, clock: Clock,
                 policy: QueuePolicy = DEFAULT_POLICY, purges: PurgeList | None = None) -> None:
        """``purges`` judges each put right before it is written (none: written as is)."""
        self._l2 = l2
        self._purges = purges
        self._clock = clock
        self._retry_delay = policy.retry_delay
        self._max_retry_delay = policy.max_retry_delay
        self._max_queue_bytes = policy.max_queue_bytes
        self._write_timeout = policy.write_timeout
        self._ops: deque[_Op] = deque()
        self._puts: deque[_Op] = deque()  # queued puts not yet applied or dropped, in order
        self._awaited: deque[_Op] = deque()  # queued awaited ops not yet settled, in order
        self._queued_bytes = 0
        self._noops = 0  # flush barriers and dropped puts still in ``_ops``
        self._burst = 0  # puts dropped since the queue last ran empty
        self._last_error: Exception | None = None
        self._failing = Repeats(log, "L2 cache write", lambda: (
            f"{self.pending()} operations queued, retried with backoff up to "
            f"{self._max_retry_delay:g} s"), clock)
        self._closed = False
        self._writer: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._epoch = 0
        self._dirty: dict[str, int] = {}
        self._dirty_all = 0
        self._written: dict[str, list[asyncio.Future[None]]] = {}
        self.dropped = 0
        """Puts dropped (queue full, or after close) since this queue was made."""

    # -- what callers read -----------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def failing(self) -> bool:
        """The last L2 attempt failed (no later one succeeded): L2 is not answering."""
        return self._last_error is not None

    @property
    def epoch(self) -> int:
        """A number that changes whenever an operation is queued."""
        return self._epoch

    def untouched(self, primary_key: str) -> bool:
        """No queued operation may change ``primary_key`` (or every key) in L2."""
        return self._dirty_all == 0 and primary_key not in self._dirty

    async def settled(self, primary_key: str) -> None:
        """Return once no queued operation names ``primary_key`` (what was queued for it
        has reached L2, or was dropped)."""
        if primary_key not in self._dirty:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._written.setdefault(primary_key, []).append(waiter)
        await waiter

    def pending(self) -> int:
        """L2 operations queued or in progress, flush barriers and dropped puts not counted."""
        return len(self._ops) - self._noops

    def pending_bytes(self) -> int:
        """Bytes of the puts queued for L2 (bounded by ``max_queue_bytes``)."""
        return self._queued_bytes

    # -- queueing --------------------------------------------------------------

    def put(self, entry: CacheEntry) -> None:
        """Queue L2's write of ``entry`` (not awaited)."""
        op = _Op("put", _nothing, frozenset((entry.primary_key,)), size=entry.meta_size(),
                 entry=entry, since=self._purges.seq if self._purges is not None else 0)
        op.run = partial(self._put_many, [op])
        self._queue_put(op)

    def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        """Queue L2's :meth:`~stoker.cache.store.CacheStore.add_codings` (not awaited;
        dropped like a put when the queue is full)."""
        size = 256 + sum(len(data) for _, data in encoded)
        self._queue_put(_Op("add_codings", partial(self._l2.add_codings, entry, encoded),
                            frozenset((entry.primary_key,)), size=size))

    async def submit(
        self, label: str, run: Callable[[], Awaitable[T]], keys: frozenset[str] | None
    ) -> T:
        """Queue ``run`` (which may change ``keys`` in L2) and wait for its result."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.queue_awaited(label, run, keys, done)
        return await done

    def queue_awaited(self, label: str, run: Callable[[], Awaitable[object]],
                      keys: frozenset[str] | None, done: asyncio.Future[Any], *,
                      left: Callable[[], object] | None = None) -> None:
        """Queue ``run``, whose ``done`` its caller awaits (``run`` may settle it first),
        with its ``write_timeout``; ``left`` runs once ``run`` has left the queue."""
        if self._closed:
            raise RuntimeError(f"cache store used after close(): cannot {label}")
        self._enqueue(_Op(label, run, keys, done, left=left,
                          deadline=self._clock.monotonic() + self._write_timeout))

    async def flush(self) -> None:
        """Wait until every operation queued so far has reached L2 (or was dropped)."""
        if self._ops or self._closed:
            await self.submit("flush", _nothing, frozenset())

    async def close(self) -> None:
        """Stop the writer, fail what it left queued (logged); idempotent."""
        self._closed = True
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.wait([self._writer])
            self._writer = None
        self._abandon()

    def _queue_put(self, op: _Op) -> None:
        if self._closed:
            self.dropped += 1
            return
        self._enqueue(op)

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

    # -- the writer ------------------------------------------------------------

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
        """Write the entries of ``batch``'s puts not dropped (by the time of this attempt),
        each as the marks recorded since it was queued say: not at all (hard), softened
        (soft) or as it is (one put alone by L2's ``put``, several by ``put_many``)."""
        live = [op for op in batch if op.entry is not None]
        entries = [op.entry for op in live if op.entry is not None]
        if self._purges is not None:
            purges = self._purges
            entries = [judged for op in live if op.entry is not None
                       if (judged := _judged(purges, op.since, op.entry)) is not None]
            if len(entries) < len(live):
                log.info("%d queued L2 writes not made: purged since they were queued",
                         len(live) - len(entries))
        if len(batch) == 1 and entries:  # a lone put: L2's own put
            await self._l2.put(entries[0])
        elif entries:
            await self._l2.put_many(entries)

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
        while True:
            try:
                result = await run()
            except Exception as error:
                self._last_error = error
                self._failing.failed(error, label)
            else:
                self._last_error = None
                self._failing.answered()
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
        if op.left is not None:
            op.left()
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
                continue
            del self._dirty[key]
            for waiter in self._written.pop(key, ()):
                if not waiter.done():
                    waiter.set_result(None)

    def _end_burst(self) -> None:
        if self._burst:
            log.warning("L2 write queue drained; %d cache writes were dropped while it was "
                        "full", self._burst)
            self._burst = 0

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
        for waiters in self._written.values():  # nothing queued will reach L2 now
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        self._written.clear()


async def _nothing() -> None:
    """The no-op a flush queues as a barrier (and a dropped put becomes)."""


def _judged(purges: PurgeList, since: int, entry: CacheEntry) -> CacheEntry | None:
    """``entry`` as the marks recorded after ``since`` let it be written."""
    verdict = purges.check(since, entry)
    if verdict is None:
        return entry
    return None if verdict.hard else entry.softened(verdict.stale_from)


def _all_dropped(ops: list[_Op]) -> bool:
    return all(op.dropped for op in ops)
