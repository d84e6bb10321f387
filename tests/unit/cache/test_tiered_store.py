"""TieredStore: promotion keeps remaining lifetime; L2 writes are queued, ordered, retried,
bounded (oldest puts dropped) and awaited with a deadline; purges change L1 in steps and
return before L2 is done, and no L2 read sees a purged entry meanwhile."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.clocks import RecordingClock
from tests.entries import make_entry

from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry, Freshness
from stoker.cache.l2_queue import L2WriteTimeout, QueuePolicy
from stoker.cache.memory import MemoryStore
from stoker.cache.store import CacheStore, EntryRef
from stoker.cache.tiered import TieredStore
from stoker.clock import FakeClock
from stoker.purge.applier import L1_CHUNK, l2_pause
from stoker.purge.list import PurgeMark


class FaultyStore:
    """Wraps an L2 to inject faults: the first N calls of a method fail, or wait on a gate."""

    def __init__(self, inner: CacheStore) -> None:
        self.inner = inner
        self.failures: dict[str, int] = {}
        self.gate_before: dict[str, asyncio.Event] = {}
        self.gate_after: dict[str, asyncio.Event] = {}
        self.arrived: dict[str, asyncio.Event] = {}
        self.calls: list[str] = []

    async def _call(self, name: str, *args: Any, method: str | None = None) -> Any:
        self.calls.append(name)
        if name in self.gate_before:
            await self.gate_before[name].wait()
        if self.failures.get(name, 0) > 0:
            self.failures[name] -= 1
            raise OSError(f"injected {name} failure")
        result = await getattr(self.inner, method or name)(*args)
        if name in self.gate_after:
            self.arrived.setdefault(name, asyncio.Event()).set()
            await self.gate_after[name].wait()
        return result

    async def get(self, primary_key: str) -> list[CacheEntry]:
        return await self._call("get", primary_key)  # type: ignore[no-any-return]

    def read_now(self, primary_key: str) -> list[CacheEntry] | None:
        """The inner store's, with ``failures["read_now"]`` (gates cannot hold it)."""
        self.calls.append("read_now")
        if self.failures.get("read_now", 0) > 0:
            self.failures["read_now"] -= 1
            raise OSError("injected read_now failure")
        return self.inner.read_now(primary_key)

    async def put(self, entry: CacheEntry) -> None:
        await self._call("put", entry)

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        """Batched puts count as puts: failures and gates keyed ``put`` apply to them."""
        await self._call("put", entries, method="put_many")

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        return await self._call("delete", refs)  # type: ignore[no-any-return]

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        return await self._call("delete_primary", primary_keys)  # type: ignore[no-any-return]

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        return await self._call("refs_for_tags", tags)  # type: ignore[no-any-return]

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        return await self._call("refs_for_url_prefix", prefix)  # type: ignore[no-any-return]

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        return await self._call("soften", refs, now)  # type: ignore[no-any-return]

    async def delete_except_version(self, version: str) -> int:
        return await self._call("delete_except_version", version)  # type: ignore[no-any-return]

    async def stats(self) -> dict[str, int]:
        return await self._call("stats")  # type: ignore[no-any-return]

    async def count(self) -> int:
        return await self._call("count")  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self._call("close")


@pytest.fixture
def clock() -> RecordingClock:
    return RecordingClock()


@pytest.fixture
def l1(clock: RecordingClock) -> MemoryStore:
    return MemoryStore(1_000_000, clock)


@pytest.fixture
def l2(sqlite_store: SqliteCacheStore) -> FaultyStore:
    return FaultyStore(sqlite_store)


@pytest.fixture
def tiered(l1: MemoryStore, l2: FaultyStore, clock: RecordingClock) -> TieredStore:
    return TieredStore(l1, l2, clock, queue=QueuePolicy(retry_delay=0.5, max_retry_delay=3.0))


def ref(entry: CacheEntry) -> EntryRef:
    return EntryRef(entry.primary_key, entry.variant)


