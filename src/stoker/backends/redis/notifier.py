"""The Redis :class:`~stoker.cache.notifier.Notifier`: pub/sub between the nodes sharing
one Redis tier, on the reconnecting :class:`~stoker.cache.subscription.Subscription`.

Lifecycle: ``notifier = await open_notifier(url, client, clock)`` (subscribed; ``client``
is on ``url``); ``await notifier.close()`` closes its subscription's connection and leaves
``client`` open: it belongs to whoever gave it.

The channel is ``PREFIX bus:<db>``, under the tier's key prefix; pub/sub ignores the
database number, so it is part of the name (the tiers of two databases on one server
never wake each other).  A poke is a PUBLISH of the kind on the client given (which
retries as redis-py does); each subscription is a new connection (client name
:data:`CLIENT_NAME`, as ``CLIENT LIST`` shows it) that retries nothing, so a lost one
surfaces: its reader raises ``ConnectionError`` when Redis closes it (a restart,
``CLIENT KILL``), and after :data:`PING_EVERY` seconds of quiet it sends a PING, whose
answer must come before the next :data:`PING_EVERY` have passed (a link that died
without closing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from stoker.cache.notifier import Kind
from stoker.cache.subscription import Link, Subscription
from stoker.clock import Clock

PREFIX: Final = "stoker:"
"""The Redis tier's key prefix (``RedisCacheStore``'s)."""
CLIENT_NAME: Final = "stoker-notifier@{channel}"
PING_EVERY: Final = 5.0
"""Seconds of quiet after which the subscription is asked whether it lives."""


async def open_notifier(url: str, client: aioredis.Redis, clock: Clock, *,
                        prefix: str = PREFIX) -> Subscription:
    """A notifier on the Redis at ``url``, on the channel under ``prefix``, subscribed,
    poking through ``client`` (a client on ``url``)."""
    notifier = Subscription(RedisChannel(url, client, prefix), clock)
    await notifier.open()
    return notifier


class RedisChannel:
    """The members' channel on the Redis at ``url`` (see the module docstring)."""

    def __init__(self, url: str, client: aioredis.Redis, prefix: str) -> None:
        self._url = url
        self._client = client
        kwargs = self._client.connection_pool.connection_kwargs
        self.name = f"{prefix}bus:{kwargs.get('db', 0)}"
        self.where = f"Redis channel {self.name} ({kwargs.get('host')}:{kwargs.get('port')})"

    async def subscribe(self, heard: Callable[[str], None]) -> Link:
        client = aioredis.Redis.from_url(self._url, retry=Retry(NoBackoff(), 0),
                                         client_name=CLIENT_NAME.format(channel=self.name))
        subscribed = Subscribed(client, heard)
        try:
            await subscribed.pubsub.subscribe(self.name)
        except BaseException:
            await subscribed.close()
            raise
        return subscribed

    async def send(self, what: Kind) -> None:
        await self._client.publish(self.name, what)

    async def close(self) -> None:
        """Nothing to release: the client stays open, it belongs to whoever gave it."""


class Subscribed:
    """One subscribed connection (a :class:`~stoker.cache.subscription.Link`)."""

    def __init__(self, client: aioredis.Redis, heard: Callable[[str], None]) -> None:
        self._client = client
        self._heard = heard
        self.pubsub = client.pubsub(ignore_subscribe_messages=True)

    async def lost(self) -> None:
        """Read messages until the connection fails (raises) or a PING goes unanswered."""
        pinged = False
        while True:
            message: Any = await self.pubsub.get_message(timeout=PING_EVERY)
            if message is None:
                if pinged:
                    raise ConnectionError(f"no answer to PING within {PING_EVERY:g} s")
                await self.pubsub.ping()
                pinged = True
            elif message["type"] == "pong":
                pinged = False
            elif message["type"] == "message":
                self._heard(bytes(message["data"]).decode("utf-8", "replace"))

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]
        with contextlib.suppress(Exception):
            await self._client.aclose()
