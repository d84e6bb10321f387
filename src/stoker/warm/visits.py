"""A warm visit: one request through the cache pipeline, and what came of it.

The warmer reaches the proxy only through :class:`Visitor`; the proxy
implements it in process (``stoker.proxy.visit``), so a warm visit takes
exactly the path a visitor's request takes — same key, same rules, same
storage decisions — without an extra HTTP hop.

Invariants of :func:`judge` (pure):
- It reads Stoker's own Cache-Status (RFC 9211), the last ``Cache-Status`` field: an
  origin's or an upstream cache's come before it.
- A stopgap answer (the configured header, or status 202/503) is ``"stopgap"``
  whatever else it says; it was not stored.
- ``"failed"``: Stoker or the origin answered with an error (4xx/5xx), or the origin
  failed and Stoker served its stale copy instead (``hit; detail=stale-if-error``):
  the page was not refreshed.
- ``"fresh"``: any other answer from cache without asking the origin (stored already,
  nothing to do); ``"warmed"``: fetched and stored (or shared from the fetch that
  stored it, ``collapsed``); ``"not_modified"``: a conditional request refreshed the
  stored copy (304); ``"not_stored"``: the origin answered but Stoker did not store
  the response (set-cookie, private, …) — visitors will miss it too.
- ``detail`` is non-empty exactly for ``"not_stored"`` (the Cache-Status ``detail``:
  the storage decision's reason, else :data:`NOT_STORED`) and ``"failed"`` (what
  failed: ``status N``, or :data:`STALE_SERVED`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from stoker.http.cache_status import read_status
from stoker.http.structured_fields import Params

STOPGAP_STATUSES = frozenset({202, 503})
OUTCOMES = ("warmed", "not_modified", "fresh", "not_stored", "stopgap", "failed")
NOT_STORED: Final = "not stored"
"""The reason of a page not stored when Cache-Status gives none."""
STALE_SERVED: Final = "origin error; stale served"
"""The detail of a visit answered with a stale copy because the origin failed."""


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
    """Why it was not stored, or what failed (see the module invariants)."""


class Verdict(NamedTuple):
    """A visit's outcome and its detail (see the module invariants)."""

    outcome: str
    detail: str = ""


class Visitor(Protocol):
    """Runs warm visits through the cache."""

    async def visit(self, url: str, headers: Sequence[tuple[bytes, bytes]], *,
                    allowance: int) -> VisitResult:
        """GET ``url`` (absolute, on a site URL) through the cache with ``headers``;
        at most ``allowance`` warm visits may be at the origin at once."""


def judge(status: int, headers: Sequence[tuple[bytes, bytes]], *,
          stopgap_header: bytes) -> Verdict:
    """The outcome of a visit and its detail from its status and response headers
    (see the module invariants)."""
    if status in STOPGAP_STATUSES or any(name == stopgap_header for name, _ in headers):
        return Verdict("stopgap")
    if status >= 400:
        return Verdict("failed", f"status {status}")
    params = _own_status(headers)
    detail = str(params.get("detail", ""))
    if "hit" in params:
        return Verdict("failed", STALE_SERVED) if detail == "stale-if-error" else Verdict("fresh")
    if "stored" in params or "collapsed" in params:  # collapsed: another fetch stored it
        return Verdict("not_modified" if params.get("fwd-status") == 304 else "warmed")
    return Verdict("not_stored", detail or NOT_STORED)


def _own_status(headers: Sequence[tuple[bytes, bytes]]) -> Params:
    """The parameters of Stoker's own Cache-Status: the last member of the last field line."""
    fields = [value.decode("latin-1") for name, value in headers if name == b"cache-status"]
    return read_status(fields[-1]) if fields else {}
