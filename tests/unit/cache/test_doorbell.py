"""The notifier's doorbell: a count of rings per kind, one event per count, the timeouts on
the injected clock (no I/O)."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.notifier import KINDS, Doorbell, Kind
from stoker.clock import FakeClock

TIMEOUT = 10.0

Step = tuple[str, Kind, int | None]
steps = st.lists(st.tuples(st.sampled_from(["wait", "ring"]), st.sampled_from(KINDS),
                           st.none() | st.integers(-2, 1)), max_size=30)
"""Rings and waits in any order; a wait counts from the count then (``None``) or from an
``after`` near it (below it: a ring it already missed counts, so it returns at once)."""


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def run(script: list[Step]) -> None:
    clock = FakeClock(auto_advance=False)
    bell = Doorbell(clock)
    waiters: list[tuple[Kind, int, asyncio.Task[bool]]] = []
    for step, kind, offset in script:
        if step == "ring":
            bell.ring(kind)
            continue
        after = None if offset is None else max(0, bell.rung(kind) + offset)
        start = bell.rung(kind) if after is None else after
        waiters.append((kind, start, asyncio.ensure_future(bell.wait(kind, TIMEOUT, after))))
        await settle()
    await settle()
    for kind, start, task in waiters:  # before any timeout: exactly those rung for are up
        assert task.done() is (bell.rung(kind) > start)
    while not all(task.done() for _, _, task in waiters):
        clock.advance(TIMEOUT)
        await settle()
    for kind, start, task in waiters:
        assert task.result() is (bell.rung(kind) > start)


@given(steps)
def test_a_waiter_wakes_exactly_when_its_kind_rang_beyond_its_count(script: list[Step]) -> None:
    asyncio.run(run(script))


async def test_one_ring_wakes_every_waiter_of_its_kind_and_none_of_the_other() -> None:
    clock = FakeClock(auto_advance=False)
    bell = Doorbell(clock)
    published = [asyncio.ensure_future(bell.wait("published", TIMEOUT)) for _ in range(100)]
    confirmed = asyncio.ensure_future(bell.wait("confirmed", TIMEOUT))
    await settle()
    bell.ring("published")
    assert await asyncio.gather(*published) == [True] * 100
    assert not confirmed.done()
    clock.advance(TIMEOUT)
    assert await confirmed is False
    assert (bell.rung("published"), bell.rung("confirmed")) == (1, 0)


async def test_ring_all_rings_each_kind_once() -> None:
    bell = Doorbell(FakeClock())
    bell.ring_all()
    assert [bell.rung(kind) for kind in KINDS] == [1, 1]


async def test_a_wait_cancelled_leaves_nothing_behind() -> None:
    clock = FakeClock(auto_advance=False)
    bell = Doorbell(clock)
    before = len(asyncio.all_tasks())
    waiting = asyncio.ensure_future(bell.wait("published", TIMEOUT))
    await settle()
    waiting.cancel()
    await settle()
    assert len(asyncio.all_tasks()) == before
