"""The ``FetchLeases`` contract, on SQLite (one file) and PostgreSQL (one schema), each
opened as a member of its own would (its own connection or pool)."""

from __future__ import annotations

import asyncio

import pytest
from tests import node_backends
from tests.node_backends import Members

from stoker.backends.postgres.fetch_leases import PostgresFetchLeases
from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases
from stoker.cache.fetch_leases import FetchLeases

# the fixtures every shared-store test module uses
backend, place, members = node_backends.backend, node_backends.place, node_backends.members

T = 1_700_000_000.0
TAKERS = 20


async def open_leases(members: Members) -> FetchLeases:
    return await members.open(SqliteFetchLeases.open, PostgresFetchLeases.open)


@pytest.fixture
async def leases(members: Members) -> FetchLeases:
    return await open_leases(members)


async def take_at_once(members: Members, key: str, now: float) -> list[bool]:
    """:data:`TAKERS` owners, spread over four members, take ``key`` concurrently."""
    opened = [await open_leases(members) for _ in range(4)]
    return await asyncio.gather(*(
        opened[n % len(opened)].take(key, f"owner-{n}", now + 10, now)
        for n in range(TAKERS)))


async def test_one_of_many_concurrent_takers_wins(members: Members) -> None:
    taken = await take_at_once(members, "k", T)
    assert taken.count(True) == 1
    assert await (await open_leases(members)).held("k", T)


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
    assert await leases.held("k", T + 15)


async def test_keys_are_leased_apart(leases: FetchLeases) -> None:
    assert await leases.take("k1", "a", T + 10, T)
    assert await leases.take("k2", "b", T + 10, T)
    assert not await leases.held("k3", T)


async def test_release_only_by_the_owner(members: Members) -> None:
    a, b = await open_leases(members), await open_leases(members)
    assert await a.take("k", "a", T + 10, T)
    await b.release("k", "b")
    assert await b.held("k", T)
    assert not await b.take("k", "b", T + 10, T)
    await b.release("k", "a")  # the owner's release counts from any member
    assert not await a.held("k", T)
    assert await b.take("k", "b", T + 10, T)
    await a.release("nothing", "a")


async def test_held_honours_expiry(leases: FetchLeases) -> None:
    assert not await leases.held("k", T)
    assert await leases.take("k", "a", T + 10, T)
    assert await leases.held("k", T + 10)
    assert not await leases.held("k", T + 10.001)
