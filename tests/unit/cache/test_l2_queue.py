"""L2WriteQueue alone: FIFO order, the byte bound (oldest puts dropped), retries backed off
on the injected clock, deadlines that leave the operation queued, the dirty-count guard,
close."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import pytest
from tests.clocks import RecordingClock
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.l2_queue import ALL_KEYS, L2WriteQueue, L2WriteTimeout, QueuePolicy
from stoker.cache.memory import MemoryStore
from stoker.cache.store import EntryRef
from stoker.clock import FakeClock

L2_BYTES = 10_000_000
FOREVER = 10**9


class FailingPuts(MemoryStore):
    """A memory L2 whose next ``failures`` put calls (single or batched) raise."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(L2_BYTES, clock)
        self.failures = 0

    def _fail(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise OSError("injected put failure")

    async def put(self, entry: CacheEntry) -> None:
        self._fail()
        await super().put(entry)

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        self._fail()
        await super().put_many(entries)


@pytest.fixture
def clock() -> RecordingClock:
    return RecordingClock()


@pytest.fixture
def l2(clock: RecordingClock) -> FailingPuts:
    return FailingPuts(clock)


@pytest.fixture
def queue(l2: FailingPuts, clock: RecordingClock) -> L2WriteQueue:
    return L2WriteQueue(l2, clock, QueuePolicy(retry_delay=0.5, max_retry_delay=3.0))


def pages(count: int) -> list[CacheEntry]:
    """``count`` entries of equal queue size, each under its own key."""
    return [make_entry(f"https://example.com/p{i:03d}") for i in range(count)]


def ref(entry: CacheEntry) -> EntryRef:
    return EntryRef(entry.primary_key, entry.variant)


def queued(queue: L2WriteQueue, label: str, run: Callable[[], Awaitable[object]],
           keys: frozenset[str] | None = frozenset()) -> asyncio.Future[object]:
    """Queue ``run`` as an awaited operation, at once (no await before it is queued)."""
    done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    queue.queue_awaited(label, run, keys, done)
    return done


async def test_operations_reach_l2_in_the_order_queued(
    queue: L2WriteQueue, l2: FailingPuts
) -> None:
    first, second = make_entry(body=b"first"), make_entry(body=b"second")
    queue.put(first)
    after_first = queued(queue, "get", partial(l2.get, first.primary_key))
    queue.put(second)
    after_second = queued(queue, "get", partial(l2.get, first.primary_key))
    assert await after_first == [first]
    assert await after_second == [second]
    assert queue.pending() == 0


async def test_a_queued_put_never_resurrects_an_entry_after_a_later_delete(
    queue: L2WriteQueue, l2: FailingPuts
) -> None:
    entry = make_entry()
    l2.failures = 3
    queue.put(entry)
    deleted = await queue.submit("delete", partial(l2.delete, [ref(entry)]),
                                 frozenset((entry.primary_key,)))
    assert deleted == 1  # the put, retried, landed before the delete ran
    await queue.flush()
    assert await l2.get(entry.primary_key) == []


async def test_the_byte_bound_drops_the_oldest_puts_counts_and_logs_once(
    l2: FailingPuts, clock: RecordingClock, caplog: pytest.LogCaptureFixture
) -> None:
    entries = pages(5)
    queue = L2WriteQueue(l2, clock, QueuePolicy(max_queue_bytes=3 * entries[0].meta_size()))
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        for entry in entries:
            queue.put(entry)
        assert (queue.dropped, queue.pending()) == (2, 3)
        assert queue.pending_bytes() == 3 * entries[0].meta_size()
        await queue.flush()
    assert [entry for entry in entries if await l2.get(entry.primary_key)] == entries[2:]
    assert queue.pending_bytes() == 0
    assert caplog.text.count("L2 write queue is full") == 1
    assert "2 cache writes were dropped" in caplog.text


async def test_awaited_operations_are_never_dropped(
    l2: FailingPuts, clock: RecordingClock
) -> None:
    old, *others = pages(4)
    await l2.put(old)
    queue = L2WriteQueue(l2, clock, QueuePolicy(max_queue_bytes=old.meta_size()))
    deleted = queued(queue, "delete_primary", partial(l2.delete_primary, [old.primary_key]),
                     frozenset((old.primary_key,)))
    for entry in others:
        queue.put(entry)
    assert queue.dropped == 2
    assert await deleted == 1
    await queue.flush()
    assert await l2.get(old.primary_key) == []
    assert [entry for entry in others if await l2.get(entry.primary_key)] == others[-1:]


async def test_failed_writes_are_retried_with_backoff_slept_on_the_injected_clock(
    queue: L2WriteQueue, l2: FailingPuts, clock: RecordingClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    entry = make_entry()
    l2.failures = 5
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        queue.put(entry)
        await queue.flush()
    assert clock.sleeps == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert clock.monotonic() == 9.5
    assert caplog.text.count("L2 cache write failed (put: OSError") == 1  # not one a try
    assert "Traceback" not in caplog.text
    assert await l2.get(entry.primary_key) == [entry]


async def test_a_timed_out_operation_stays_queued_and_reaches_l2_in_order(
    l2: FailingPuts, clock: RecordingClock
) -> None:
    queue = L2WriteQueue(l2, clock, QueuePolicy(retry_delay=0.5, max_retry_delay=3.0,
                                                write_timeout=5.0))
    entry, later = pages(2)
    l2.failures = FOREVER
    queue.put(entry)
    with pytest.raises(L2WriteTimeout, match=r"delete is still queued behind 2 operations"):
        await queue.submit("delete", partial(l2.delete, [ref(entry)]),
                           frozenset((entry.primary_key,)))
    assert clock.sleeps[:4] == [0.5, 1.0, 2.0, 1.5]  # the last backoff ends at the deadline
    queue.put(later)
    assert queue.pending() == 3
    l2.failures = 0
    await queue.flush()
    assert await l2.get(entry.primary_key) == []  # put, then the timed-out delete
    assert await l2.get(later.primary_key) == [later]


async def test_keys_stay_dirty_until_every_operation_naming_them_has_left(
    queue: L2WriteQueue,
) -> None:
    first, other = pages(2)
    key = first.primary_key

    async def untouched() -> bool:
        return queue.untouched(key)

    epoch = queue.epoch
    queue.put(first)
    assert queue.epoch != epoch
    assert not queue.untouched(key)
    assert queue.untouched(other.primary_key)
    between = queued(queue, "probe", untouched)
    queue.put(make_entry(first.url, body=b"again"))
    after = queued(queue, "probe", untouched)
    assert await between is False  # the first put has left, the second is still queued
    assert await after is True


async def test_an_operation_on_every_key_touches_every_key(queue: L2WriteQueue) -> None:
    [entry] = pages(1)

    async def untouched() -> bool:
        return queue.untouched(entry.primary_key)

    everything = queued(queue, "delete_except_version", untouched, ALL_KEYS)
    assert not queue.untouched(entry.primary_key)
    assert await everything is False  # still queued while it runs
    assert queue.untouched(entry.primary_key)


async def test_left_runs_once_the_operation_has_left_the_queue(queue: L2WriteQueue) -> None:
    seen: list[str] = []

    async def run() -> None:
        seen.append("run")

    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    queue.queue_awaited("purge", run, frozenset(), done, left=partial(seen.append, "left"))
    await done
    assert seen == ["run", "left"]


async def test_close_fails_what_is_left_logs_it_and_refuses_work(
    l2: FailingPuts, clock: RecordingClock, caplog: pytest.LogCaptureFixture
) -> None:
    queue = L2WriteQueue(l2, clock, QueuePolicy(write_timeout=FOREVER))
    entry, later = pages(2)
    l2.failures = FOREVER
    queue.put(entry)
    flushed = asyncio.ensure_future(queue.flush())
    while clock.monotonic() < 10:  # the writer is retrying the put
        await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        await queue.close()
    with pytest.raises(RuntimeError, match="closed before its flush"):
        await flushed
    assert "closed with 1 L2 operations not written (1 put;" in caplog.text
    assert (queue.pending(), queue.pending_bytes()) == (0, 0)
    queue.put(later)
    assert queue.dropped == 1
    with pytest.raises(RuntimeError, match="after close"):
        await queue.flush()
    assert await l2.get(later.primary_key) == []


async def test_settled_returns_once_the_keys_puts_have_reached_l2(
        queue: L2WriteQueue, l2: FailingPuts) -> None:
    entry = make_entry("https://example.com/a")
    await queue.settled(entry.primary_key)  # nothing queued: at once
    l2.failures = 1  # the first write fails: settled waits for the retry's success
    queue.put(entry)
    settled = asyncio.ensure_future(queue.settled(entry.primary_key))
    await asyncio.sleep(0)
    assert not settled.done()
    await asyncio.wait_for(settled, 30)
    assert await l2.get(entry.primary_key) == [entry]


async def test_close_lets_whoever_waits_for_a_key_go(l2: FailingPuts,
                                                    clock: RecordingClock) -> None:
    queue = L2WriteQueue(l2, clock, QueuePolicy(retry_delay=FOREVER, max_retry_delay=FOREVER))
    l2.failures = 10**6
    entry = make_entry("https://example.com/a")
    queue.put(entry)
    settled = asyncio.ensure_future(queue.settled(entry.primary_key))
    await asyncio.sleep(0)
    await queue.close()
    await asyncio.wait_for(settled, 5)
    assert await l2.get(entry.primary_key) == []
