"""Visitors' origin slots shared fairly among clients: who gets the next free slot.

A visitor's origin request claims a slot for its client (the address as
``trusted_proxies`` resolve it, an IPv6 address by its ``/64``: :func:`client_key`) and
its URL (:class:`Claim`).  :class:`FairShare` keeps how many slots each client and each
URL holds and the requests waiting, one FIFO queue per client, and picks the next
request to grant; :class:`~stoker.origin.slots.OriginLimiter` decides *when* a slot
is free and applies the grants.

Invariants (pure: no clock, no I/O, no event loop; the caller applies every decision):

- a client's requests are granted in the order they arrived (FIFO within a client), and
  a client with requests waiting is never granted a newcomer's slot ahead of them;
- a grant *within the cap* goes only to a client holding fewer than ``per_client``
  slots; a grant *beyond the cap* (the caller allows those only while enough slots stay
  free for others) goes to any client with a request waiting;
- among the candidates the next grant goes to the client holding the fewest slots, then
  to the request whose URL holds the fewest, then to the earliest arrival: a client just
  granted holds one more and goes behind the others (round robin across clients), and a
  URL already holding slots queues behind URLs that hold none;
- every waiting request is granted once enough slots are released (each grant takes the
  head of some queue; a queue's head never loses to later arrivals of its own client);
- holdings are counted exactly: ``take`` and ``release`` pair up, and a client or URL
  holding nothing has no entry (memory is bounded by the requests holding or waiting).
"""

from __future__ import annotations

import ipaddress
from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

IPV6_CLIENT_PREFIX = 64
"""An IPv6 client is its ``/64``: one subscriber's network, which hands it any number of
addresses."""


@dataclass(frozen=True, slots=True)
class Claim:
    """Who a slot is for: the client (:func:`client_key`) and the URL asked for."""

    client: str
    url: str


ANONYMOUS = Claim("", "")
"""The claim of an origin request made for no known client and URL."""


def client_key(address: str | None) -> str:
    """The client a request counts against: an IPv4 address as is, an IPv6 address by its
    ``/64`` (an IPv4-mapped one as IPv4), anything else (a Unix socket, no address) as
    its text (``""`` for none)."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_CLIENT_PREFIX), strict=False))
    return str(ip)


@dataclass(eq=False, slots=True)
class _Ticket(Generic[T]):
    item: T
    claim: Claim
    seq: int


class FairShare(Generic[T]):
    """The holdings and the waiting requests of visitors (see the module docstring)."""

    def __init__(self, per_client: int) -> None:
        if per_client < 1:
            raise ValueError(f"origin_max_per_client must be at least 1, got {per_client}")
        self.per_client = per_client
        self._clients: dict[str, int] = {}
        self._urls: dict[str, int] = {}
        self._queues: dict[str, deque[_Ticket[T]]] = {}
        self._seq = 0

    def holding(self, client: str) -> int:
        """Slots ``client`` holds now."""
        return self._clients.get(client, 0)

    def url_holding(self, url: str) -> int:
        """Slots held for ``url`` now."""
        return self._urls.get(url, 0)

    def waiting(self) -> int:
        """Requests waiting, all clients together."""
        return sum(len(queue) for queue in self._queues.values())

    def take(self, claim: Claim) -> None:
        """Count a slot held for ``claim``."""
        self._clients[claim.client] = self.holding(claim.client) + 1
        self._urls[claim.url] = self.url_holding(claim.url) + 1

    def release(self, claim: Claim) -> None:
        """Count a slot of ``claim`` given back."""
        _decrement(self._clients, claim.client)
        _decrement(self._urls, claim.url)

    def enqueue(self, item: T, claim: Claim) -> None:
        """Queue ``item`` for a slot, behind its client's earlier requests."""
        self._seq += 1
        self._queues.setdefault(claim.client, deque()).append(_Ticket(item, claim, self._seq))

    def withdraw(self, item: T, claim: Claim) -> bool:
        """Take ``item`` out of its client's queue; whether it was queued."""
        queue = self._queues.get(claim.client)
        ticket = next((t for t in queue or () if t.item is item), None)
        if queue is None or ticket is None:
            return False
        queue.remove(ticket)
        if not queue:
            del self._queues[claim.client]
        return True

    def grant(self, *, beyond_cap: bool = False) -> tuple[T, Claim] | None:
        """Dequeue the next request to grant and count its slot held; ``None`` when no
        client may be granted one (``beyond_cap``: clients at their cap may be)."""
        best: _Ticket[T] | None = None
        best_rank: tuple[int, int, int] | None = None
        for client, queue in self._queues.items():
            held = self.holding(client)
            if not beyond_cap and held >= self.per_client:
                continue
            head = queue[0]
            rank = (held, self.url_holding(head.claim.url), head.seq)
            if best_rank is None or rank < best_rank:
                best, best_rank = head, rank
        if best is None:
            return None
        self.withdraw(best.item, best.claim)
        self.take(best.claim)
        return best.item, best.claim


def _decrement(counts: dict[str, int], name: str) -> None:
    left = counts.get(name, 0) - 1
    if left > 0:
        counts[name] = left
    else:
        counts.pop(name, None)
