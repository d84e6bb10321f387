"""How asking the origin fails: the errors every :class:`~stoker.proxy.origin.OriginClient`
raises (re-exported by :mod:`stoker.proxy.origin`, which is where callers take them from).

The proxy answers a :class:`OriginTimeout` with ``504`` and any other :class:`OriginError`
with ``502``; :class:`~stoker.proxy.origin.HttpOrigin` retries an idempotent request once
after an :class:`OriginConnectionLost`, and after nothing else.
"""

from __future__ import annotations


class OriginError(Exception):
    """The origin could not be reached or broke off the response."""


class OriginTimeout(OriginError):
    """The origin did not answer (or stalled) within the timeout."""


class OriginConnectionLost(OriginError):
    """The connection closed or reset before a response arrived (often a stale keep-alive)."""
