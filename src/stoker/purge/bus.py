"""The purge bus: how the processes (and later the nodes) that share one cache hear of
each other's purges, and say they have them in force.

Each process keeps its own :class:`~stoker.purge.list.PurgeList` (its sequence
numbers are its own); the bus relays what a purge was (its scope, hard or soft, its
time, and a new cache version for a purge of everything) to the others, numbered in
the order the bus took them.  A member *confirms* a number once every purge up to it is
in force in its own tiers; a purge answers once every live member (one that confirmed
within ``node_timeout``) has confirmed its number, or its ``purge_ack_timeout`` has
passed, naming those that had not.

Invariants (every implementation): numbers only grow, in the order :meth:`PurgeBus.publish`
calls took effect; :meth:`PurgeBus.since` returns what was published after a number,
oldest first, including the publisher's own (the follower skips those); a member's
confirmed number only grows.  :func:`unconfirmed` is pure.  A purge the bus did not take
(it did not answer) is kept by its relay and published once it answers; until then the
purge answers :data:`NOT_RELAYED` as the members that had not confirmed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from stoker.cache.notifier import Notifier
from stoker.purge.list import PurgeMark

NOT_RELAYED: Final = "*"
"""Who has not confirmed a purge the bus did not take yet: every other member."""


@dataclass(frozen=True, slots=True)
class Relayed:
    """One purge as the bus carries it: ``mark``'s scope, softness and time (its ``seq``
    and ``at`` are the sender's own, meaningless elsewhere), and the cache version a hard
    purge of everything switched to."""

    number: int
    sender: str
    mark: PurgeMark
    version: str | None = None


@dataclass(frozen=True, slots=True)
class Member:
    """A process on the bus: the number it has confirmed, and when it last did."""

    name: str
    confirmed: int
    seen_at: float
    figures: str | None = None
    """What it last said of itself (JSON, for the metrics of every process together)."""


class PurgeBus(Protocol):
    """Where the members of one cache relay purges (see the module invariants)."""

    async def publish(self, sender: str, mark: PurgeMark, version: str | None) -> int:
        """Relay ``mark`` (and the version it switched to); its number."""

    async def since(self, number: int) -> Sequence[Relayed]:
        """What was published after ``number``, oldest first."""

    async def latest(self) -> int:
        """The newest number (0 before any)."""

    async def confirm(self, member: str, number: int, now: float,
                      figures: str | None = None) -> None:
        """``member`` has every purge up to ``number`` in force, at ``now`` (a heartbeat);
        with ``figures``, what it says of itself now (kept until it says something else)."""

    async def members(self) -> Sequence[Member]:
        """Every member that has confirmed and not left."""

    async def leave(self, member: str) -> None:
        """``member`` stops: no purge waits for it any more."""

    async def trim(self, before: float) -> None:
        """Forget what was published before ``before`` (wall clock)."""

    async def close(self) -> None: ...


class Relay(Protocol):
    """This process's side of the bus, as the purger uses it."""

    me: str
    """This process's name on the bus."""
    notifier: Notifier
    """How it pokes the others and hears their pokes (for the metrics)."""

    async def spread(self, mark: PurgeMark, version: str | None) -> tuple[str, ...]:
        """Relay ``mark`` (in force here already) and wait until every other live member
        has it in force, or the timeout; the names of those that had not confirmed
        (:data:`NOT_RELAYED` alone: the bus had not taken it, it is kept and relayed once
        the bus answers)."""

    def tell(self, mark: PurgeMark) -> None:
        """Relay ``mark`` without waiting (an unsafe method's invalidation; kept until the
        bus takes it, as a purge is)."""

    async def members(self) -> Sequence[Member]:
        """Every member of the bus, this process included."""


class RelaySlot:
    """Where the purger finds this process's relay: owned by the composition root, which
    gives it to the purger at construction and holds in it the relay it opens later
    (only serving knows whether the process shares its cache; the relay needs the purger).

    Invariants: empty while this process shares its cache with none (its purges are not
    relayed); holds at most one relay, put in once it has joined the bus, for the rest
    of the process's life."""

    def __init__(self) -> None:
        self._relay: Relay | None = None

    @property
    def relay(self) -> Relay | None:
        """This process's relay (``None``: it shares its cache with none)."""
        return self._relay

    def hold(self, relay: Relay) -> None:
        """Relay this process's purges through ``relay`` (joined) from now on."""
        if self._relay is not None:
            raise RuntimeError(f"this process relays through {self._relay.me} already")
        self._relay = relay


def unconfirmed(members: Sequence[Member], number: int, me: str, now: float,
                node_timeout: float) -> list[str]:
    """The live members other than ``me`` that have not confirmed ``number`` (live: seen
    within ``node_timeout`` of ``now``), by name."""
    return sorted(member.name for member in members
                  if member.name != me and now - member.seen_at <= node_timeout
                  and member.confirmed < number)
