"""A failure that may repeat on every try or every request, logged as
:mod:`stoker.resilience.outage` says: one line when it starts, at most one every
:data:`~stoker.resilience.outage.SAY_EVERY` seconds while it goes on (with how many
failures since it began, and when that was), one when it ends; never a traceback per
try.  The loops and requests that meet a store failing (Redis down: the L2 reads and
the write queue's retries, the notifier's subscription) tell it each outcome.

Invariants: an outage of any length is two lines plus one per ``SAY_EVERY`` seconds;
each line names the failure's cause (:func:`cause`: the innermost exception of the
chain, where a library wraps the real one) and the wall-clock time the outage began;
times come from the injected :class:`~stoker.clock.Clock`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from stoker.clock import Clock
from stoker.resilience import outage


def cause(error: BaseException) -> str:
    """``Type: words`` of ``error``, and of the exception it began with when it was raised
    from another (``raise ... from``: ``ConnectionError: ... (cause: OSError: Connection
    refused)``); an exception merely being handled meanwhile is no cause."""
    said = f"{type(error).__name__}: {error}".rstrip(": ")
    root = error
    while (inner := root.__cause__) is not None and inner is not root:
        root = inner
    if root is error:
        return said
    return f"{said} (cause: {type(root).__name__}: {root})".replace(": )", ")")


def clock_time(wall: float) -> str:
    """``wall`` (epoch seconds) as ``2026-12-06 00:12:03 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(wall))


class Repeats:
    """One kind of failure of ``what`` (``"L2 cache read"``), said with what is done
    meanwhile (``then``: words, or a function giving them when said)."""

    def __init__(self, log: logging.Logger, what: str, then: str | Callable[[], str],
                 clock: Clock) -> None:
        self._log = log
        self._what = what
        self._then = then
        self._clock = clock
        self._state = outage.Outage()
        self._began = self._began_wall = 0.0

    @property
    def failing(self) -> bool:
        """Whether the last outcome told was a failure."""
        return self._state.failures > 0

    def failed(self, error: BaseException, about: str = "") -> None:
        """One more failure, of ``about`` if given (which operation: said before its
        cause); said if it starts an outage, or ``SAY_EVERY`` s passed."""
        now = self._clock.monotonic()
        if not self.failing:
            self._began, self._began_wall = now, self._clock.now()
        self._state, say = outage.failed(self._state, now)
        if not say:
            return
        then = self._then() if callable(self._then) else self._then
        why = f"{about}: {cause(error)}" if about else cause(error)
        if self._state.failures == 1:
            self._log.warning("%s failed (%s); %s; said again every %g s while it fails",
                              self._what, why, then, outage.SAY_EVERY)
        else:
            self._log.warning("%s still failing since %s: %d failures in %.0f s, the last "
                              "%s; %s", self._what, clock_time(self._began_wall),
                              self._state.failures, now - self._began, why, then)

    def answered(self) -> None:
        """A success: said once if it ends an outage."""
        if not self.failing:
            return
        failures = self._state.failures
        self._state, _ = outage.answered(self._state)
        self._log.info("%s works again after %d failures over %.1f s (since %s)", self._what,
                       failures, self._clock.monotonic() - self._began,
                       clock_time(self._began_wall))
