"""How asking the origin fails: the errors every :class:`~stoker.origin.port.OriginClient`
raises (re-exported by :mod:`stoker.origin.port`, which is where callers take them from).

The proxy answers a :class:`OriginTimeout` with ``504``, an :class:`OriginDown` with
``503`` and its ``Retry-After``, and any other :class:`OriginError` with ``502``
(:func:`error_status`); :class:`~stoker.origin.http.HttpOrigin` retries an idempotent
request once after an :class:`OriginConnectionLost`, and after nothing else.
"""

from __future__ import annotations


class OriginError(Exception):
    """The origin could not be reached or broke off the response."""

    retry_after: int | None = None
    """Whole seconds the client should wait before trying again, when known."""


class OriginTimeout(OriginError):
    """The origin did not answer (or stalled) within the timeout."""


class OriginConnectionLost(OriginError):
    """The connection closed or reset before a response arrived (often a stale keep-alive)."""


class OriginDown(OriginError):
    """The origin was not asked: its breaker is open (it kept failing) and this request is
    not the one probe.  ``retry_after``: whole seconds until a request may ask it again."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the origin is down; asking it again in {retry_after} s")
        self.retry_after: int | None = retry_after


def error_status(error: OriginError) -> int:
    """The status a client gets for ``error`` when no stale copy may answer."""
    if isinstance(error, OriginTimeout):
        return 504
    return 503 if isinstance(error, OriginDown) else 502
