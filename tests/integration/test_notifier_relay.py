"""Nodes on one database (and one Redis) poke each other through the notifier: with the
fallback poll made far longer than a purge may take (:data:`LONG`), a purge on one node
still answers at once, confirmed by the other, because the pokes woke both relays; a
subscription killed from the server's side is made again, counted, and loses no purge
and none of the memory tier."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest
from tests.integration.conftest import Origin, drop_stoker_keys
from tests.integration.test_purge_relay import (
    REDIS_DB_URL,
    TAGGED,
    member,
    served,
)
from tests.job_backends import PG_URL, pg_schema, schema_url

from stoker.admin import metrics
from stoker.app.stoker import Stoker
from stoker.backends.postgres.notifier import APPLICATION_NAME
from stoker.cache.outcome import Kind
from stoker.cache.subscription import Link, Subscription
from stoker.purge import relay as purge_relay
from stoker.purge.scope import PurgeScope

LONG = 10.0
"""The fallback poll of these tests: twice ``purge_ack_timeout``, so a purge answered
with both nodes confirming was heard of through a poke, never a poll."""
QUICK = 2.0
"""What a purge may take here (a loaded CI box: generous, and a fifth of :data:`LONG`)."""


@pytest.fixture(autouse=True)
def long_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(purge_relay, "SLOW_POLL", LONG)


async def timed_purge(node: Stoker, scope: PurgeScope) -> tuple[tuple[str, ...], float]:
    loop = asyncio.get_running_loop()
    began = loop.time()
    result = await node.purger.purge(scope)
    return result.unconfirmed, loop.time() - began


async def kill_listeners(notifier: Subscription) -> int:
    conn = await asyncpg.connect(PG_URL)
    try:
        return len(await conn.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = $1", APPLICATION_NAME.format(
                channel=notifier.channel.name)))
    finally:
        await conn.close()


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "not within the time given"
        await asyncio.sleep(0.01)


async def test_a_purge_answers_at_once_through_postgresql_pokes(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with member(origin, tmp_path / "a", "a", processes=1, database_url=url) as (
                a, ra), member(origin, tmp_path / "b", "b", processes=1,
                               database_url=url) as (b, rb):
            assert ra.notifier.reaches_others and rb.notifier.connected
            await served(a, "/t")
            await served(b, "/t")
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            heard = rb.notifier.rung("published")
            unconfirmed, took = await timed_purge(a, PurgeScope(tags=("post-1",)))
            after = await served(b, "/t")
            woken = rb.notifier.rung("published") - heard
    assert unconfirmed == () and took < QUICK
    assert after == (Kind.MISS, b"v2")
    assert woken >= 1  # B read the bus because A poked it


async def test_a_purge_answers_at_once_through_redis_pokes(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    await drop_stoker_keys(REDIS_DB_URL)
    with pg_schema(migrated=False) as schema:
        shared = {"processes": 1, "l2_url": REDIS_DB_URL, "database_url": schema_url(schema)}
        try:
            async with member(origin, tmp_path / "a", "a", **shared) as (a, ra), \
                    member(origin, tmp_path / "b", "b", **shared) as (b, rb):
                notifier = ra.notifier
                assert isinstance(notifier, Subscription) and "Redis" in notifier.channel.where
                await served(a, "/t")
                await a.store.flush()
                assert await served(b, "/t") == (Kind.HIT, b"v1")
                origin.app.set("/t", headers=TAGGED, body=b"v2")
                heard = rb.notifier.rung("published")
                unconfirmed, took = await timed_purge(a, PurgeScope(tags=("post-1",)))
                after = await served(b, "/t")
                woken = rb.notifier.rung("published") - heard
        finally:
            await drop_stoker_keys(REDIS_DB_URL)
    assert unconfirmed == () and took < QUICK
    assert after == (Kind.MISS, b"v2")
    assert woken >= 1


async def test_a_lost_subscription_loses_no_purge_and_no_memory(
        origin: Origin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision of docs/decisions/0037-notifier.md: B's subscription killed and refused
    for a while (a fault), a purge on A still answers at once (B polls every POLL while it
    is down), nothing is dropped from B's memory, and once B is subscribed again (counted)
    the pokes carry the next purge."""
    origin.app.set("/kept", headers=[("cache-control", "max-age=600")], body=b"kept")
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with member(origin, tmp_path / "a", "a", processes=1, database_url=url) as (
                a, ra), member(origin, tmp_path / "b", "b", processes=1,
                               database_url=url) as (b, rb):
            for path in ("/kept", "/t"):
                await served(b, path)
            notifier = rb.notifier
            assert isinstance(notifier, Subscription)
            refused = Refusal(notifier, monkeypatch)
            assert await kill_listeners(notifier) == 2
            await eventually(lambda: ra.notifier.reconnects == 1 and not notifier.connected)
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            while_down = await timed_purge(a, PurgeScope(tags=("post-1",)))
            after = await served(b, "/t")
            refused.lift()
            await eventually(lambda: notifier.connected)
            origin.app.set("/t", headers=TAGGED, body=b"v3")
            back = await timed_purge(a, PurgeScope(tags=("post-1",)))
            again = await served(b, "/t")
            kept = await served(b, "/kept")
            figures = metrics.own(b)
    assert while_down[0] == back[0] == () and while_down[1] < QUICK and back[1] < QUICK
    assert after == (Kind.MISS, b"v2") and again == (Kind.MISS, b"v3")
    assert kept == (Kind.HIT, b"kept")  # B's memory tier stayed
    assert figures.notifier_reconnects == 1 and figures.notifier_connected


class Refusal:
    """A fault: ``notifier``'s channel refuses new subscriptions until :meth:`lift`."""

    def __init__(self, notifier: Subscription, monkeypatch: pytest.MonkeyPatch) -> None:
        channel = notifier.channel
        subscribe, self._lifted = channel.subscribe, False

        async def refusing(heard: Callable[[str], None]) -> Link:
            if not self._lifted:
                raise ConnectionError("injected: PostgreSQL refuses connections")
            return await subscribe(heard)

        monkeypatch.setattr(channel, "subscribe", refusing)

    def lift(self) -> None:
        self._lifted = True
