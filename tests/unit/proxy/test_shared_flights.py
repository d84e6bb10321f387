"""SharedFlights on real SQLite fetch leases, time injected (a fake clock moved a poll at a
time): a holder that stops renewing is taken over by exactly one waiter; one that renews
never is; one that gives its lease back without an entry lets waiters fetch; failing
renewals are said once."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, cast

import pytest
from tests.entries import make_entry

from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases
from stoker.cache.entry import CacheEntry
from stoker.cache.fetch_leases import FetchLeases
from stoker.cache.port import Cache
from stoker.clock import FakeClock
from stoker.proxy.shared_flights import GRACE, POLL, SharedFlights

KEY = "1#https://example.com/a"
NODE_TIMEOUT = 1.5
COLLAPSE_TIMEOUT = 15.0
LATE = 30 * POLL
"""How much later than its due time a step may come: the leases' thread answers within
real milliseconds, while the test moves the clock on."""


class Shelf:
    """The shared tier as SharedFlights reads it: entries by key, writes already done."""

    def __init__(self) -> None:
        self.entries: dict[str, list[CacheEntry]] = {}

    async def get(self, key: str) -> list[CacheEntry]:
        return self.entries.get(key, [])

    async def written(self, key: str) -> None:
        return None


class FailingRenewals:
    """Fetch leases whose renewals fail (the database is gone)."""

    def __init__(self, leases: FetchLeases) -> None:
        self._leases = leases

    def __getattr__(self, name: str) -> Any:
        return getattr(self._leases, name)

    async def renew(self, key: str, owner: str, until: float, now: float) -> bool:
        raise ConnectionError("database gone")


@pytest.fixture
async def leases(tmp_path: Path) -> AsyncIterator[SqliteFetchLeases]:
    opened = await SqliteFetchLeases.open(tmp_path / "cache.db")
    yield opened
    await opened.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(auto_advance=False)


@pytest.fixture
def shelf() -> Shelf:
    return Shelf()


async def run(clock: FakeClock, *work: Awaitable[Any]) -> list[Any]:
    """Run ``work`` to its end, the clock moved one poll at a time (the leases' thread
    given a moment to answer in between)."""
    tasks = [asyncio.ensure_future(each) for each in work]
    while not all(task.done() for task in tasks):
        clock.advance(POLL)
        await asyncio.sleep(0.002)
    return [task.result() for task in tasks]


def first(entries: list[CacheEntry]) -> CacheEntry | None:
    return entries[0] if entries else None


def member(leases: FetchLeases, shelf: Shelf, clock: FakeClock, name: str,
           timeout: float = COLLAPSE_TIMEOUT) -> SharedFlights:
    return SharedFlights(leases, cast(Cache, shelf), clock, name, timeout, NODE_TIMEOUT)


async def test_one_waiter_takes_a_dead_lease_over_and_the_others_wait_for_it(
        leases: SqliteFetchLeases, clock: FakeClock, shelf: Shelf) -> None:
    await leases.take(KEY, "killed", clock.now() + NODE_TIMEOUT, clock.now())  # no renewals
    begun: Counter[str] = Counter()
    took_at: list[float] = []

    async def wait_or_fetch(name: str) -> tuple[str, str]:
        flights = member(leases, shelf, clock, name)
        if await flights.wait(KEY, first, lambda: begun.update([name])) is not None:
            return "waited", name
        assert flights.holds(KEY)
        took_at.append(clock.monotonic())
        shelf.entries[KEY] = [make_entry()]
        await flights.release(KEY)
        return "fetched", name

    done = await run(clock, *(wait_or_fetch(f"w{n}") for n in range(3)))
    fetched = [name for kind, name in done if kind == "fetched"]
    assert len(fetched) == 1 and len(begun) == 3
    assert NODE_TIMEOUT < took_at[0] <= NODE_TIMEOUT + LATE
    assert begun[fetched[0]] == 2  # the killed one's fetch, then its own
    assert await leases.holder(KEY) is None  # given back


async def test_a_renewed_lease_is_never_taken_over(
        leases: SqliteFetchLeases, clock: FakeClock, shelf: Shelf) -> None:
    holder = member(leases, shelf, clock, "holder")
    assert await holder.take(KEY)
    waiter = member(leases, shelf, clock, "waiter", timeout=4 * NODE_TIMEOUT)
    begun: list[str] = []
    assert await run(clock, waiter.wait(KEY, first, lambda: begun.append("began"))) == [None]
    assert clock.monotonic() >= 4 * NODE_TIMEOUT  # it gave up on the collapse timeout
    assert not waiter.holds(KEY) and holder.holds(KEY)
    assert begun == ["began"]
    lease = await leases.holder(KEY)
    assert lease is not None and lease.owner == "holder"
    assert lease.expires >= clock.now() + NODE_TIMEOUT - NODE_TIMEOUT / 3 - LATE
    await holder.release(KEY)
    assert await leases.holder(KEY) is None


async def test_a_lease_given_back_without_an_entry_lets_waiters_fetch_without_one(
        leases: SqliteFetchLeases, clock: FakeClock, shelf: Shelf) -> None:
    holder = member(leases, shelf, clock, "holder")
    assert await holder.take(KEY)
    waiter = member(leases, shelf, clock, "waiter")
    given_back: list[float] = []

    async def give_back() -> None:
        await clock.sleep(1.0)
        await holder.release(KEY)  # its answer was not stored
        given_back.append(clock.monotonic())

    waited, _ = await run(clock, waiter.wait(KEY, first, lambda: None), give_back())
    assert waited is None and not waiter.holds(KEY)
    assert GRACE <= clock.monotonic() - given_back[0] <= GRACE + LATE


async def test_failing_renewals_are_said_once_not_per_try(
        leases: SqliteFetchLeases, clock: FakeClock, shelf: Shelf,
        caplog: pytest.LogCaptureFixture) -> None:
    holder = member(cast(FetchLeases, FailingRenewals(leases)), shelf, clock, "holder")
    with caplog.at_level(logging.WARNING, logger="stoker.cache"):
        assert await holder.take(KEY)
        await run(clock, clock.sleep(3 * NODE_TIMEOUT))  # nine renewals
        await holder.release(KEY)
    said = [r.getMessage() for r in caplog.records if "renewing" in r.getMessage()]
    assert len(said) == 1 and "database gone" in said[0], said
    assert await leases.holder(KEY) is None
