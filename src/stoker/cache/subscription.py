"""A :class:`~stoker.cache.notifier.Notifier` on a channel other processes share: one
connection subscribed to it, subscribed again when lost.  The PostgreSQL (LISTEN/NOTIFY)
and Redis (pub/sub) notifiers are this over a :class:`Channel` of their own.

Lifecycle: ``notifier = Subscription(channel, clock)``, ``await notifier.open()`` (the
first subscription, or a ``ConnectionError`` naming the channel); ``await
notifier.close()`` lets go of the subscription and of the channel.

Invariants: while a subscription is held, every message heard on it that names a kind
rings that kind's bell (anything else is logged and dropped); a lost subscription (the
link's :meth:`Link.lost` returned or raised) is logged once and rings every bell (a
waiter that chose a long timeout while connected chooses again), then is subscribed
again after :func:`backoff` seconds on the injected clock, doubling up to
:data:`RETRY_MAX`, until it is back; then ``reconnects`` grows by one, that is logged,
and every bell rings again (what was poked meanwhile went unheard).  While it is down
``connected`` is ``False`` and waits still end at their timeout.  A failed send is
logged once until one succeeds, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final, Protocol

from stoker.cache.notifier import KINDS, Doorbell, Kind
from stoker.clock import Clock

log = logging.getLogger("stoker.purge")

RETRY_FIRST: Final = 0.05
"""Seconds before the first attempt to subscribe again."""
RETRY_MAX: Final = 2.0
"""Most seconds between two attempts (a restarted server is heard of within this)."""
_KIND_OF: Final[dict[str, Kind]] = {kind: kind for kind in KINDS}


class Link(Protocol):
    """One connection subscribed to a channel."""

    async def lost(self) -> None:
        """Return, or raise what broke it, once the connection is lost."""

    async def close(self) -> None:
        """Let go of the connection (never raises; again: nothing)."""


class Channel(Protocol):
    """Where the members poke each other, as a backend reaches it."""

    name: str
    """The channel's name on its server."""
    where: str
    """The channel and its server, for the log lines (no password)."""

    async def subscribe(self, heard: Callable[[str], None]) -> Link:
        """A new connection subscribed to the channel, calling ``heard`` with each
        message's text; raises when the server cannot be reached."""

    async def send(self, what: Kind) -> None:
        """Publish ``what`` on the channel."""

    async def close(self) -> None:
        """Let go of what :meth:`send` uses."""


def backoff(failures: int) -> float:
    """Seconds to wait before the next attempt after ``failures`` failed ones in a row:
    :data:`RETRY_FIRST`, doubling, at most :data:`RETRY_MAX`.  Pure."""
    return min(RETRY_MAX, RETRY_FIRST * 2.0 ** min(failures, 16))


class Subscription:
    """A notifier on ``channel`` (see the module docstring)."""

    reaches_others = True

    def __init__(self, channel: Channel, clock: Clock) -> None:
        self.channel: Final = channel
        self._clock = clock
        self._bell = Doorbell(clock)
        self._link: Link | None = None
        self._keeping: asyncio.Task[None] | None = None
        self._send_failing = False
        self.reconnects = 0

    @property
    def connected(self) -> bool:
        return self._link is not None

    async def open(self) -> None:
        """Subscribe, and keep subscribed from now on."""
        try:
            link = await self.channel.subscribe(self._heard)
        except Exception as error:
            await self.channel.close()
            raise ConnectionError(f"cannot subscribe to {self.channel.where}: "
                                  f"{error}") from error
        self._link = link
        self._keeping = asyncio.create_task(self._keep(link))

    def rung(self, what: Kind) -> int:
        return self._bell.rung(what)

    async def poke(self, what: Kind) -> None:
        try:
            await self.channel.send(what)
        except Exception as error:
            if not self._send_failing:
                log.warning("could not poke the others through %s (%s: %s); they read the "
                            "purge bus at their next poll", self.channel.where,
                            type(error).__name__, error)
            self._send_failing = True
        else:
            self._send_failing = False

    async def wait(self, what: Kind, timeout: float, after: int | None = None) -> bool:
        return await self._bell.wait(what, timeout, after)

    async def close(self) -> None:
        if self._keeping is not None:
            self._keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeping
        if self._link is not None:
            await self._link.close()
            self._link = None
        await self.channel.close()

    def _heard(self, message: str) -> None:
        kind = _KIND_OF.get(message)
        if kind is not None:
            self._bell.ring(kind)
        else:
            log.warning("ignored a message on %s: %r is not one of %s", self.channel.where,
                        message[:80], ", ".join(KINDS))

    async def _keep(self, link: Link) -> None:
        """Hold ``link`` until it is lost, then subscribe again, and so on."""
        while True:
            why = await _until_lost(link)
            self._link = None
            log.warning("lost the subscription to %s (%s); the purge bus is polled until it "
                        "is back", self.channel.where, why)
            self._bell.ring_all()  # the waiters choose how long to wait again
            link = await self._again()
            self._link = link
            self.reconnects += 1
            log.info("subscribed to %s again", self.channel.where)
            self._bell.ring_all()

    async def _again(self) -> Link:
        """A new subscription, tried after :func:`backoff` until one is made."""
        failures = 0
        while True:
            await self._clock.sleep(backoff(failures))
            try:
                return await self.channel.subscribe(self._heard)
            except Exception:
                failures += 1


async def _until_lost(link: Link) -> str:
    """Wait until ``link`` is lost, let go of it; why, for the log."""
    try:
        await link.lost()
        return "the connection was closed"
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    finally:
        await link.close()
