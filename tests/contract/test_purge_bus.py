"""The ``PurgeBus`` contract, on SQLite (one file) and PostgreSQL (one schema), each bus
opened as a member of its own would (its own connection or pool); with :func:`unconfirmed`
over what :meth:`members` returns."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from tests import node_backends
from tests.node_backends import Members

from stoker.backends.postgres.purge_bus import PostgresPurgeBus
from stoker.backends.sqlite.purge_bus import SqlitePurgeBus
from stoker.purge.bus import Member, PurgeBus, Relayed, unconfirmed
from stoker.purge.list import PurgeMark

# the fixtures every shared-store test module uses
backend, place, members = node_backends.backend, node_backends.place, node_backends.members

T = 1_700_000_000.0


async def open_bus(members: Members) -> PurgeBus:
    return await members.open(SqlitePurgeBus.open, PostgresPurgeBus.open)


@pytest.fixture
async def bus(members: Members) -> PurgeBus:
    return await open_bus(members)


SENT = PurgeMark(seq=7, at=3.5, now=T, soft=False)
"""A purge as its sender's list holds it (``seq`` and ``at`` its own)."""


def mark(**changes: Any) -> PurgeMark:
    return dataclasses.replace(SENT, **changes)


def carried(number: int, sender: str, sent: PurgeMark, version: str | None = None) -> Relayed:
    """What the bus gives back for ``sent``: its ``seq`` and ``at`` are the sender's own."""
    return Relayed(number, sender, dataclasses.replace(sent, seq=0, at=0.0), version)


async def test_latest_is_zero_before_any_publish(bus: PurgeBus) -> None:
    assert await bus.latest() == 0
    assert await bus.since(0) == []


async def test_a_purge_comes_back_as_it_was_published(bus: PurgeBus) -> None:
    scoped = mark(now=T + 0.25, soft=True, keys=frozenset({"k2", "k1"}),
                  prefixes=("https://s/b", "https://s/a"), tags=frozenset({"t"}))
    everything = mark(now=T + 1, everything=True)
    first = await bus.publish("a", scoped, None)
    second = await bus.publish("a", everything, "v2")
    assert await bus.since(0) == [carried(first, "a", scoped),
                                  carried(second, "a", everything, "v2")]


async def test_numbers_grow_and_since_is_oldest_first_across_members(
        members: Members) -> None:
    a, b = await open_bus(members), await open_bus(members)
    numbers = [await a.publish("a", mark(keys=frozenset({"1"})), None),
               await b.publish("b", mark(keys=frozenset({"2"})), None),
               await a.publish("a", mark(keys=frozenset({"3"})), None)]
    assert numbers == sorted(set(numbers))
    assert await a.latest() == await b.latest() == numbers[-1]
    for reader in (a, b):  # the sender's own included
        assert [(r.number, r.sender) for r in await reader.since(0)] == list(
            zip(numbers, "aba", strict=True))
        assert [r.mark.keys for r in await reader.since(numbers[0])] == [
            frozenset({"2"}), frozenset({"3"})]
        assert await reader.since(numbers[-1]) == []


async def test_a_follower_polling_during_concurrent_publishes_skips_none(
        members: Members) -> None:
    """Numbers only grow in the order publishes took effect: a follower that asks for what
    came after the newest number it saw, while others publish, sees every one once."""
    publishers = [await open_bus(members) for _ in range(4)]
    follower = await open_bus(members)
    published = asyncio.Event()
    seen: list[int] = []

    async def publish(bus: PurgeBus, sender: str) -> list[int]:
        return [await bus.publish(sender, mark(keys=frozenset({f"{sender}{n}"})), None)
                for n in range(25)]

    async def follow() -> None:
        while True:
            last_round = published.is_set()
            seen.extend(r.number for r in await follower.since(seen[-1] if seen else 0))
            if last_round:
                return

    following = asyncio.create_task(follow())
    numbers = await asyncio.gather(*(publish(bus, f"p{n}") for n, bus in enumerate(publishers)))
    published.set()
    await following
    assert seen == sorted(number for batch in numbers for number in batch)


async def test_confirm_keeps_the_greatest_number_and_the_latest_sighting(
        bus: PurgeBus) -> None:
    await bus.confirm("a", 5, T)
    await bus.confirm("a", 3, T + 1)  # a late heartbeat: the number stays, the time moves
    assert await bus.members() == [Member("a", 5, T + 1)]
    await bus.confirm("a", 9, T + 2)
    assert await bus.members() == [Member("a", 9, T + 2)]


async def test_members_are_those_that_confirmed_and_did_not_leave(members: Members) -> None:
    a, b = await open_bus(members), await open_bus(members)
    await a.confirm("b-node", 1, T)
    await b.confirm("a-node", 2, T + 1)
    assert await a.members() == await b.members() == [
        Member("a-node", 2, T + 1), Member("b-node", 1, T)]
    await b.leave("b-node")
    await b.leave("never-joined")
    assert await a.members() == [Member("a-node", 2, T + 1)]


async def test_trim_forgets_what_is_older_but_keeps_the_newest(bus: PurgeBus) -> None:
    numbers = [await bus.publish("a", mark(now=T + n * 10), None) for n in range(3)]
    await bus.trim(T + 5)
    assert [r.number for r in await bus.since(0)] == numbers[1:]
    await bus.trim(T + 1_000)
    assert [r.number for r in await bus.since(0)] == numbers[2:]
    assert await bus.latest() == numbers[2]
    assert await bus.publish("a", mark(now=T + 2_000), None) > numbers[2]


async def test_unconfirmed_names_the_live_members_behind_a_number(bus: PurgeBus) -> None:
    number = await bus.publish("me", mark(), None)
    await bus.confirm("me", 0, T)  # the publisher is never waited for
    await bus.confirm("ahead", number, T)
    await bus.confirm("behind", number - 1, T)
    await bus.confirm("also-behind", 0, T - 10)
    await bus.confirm("silent", 0, T - 31)  # not seen within node_timeout
    assert unconfirmed(await bus.members(), number, "me", T, 30.0) == ["also-behind", "behind"]
    await bus.leave("behind")
    await bus.confirm("also-behind", number, T + 1)
    assert unconfirmed(await bus.members(), number, "me", T + 1, 30.0) == []
