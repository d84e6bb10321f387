"""A :class:`~stoker.cache.notifier.Notifier` on a channel other processes share: one
connection subscribed to it, subscribed again when lost.  The PostgreSQL (LISTEN/NOTIFY)
and Redis (pub/sub) notifiers are this over a :class:`Channel` of their own.

Lifecycle: ``notifier = Subscription(channel, clock)``, ``await notifier.open()`` (the
first subscription, or a ``ConnectionError`` naming the channel); ``await
notifier.close()`` lets go of the subscription and of the channel.

Invariants: while a subscription is held, every message heard on it that names a kind
rings that kind's bell (anything else is logged and dropped); a lost subscription (the
link's :meth:`Link.lost` returned or raised) is logged and rings every bell (a waiter
that chose a long timeout while connected chooses again), then is subscribed again
after :func:`stoker.resilience.outage.retry_in` seconds on the injected clock (doubling, at most
:data:`RETRY_MOST`), until it is back; then ``reconnects`` grows by one, that is
logged, and every bell rings again (what was poked meanwhile went unheard).  Failed
attempts and failed sends are logged as :mod:`stoker.resilience.outage` says (the first, then one
line every ``SAY_EVERY`` seconds, naming the cause and since when, then the return), and
a send never raises.  While it
is down ``connected`` is ``False`` and waits still end at their timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final, Protocol

from stoker.cache.notifier import KINDS, Doorbell, Kind
from stoker.clock import Clock
from stoker.resilience import outage
from stoker.resilience.repeats import cause, clock_time

log = logging.getLogger("stoker.purge")

RETRY_MOST: Final = 2.0
"""Most seconds between two attempts to subscribe again (the first after
:data:`~stoker.resilience.outage.RETRY_FIRST`): a restarted server is heard of within this."""
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


CANCEL_AGAIN: Final = 0.5
"""Seconds :meth:`Subscription.close` waits for its task to end before cancelling again."""


class Subscription:
    """A notifier on ``channel`` (see the module docstring)."""

    reaches_others = True

    def __init__(self, channel: Channel, clock: Clock) -> None:
        self.channel: Final = channel
        self._clock = clock
        self._bell = Doorbell(clock)
        self._link: Link | None = None
        self._keeping: asyncio.Task[None] | None = None
        self._sending = outage.Outage()
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
            self._sending, say = outage.failed(self._sending, self._clock.monotonic())
            if say:
                log.warning("could not poke the others through %s (%s: %s); they read the "
                            "purge bus at their next poll", self.channel.where,
                            type(error).__name__, error)
        else:
            self._sending, back = outage.answered(self._sending)
            if back:
                log.info("poking the others through %s again", self.channel.where)

    async def wait(self, what: Kind, timeout: float, after: int | None = None) -> bool:
        return await self._bell.wait(what, timeout, after)

    async def close(self) -> None:
        if self._keeping is not None:
            await _cancelled(self._keeping)
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
        """A new subscription, tried after :func:`~stoker.resilience.outage.retry_in` until one is
        made; a failing try said as the outage machine says (every ``SAY_EVERY`` s)."""
        state, _ = outage.failed(outage.Outage(), self._clock.monotonic())  # said: lost
        lost_at = self._clock.now()
        while True:
            await self._clock.sleep(outage.retry_in(state, RETRY_MOST))
            try:
                return await self.channel.subscribe(self._heard)
            except Exception as error:
                state, say = outage.failed(state, self._clock.monotonic())
                if say:
                    log.warning("still no subscription to %s since %s (%d tries failed, the "
                                "last %s); trying again every %g s at most, the purge bus "
                                "polled meanwhile", self.channel.where, clock_time(lost_at),
                                state.failures - 1, cause(error), RETRY_MOST)


async def _until_lost(link: Link) -> str:
    """Wait until ``link`` is lost, let go of it; why, for the log."""
    try:
        await link.lost()
        return "the connection was closed"
    except Exception as error:
        return cause(error)
    finally:
        await link.close()


async def _cancelled(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` until it ends: a client library may swallow one cancellation (redis-py
    turns one that meets its read timeout into a timeout, and its loop reads on)."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_AGAIN)
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()
