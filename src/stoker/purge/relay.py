"""This process on the purge bus: it relays its own purges and carries out the others'.

A process sharing its cache with others (``processes > 1``, or nodes on one
``database_url``: :mod:`stoker.app.sharing`) joins the
:class:`~stoker.purge.bus.PurgeBus` at the bus's newest number (what was relayed
before is in force already where it was stored, and its memory tier is new); what the
bus still keeps (the last :data:`KEPT` seconds) it puts in force for its L2 reads (the
purge list's bans, :mod:`stoker.purge.bans`), so what a purge's L2 lookup missed
(an evicted Redis tag set) is not read back by a process started after it.  Then:

- its purger relays each purge once it is in force here (:meth:`PurgeRelay.spread`) and
  answers once every other live member has confirmed it, or after
  ``purge_ack_timeout`` naming those that had not;
- :meth:`PurgeRelay.follow` reads what the others relayed when the
  :class:`~stoker.cache.notifier.Notifier` says something was published, and at the
  latest every :data:`POLL` seconds (:data:`SLOW_POLL` while a notifier reaching the
  other processes is connected, :data:`LONE_POLL` while no other live member is on the
  bus, as its last heartbeat found), and puts each in force here as this process's own
  purge of the same scope (recorded in its purge list, applied to both tiers: a fetch of
  this process that raced the other's purge may have written the shared tier after the
  other's lookups), a new cache version adopted as it is; then it confirms the number,
  and pokes the others that it did when it put one of theirs in force.  It confirms at
  least every :data:`HEARTBEAT` seconds, so the others know it lives.

The notifier only makes members hear sooner; the bus stays the record.  Every relayed
purge pokes ``"published"`` (after it is on the bus), every confirmation of another's
purge pokes ``"confirmed"``, and a waiter looks at the bus again on a poke or at its
fallback poll, whichever comes first.  A process whose subscription is lost does NOT
drop its memory tier: a poke carries no purge, so a missed one loses time, never a purge.
What it would have heard is on the bus, numbered: it polls every :data:`POLL` seconds
while the subscription is down and reads everything at once when it is back (every bell
rings); a gap in the numbers, or a bus it cannot read for longer than ``node_timeout``,
drops the memory tier as they always did.  And a purge answers on the others'
confirmations on the bus, never on a poke (docs/decisions/0037-notifier.md).

What this process purges while the bus does not take it (the database down) is kept, in
order, in its outbox (:mod:`stoker.purge.outbox`: bounded, a hard purge of
everything replacing what was kept before it, soft and hard keeping their meaning when
folded) and published, oldest first, as soon as the bus answers: by the purge or
invalidation that comes next, and at the latest by :meth:`PurgeRelay.follow` before its
next read.  A purge waits at most ``purge_ack_timeout`` for the bus to take it; one it
did not (or whose try failed) is answered with :data:`~stoker.purge.bus.NOT_RELAYED`
alone as its unconfirmed members: in force here, not on the bus yet.  An unsafe method's
invalidation (:meth:`PurgeRelay.tell`) goes through the same outbox.  A process stopping
with purges still kept logs an error naming how many (they live in its memory only: the
database that would keep them durably is the one not answering, and this process's own
files are read by no other node).

Invariants: a number is confirmed only once everything up to it is in force here, its
own relayed purges included (they were in force before they were relayed, or kept); a
gap in the numbers (this process fell behind what the bus keeps) drops the memory tier
whole before anything is confirmed, and so does a bus not followed (unreachable, or
what it relays not applied here) for longer than ``node_timeout`` (the others then stop
waiting for this process), once per outage; a failure to publish, read or apply is
logged as :class:`~stoker.resilience.repeats.Repeats` says (when it starts, every
``SAY_EVERY`` seconds, when it ends) and retried at the next poll, never skipped
(what was relayed meanwhile is put in force, and what was kept published, when the bus
answers again).  Each line names what failed (the bus, or the cache tier a relayed purge
is applied to), the cause and when the failures began.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Final

from stoker.cache.memory import MemoryStore
from stoker.cache.notifier import Notifier
from stoker.clock import Clock
from stoker.purge import outbox
from stoker.purge.bus import NOT_RELAYED, Member, PurgeBus, Relayed, unconfirmed
from stoker.purge.list import PurgeMark
from stoker.purge.outbox import Outgoing
from stoker.purge.purger import Purger
from stoker.resilience.repeats import Repeats

log = logging.getLogger("stoker.purge")

POLL: Final = 0.02
"""Most seconds between two reads of the bus (pokes reach this process alone)."""
SLOW_POLL: Final = 0.25
"""Most seconds between two reads of the bus while a notifier reaching the others is
connected: they poke when they publish or confirm, this read is for a poke lost."""
LONE_POLL: Final = 0.25
"""Most seconds between two reads of the bus while this process is alone on it (no other
member seen live at its last heartbeat): a lone process (an embedded worker, a single
node) costs four reads a second, not fifty.  Another member joining is seen at the next
heartbeat, so for at most :data:`HEARTBEAT` + ``LONE_POLL`` seconds after it joined its
purges reach this process within ``LONE_POLL`` (its purge waits for the confirmation
meanwhile, as for any member), and within :data:`POLL` from then on."""
HEARTBEAT: Final = 1.0
"""Longest time between two confirmations."""
KEPT: Final = 600.0
"""Seconds what was relayed stays on the bus (for members catching up)."""


class NotApplied(Exception):
    """A purge read from the bus could not be applied here (the cache tier failed, not
    the bus): its cause is the tier's error."""


