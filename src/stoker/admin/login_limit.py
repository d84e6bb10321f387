"""Failed dashboard logins, limited per client address.

Invariants:
- A client that failed :data:`FAILURES` logins within one :data:`WINDOW` (counted from
  its first failure) is refused further attempts, whatever token it sends, until that
  window has ended; :func:`retry_after` says for how long.  A successful login forgets
  the client's failures.
- At most :data:`~stoker.admin.audit.MAX_CLIENTS` clients get windows of their own;
  further clients share one (:data:`~stoker.admin.audit.OTHER_CLIENTS`), so memory stays
  bounded whatever the number of addresses (a flood from many addresses slows every
  newcomer's login, never lets one through more often).
- Time is the injected clock's; the decisions are pure functions of a window and ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from stoker.admin.audit import MAX_CLIENTS, OTHER_CLIENTS
from stoker.clock import Clock

FAILURES: Final = 5
"""Failed logins allowed per client and window."""
WINDOW: Final = 60.0
"""Seconds from a client's first failure until its count starts again."""


@dataclass(frozen=True, slots=True)
class Failures:
    """The failed logins of one client since ``started``."""

    started: float
    count: int = 1

    def ended(self, now: float, period: float) -> bool:
        """True once ``period`` has passed since the start (or the clock went back)."""
        return not self.started <= now < self.started + period


def retry_after(failures: Failures | None, now: float, limit: int, period: float
                ) -> float | None:
    """Seconds until the client may try again, or ``None`` when it may now.  Pure."""
    if failures is None or failures.ended(now, period) or failures.count < limit:
        return None
    return failures.started + period - now


def after_failure(failures: Failures | None, now: float, period: float) -> Failures:
    """The client's window after one more failed login.  Pure."""
    if failures is None or failures.ended(now, period):
        return Failures(now)
    return Failures(failures.started, failures.count + 1)


class LoginLimiter:
    """The failure windows of the clients that failed to log in (see the module)."""

    def __init__(self, clock: Clock, *, limit: int = FAILURES, period: float = WINDOW,
                 max_clients: int = MAX_CLIENTS) -> None:
        self._clock = clock
        self._limit = limit
        self._period = period
        self._max_clients = max_clients
        self._windows: dict[str, Failures] = {}

    def retry_after(self, client: str) -> float | None:
        """Seconds ``client`` must wait before its next attempt (``None``: it may now)."""
        return retry_after(self._windows.get(self._key(client)), self._clock.now(),
                           self._limit, self._period)

    def failed(self, client: str) -> None:
        """Count one failed login of ``client``."""
        now = self._clock.now()
        self._windows = {key: window for key, window in self._windows.items()
                         if not window.ended(now, self._period)}
        key = self._key(client)
        self._windows[key] = after_failure(self._windows.get(key), now, self._period)

    def succeeded(self, client: str) -> None:
        """Forget ``client``'s failures (never the shared window's)."""
        if client != OTHER_CLIENTS:
            self._windows.pop(client, None)

    def _key(self, client: str) -> str:
        if client in self._windows or len(self._windows) < self._max_clients:
            return client
        return OTHER_CLIENTS
