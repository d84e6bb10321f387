"""The PostgreSQL :class:`~stoker.cache.notifier.Notifier`: LISTEN/NOTIFY between the
nodes sharing one database, on the reconnecting :class:`~stoker.cache.subscription.
Subscription`.

Lifecycle: ``notifier = await open_notifier(url, pool, clock)`` (its first LISTEN made);
``await notifier.close()`` closes its listening connection and leaves the pool open: it
belongs to whoever gave it.

The channel is ``stoker_bus_`` and the CRC-32 of the schema the pool works in (its
``current_schema()``), so the members of one cache, on one database and schema, share it
and caches in other schemas of that database never wake each other (NOTIFY belongs to
the database).  A poke is ``pg_notify(channel, kind)`` on any connection of the pool;
each member LISTENs on a connection of its own (its ``application_name``
:data:`APPLICATION_NAME`, as ``pg_stat_activity`` shows it), opened from ``url`` (the
pool's URL: its ``search_path`` too).  A listening connection is lost when PostgreSQL
closes it (asyncpg's termination listener: a restart, ``pg_terminate_backend``) or when
it does not answer ``SELECT 1`` within :data:`PING_TIMEOUT`, asked after every
:data:`PING_EVERY` seconds of quiet (a link that died without closing).
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import Callable
from typing import Final

import asyncpg

from stoker.backends.postgres.connection import describe
from stoker.cache.notifier import Kind
from stoker.cache.subscription import Link, Subscription
from stoker.clock import Clock

APPLICATION_NAME: Final = "stoker notifier {channel}"
PING_EVERY: Final = 5.0
"""Seconds of quiet after which the listening connection is asked whether it lives."""
PING_TIMEOUT: Final = 5.0
"""Seconds a listening connection has to answer (to connect, to a ping, to close)."""

_NOTIFY: Final = "SELECT pg_notify($1, $2)"
_SCHEMA: Final = "SELECT current_schema()"


def channel_for(schema: str) -> str:
    """The channel of the members working in ``schema`` (an identifier: 19 characters)."""
    return f"stoker_bus_{zlib.crc32(schema.encode('utf-8')):08x}"


async def open_notifier(url: str, pool: asyncpg.Pool, clock: Clock) -> Subscription:
    """A notifier listening on its own connection to ``url`` and poking through ``pool``
    (the pool of the same URL), subscribed."""
    notifier = Subscription(PostgresChannel(url, pool, channel_for(await pool.fetchval(
        _SCHEMA))), clock)
    await notifier.open()
    return notifier


class PostgresChannel:
    """The members' channel ``name`` in the database at ``url`` (see the module docstring)."""

    def __init__(self, url: str, pool: asyncpg.Pool, name: str) -> None:
        self._url = url
        self._pool = pool
        self.name = name
        self.where = f"PostgreSQL channel {name} ({describe(url)})"

    async def subscribe(self, heard: Callable[[str], None]) -> Link:
        named = {"application_name": APPLICATION_NAME.format(channel=self.name)}
        conn = await asyncpg.connect(self._url, timeout=PING_TIMEOUT, server_settings=named)
        listening = Listening(conn)
        try:
            await conn.add_listener(self.name, lambda *message: heard(message[-1]))
        except BaseException:
            await listening.close()
            raise
        return listening

    async def send(self, what: Kind) -> None:
        await self._pool.execute(_NOTIFY, self.name, what)

    async def close(self) -> None:
        """Nothing to release: the pool stays open, it belongs to whoever gave it."""


class Listening:
    """One listening connection (a :class:`~stoker.cache.subscription.Link`)."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn
        self._closed = asyncio.Event()
        conn.add_termination_listener(lambda _: self._closed.set())

    async def lost(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), PING_EVERY)
                return
            await self._conn.fetchval("SELECT 1", timeout=PING_TIMEOUT)

    async def close(self) -> None:
        if not self._conn.is_closed():
            with contextlib.suppress(Exception):
                await self._conn.close(timeout=PING_TIMEOUT)