async def test_promotion_keeps_the_remaining_lifetime(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    entry = make_entry(fresh=60.0, stale=120.0, keep=600.0)
    await l2.inner.put(entry)  # only in L2, e.g. written by another process
    clock.advance(40.0)
    assert tiered.get_l1(entry.primary_key) is None
    assert await tiered.get(entry.primary_key) == [entry]
    [promoted] = tiered.get_l1(entry.primary_key) or []
    assert promoted.ttl(clock.now()) == 20.0
    clock.advance(21.0)
    [promoted] = tiered.get_l1(entry.primary_key) or []
    assert promoted.freshness(clock.now()) is Freshness.STALE_SWR
    clock.advance(540.0)
    assert tiered.get_l1(entry.primary_key) is None


async def test_put_returns_before_l2_has_written(tiered: TieredStore, l2: FaultyStore) -> None:
    entry = make_entry()
    l2.gate_before["put"] = gate = asyncio.Event()
    await tiered.put(entry)
    assert tiered.get_l1(entry.primary_key) == [entry]
    assert tiered.pending() == 1
    gate.set()
    await tiered.flush()
    assert tiered.pending() == 0
    assert await l2.inner.get(entry.primary_key) == [entry]


async def test_failed_l2_writes_are_retried_with_backoff(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock, caplog: pytest.LogCaptureFixture
) -> None:
    entry = make_entry()
    l2.failures["put"] = 5
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        await tiered.put(entry)
        await tiered.flush()
    assert clock.sleeps == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert len([r for r in caplog.records if r.name == "stoker.cache"]) == 1  # not one a try
    assert await l2.inner.get(entry.primary_key) == [entry]


async def test_a_later_delete_never_overtakes_a_failing_put(
    tiered: TieredStore, l2: FaultyStore
) -> None:
    entry = make_entry()
    l2.failures["put"] = 3
    await tiered.put(entry)
    assert await tiered.delete([ref(entry)]) == 1
    assert [call for call in l2.calls if call != "get"] == ["put"] * 4 + ["delete"]
    assert await l2.inner.get(entry.primary_key) == []
    assert await tiered.get(entry.primary_key) == []


async def test_counts_are_distinct_refs_across_tiers(tiered: TieredStore, l2: FaultyStore) -> None:
    both = make_entry("https://example.com/both")
    l2_only = make_entry("https://example.com/l2")
    await tiered.put(both)
    await l2.inner.put(l2_only)
    await tiered.flush()
    assert await tiered.soften([ref(both), ref(l2_only)], 1_700_000_000.0) == 2
    assert await tiered.delete([ref(both), ref(l2_only)]) == 2


async def test_a_purge_during_an_l2_read_is_not_undone_by_promotion(
    tiered: TieredStore, l2: FaultyStore
) -> None:
    entry = make_entry()
    await l2.inner.put(entry)
    l2.gate_after["get"] = gate = asyncio.Event()
    l2.arrived["get"] = arrived = asyncio.Event()
    reader = asyncio.create_task(tiered.get(entry.primary_key))
    await arrived.wait()  # the read has fetched the old entry and waits at the gate
    assert await tiered.delete_primary([entry.primary_key]) == 1
    gate.set()
    assert await reader == [entry]  # the read began before the purge
    assert tiered.get_l1(entry.primary_key) is None


async def test_queries_see_queued_writes_and_stats_report_both_tiers(
    tiered: TieredStore, l2: FaultyStore
) -> None:
    entry = make_entry(tags=("t",))
    l2.failures["put"] = 1
    await tiered.put(entry)
    assert await tiered.refs_for_tags(["t"]) == [ref(entry)]
    assert await tiered.refs_for_url_prefix("https://example.com/") == [ref(entry)]
    stats = await tiered.stats()
    assert (stats["entries"], stats["l1_entries"], stats["pending"]) == (1, 1, 0)


async def test_close_flushes_queued_writes(
    tiered: TieredStore, l2: FaultyStore, sqlite_store: SqliteCacheStore
) -> None:
    entry = make_entry()
    await tiered.put(entry)
    await tiered.close()
    assert l2.calls[-2:] == ["put", "close"]
    await sqlite_store.start()  # reopen the same file to check what was persisted
    assert await sqlite_store.get(entry.primary_key) == [entry]


@pytest.mark.parametrize("read", ["get", "read_now"])
async def test_a_failing_l2_read_is_a_logged_miss(
    tiered: TieredStore, l2: FaultyStore, caplog: pytest.LogCaptureFixture, read: str
) -> None:
    async def look(key: str) -> list[CacheEntry] | None:
        return await tiered.get(key) if read == "get" else tiered.read_now(key)

    entry = make_entry()
    await l2.inner.put(entry)
    l2.failures[read] = 1
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        assert await look(entry.primary_key) == []
    assert "read failed" in caplog.text
    assert await look(entry.primary_key) == [entry]


async def test_a_corrupt_l2_row_is_a_logged_miss(
    tiered: TieredStore, l2: FaultyStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = make_entry()
    await l2.inner.put(entry)
    with sqlite3.connect(tmp_path / "cache.sqlite3") as conn:
        conn.execute("UPDATE cache_entries SET record = x'00000009'")
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        assert await tiered.get(entry.primary_key) == []
    assert "corrupt L2 row" in caplog.text


async def test_read_now_reads_l2_inline_and_promotes(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    entry = make_entry(fresh=60.0, stale=120.0, keep=600.0)
    await l2.inner.put(entry)
    clock.advance(40.0)
    assert tiered.read_now(entry.primary_key) == [entry]
    [promoted] = tiered.get_l1(entry.primary_key) or []
    assert promoted.ttl(clock.now()) == 20.0
    assert tiered.read_now("no such key") == []


async def test_read_now_is_none_where_l2_cannot_read_without_waiting(
    l1: MemoryStore, clock: RecordingClock, tmp_path: Path, bodies: BodyStore
) -> None:
    l2 = await SqliteCacheStore.open(tmp_path / "threaded.sqlite3", bodies, clock,
                                     inline_reads=False)
    store = TieredStore(l1, l2, clock)
    try:
        entry = make_entry()
        await l2.put(entry)
        assert store.read_now(entry.primary_key) is None
        assert await store.get(entry.primary_key) == [entry]
        assert store.read_now(entry.primary_key) == [entry]  # promoted: an L1 hit
    finally:
        await store.close()


async def test_read_now_while_a_write_is_queued_is_not_promoted(
    tiered: TieredStore, l1: MemoryStore, l2: FaultyStore
) -> None:
    old, new = make_entry(), make_entry(status=203)
    await l2.inner.put(old)
    l2.gate_before["put"] = gate = asyncio.Event()
    await tiered.put(new)
    l1.delete_nowait([ref(new)])
    assert tiered.read_now(old.primary_key) == [old]
    assert tiered.get_l1(old.primary_key) is None
    gate.set()
    await tiered.flush()
    assert tiered.read_now(old.primary_key) == [new]


async def test_an_l2_read_while_a_write_is_queued_is_not_promoted(
    tiered: TieredStore, l1: MemoryStore, l2: FaultyStore
) -> None:
    old = make_entry()
    new = make_entry(status=203)
    await l2.inner.put(old)  # only in L2
    l2.gate_before["put"] = gate = asyncio.Event()
    await tiered.put(new)
    l1.delete_nowait([ref(new)])  # as L1's LRU evicts it before L2 has the write
    assert await tiered.get(old.primary_key) == [old]  # what L2 holds until the put lands
    assert tiered.get_l1(old.primary_key) is None  # ... but the put is not undone in L1
    gate.set()
    await tiered.flush()
    assert await tiered.get(old.primary_key) == [new]
    assert tiered.get_l1(old.primary_key) == [new]


# -- the bounded queue and deadlines -------------------------------------------

FOREVER = 10**9


def pages(count: int) -> list[CacheEntry]:
    """``count`` entries of equal queue size."""
    return [make_entry(f"https://example.com/p{i:03d}") for i in range(count)]


def bounded(l1: MemoryStore, l2: FaultyStore, clock: RecordingClock, *, entries: int = 3,
            write_timeout: float = 10.0) -> TieredStore:
    """A store whose queue holds ``entries`` puts of :func:`pages`."""
    return TieredStore(l1, l2, clock, queue=QueuePolicy(
        retry_delay=0.5, max_retry_delay=3.0, max_queue_bytes=entries * pages(1)[0].meta_size(),
        write_timeout=write_timeout))


async def in_l2(l2: FaultyStore, entries: list[CacheEntry]) -> list[CacheEntry]:
    return [entry for entry in entries if await l2.inner.get(entry.primary_key)]


async def test_a_full_queue_drops_the_oldest_puts_counts_and_logs_once(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = bounded(l1, l2, clock, entries=3)
    entries = pages(10)
    l2.failures["put"] = FOREVER
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        for entry in entries:
            await store.put(entry)
        assert (store.pending(), store.pending_bytes()) == (3, 3 * entries[0].meta_size())
        assert store.dropped == 7
        assert all(store.get_l1(entry.primary_key) for entry in entries)  # L1 keeps them
        l2.failures["put"] = 0
        stats = await store.stats()
    assert await in_l2(l2, entries) == entries[7:]
    assert (stats["l2_dropped"], stats["pending"], stats["pending_bytes"]) == (7, 0, 0)
    assert caplog.text.count("L2 write queue is full") == 1
    assert "7 cache writes were dropped" in caplog.text


async def test_invalidations_are_never_dropped_and_keep_their_place(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    store = bounded(l1, l2, clock, entries=2)
    old, *others = pages(6)
    await l2.inner.put(old)
    l2.failures["put"] = FOREVER
    await store.put(make_entry(old.url, body=b"new"))
    purge = asyncio.create_task(store.delete_primary([old.primary_key]))
    for entry in others:
        await store.put(entry)
    assert store.dropped == 4  # the new version of ``old`` and three others; not the purge
    l2.failures["put"] = 0
    assert await purge == 1
    await store.flush()
    assert await l2.inner.get(old.primary_key) == []
    assert await in_l2(l2, others) == others[-2:]


async def test_a_dropped_put_in_progress_is_no_longer_retried(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    store = bounded(l1, l2, clock, entries=2)
    first, *later = pages(3)
    l2.failures["put"] = FOREVER
    await store.put(first)
    while l2.calls.count("put") < 3:  # the writer is retrying ``first``
        await asyncio.sleep(0)
    for entry in later:
        await store.put(entry)
    l2.failures["put"] = 0
    await store.flush()
    assert await in_l2(l2, [first, *later]) == later


async def test_an_awaited_delete_times_out_clearly_and_still_reaches_l2_in_order(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    store = bounded(l1, l2, clock, write_timeout=5.0)
    [entry] = pages(1)
    l2.failures["put"] = FOREVER
    await store.put(entry)
    with pytest.raises(L2WriteTimeout, match=r"did not accept writes for 5 s \(l2_write_timeout\)"
                       r".*delete.*OSError\('injected put failure'\)"):
        await store.delete([ref(entry)])
    assert clock.sleeps[:4] == [0.5, 1.0, 2.0, 1.5]  # the last backoff ends at the deadline
    l2.failures["put"] = 0
    await store.flush()
    assert l2.calls[-2:] == ["put", "delete"]
    assert await l2.inner.get(entry.primary_key) == []


async def test_a_hung_l2_times_out_waiters_when_more_work_is_queued(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    store = bounded(l1, l2, clock, write_timeout=5.0)
    first, second = pages(2)
    l2.gate_before["put"] = gate = asyncio.Event()
    await store.put(first)
    flush = asyncio.create_task(store.flush())
    await asyncio.sleep(0)
    clock.advance(5.0)
    await store.put(second)
    with pytest.raises(L2WriteTimeout, match="flush is still queued"):
        await flush
    gate.set()
    await store.flush()
    assert await in_l2(l2, [first, second]) == [first, second]


async def test_queued_puts_reach_l2_in_batches_in_queue_order(
    tiered: TieredStore, l2: FaultyStore
) -> None:
    entries = pages(150)
    l2.gate_before["put"] = gate = asyncio.Event()
    await tiered.put(entries[0])  # the writer holds this one at the gate
    while "put" not in l2.calls:
        await asyncio.sleep(0)
    for entry in entries[1:100]:
        await tiered.put(entry)
    deleted = asyncio.create_task(tiered.delete([EntryRef(entries[50].primary_key, "")]))
    await asyncio.sleep(0)  # the delete is queued behind the first 100 puts
    for entry in entries[100:]:
        await tiered.put(entry)
    gate.set()
    assert await deleted == 1
    await tiered.flush()
    # 1 held, then 64 + 35 before the delete (a batch never crosses it), then 50 after
    assert [call for call in l2.calls if call in ("put", "delete")] == [
        "put", "put", "put", "delete", "put"]
    assert await in_l2(l2, entries) == entries[:50] + entries[51:]


async def test_close_with_a_failing_l2_gives_up_logs_what_is_lost_and_closes_l2(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = bounded(l1, l2, clock, write_timeout=2.0)
    entries = pages(2)
    l2.failures["put"] = FOREVER
    for entry in entries:
        await store.put(entry)
    with caplog.at_level(logging.WARNING, logger="stoker.cache"), pytest.raises(L2WriteTimeout):
        await store.close()
    assert l2.calls[-1] == "close"
    assert "closed with 2 L2 operations not written (2 put;" in caplog.text
    assert store.pending() == 0
    await store.put(entries[0])  # after close: L1 only
    assert store.dropped == 1
    with pytest.raises(RuntimeError, match="after close"):
        await store.flush()


# -- purges ------------------------------------------------------------------------------


def mark(tiered: TieredStore, clock: FakeClock, *, soft: bool = False,
         tags: Sequence[str] = ("t",)) -> PurgeMark:
    """A purge of ``tags`` recorded in the store's purge list, as the purger records one."""
    tiered.purges.record(soft=soft, now=clock.now(), tags=tags)
    return tiered.purges.latest


async def test_a_hard_purge_returns_before_l2_and_no_l2_read_sees_purged_entries(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    tagged = [make_entry(f"https://example.com/{i}", tags=("t",)) for i in range(2)]
    untagged = make_entry("https://example.com/other")
    for entry in [*tagged, untagged]:
        await tiered.put(entry)
    await tiered.flush()
    l2.gate_before["delete"] = gate = asyncio.Event()
    purged = await tiered.purge(mark(tiered, clock))
    assert purged == (2, sorted(entry.primary_key for entry in tagged), False)
    assert await l2.inner.get(tagged[0].primary_key) == [tagged[0]]  # L2 not done yet
    assert await tiered.get(tagged[0].primary_key) == []  # an L1 miss reads L2: screened
    assert tiered.read_now(tagged[0].primary_key) == []  # inline too
    assert await tiered.get(untagged.primary_key) == [untagged]
    assert tiered.get_l1(tagged[0].primary_key) is None  # nothing purged was promoted
    gate.set()
    await tiered.flush()
    assert [await l2.inner.get(entry.primary_key) for entry in tagged] == [[], []]


async def test_a_soft_purge_is_stale_at_once_for_l2_readers(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    entry = make_entry(tags=("t",), now=clock.now())
    await l2.inner.put(entry)  # only in L2
    l2.gate_before["soften"] = gate = asyncio.Event()
    assert (await tiered.purge(mark(tiered, clock, soft=True))).entries == 1
    assert (await l2.inner.get(entry.primary_key))[0].freshness(clock.now()) is Freshness.FRESH
    [read] = await tiered.get(entry.primary_key)
    assert read.freshness(clock.now()) is Freshness.STALE_SWR
    [inline] = tiered.read_now(entry.primary_key) or []
    assert inline.freshness(clock.now()) is Freshness.STALE_SWR
    gate.set()
    await tiered.flush()
    [stored] = await l2.inner.get(entry.primary_key)
    assert stored.freshness(clock.now()) is Freshness.STALE_SWR


async def test_an_l2_read_begun_before_the_l2_purge_ended_never_returns_a_purged_entry(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    entry = make_entry(tags=("t",))
    await l2.inner.put(entry)
    l2.gate_before["delete"] = deleting = asyncio.Event()
    await tiered.purge(mark(tiered, clock))
    l2.gate_after["get"] = reading = asyncio.Event()
    l2.arrived["get"] = arrived = asyncio.Event()
    reader = asyncio.create_task(tiered.get(entry.primary_key))
    await arrived.wait()  # the read found the entry L2 still held
    deleting.set()
    await tiered.flush()  # the L2 part is done (and no longer screens reads)
    reading.set()
    assert await reader == []


async def test_a_put_queued_before_a_purge_is_purged_in_l2_too(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    entry = make_entry(tags=("t",))
    l2.gate_before["put"] = gate = asyncio.Event()
    await tiered.put(entry)
    purge = asyncio.create_task(tiered.purge(mark(tiered, clock)))
    await asyncio.sleep(0)
    gate.set()
    assert (await purge).entries == 1
    await tiered.flush()
    assert await l2.inner.get(entry.primary_key) == []


async def watch(work: asyncio.Task[Any], l1: MemoryStore) -> list[int]:
    """L1's entry count between the steps of ``work``, until it is done."""
    seen = []
    while not work.done():
        seen.append(l1.stats_nowait()["entries"])
        await asyncio.sleep(0)
    return seen


async def test_a_tag_purge_defers_l1_and_applies_it_in_steps(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    # a chunk a step, then 50 ms for requests
    tiered = TieredStore(l1, l2, clock, settle_budget=0, settle_pause=0.05)
    entries = [make_entry(f"https://example.com/{i}", tags=("t",)) for i in range(3 * L1_CHUNK)]
    for entry in entries:
        await tiered.put(entry)
    await tiered.flush()
    purged = await tiered.purge(mark(tiered, clock))
    assert purged.entries == len(entries)
    left = l1.stats_nowait()["entries"]
    assert left > L1_CHUNK  # not walked before returning...
    assert tiered.get_l1(entries[-1].primary_key) is None  # ... yet in force for every read
    assert await tiered.get(entries[-2].primary_key) == []
    assert tiered.read_now(entries[-3].primary_key) == []
    seen = await watch(asyncio.create_task(tiered.flush()), l1)
    assert any(0 < count < left - 3 for count in seen)  # applied in steps, requests between
    assert l1.stats_nowait()["entries"] == 0
    await tiered.close()


async def test_close_stops_a_deferred_l1_purge(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    tiered = TieredStore(l1, l2, clock, settle_budget=0, settle_pause=60.0)
    for i in range(3 * L1_CHUNK):
        await tiered.put(make_entry(f"https://example.com/{i}", tags=("t",)))
    await tiered.purge(mark(tiered, clock))
    await asyncio.wait_for(tiered.close(), 10)  # not 60 s per step
    assert tiered.get_l1(make_entry("https://example.com/0").primary_key) is None


async def test_a_prefix_purge_and_a_reclaim_change_l1_in_steps(
    l1: MemoryStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    tiered = TieredStore(l1, l2, clock, step_budget=0)  # a step per chunk, however fast
    entries = [make_entry(f"https://example.com/{i}") for i in range(3 * L1_CHUNK)]
    for entry in entries:
        await tiered.put(entry)
    tiered.purges.record(soft=False, now=clock.now(), prefixes=("https://example.com/",))
    purge = asyncio.create_task(tiered.purge(tiered.purges.latest))
    assert any(0 < count < len(entries) for count in await watch(purge, l1))
    for entry in entries:
        await tiered.put(entry)
    reclaim = asyncio.create_task(tiered.delete_except_version("v2"))
    assert any(0 < count < len(entries) for count in await watch(reclaim, l1))
    assert (await purge).entries == (await reclaim) == len(entries)
    await tiered.close()


async def test_count_does_not_wait_for_queued_writes(tiered: TieredStore, l2: FaultyStore) -> None:
    await l2.inner.put(make_entry("https://example.com/l2"))
    l2.gate_before["put"] = gate = asyncio.Event()
    for i in range(2):
        await tiered.put(make_entry(f"https://example.com/{i}"))
    assert await tiered.count() == 2  # L1's two; L2's one (its puts are still queued)
    gate.set()
    await tiered.flush()
    assert await tiered.count() == 3


async def test_a_soft_purge_of_everything_reaches_every_entry_in_both_tiers(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    in_both = make_entry("https://example.com/both", now=clock.now())
    l2_only = make_entry("https://other.example/l2", now=clock.now())
    await tiered.put(in_both)
    await l2.inner.put(l2_only)
    await tiered.flush()
    tiered.purges.record(soft=True, now=clock.now(), everything=True)
    assert await tiered.purge(tiered.purges.latest) == (
        2, [in_both.primary_key, l2_only.primary_key], False)
    await tiered.flush()
    for entry in (in_both, l2_only):
        [stored] = await l2.inner.get(entry.primary_key)
        assert stored.freshness(clock.now()) is Freshness.STALE_SWR
    [cached] = tiered.get_l1(in_both.primary_key) or []
    assert cached.freshness(clock.now()) is Freshness.STALE_SWR


def test_a_purges_l2_part_rests_only_while_nothing_waits_behind_it() -> None:
    assert l2_pause(0.003, waiting=0) == 0.003
    assert l2_pause(0.003, waiting=1) == 0.0
    assert l2_pause(-0.001, waiting=0) == 0.0  # a clock stepped back: no negative sleep


async def test_what_a_purge_lookup_missed_is_not_read_back_once_its_l2_part_is_done(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """L2 lost the index the lookup needs (a Redis tag set evicted): the mark, in force for
    what was stored before it, still judges every read; what is stored later is read."""
    old = make_entry(tags=("t",), now=clock.now())
    await l2.inner.put(old)

    async def lost(tags: Sequence[str]) -> list[EntryRef]:
        return []

    monkeypatch.setattr(l2, "refs_for_tags", lost)
    clock.advance(1.0)
    assert (await tiered.purge(mark(tiered, clock))).entries == 0
    await tiered.flush()
    assert not tiered.purges.unapplied("l2")
    assert await l2.inner.get(old.primary_key) == [old]  # still in L2
    assert await tiered.get(old.primary_key) == []
    clock.advance(1.0)
    new = make_entry(tags=("t",), now=clock.now(), body=b"new")
    await l2.inner.put(new)
    assert await tiered.get(new.primary_key) == [new]


@pytest.mark.parametrize("soft", [False, True])
async def test_a_put_queued_while_l2_is_down_is_judged_by_later_purges_before_written(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock, soft: bool,
) -> None:
    entry = make_entry(tags=("t",), now=clock.now())
    l2.failures["put"] = 2
    await tiered.put(entry)
    await asyncio.sleep(0)  # the first attempt failed: the put waits for its retry
    tiered.purges.record(soft=soft, now=entry.stored_at + 1, tags=["t"])  # e.g. relayed
    await tiered.flush()
    written = await l2.inner.get(entry.primary_key)
    if soft:
        assert [each.fresh_until for each in written] == [entry.stored_at + 1]
    else:
        assert written == []


async def test_a_purge_does_not_wait_for_an_l2_that_does_not_answer(
    tiered: TieredStore, l2: FaultyStore, clock: RecordingClock
) -> None:
    entry = make_entry(tags=("t",), now=clock.now())
    await tiered.put(entry)
    await tiered.flush()
    l2.failures["refs_for_tags"] = 3
    purged = await tiered.purge(mark(tiered, clock))
    assert purged == (1, [entry.primary_key], True)  # L1's count; L2's part pending
    assert tiered.purges.unapplied("l2")
    l2.failures["put"] = 1
    await tiered.put(make_entry("https://example.com/other", now=clock.now()))
    await asyncio.sleep(0)
    assert (await tiered.purge(mark(tiered, clock, tags=("u",)))).l2_pending  # failing: at once
    await tiered.flush()  # L2 answers again: the queued parts are carried out
    assert await l2.inner.get(entry.primary_key) == []
    assert not tiered.purges.unapplied("l2")