class PurgeRelay:
    """This process's member of the bus (see the module docstring)."""

    def __init__(self, bus: PurgeBus, me: str, purger: Purger, l1: MemoryStore,
                 clock: Clock, *, ack_timeout: float, node_timeout: float,
                 notifier: Notifier, figures: Callable[[], str] | None = None) -> None:
        """``purger`` puts what the others relay in force here (its purge list, its
        cache, its cache version); ``l1`` is dropped whole when purges may have been
        missed; ``figures``: what this process says of itself with each confirmation (its
        metrics).  ``bus`` and ``notifier`` stay their opener's: used, never closed."""
        self._bus = bus
        self.notifier = notifier
        self.me = me
        self._purger = purger
        self._l1 = l1
        self._clock = clock
        self._ack_timeout = ack_timeout
        self._node_timeout = node_timeout
        self._position = 0
        self._confirmed_at = float("-inf")
        self._outbox: tuple[Outgoing, ...] = ()
        self._taken = self._sent = self._failures = self._newest = 0
        """Tickets taken, tickets on the bus, failed tries to publish, the number of this
        process's newest purge on the bus."""
        self._sending = asyncio.Lock()
        self._progress = asyncio.Condition()
        self._kicked: asyncio.Task[None] | None = None
        self._figures = figures
        self._alone = False
        """No other live member was on the bus at the last heartbeat (:data:`LONE_POLL`)."""

    async def join(self) -> None:
        """Start at the bus's newest number, with what the bus still keeps in force for
        this process's L2 reads, and say so."""
        self._position = await self._bus.latest()
        bans = self._purger.purges.bans
        for relayed in await self._bus.since(0):
            bans.add(relayed.mark)
        await self._confirm()

    async def spread(self, mark: PurgeMark, version: str | None) -> tuple[str, ...]:
        deadline = self._clock.monotonic() + self._ack_timeout
        if not await self._on_bus(self._take(mark, version), self._ack_timeout):
            log.warning("purge not relayed (the purge bus did not take it within %g s): in "
                        "force here, kept (%d purges in all) and relayed once the bus answers",
                        self._ack_timeout, self.kept())
            return (NOT_RELAYED,)
        number = self._newest
        while True:
            heard = self.notifier.rung("confirmed")
            waiting = unconfirmed(await self._bus.members(), number, self.me,
                                  self._clock.now(), self._node_timeout)
            if waiting:
                self._alone = False  # someone joined since the heartbeat: poll at POLL
            left = deadline - self._clock.monotonic()
            if not waiting or left <= 0:
                if waiting:
                    log.warning("purge %d: not confirmed within %g s by %s", number,
                                self._ack_timeout, ", ".join(waiting))
                return tuple(waiting)
            await self.notifier.wait("confirmed", min(self._poll() / 2, left), heard)

    async def members(self) -> Sequence[Member]:
        return await self._bus.members()

    def tell(self, mark: PurgeMark) -> None:
        self._take(mark, None)

    def kept(self) -> int:
        """How many of this process's purges are in force here but not on the bus yet."""
        return self._taken - self._sent

    async def follow(self, stop: asyncio.Event) -> None:
        """Carry out what the others relay until ``stop``."""
        trimmed = heard = self._clock.monotonic()
        forgot = False
        failing = Repeats(log, "following the purge bus", lambda: (
            f"trying again every {self._poll():g} s, {self.kept()} purges of this process "
            "kept meanwhile"), self._clock)
        while not stop.is_set():
            poked = self.notifier.rung("published")
            try:
                await self._send()
                await self.catch_up()
                failing.answered()
                heard, forgot = self._clock.monotonic(), False
                if heard - trimmed >= KEPT / 10:
                    await self._bus.trim(self._clock.now() - KEPT)
                    trimmed = self._clock.monotonic()
            except NotApplied as error:
                failing.failed(error.__cause__ or error, str(error))
            except Exception as error:
                failing.failed(error, "the purge bus (the database) did not answer")
            if (failing.failing and not forgot
                    and self._clock.monotonic() - heard > self._node_timeout):
                self._forget_memory(f"the purge bus could not be followed for over "
                                    f"{self._node_timeout:g} s")
                forgot = True
            await self._pause(stop, poked)

    async def catch_up(self) -> int:
        """Put in force what was relayed since the last call, confirm; how many."""
        relayed = await self._bus.since(self._position)
        if relayed and self._position and relayed[0].number > self._position + 1:
            self._forget_memory(f"fell behind the purge bus ({self._position} -> "
                                f"{relayed[0].number})")
        theirs = False
        for one in relayed:
            if one.sender != self.me:
                await self._apply(one)
                theirs = True
            self._position = one.number
        if relayed or self._clock.monotonic() - self._confirmed_at >= HEARTBEAT:
            await self._confirm()
        if theirs:  # someone's purge may be waiting for this confirmation
            await self.notifier.poke("confirmed")
        return len(relayed)

    async def close(self) -> None:
        """Relay what is kept (trying for at most ``purge_ack_timeout``; what is still kept
        then is logged, as an error naming how many) and leave the bus (no purge waits for
        this process now); the bus and the notifier are left to their opener."""
        try:
            await asyncio.wait_for(self._send(), self._ack_timeout)
        except Exception as error:
            log.error("stopping with %d purges in force here that the other processes never "
                      "heard of (the purge bus did not take them: %s: %s); purge them again",
                      self.kept(), type(error).__name__, error)
        if self._kicked is not None:
            self._kicked.cancel()
            await asyncio.gather(self._kicked, return_exceptions=True)
        await self._bus.leave(self.me)

    def _take(self, mark: PurgeMark, version: str | None) -> int:
        """Keep ``mark`` (and the version it switched to) to publish, and start publishing
        what is kept; its ticket."""
        self._taken += 1
        self._outbox = outbox.kept(self._outbox, Outgoing(mark, version, self._taken))
        if self._kicked is None or self._kicked.done():
            self._kicked = asyncio.ensure_future(self._send_now())
        return self._taken

    async def _on_bus(self, ticket: int, timeout: float) -> bool:
        """Whether the purge of ``ticket`` is on the bus before a try to publish fails or
        ``timeout`` seconds pass."""
        failures = self._failures
        async with self._progress:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait_for(
                    lambda: self._sent >= ticket or self._failures > failures), timeout)
            return self._sent >= ticket

    async def _send_now(self) -> None:
        """:meth:`_send` at once; a failure is :meth:`follow`'s to say, and to retry."""
        try:
            await self._send()
        except Exception:
            return

    async def _send(self) -> None:
        """Publish what is kept, oldest first, until nothing is (a failure is raised, what
        was not published stays kept), and poke the others to read it."""
        async with self._sending:
            published = False
            try:
                while self._outbox:
                    head = self._outbox[0]
                    try:
                        number = await self._bus.publish(self.me, head.mark, head.version)
                    except Exception:
                        await self._progressed(failed=True)
                        raise
                    if self._outbox and self._outbox[0] is head:  # else replaced meanwhile
                        self._outbox = self._outbox[1:]
                    published = True
                    await self._progressed(upto=head.upto, number=number)
            finally:
                if published:
                    await self.notifier.poke("published")

    async def _progressed(self, *, failed: bool = False, upto: int = 0,
                          number: int = 0) -> None:
        """Count a try to publish (failed, or on the bus up to ticket ``upto`` as
        ``number``) and wake the purges waiting for it."""
        async with self._progress:
            self._failures += failed
            self._sent = max(self._sent, upto)
            self._newest = max(self._newest, number)
            self._progress.notify_all()

    def _poll(self) -> float:
        """The most seconds between two looks at the bus now (see :data:`SLOW_POLL`)."""
        notifier = self.notifier
        if notifier.reaches_others and notifier.connected:
            return SLOW_POLL
        return LONE_POLL if self._alone else POLL

    async def _pause(self, stop: asyncio.Event, poked: int) -> None:
        """Until a poke of ``"published"`` beyond ``poked``, the poll, or ``stop``."""
        stopping = asyncio.ensure_future(stop.wait())
        waking = asyncio.ensure_future(self.notifier.wait("published", self._poll(), poked))
        try:
            await asyncio.wait([stopping, waking], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            waking.cancel()

    def _forget_memory(self, why: str) -> None:
        """Drop the memory tier: purges may have been missed (the others stopped waiting
        for this process), and what it holds may be what they purged."""
        log.warning("%s: dropping the memory tier", why)
        self._l1.clear_nowait()

    async def _apply(self, relayed: Relayed) -> None:
        mark, purger = relayed.mark, self._purger
        purges = purger.purges
        purges.record(soft=mark.soft, now=mark.now, keys=mark.keys, prefixes=mark.prefixes,
                      tags=mark.tags, everything=mark.everything)
        if relayed.version is not None:
            purger.adopt_version(relayed.version)
            return
        try:
            await purger.store.purge(purges.latest)
        except Exception as error:
            raise NotApplied(f"purge {relayed.number} of {relayed.sender} read from the bus, "
                             "not applied to the cache tiers here") from error

    async def _confirm(self) -> None:
        """Confirm the position (the heartbeat), and look whether others are on the bus."""
        said = self._figures() if self._figures is not None else None
        now = self._clock.now()
        await self._bus.confirm(self.me, self._position, now, said)
        self._confirmed_at = self._clock.monotonic()
        self._alone = not any(member.name != self.me
                              and now - member.seen_at <= self._node_timeout
                              for member in await self._bus.members())


async def open_relay(bus: PurgeBus, me: str, purger: Purger, l1: MemoryStore, clock: Clock,
                     *, ack_timeout: float, node_timeout: float, notifier: Notifier,
                     figures: Callable[[], str] | None = None) -> PurgeRelay:
    """``purger``'s relay on ``bus`` as ``me``, hearing the others through ``notifier``
    (both still the caller's to close), joined: ready to be held in the purger's
    :class:`~stoker.purge.bus.RelaySlot`, which it relays its purges and the unsafe
    methods' invalidations through."""
    relay = PurgeRelay(bus, me, purger, l1, clock, ack_timeout=ack_timeout,
                       node_timeout=node_timeout, notifier=notifier, figures=figures)
    await relay.join()
    return relay
