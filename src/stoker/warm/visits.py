"""A warm visit: one request through the cache pipeline, and what came of it.

The warmer reaches the proxy only through :class:`Visitor`; the proxy
implements it in process (``stoker.proxy.visit``), so a warm visit takes
exactly the path a visitor's request takes — same key, same rules, same
storage decisions — without an extra HTTP hop.

Invariants of :func:`classify` (pure):
- A stopgap answer (the configured header, or status 202/503) is
  ``"stopgap"`` whatever else it says; it was not stored.
- ``"fresh"``: served from cache without asking the origin (nothing to do);
  ``"warmed"``: fetched and stored; ``"not_modified"``: a conditional request
  refreshed the stored copy (304); ``"passed"``: the origin answered but the
  response may not be stored (private, set-cookie, …) — nothing to warm;
  ``"failed"``: Stoker or the origin answered with an error (4xx/5xx).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from stoker.http.cache_status import status_params

STOPGAP_STATUSES = frozenset({202, 503})
OUTCOMES = ("warmed", "not_modified", "fresh", "passed", "stopgap", "failed")


@dataclass(frozen=True, slots=True)
class VisitResult:
    """What one warm visit found."""

    url: str
    status: int
    outcome: str
    latency: float
    """Seconds the origin took to answer (the whole visit when it was not asked)."""
    retry_after: str | None = None
    detail: str = ""


class Visitor(Protocol):
    """Runs warm visits through the cache."""

    async def visit(self, url: str, headers: Sequence[tuple[bytes, bytes]], *,
                    allowance: int) -> VisitResult:
        """GET ``url`` (absolute, on a site URL) through the cache with ``headers``;
        at most ``allowance`` warm visits may be at the origin at once."""


def classify(status: int, headers: Sequence[tuple[bytes, bytes]], *,
             stopgap_header: bytes) -> str:
    """The outcome of a visit from its status and response headers (see module)."""
    names = {name for name, _ in headers}
    if status in STOPGAP_STATUSES or stopgap_header in names:
        return "stopgap"
    if status >= 400:
        return "failed"
    cache_status = next((value.decode("latin-1") for name, value in headers
                         if name == b"cache-status"), "")
    members = status_params(cache_status)
    if "hit" in members:
        return "fresh"
    if "stored" in members or "collapsed" in members:  # collapsed: another fetch stored it
        return "not_modified" if "fwd-status=304" in members else "warmed"
    return "passed"
