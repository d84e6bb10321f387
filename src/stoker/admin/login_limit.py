"""Failed admin authentications, limited per client: the dashboard login form, its
one-time links and every bearer token sent to any admin route share one budget.

Invariants:
- An attempt takes a slot *before* its credential is compared (:meth:`LoginLimiter.reserve`,
  synchronous: no await between deciding and counting), and gives it back only when the
  credential was right (:meth:`LoginLimiter.refund`).  So however many guesses arrive at
  once, at most :data:`FAILURES` of one client are compared per :data:`WINDOW`; the others
  are refused (429 with ``Retry-After``) unread, the right token among them too.
- A client's window starts at its first counted attempt and lasts :data:`WINDOW`;
  :func:`retry_after` says how long a refused client waits.  A refund gives back that one
  slot, never the failures counted beside it, and only in the window it was taken from.
- The client is the one the admin listener resolves through ``trusted_proxies``
  (:func:`~stoker.proxy.request.request_client`), so behind a TLS proxy one client's
  guesses hold up that client only.
- At most :data:`~stoker.admin.audit.MAX_CLIENTS` clients get windows of their own;
  further clients share one (:data:`~stoker.admin.audit.OTHER_CLIENTS`), so memory stays
  bounded whatever the number of addresses (a flood from many addresses slows every
  newcomer's login, never lets one through more often).
- Time is the injected clock's; the decisions are pure functions of a window and ``now``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from stoker.admin.audit import MAX_CLIENTS, OTHER_CLIENTS
from stoker.clock import Clock

FAILURES: Final = 5
"""Failed authentications allowed per client and window."""
WINDOW: Final = 60.0
"""Seconds from a client's first counted attempt until its count starts again."""


@dataclass(frozen=True, slots=True)
class Failures:
    """The attempts of one client counted since ``started``."""

    started: float
    count: int = 1

    def ended(self, now: float, period: float) -> bool:
        """True once ``period`` has passed since the start (or the clock went back)."""
        return not self.started <= now < self.started + period


@dataclass(frozen=True, slots=True)
class Slot:
    """One attempt counted in the window of ``key`` that started at ``started``."""

    key: str
    started: float


@dataclass(frozen=True, slots=True)
class Refused:
    """An attempt refused unread: the client may try again in ``wait`` seconds."""

    wait: float


def retry_after(failures: Failures | None, now: float, limit: int, period: float
                ) -> float | None:
    """Seconds until the client may try again, or ``None`` when it may now.  Pure."""
    if failures is None or failures.ended(now, period) or failures.count < limit:
        return None
    return failures.started + period - now


def retry_seconds(wait: float) -> int:
    """``Retry-After``'s whole seconds for ``wait``: rounded up, at least 1.  Pure."""
    return max(1, math.ceil(wait))


def after_failure(failures: Failures | None, now: float, period: float) -> Failures:
    """The client's window after one more counted attempt.  Pure."""
    if failures is None or failures.ended(now, period):
        return Failures(now)
    return Failures(failures.started, failures.count + 1)


def after_refund(failures: Failures | None, slot: Slot) -> Failures | None:
    """The window after ``slot`` is given back (``None``: nothing left to count); a window
    other than the slot's is unchanged.  Pure."""
    if failures is None or failures.started != slot.started:
        return failures
    return replace(failures, count=failures.count - 1) if failures.count > 1 else None


class LoginLimiter:
    """The attempt windows of the clients that authenticate (see the module)."""

    def __init__(self, clock: Clock, *, limit: int = FAILURES, period: float = WINDOW,
                 max_clients: int = MAX_CLIENTS) -> None:
        self._clock = clock
        self._limit = limit
        self._period = period
        self._max_clients = max_clients
        self._windows: dict[str, Failures] = {}

    def reserve(self, client: str) -> Slot | Refused:
        """Count one attempt of ``client`` before its credential is compared, or refuse it."""
        now = self._clock.now()
        self._windows = {key: window for key, window in self._windows.items()
                         if not window.ended(now, self._period)}
        key = self._key(client)
        current = self._windows.get(key)
        wait = retry_after(current, now, self._limit, self._period)
        if wait is not None:
            return Refused(wait)
        counted = after_failure(current, now, self._period)
        self._windows[key] = counted
        return Slot(key, counted.started)

    def refund(self, slot: Slot) -> None:
        """Give back ``slot``: its credential was right."""
        left = after_refund(self._windows.get(slot.key), slot)
        if left is None:
            self._windows.pop(slot.key, None)
        else:
            self._windows[slot.key] = left

    def _key(self, client: str) -> str:
        if client in self._windows or len(self._windows) < self._max_clients:
            return client
        return OTHER_CLIENTS
