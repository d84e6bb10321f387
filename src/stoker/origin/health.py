"""Whether the origin answers: the jobs' circuit breaker applied to origin requests.

Every origin request (a visitor's miss, a revalidation, a warm visit, a pass-through)
reports how it went: no answer (refused, reset, timed out, closed before answering) is a
failure; any HTTP answer, ``5xx`` included, is a success, since an origin that answers
is up: one broken page must not make every stale entry be served unasked.  (A ``5xx``
still serves that URL's stale copy under ``stale-if-error``/``keep_stale``:
:data:`FAILING_STATUSES`, read by the fetch.)  After :data:`THRESHOLD` failures in a
row the origin is *down*: the pipeline then answers requests that have a stale copy it may
serve on error with that copy at once, instead of waiting ``origin_timeout`` each
time, and one background revalidation per :data:`COOLDOWN` probes the origin; the
probe's success brings it back *up*.  While it is down every other origin request fails
at once with :class:`~stoker.origin.port.OriginDown` (a ``503`` with ``Retry-After``
when nothing stale may answer), unasked and unreported: one request at a time, the
first once the cooldown has passed, is the probe and asks the origin.

Invariants: decisions are :mod:`stoker.resilience.breaker`'s (pure, tested there);
``down_since`` is the time the breaker first opened in the current outage and is
``None`` exactly while it is closed.  The origin is *back* when the breaker closes after
it was open, or when it answers other than ``5xx`` after :data:`THRESHOLD` ``5xx``
answers in a row (a web server whose application stopped answers ``502`` and opens no
breaker); each listener of :attr:`OriginHealth.on_back` is called once each time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from stoker.clock import Clock
from stoker.resilience import breaker
from stoker.resilience.breaker import BreakerState

THRESHOLD: Final = 5
COOLDOWN: Final = 5.0
FAILING_STATUSES: Final = frozenset({500, 502, 503, 504})
"""Answers that let a stale copy stand in for the URL's answer (RFC 9111 §4.2.4)."""


class OriginHealth:
    """The origin's breaker for one process."""

    def __init__(self, clock: Clock, *, threshold: int = THRESHOLD,
                 cooldown: float = COOLDOWN) -> None:
        self._clock = clock
        self.state = BreakerState(threshold=threshold, cooldown=cooldown)
        self.down_since: float | None = None
        self.on_back: list[Callable[[], None]] = []
        """Called when the origin is back (see the module docstring; they must not raise)."""
        self._next_id = 0
        self._errors = 0
        """``5xx`` answers in a row."""

    def begin(self) -> int:
        """An origin request starts: its id (it is the probe when one is due)."""
        self._next_id += 1
        now = self._clock.now()
        if self.state.phase == "open" and breaker.may_lease(self.state, now):
            self.state = breaker.on_probe(self.state, now, self._next_id)
        return self._next_id

    def report(self, request_id: int, *, ok: bool) -> None:
        """How request ``request_id`` went."""
        now = self._clock.now()
        was_down = self.state.phase != "closed"
        self.state = breaker.on_result(self.state, request_id, ok, now)
        if self.state.phase == "closed":
            self.down_since = None
            if was_down:
                self._back()
        elif self.down_since is None:
            self.down_since = now

    def answered(self, status: int) -> None:
        """The origin answered with ``status`` (after :meth:`report`)."""
        if status >= 500:
            self._errors += 1
            return
        if self._errors >= self.state.threshold:
            self._back()
        self._errors = 0

    def _back(self) -> None:
        for listener in self.on_back:
            listener()

    def abandon(self, request_id: int) -> None:
        """Request ``request_id`` ended without a verdict (cancelled)."""
        self.state = breaker.on_abandoned(self.state, request_id)

    def is_down(self) -> bool:
        """The origin keeps failing: serve what may be served stale without asking it."""
        return self.state.phase != "closed"

    def may_ask(self) -> bool:
        """Whether a request starting now may ask the origin: it is up, or this request
        would be the probe."""
        return breaker.may_lease(self.state, self._clock.now())

    def retry_after(self) -> int:
        """Whole seconds (at least 1) a request turned away now should wait."""
        return max(1, math.ceil(breaker.seconds_until_retry(self.state, self._clock.now())))

    def probe_due(self) -> bool:
        """A request started now would probe the origin."""
        return self.state.phase == "open" and breaker.may_lease(self.state, self._clock.now())
