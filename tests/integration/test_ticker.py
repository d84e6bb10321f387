"""The ticker over real SQLite and PostgreSQL stores, with time moved only by the test.

The clock never advances by itself (``auto_advance=False``); :class:`WatchedClock`
counts the ticker's naps so a test can wait until every ticker has looked at
the store and gone back to sleep, instead of waiting for some time to pass.
"""

from __future__ import annotations

import asyncio

import pytest
from tests import deadline_backends
from tests.conftest import HANG_GUARD, running
from tests.deadline_backends import open_store

from stoker.clock import FakeClock
from stoker.schedule.store import Deadline, DeadlineStore
from stoker.schedule.ticker import STOPPED_ERROR, RetryIn, Ticker

# the fixtures every deadline test module shares
backend, target, store = (deadline_backends.backend, deadline_backends.target,
                          deadline_backends.store)
pg_deadline_schema = deadline_backends.pg_deadline_schema

T = 1_700_000_000.0


class WatchedClock(FakeClock):
    """A fake clock that counts the sleeps begun on it."""

    def __init__(self) -> None:
        super().__init__(T, auto_advance=False)
        self.naps = 0
        self._napping = asyncio.Condition()

    async def sleep(self, seconds: float) -> None:
        async with self._napping:
            self.naps += 1
            self._napping.notify_all()
        await super().sleep(seconds)

    async def naps_reach(self, count: int) -> None:
        async with self._napping:
            await asyncio.wait_for(self._napping.wait_for(lambda: self.naps >= count),
                                   HANG_GUARD)


class Runs:
    """A handler that records the clock's time of each run; ``gate`` holds runs open."""

    def __init__(self, clock: FakeClock, *, failures: int = 0) -> None:
        self.clock = clock
        self.failures = failures
        self.started: list[float] = []
        self.finished: asyncio.Queue[float] = asyncio.Queue()
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, deadline: Deadline) -> None:
        self.started.append(self.clock.now())
        await self.gate.wait()
        if len(self.started) <= self.failures:
            raise RuntimeError(f"origin down (attempt {deadline.attempts})")
        await self.finished.put(self.clock.now())

    async def next(self) -> float:
        return await asyncio.wait_for(self.finished.get(), HANG_GUARD)




@pytest.fixture
def clock() -> WatchedClock:
    return WatchedClock()


async def row_of(store: DeadlineStore, name: str) -> Deadline:
    return next(row for row in await store.list() if row.name == name)


async def test_a_deadline_runs_when_due_and_not_before(
        store: DeadlineStore, clock: WatchedClock) -> None:
    runs = Runs(clock)
    ticker = Ticker(store, clock, "node-a", max_sleep=3_600)
    ticker.register("rewarm", runs, retry_delay=60)
    await store.arm("rewarm", "debounced", T, 60, 300)
    async with running(ticker.run):
        await clock.naps_reach(1)
        clock.advance(30)  # not due: the ticker sleeps on
        clock.advance(30)
        assert await runs.next() == T + 60
    assert runs.started == [T + 60]
    assert (await row_of(store, "rewarm")).due_at is None


async def test_a_deadline_armed_before_a_restart_fires_after_it(
        backend: str, target: str, store: DeadlineStore, clock: WatchedClock) -> None:
    before = Runs(clock)
    ticker = Ticker(store, clock, "before-restart")
    ticker.register("rewarm", before, retry_delay=60)
    async with running(ticker.run):
        await ticker.arm("rewarm", "debounced", 60, 300)
        await clock.naps_reach(1)
    await store.aclose()  # the process goes away before the deadline

    reopened = await open_store(backend, target)
    try:
        after = Runs(clock)
        restarted = Ticker(reopened, clock, "after-restart")
        restarted.register("rewarm", after, retry_delay=60)
        async with running(restarted.run):
            clock.advance(60)
            assert await after.next() == T + 60
        assert before.started == []
    finally:
        await reopened.aclose()


