"""The ``FetchLeases`` contract, on SQLite (one file) and PostgreSQL (one schema), each
opened as a member of its own would (its own connection or pool)."""

from __future__ import annotations

import asyncio

import pytest
from tests import node_backends
from tests.node_backends import Members

from stoker.backends.postgres.fetch_leases import PostgresFetchLeases
from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases
from stoker.cache.fetch_leases import FetchLeases, Holder, Lease, judge

# the fixtures every shared-store test module uses
backend, place, members = node_backends.backend, node_backends.place, node_backends.members

T = 1_700_000_000.0
TAKERS = 20


async def open_leases(members: Members) -> FetchLeases:
    return await members.open(SqliteFetchLeases.open, PostgresFetchLeases.open)


@pytest.fixture
async def leases(members: Members) -> FetchLeases:
    return await open_leases(members)


async def state(leases: FetchLeases, key: str, now: float) -> Lease:
    return judge(await leases.holder(key), now)


async def take_at_once(members: Members, key: str, now: float) -> list[bool]:
    """:data:`TAKERS` owners, spread over four members, take ``key`` concurrently."""
    opened = [await open_leases(members) for _ in range(4)]
    return await asyncio.gather(*(
        opened[n % len(opened)].take(key, f"owner-{n}", now + 10, now)
        for n in range(TAKERS)))


async def test_one_of_many_concurrent_takers_wins(members: Members) -> None:
    taken = await take_at_once(members, "k", T)
    assert taken.count(True) == 1
    assert await state(await open_leases(members), "k", T) is Lease.LIVE


async def test_one_of_many_concurrent_takers_wins_an_expired_lease(members: Members) -> None:
    first = await open_leases(members)
    assert await first.take("k", "first", T + 1, T)
    assert (await take_at_once(members, "k", T + 2)).count(True) == 1


async def test_a_held_lease_is_not_taken_until_it_expires(leases: FetchLeases) -> None:
    assert await leases.take("k", "a", T + 10, T)
    assert not await leases.take("k", "b", T + 20, T + 5)
    assert not await leases.take("k", "a", T + 20, T + 5)  # not even by its owner
    assert not await leases.take("k", "b", T + 20, T + 10)  # expiring now: still held
    assert await leases.take("k", "b", T + 20, T + 10.5)
    await leases.release("k", "a")  # the expired owner's release leaves b's lease
    assert await state(leases, "k", T + 15) is Lease.LIVE


async def test_keys_are_leased_apart(leases: FetchLeases) -> None:
    assert await leases.take("k1", "a", T + 10, T)
    assert await leases.take("k2", "b", T + 10, T)
    assert await state(leases, "k3", T) is Lease.FREE


async def test_release_only_by_the_owner(members: Members) -> None:
    a, b = await open_leases(members), await open_leases(members)
    assert await a.take("k", "a", T + 10, T)
    await b.release("k", "b")
    assert await state(b, "k", T) is Lease.LIVE
    assert not await b.take("k", "b", T + 10, T)
    await b.release("k", "a")  # the owner's release counts from any member
    assert await state(a, "k", T) is Lease.FREE
    assert await b.take("k", "b", T + 10, T)
    await a.release("nothing", "a")


async def test_a_lease_is_live_until_it_expires_then_dead_until_taken(
        leases: FetchLeases) -> None:
    assert await leases.holder("k") is None
    assert await leases.take("k", "a", T + 10, T)
    assert await leases.holder("k") == Holder("a", T + 10)
    assert await state(leases, "k", T + 10) is Lease.LIVE
    assert await state(leases, "k", T + 10.001) is Lease.DEAD
    assert await leases.take("k", "b", T + 21, T + 11)
    assert await leases.holder("k") == Holder("b", T + 21)


async def test_renewing_keeps_the_owners_lease_live(leases: FetchLeases) -> None:
    assert await leases.take("k", "a", T + 10, T)
    for beat in (5, 10, 15, 20):  # renewed within the lease: never dead
        assert await leases.renew("k", "a", T + beat + 10, T + beat)
        assert not await leases.take("k", "b", T + beat + 20, T + beat + 9)
    assert await leases.holder("k") == Holder("a", T + 30)


async def test_only_the_owner_renews_and_only_a_live_lease(leases: FetchLeases) -> None:
    assert not await leases.renew("k", "a", T + 10, T)  # none to renew
    assert await leases.holder("k") is None
    assert await leases.take("k", "a", T + 10, T)
    assert not await leases.renew("k", "b", T + 20, T + 5)
    assert not await leases.renew("k", "a", T + 20, T + 10.5)  # dead: it stays dead
    assert await state(leases, "k", T + 10.5) is Lease.DEAD
    assert await leases.take("k", "b", T + 20, T + 10.5)
    assert not await leases.renew("k", "a", T + 21, T + 11)  # taken over: a lost it
    assert await leases.renew("k", "b", T + 21, T + 11)
    await leases.release("k", "b")
    assert not await leases.renew("k", "b", T + 22, T + 12)  # given back


async def test_a_late_renewal_and_takeovers_race_one_wins(members: Members) -> None:
    """The holder renews just in time by its clock while waiters find the lease dead by
    theirs: either the renewal lands first (no waiter takes it) or one waiter does (and
    the renewal finds it lost), never both."""
    holder = await open_leases(members)
    assert await holder.take("k", "holder", T + 10, T)
    opened = [await open_leases(members) for _ in range(4)]
    won = await asyncio.gather(holder.renew("k", "holder", T + 20, T + 10), *(
        opened[n % len(opened)].take("k", f"waiter-{n}", T + 20.5, T + 10.5)
        for n in range(TAKERS)))
    assert won.count(True) == 1
    assert await state(holder, "k", T + 10.5) is Lease.LIVE
