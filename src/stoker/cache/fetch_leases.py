"""Fetch leases: which member of a shared cache is fetching a key from the origin.

Requests collapse within a process (:mod:`stoker.cache.collapse`); a lease makes the
processes (or nodes) sharing one persistent tier collapse too: the first to take a
key's lease fetches it, the others wait for its entry to reach the shared tier.

The liveness rule (pure, :func:`judge`): a lease is taken until ``now + node_timeout``
(:func:`lease_until`) and its holder renews it to that every :func:`renew_every`
(a third of ``node_timeout``) while its fetch runs; a lease is live while ``now`` is at
most its expiry, dead after (its holder has not been heard of for ``node_timeout``: it
died, or lost the database), and free once given back.  Times are the members' wall
clocks (``Clock.now()``), which must agree to well within ``node_timeout``.

Invariants (every implementation): at most one live lease per key; :meth:`take`
succeeds when the key has none or only a dead one, so of the waiters that find a lease
dead exactly one takes it over; :meth:`renew` extends only its owner's live lease (a
dead one stays dead until taken); :meth:`release` removes a lease only for its owner;
a lease of a member that died expires by itself, and stays readable (:meth:`holder`)
until taken, so waiters can tell a dead holder from one that gave its lease back (and a
new holder from a renewal).
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple, Protocol

RENEWALS: Final = 3
"""Renewals per ``node_timeout``: a holder misses two before its lease dies."""


class Lease(enum.Enum):
    """A key's lease as a waiter finds it."""

    FREE = "free"
    """No lease: never taken, or given back (its holder's answer is in the shared tier
    if it was stored)."""
    LIVE = "live"
    """Its holder renewed it within ``node_timeout``: its fetch is running."""
    DEAD = "dead"
    """Not renewed within ``node_timeout``: its holder is gone; a waiter takes it over."""


class Holder(NamedTuple):
    """Who holds a key's lease, and until when (wall clock)."""

    owner: str
    expires: float


def lease_until(now: float, node_timeout: float) -> float:
    """The expiry a lease taken or renewed at ``now`` gets."""
    return now + node_timeout


def renew_every(node_timeout: float) -> float:
    """Seconds between two renewals of a held lease."""
    return node_timeout / RENEWALS


def judge(holder: Holder | None, now: float) -> Lease:
    """A key's lease held by ``holder`` (``None``: none) as of ``now``; one expiring at
    ``now`` is still live."""
    if holder is None:
        return Lease.FREE
    return Lease.LIVE if now <= holder.expires else Lease.DEAD


def new_holder(before: Holder | None, after: Holder | None) -> bool:
    """Whether the lease, held by ``before`` at a waiter's last look, is now held by
    another member (``after``): a fetch other than the one it waited on began (the lease
    was taken over, or given back and taken again).  A renewal is not one."""
    return after is not None and (before is None or after.owner != before.owner)


class FetchLeases(Protocol):
    """Where the members of one cache take, renew and give back fetch leases."""

    async def take(self, key: str, owner: str, until: float, now: float) -> bool:
        """Take ``key``'s lease for ``owner`` until ``until`` (wall clock) when it is free
        or dead at ``now``; whether taken."""

    async def renew(self, key: str, owner: str, until: float, now: float) -> bool:
        """Extend ``owner``'s lease on ``key`` to ``until`` if it is live at ``now``;
        whether it was (False: it died, was taken over or given back)."""

    async def holder(self, key: str) -> Holder | None:
        """Who holds ``key``'s lease (live or dead) and until when; ``None``: nobody."""

    async def release(self, key: str, owner: str) -> None:
        """Give ``owner``'s lease on ``key`` back (nothing when it holds none)."""

    async def close(self) -> None: ...