async def test_a_failure_is_recorded_and_retried_after_the_delay(
        store: DeadlineStore, clock: WatchedClock) -> None:
    runs = Runs(clock, failures=1)
    ticker = Ticker(store, clock, "node-a")
    ticker.register("stats_flush", runs, retry_delay=120)
    await store.arm("stats_flush", "earliest", T, 0)
    async with running(ticker.run):
        await clock.naps_reach(2)  # ran, failed, asleep until the retry
        failed = next(r for r in await ticker.status() if r.name == "stats_flush")
        assert (failed.due_at, failed.attempts, failed.owner) == (T + 120, 1, None)
        assert failed.last_error == "RuntimeError: origin down (attempt 1)"
        clock.advance(120)
        assert await runs.next() == T + 120
    done = await row_of(store, "stats_flush")
    assert (done.due_at, done.last_error, done.attempts, done.completed_at) == (
        None, None, 0, T + 120)


async def test_a_run_may_name_its_own_retry_delay(
        store: DeadlineStore, clock: WatchedClock) -> None:
    async def waits(deadline: Deadline) -> None:
        raise RetryIn(15.0 * deadline.attempts, "the origin is still down")

    ticker = Ticker(store, clock, "node-a")
    ticker.register("recover", waits, retry_delay=120)
    await store.arm("recover", "earliest", T, 0)
    async with running(ticker.run):
        await clock.naps_reach(2)
        first = await row_of(store, "recover")
        clock.advance(15)
        await clock.naps_reach(3)
        second = await row_of(store, "recover")
    assert (first.due_at, first.attempts, first.last_error) == (
        T + 15, 1, "the origin is still down")
    assert (second.due_at, second.attempts) == (T + 15 + 30, 2)


async def test_an_arm_pokes_the_sleeping_ticker(
        store: DeadlineStore, clock: WatchedClock) -> None:
    runs = Runs(clock)
    ticker = Ticker(store, clock, "node-a", max_sleep=3_600)
    ticker.register("stats_flush", runs, retry_delay=60)
    async with running(ticker.run):
        await clock.naps_reach(1)  # nothing armed: asleep for max_sleep
        await ticker.arm("stats_flush", "earliest", 0)
        assert await runs.next() == T  # the clock never moved


async def test_exactly_one_of_two_tickers_runs_a_due_deadline(
        backend: str, target: str, store: DeadlineStore, clock: WatchedClock) -> None:
    second = await open_store(backend, target)
    runs = Runs(clock)
    runs.gate.clear()  # hold the run open while both tickers look
    tickers = [Ticker(store, clock, "node-a"), Ticker(second, clock, "node-b")]
    for ticker in tickers:
        ticker.register("job_reap", runs, retry_delay=60)
    await store.arm("job_reap", "earliest", T, 10)
    try:
        async with running(tickers[0].run), running(tickers[1].run):
            await clock.naps_reach(2)
            clock.advance(10)
            await clock.naps_reach(4)  # both woke, looked, and sleep again
            assert runs.started == [T + 10]
            runs.gate.set()
            assert await runs.next() == T + 10
    finally:
        await second.aclose()


async def test_stop_cancels_a_run_and_leaves_it_due_for_the_next_ticker(
        store: DeadlineStore, clock: WatchedClock) -> None:
    stuck = Runs(clock)
    stuck.gate.clear()
    ticker = Ticker(store, clock, "node-a")
    ticker.register("rewarm", stuck, retry_delay=600)
    await store.arm("rewarm", "earliest", T, 0)
    async with running(ticker.run):
        await clock.naps_reach(1)  # the run is in flight
        assert stuck.started == [T]
    left = await row_of(store, "rewarm")
    assert (left.due_at, left.owner, left.last_error) == (T, None, STOPPED_ERROR)

    runs = Runs(clock)
    successor = Ticker(store, clock, "node-b")
    successor.register("rewarm", runs, retry_delay=600)
    async with running(successor.run):
        assert await runs.next() == T


async def test_force_runs_a_pending_deadline_now(
        store: DeadlineStore, clock: WatchedClock) -> None:
    runs = Runs(clock, failures=1)
    ticker = Ticker(store, clock, "node-a")
    ticker.register("stats_flush", runs, retry_delay=30)
    assert await ticker.force("stats_flush") == "idle"  # nothing armed
    await ticker.arm("stats_flush", "earliest", 3_600)
    assert await ticker.force("stats_flush") == "failed"
    assert await ticker.force("stats_flush") == "done"
    assert runs.started == [T, T]
    assert await ticker.force("stats_flush") == "idle"
    with pytest.raises(KeyError, match="no handler registered for deadline 'rewarm'"):
        await ticker.force("rewarm")


