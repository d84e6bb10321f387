"""The shared origin limiter: visitors first, warm visits never in the last slots, one
client's share capped and borrowing never into the last slots either.

Deterministic: holders keep their slot until the test sets their event, and
the test lets the loop run the ready tasks (``settle``) before looking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.origin.fair_share import Claim
from stoker.origin.slots import (
    LimiterStats,
    OriginLimiter,
    default_per_client,
    default_reserve,
)


async def settle() -> None:
    """Run every task that is ready (and those they wake) before the test looks."""
    for _ in range(5):
        await asyncio.sleep(0)


class Holders:
    """Tasks that take a slot, note it in ``order`` and hold it until released."""

    def __init__(self, limiter: OriginLimiter) -> None:
        self.limiter = limiter
        self.order: list[str] = []
        self._events: dict[str, asyncio.Event] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, name: str, max_now: int | None = None, *, client: str | None = None,
              url: str | None = None) -> None:
        """A visitor (``max_now`` None) or a warm visit named ``name``; a visitor is a
        client and URL of its own (its name) unless ``client`` or ``url`` says."""
        self._events[name] = asyncio.Event()
        slot = (self.limiter.visitor(Claim(client or name, url or name)) if max_now is None
                else self.limiter.warm(max_now))
        self.tasks[name] = asyncio.create_task(self._hold(name, slot))

    async def _hold(self, name: str, slot: AbstractAsyncContextManager[None]) -> None:
        async with slot:
            self.order.append(name)
            await self._events[name].wait()

    def release(self, *names: str) -> None:
        for name in names:
            self._events[name].set()

    def release_all(self) -> None:
        self.release(*self._events)

    def __iter__(self) -> Iterator[asyncio.Task[None]]:
        return iter(self.tasks.values())


@pytest.fixture
async def holders() -> Holders:
    return Holders(OriginLimiter(4, reserve_for_visitors=1))


def stats(holders: Holders) -> LimiterStats:
    return holders.limiter.stats()


async def test_visitors_take_every_slot_then_queue_in_arrival_order(holders: Holders) -> None:
    for name in ("v1", "v2", "v3", "v4", "v5", "v6"):
        holders.start(name)
    await settle()
    assert holders.order == ["v1", "v2", "v3", "v4"]
    assert stats(holders) == LimiterStats(4, 0, 2, 0)
    holders.release("v3")
    await settle()
    assert holders.order[4:] == ["v5"]
    holders.release("v1")
    await settle()
    assert holders.order[5:] == ["v6"]
    holders.release_all()
    await asyncio.gather(*holders)
    assert stats(holders) == LimiterStats(0, 0, 0, 0)


async def test_warm_visits_never_take_the_reserved_slots(holders: Holders) -> None:
    for name in ("w1", "w2", "w3", "w4"):
        holders.start(name, max_now=8)
    await settle()
    assert holders.order == ["w1", "w2", "w3"]
    assert stats(holders) == LimiterStats(3, 3, 0, 1)
    async with holders.limiter.visitor():
        assert stats(holders) == LimiterStats(4, 3, 0, 1)
    holders.release_all()
    await asyncio.gather(*holders)


async def test_a_visitor_never_waits_behind_queued_warm_visits(holders: Holders) -> None:
    holders.start("v1")
    holders.start("v2")
    holders.start("w1", max_now=8)
    holders.start("w2", max_now=8)
    await settle()
    assert holders.order == ["v1", "v2", "w1"]
    assert stats(holders).warm_waiting == 1
    async with holders.limiter.visitor():
        assert stats(holders) == LimiterStats(4, 1, 0, 1)
    holders.release_all()
    await asyncio.gather(*holders)


async def test_warm_visits_wait_while_visitors_queue(holders: Holders) -> None:
    for name in ("v1", "v2", "v3", "v4"):
        holders.start(name)
    await settle()
    holders.start("w1", max_now=8)
    holders.start("v5")
    await settle()
    assert stats(holders) == LimiterStats(4, 0, 1, 1)
    holders.release("v1", "v2")
    await settle()
    assert holders.order[4:] == ["v5"]  # one freed slot to the visitor, one left free
    assert stats(holders) == LimiterStats(3, 0, 0, 1)  # 3 in use: the reserve is not free
    holders.release("v3")
    await settle()
    assert holders.order[5:] == ["w1"]
    holders.release_all()
    await asyncio.gather(*holders)


async def test_warm_visits_in_flight_stay_within_max_now(holders: Holders) -> None:
    holders.start("w1", max_now=2)
    holders.start("w2", max_now=2)
    holders.start("w3", max_now=2)
    await settle()
    assert holders.order == ["w1", "w2"]
    assert stats(holders) == LimiterStats(2, 2, 0, 1)
    holders.release("w1")
    await settle()
    assert holders.order == ["w1", "w2", "w3"]
    holders.release_all()
    await asyncio.gather(*holders)


async def test_a_visitor_cancelled_while_queued_leaves_no_trace(holders: Holders) -> None:
    for name in ("v1", "v2", "v3", "v4", "v5", "v6"):
        holders.start(name)
    await settle()
    holders.tasks["v5"].cancel()
    await settle()
    assert stats(holders) == LimiterStats(4, 0, 1, 0)
    holders.release("v1")
    await settle()
    assert holders.order[4:] == ["v6"]
    holders.release_all()
    await asyncio.gather(*(task for name, task in holders.tasks.items() if name != "v5"))
    assert stats(holders) == LimiterStats(0, 0, 0, 0)


async def test_a_cancelled_warm_visit_lets_the_next_one_start(holders: Holders) -> None:
    holders.start("w1", max_now=1)
    holders.start("w2", max_now=1)
    holders.start("w3", max_now=3)
    await settle()
    assert holders.order == ["w1"]
    holders.tasks["w2"].cancel()
    await settle()
    assert holders.order == ["w1", "w3"]
    holders.release("w1", "w3")
    await asyncio.gather(holders.tasks["w1"], holders.tasks["w3"])
    assert stats(holders) == LimiterStats(0, 0, 0, 0)


async def test_a_waiter_granted_then_cancelled_gives_its_slot_back(holders: Holders) -> None:
    for name in ("v1", "v2", "v3", "v4", "v5", "v6"):
        holders.start(name)
    await settle()
    holders.release("v1")
    await asyncio.sleep(0)  # v1 leaves and hands its slot to v5, which has not resumed yet
    assert holders.tasks["v1"].done()
    holders.tasks["v5"].cancel()
    await settle()
    assert holders.order[4:] == ["v6"]
    assert stats(holders) == LimiterStats(4, 0, 0, 0)
    holders.release_all()
    await asyncio.gather(*(task for name, task in holders.tasks.items() if name != "v5"))
    assert stats(holders) == LimiterStats(0, 0, 0, 0)


async def test_one_client_never_takes_the_last_slots_from_the_others() -> None:
    holders = Holders(OriginLimiter(8, reserve_for_visitors=2, per_client=2))
    for n in range(20):
        holders.start(f"slow{n}", client="hog", url=f"/slow/{n}")
    await settle()
    assert holders.order == [f"slow{n}" for n in range(6)]  # 2 its own, 4 borrowed
    assert stats(holders) == LimiterStats(6, 0, 14, 0)
    holders.start("victim1", client="v1")
    holders.start("victim2", client="v2")
    holders.start("victim3", client="v3")
    await settle()
    assert holders.order[6:] == ["victim1", "victim2"]  # at once, without a slot freed
    holders.release("slow0")
    await settle()
    assert holders.order[8:] == ["victim3"]  # the freed slot: the client holding none
    holders.release("victim1", "victim2", "victim3")
    await settle()
    assert holders.order[9:] == ["slow6"]  # back to 6 borrowed, never into the reserve
    assert holders.limiter.holding("hog") == 6
    assert stats(holders).in_use == 6
    holders.release_all()
    await asyncio.gather(*holders)
    assert stats(holders) == LimiterStats(0, 0, 0, 0)


async def test_freed_slots_go_round_robin_across_waiting_clients() -> None:
    holders = Holders(OriginLimiter(4, reserve_for_visitors=1, per_client=4))
    for n in range(4):
        holders.start(f"first{n}", client="early", url=f"/e/{n}")
    for name, client in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("b2", "b"),
                         ("e4", "early")):
        holders.start(name, client=client, url=f"/{name}")
    await settle()
    for n in range(4):
        holders.release(f"first{n}")
        await settle()
    # the last freed slot: "early" then holds none, so its e4 goes before b2
    assert holders.order[4:] == ["a1", "b1", "a2", "e4"]
    holders.release("a1")  # a, b and early hold one each: the earliest waiting, a3
    await settle()
    holders.release("b1")
    await settle()
    assert holders.order[8:] == ["a3", "b2"]
    holders.release_all()
    await asyncio.gather(*holders)


async def test_warm_visits_come_before_visitors_beyond_their_share() -> None:
    holders = Holders(OriginLimiter(4, reserve_for_visitors=1, per_client=1))
    holders.start("w1", max_now=8)
    holders.start("w2", max_now=8)
    holders.start("w3", max_now=8)
    holders.start("h1", client="hog")
    holders.start("h2", client="hog")
    holders.start("w4", max_now=8)
    await settle()
    assert holders.order == ["w1", "w2", "w3", "h1"]
    holders.release("w1")
    await settle()
    assert holders.order[4:] == []  # 3 held: the last slot is the reserve
    holders.release("w2")
    await settle()
    assert holders.order[4:] == ["w4"]  # not h2, the hog's second (borrowed) slot
    holders.release("w3")
    await settle()
    assert holders.order[5:] == ["h2"]
    holders.release_all()
    await asyncio.gather(*holders)


async def test_a_visitor_of_a_capped_client_cancelled_while_queued_leaves_no_trace() -> None:
    holders = Holders(OriginLimiter(4, reserve_for_visitors=2, per_client=1))
    for name in ("h1", "h2", "h3", "h4"):
        holders.start(name, client="hog")
    await settle()
    assert holders.order == ["h1", "h2"]
    holders.tasks["h3"].cancel()
    await settle()
    assert stats(holders) == LimiterStats(2, 0, 1, 0)
    holders.release("h1")
    await settle()
    assert holders.order[2:] == ["h4"]
    holders.release_all()
    await asyncio.gather(*(task for name, task in holders.tasks.items() if name != "h3"))
    assert stats(holders) == LimiterStats(0, 0, 0, 0)
    assert holders.limiter.holding("hog") == 0


def test_default_per_client_is_a_quarter_and_at_least_one() -> None:
    assert [default_per_client(n) for n in (2, 4, 16, 17)] == [1, 1, 4, 4]
    assert OriginLimiter(16).per_client == 4
    assert OriginLimiter(16, per_client=16).per_client == 16


def test_default_reserve_is_a_quarter_and_at_least_one() -> None:
    assert [default_reserve(n) for n in (2, 4, 16, 17)] == [1, 1, 4, 4]
    assert OriginLimiter(16).reserve_for_visitors == 4


@pytest.mark.parametrize(("max_concurrency", "reserve"), [(1, None), (4, 4), (4, -1)])
def test_a_limit_without_room_for_warm_visits_is_refused(
        max_concurrency: int, reserve: int | None) -> None:
    with pytest.raises(ValueError, match="origin_max_concurrency"):
        OriginLimiter(max_concurrency, reserve)


async def test_a_warm_visit_with_no_allowance_is_refused(holders: Holders) -> None:
    with pytest.raises(ValueError, match="max_now"):
        async with holders.limiter.warm(0):
            pass


steps = st.lists(st.one_of(
    st.tuples(st.just("visitor"), st.integers(0, 2)),
    st.tuples(st.just("warm"), st.integers(1, 6)),
    st.tuples(st.just("release"), st.integers(0, 40)),
    st.tuples(st.just("cancel"), st.integers(0, 40)),
), max_size=40)


@settings(max_examples=200)
@given(max_concurrency=st.integers(2, 6), per_client=st.integers(1, 3), steps=steps)
def test_interleavings_keep_every_invariant(
        max_concurrency: int, per_client: int, steps: list[tuple[str, int | None]]) -> None:
    asyncio.run(_interleave(max_concurrency, per_client, steps))


async def _interleave(max_concurrency: int, per_client: int,
                      steps: list[tuple[str, int | None]]) -> None:
    holders = Holders(OriginLimiter(max_concurrency, per_client=per_client))
    limiter = holders.limiter
    reserve = limiter.reserve_for_visitors
    clients: dict[str, str] = {}  # a visitor's name: its client
    for n, (action, arg) in enumerate(steps):
        names = list(holders.tasks)
        if action == "visitor":
            clients[f"visitor{n}"] = f"c{arg}"
            holders.start(f"visitor{n}", client=f"c{arg}")
        elif action == "warm":
            holders.start(f"warm{n}", arg)
        elif names and action == "release":
            holders.release(names[int(arg or 0) % len(names)])
        elif names:
            holders.tasks[names[int(arg or 0) % len(names)]].cancel()
        await settle()
        now = stats(holders)
        assert 0 <= now.warm_in_use <= now.in_use <= max_concurrency
        running = sum(1 for name in holders.order if not holders.tasks[name].done())
        assert running == now.in_use
        held = {client: limiter.holding(client) for client in set(clients.values())}
        beyond_share = sum(max(0, count - per_client) for count in held.values())
        # warm visits and borrowed slots together never reach into the reserve
        assert now.warm_in_use + beyond_share <= max_concurrency - reserve
        waiting = [name for name in clients
                   if name not in holders.order and not holders.tasks[name].done()]
        if any(held[clients[name]] < per_client for name in waiting):
            assert now.in_use == max_concurrency  # a visitor within its share waits: all held
    holders.release_all()
    await asyncio.gather(*holders, return_exceptions=True)
    assert stats(holders) == LimiterStats(0, 0, 0, 0)
    for client in set(clients.values()):  # every visitor of a client, in arrival order
        started = [name for name, owner in clients.items() if owner == client]
        entered = [name for name in holders.order if clients.get(name) == client]
        assert entered == [name for name in started if name in entered]
        assert all(holders.tasks[name].cancelled() for name in started if name not in entered)
