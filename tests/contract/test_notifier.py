"""The ``Notifier`` contract, on this process alone (``local``), PostgreSQL LISTEN/NOTIFY
(one schema: its own channel) and Redis pub/sub (one random prefix: its own channel).

Every member opened on PostgreSQL or Redis has connections of its own, as another node's
would; the members of ``local`` are this process's one notifier.  The subscriptions are
killed from the server's side (``pg_terminate_backend``, ``CLIENT KILL``), as a restart
or a proxy dropping idle connections would.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from typing import cast

import asyncpg
import pytest
import redis.asyncio as aioredis
from tests.contract.test_cache_store import REDIS_URL
from tests.job_backends import PG_URL, pg_schema, schema_url

from stoker.backends.postgres import notifier as postgres_notifier
from stoker.backends.postgres.connection import create_pool
from stoker.backends.redis import notifier as redis_notifier
from stoker.cache.notifier import LocalNotifier, Notifier
from stoker.cache.subscription import Link, Subscription
from stoker.clock import SystemClock

CROSSING = ("postgres", "redis")
KINDS = ("local", *CROSSING)
SOON = 5.0
"""Seconds a poke has to arrive (far beyond what it takes: a loaded CI box)."""


class Members:
    """Opens the members of one channel on one backend, closes them at the end."""

    def __init__(self, kind: str, schema: str) -> None:
        self.kind = kind
        self._schema = schema
        self._prefix = f"stoker-test-{uuid.uuid4().hex}:"
        self._opened: list[Notifier] = []
        self._pools: list[asyncpg.Pool] = []
        self._clients: list[aioredis.Redis] = []
        self._local = LocalNotifier(SystemClock())

    async def open(self) -> Notifier:
        if self.kind == "local":
            return self._local
        clock = SystemClock()
        if self.kind == "postgres":
            pool = await create_pool(PG_URL, schema=self._schema, min_size=1, max_size=2)
            self._pools.append(pool)
            opened = await postgres_notifier.open_notifier(schema_url(self._schema), pool,
                                                           clock)
        else:
            client = aioredis.Redis.from_url(REDIS_URL)
            self._clients.append(client)
            opened = await redis_notifier.open_notifier(REDIS_URL, client, clock,
                                                        prefix=self._prefix)
        self._opened.append(opened)
        return opened

    async def kill(self) -> int:
        """Close every member's subscription from the server's side; how many were."""
        name = cast(Subscription, self._opened[0]).channel.name
        if self.kind == "postgres":
            conn = await asyncpg.connect(PG_URL)
            try:
                return len(await conn.fetch(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = $1",
                    postgres_notifier.APPLICATION_NAME.format(channel=name)))
            finally:
                await conn.close()
        client = aioredis.Redis.from_url(REDIS_URL)
        try:
            mine = [each["id"] for each in await client.client_list(_type="pubsub")
                    if each["name"] == redis_notifier.CLIENT_NAME.format(channel=name)]
            for each in mine:
                await client.client_kill_filter(_id=each)
            return len(mine)
        finally:
            await client.aclose()

    async def close(self) -> None:
        for each in self._opened:
            await each.close()
        for pool in self._pools:
            await pool.close()
        for client in self._clients:
            await client.aclose()


@asynccontextmanager
async def opened(kind: str) -> AsyncIterator[Members]:
    with pg_schema(migrated=False) if kind == "postgres" else nullcontext("") as schema:
        members = Members(kind, schema)
        try:
            yield members
        finally:
            await members.close()


@pytest.fixture(params=KINDS)
async def members(request: pytest.FixtureRequest) -> AsyncIterator[Members]:
    async with opened(str(request.param)) as members:
        yield members


@pytest.fixture(params=CROSSING)
async def crossing(request: pytest.FixtureRequest) -> AsyncIterator[Members]:
    """Members whose pokes cross processes: they have a subscription to lose."""
    async with opened(str(request.param)) as members:
        yield members


async def started(waiting: Awaitable[bool]) -> asyncio.Task[bool]:
    """``waiting`` running (so its wait began) in a task of its own."""
    task = asyncio.ensure_future(waiting)
    await asyncio.sleep(0.01)
    return task


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not within the time given"
        await asyncio.sleep(0.01)


async def test_a_poke_wakes_another_members_waiter_and_its_own(members: Members) -> None:
    a, b = await members.open(), await members.open()
    theirs = await started(b.wait("published", SOON))
    own = await started(a.wait("published", SOON))
    before = b.rung("published")
    await a.poke("published")
    assert await theirs is True and await own is True
    assert b.rung("published") == before + 1


async def test_a_wait_with_no_poke_ends_false_at_its_timeout(members: Members) -> None:
    a = await members.open()
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await a.wait("confirmed", 0.1) is False
    assert loop.time() - began >= 0.09


async def test_every_waiter_wakes_on_one_poke(members: Members) -> None:
    a, b = await members.open(), await members.open()
    waiting = [await started(each.wait("confirmed", SOON)) for each in (a, b) * 25]
    await b.poke("confirmed")
    assert await asyncio.gather(*waiting) == [True] * 50


async def test_a_poke_of_one_kind_does_not_wake_the_other(members: Members) -> None:
    a, b = await members.open(), await members.open()
    confirmed = await started(b.wait("confirmed", 0.5))
    published = await started(b.wait("published", SOON))
    await a.poke("published")
    assert await published is True
    assert await confirmed is False


async def test_a_poke_after_the_count_it_waits_from_is_not_missed(members: Members) -> None:
    """A member reads the count, looks at the bus, then waits: a poke in between counts."""
    a, b = await members.open(), await members.open()
    seen = b.rung("published")
    await a.poke("published")
    await eventually(lambda: b.rung("published") > seen)  # heard before the wait began
    assert await b.wait("published", 0.0, after=seen) is True
    assert await b.wait("published", 0.05) is False  # from the count now: nothing new


async def test_a_killed_subscription_is_made_again_ringing_every_bell(
        crossing: Members) -> None:
    a, b = await crossing.open(), await crossing.open()
    assert a.connected and b.connected
    rung = a.rung("confirmed")
    assert await crossing.kill() == 2
    await eventually(lambda: a.reconnects == 1 and b.reconnects == 1)
    assert a.connected and b.connected
    assert a.rung("confirmed") == rung + 2  # lost, then back: every waiter looks again
    arriving = await started(a.wait("published", SOON))
    await b.poke("published")
    assert await arriving is True


async def test_while_the_subscription_is_down_waits_end_and_pokes_do_not_raise(
        crossing: Members, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server refuses the subscription again for a while (a fault injected into the
    channel): the loss wakes every waiter (to choose a shorter timeout), waits still end
    at their timeout, a poke does not raise; once the server lets the member in again, it
    is connected and counted."""
    a = cast(Subscription, await crossing.open())
    channel = a.channel
    subscribe, refused = channel.subscribe, []

    async def refusing(heard: Callable[[str], None]) -> Link:
        if not refused:
            refused.append(heard)
            raise ConnectionError("injected: the server refuses connections")
        return await subscribe(heard)

    monkeypatch.setattr(channel, "subscribe", refusing)
    long_wait = await started(a.wait("confirmed", 60.0))
    assert await crossing.kill() == 1
    assert await asyncio.wait_for(long_wait, SOON) is True  # woken by the loss itself
    await eventually(lambda: not a.connected)
    assert await a.wait("published", 0.05) is False
    await a.poke("published")
    await eventually(lambda: a.connected)
    assert a.reconnects == 1 and len(refused) == 1
