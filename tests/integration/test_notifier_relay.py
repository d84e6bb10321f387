"""Nodes on one database (and one Redis) poke each other through the notifier: on a
clock that stands still, so that no fallback poll and no ``purge_ack_timeout`` ever ends
a wait, a purge on one node is still answered, confirmed by the other, because the pokes
woke both relays; a subscription killed from the server's side is made again, counted,
and loses no purge (the node that lost it polls every :data:`POLL` meanwhile) and none of
the memory tier."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest
from tests.clocks import SteppedClock
from tests.conftest import until
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
from stoker.cache.subscription import RETRY_MOST, Link, Subscription
from stoker.purge import relay as purge_relay
from stoker.purge.relay import POLL
from stoker.purge.scope import PurgeScope
from stoker.resilience.outage import RETRY_FIRST

LONG = 10.0
"""The fallback poll of these tests (seconds on their clock): twice
``purge_ack_timeout``, so a purge waits for confirmations in looks at the bus
:data:`ACK_WAIT` apart, longer than any step the tests move the clock by."""
ACK_WAIT = LONG / 2
"""How long a purging node waits for a poke of ``"confirmed"`` before it looks again."""
HANG = 30.0
"""Real seconds after which a purge waiting for a poke that never comes fails the test (a
guard against a hang, not a measure of speed)."""


@pytest.fixture(autouse=True)
def long_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(purge_relay, "SLOW_POLL", LONG)


async def purge(node: Stoker, scope: PurgeScope) -> tuple[str, ...]:
    """``node``'s purge of ``scope``: the members it waited for and did not hear from."""
    async with asyncio.timeout(HANG):
        return (await node.purger.purge(scope)).unconfirmed


async def kill_listeners(notifier: Subscription) -> int:
    conn = await asyncpg.connect(PG_URL)
    try:
        return len(await conn.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = $1", APPLICATION_NAME.format(
                channel=notifier.channel.name)))
    finally:
        await conn.close()


async def test_a_purge_answers_on_postgresql_pokes_alone(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    clock = SteppedClock()  # never moved: only pokes end the relays' waits
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with member(origin, tmp_path / "a", "a", clock, processes=1,
                          database_url=url) as (a, ra), \
                member(origin, tmp_path / "b", "b", clock, processes=1,
                       database_url=url) as (b, rb):
            assert ra.notifier.reaches_others and rb.notifier.connected
            await served(a, "/t")
            await served(b, "/t")
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            heard = rb.notifier.rung("published")
            unconfirmed = await purge(a, PurgeScope(tags=("post-1",)))
            after = await served(b, "/t")
            woken = rb.notifier.rung("published") - heard
    assert unconfirmed == ()
    assert after == (Kind.MISS, b"v2")
    assert woken >= 1  # B read the bus because A poked it


async def test_a_purge_answers_on_redis_pokes_alone(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    await drop_stoker_keys(REDIS_DB_URL)
    clock = SteppedClock()  # never moved: only pokes end the relays' waits
    with pg_schema(migrated=False) as schema:
        shared = {"processes": 1, "l2_url": REDIS_DB_URL, "database_url": schema_url(schema)}
        try:
            async with member(origin, tmp_path / "a", "a", clock, **shared) as (a, ra), \
                    member(origin, tmp_path / "b", "b", clock, **shared) as (b, rb):
                notifier = ra.notifier
                assert isinstance(notifier, Subscription) and "Redis" in notifier.channel.where
                await served(a, "/t")
                await a.store.flush()
                assert await served(b, "/t") == (Kind.HIT, b"v1")
                origin.app.set("/t", headers=TAGGED, body=b"v2")
                heard = rb.notifier.rung("published")
                unconfirmed = await purge(a, PurgeScope(tags=("post-1",)))
                after = await served(b, "/t")
                woken = rb.notifier.rung("published") - heard
        finally:
            await drop_stoker_keys(REDIS_DB_URL)
    assert unconfirmed == ()
    assert after == (Kind.MISS, b"v2")
    assert woken >= 1


async def test_a_lost_subscription_loses_no_purge_and_no_memory(
        origin: Origin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision of docs/decisions/0037-notifier.md: B's subscription killed and refused
    for a while (a fault), a purge on A is still answered once B's clock passes one
    :data:`POLL` (B polls every POLL while it is down), nothing is dropped from B's
    memory, and once B is subscribed again (counted) the pokes alone carry the next
    purge."""
    origin.app.set("/kept", headers=[("cache-control", "max-age=600")], body=b"kept")
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    clock = SteppedClock()
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with member(origin, tmp_path / "a", "a", clock, processes=1,
                          database_url=url) as (a, ra), \
                member(origin, tmp_path / "b", "b", clock, processes=1,
                       database_url=url) as (b, rb):
            for path in ("/kept", "/t"):
                await served(b, path)
            notifier = rb.notifier
            assert isinstance(notifier, Subscription)
            refused = Refusal(notifier, monkeypatch)
            assert await kill_listeners(notifier) == 2
            # a Subscription not connected waits RETRY_FIRST to subscribe again
            await until(lambda: not (ra.notifier.connected or notifier.connected),
                        "both subscriptions lost")
            clock.advance(RETRY_FIRST)  # A is subscribed again, B refused
            await until(lambda: ra.notifier.reconnects == 1 and not notifier.connected,
                        "A subscribed again, B not")
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            purging = asyncio.ensure_future(purge(a, PurgeScope(tags=("post-1",))))
            await until(lambda: purging.done() or (  # B may have been polling already
                clock.pending[ACK_WAIT] > 0 and clock.pending[POLL] > 0),
                "the purge on the bus, A waiting for B's confirmation, B for its next poll")
            clock.advance(POLL)
            while_down = await purging
            after = await served(b, "/t")
            refused.lift()
            await clock.sleeping(RETRY_MOST)  # B waits to try again
            clock.advance(RETRY_MOST)
            await until(lambda: notifier.connected, "B subscribed again")
            origin.app.set("/t", headers=TAGGED, body=b"v3")
            back = await purge(a, PurgeScope(tags=("post-1",)))
            again = await served(b, "/t")
            kept = await served(b, "/kept")
            figures = metrics.own(b)
    assert while_down == back == ()
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