class FailingList:
    """The real store, but ``list`` fails the first ``failures`` times (an injected fault)."""

    def __init__(self, store: DeadlineStore, failures: int) -> None:
        self.store = store
        self.failures = failures

    async def list(self) -> list[Deadline]:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("database went away")
        return list(await self.store.list())

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


async def test_a_store_error_is_logged_and_the_loop_goes_on(
        store: DeadlineStore, clock: WatchedClock, caplog: pytest.LogCaptureFixture) -> None:
    runs = Runs(clock)
    ticker = Ticker(FailingList(store, 1), clock, "node-a", max_sleep=5)  # type: ignore[arg-type]
    ticker.register("job_reap", runs, retry_delay=60)
    await store.arm("job_reap", "earliest", T, 0)
    async with running(ticker.run):
        await clock.naps_reach(1)  # the first look failed: asleep for max_sleep
        assert "reading or claiming deadlines failed" in caplog.text
        clock.advance(5)
        assert await runs.next() == T + 5


class FailingFail:
    """The real store, but ``fail`` fails the first ``failures`` times (an injected fault:
    the database went away as the run failed on it)."""

    def __init__(self, store: DeadlineStore, failures: int) -> None:
        self.store = store
        self.failures = failures

    async def fail(self, *args: object) -> bool:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("database went away")
        return await self.store.fail(*args)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


async def test_a_run_failing_with_its_store_is_recorded_due_at_once(
        store: DeadlineStore, clock: WatchedClock) -> None:
    """The failure could not be recorded at once, nor at once again: it is retried 2 s
    later (the outage's second failure; not once the claim's lease ends) and recorded due
    then, not ``retry_delay`` later."""
    runs = Runs(clock, failures=1)
    ticker = Ticker(FailingFail(store, 2), clock, "node-a")  # type: ignore[arg-type]
    ticker.register("stats_flush", runs, retry_delay=120)
    await store.arm("stats_flush", "earliest", T, 0)
    async with running(ticker.run):
        await clock.naps_reach(2)  # ran, failed, the store failed: waiting to record it
        assert (await row_of(store, "stats_flush")).owner == "node-a"
        clock.advance(2)
        assert await runs.next() == T + 2
    done = await row_of(store, "stats_flush")
    assert (done.due_at, done.owner, done.completed_at) == (None, None, T + 2)


async def test_purposes_without_a_handler_here_are_left_alone(
        store: DeadlineStore, clock: WatchedClock, caplog: pytest.LogCaptureFixture) -> None:
    ticker = Ticker(store, clock, "node-a", max_sleep=3_600)
    ticker.register("rewarm", Runs(clock), retry_delay=60)
    await store.arm("l2_reclaim", "earliest", T - 100, 0)  # overdue, for another process
    async with running(ticker.run):
        await clock.naps_reach(1)  # looked, and sleeps rather than spinning on it
    assert caplog.records == []
    assert await row_of(store, "l2_reclaim") == Deadline(
        "l2_reclaim", due_at=T - 100, first_armed_at=T - 100)


async def test_status_lists_every_purpose(store: DeadlineStore, clock: WatchedClock) -> None:
    ticker = Ticker(store, clock, "node-a")
    ticker.register("rewarm", Runs(clock), retry_delay=60)
    ticker.register("refresh", Runs(clock), retry_delay=60)
    await store.arm("l2_reclaim", "earliest", T, 5)  # another process's purpose
    await ticker.arm("refresh", "replace", 86_400)
    assert await ticker.status() == [
        Deadline("l2_reclaim", due_at=T + 5, first_armed_at=T),
        Deadline("refresh", due_at=T + 86_400, first_armed_at=T),
        Deadline("rewarm"),
    ]


def test_register_refuses_duplicates_and_nonsense(clock: WatchedClock) -> None:
    ticker = Ticker(store=None, clock=clock, owner="x")  # type: ignore[arg-type]
    ticker.register("rewarm", Runs(clock), retry_delay=60)
    with pytest.raises(ValueError, match="'rewarm' already has a handler"):
        ticker.register("rewarm", Runs(clock), retry_delay=60)
    with pytest.raises(ValueError, match="retry_delay must be >= 0 and lease > 0"):
        ticker.register("refresh", Runs(clock), retry_delay=60, lease=0)
    with pytest.raises(ValueError, match="max_sleep must be > 0"):
        Ticker(store=None, clock=clock, owner="x", max_sleep=0)  # type: ignore[arg-type]
