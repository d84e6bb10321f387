"""A warm visit: one request through the cache pipeline, and what came of it.

The warmer reaches the proxy only through :class:`Visitor`; the proxy
implements it in process (``stoker.adapters.visit``), so a warm visit takes
exactly the path a visitor's request takes — same key, same rules, same
storage decisions — without an extra HTTP hop.

Invariants of :func:`judge` (pure):
- It reads the response's :class:`~stoker.cache.outcome.Outcome` (what the cache did),
  never the text of a response header but the stopgap header's name.
- A stopgap answer from the origin (the configured header, or status 202/503) is
  ``"stopgap"`` whatever else it says; it was not stored.  Stoker's own answer
  (:attr:`~Kind.ERROR`: the ``503`` of an origin whose breaker is open, a ``502``) is
  ``"failed"``, never a stopgap: the origin was not heard.
- ``"failed"``: Stoker or the origin answered with an error (4xx/5xx), or the origin
  failed and Stoker served its stale copy instead (:attr:`~Kind.STALE_ERROR`): the page
  was not refreshed.
- ``"fresh"``: any other answer from cache without asking the origin (stored already,
  nothing to do); ``"warmed"``: fetched and stored (or shared from the fetch that
  stored it, ``collapsed``); ``"not_modified"``: a conditional request refreshed the
  stored copy (304); ``"not_stored"``: the origin answered but Stoker did not store
  the response (set-cookie, private, …) — visitors will miss it too.
- ``detail`` is non-empty exactly for ``"not_stored"`` (the outcome's ``detail``: the
  storage decision's reason, else :data:`NOT_STORED`) and ``"failed"`` (what failed:
  ``status N``, or :data:`STALE_SERVED`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from stoker.cache.outcome import FROM_CACHE, Kind, Outcome

STOPGAP_STATUSES = frozenset({202, 503})
OUTCOMES = ("warmed", "not_modified", "fresh", "not_stored", "stopgap", "failed")
NOT_STORED: Final = "not stored"
"""The reason of a page not stored when the outcome gives none."""
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
                    allowance: int, refresh: bool = False) -> VisitResult:
        """GET ``url`` (absolute, on a site URL) through the cache with ``headers``;
        at most ``allowance`` warm visits may be at the origin at once (``refresh``: the
        stored entry is revalidated even while fresh, refresh ahead's visit)."""


def judge(status: int, headers: Sequence[tuple[bytes, bytes]], outcome: Outcome | None, *,
          stopgap_header: bytes) -> Verdict:
    """The outcome of a visit and its detail from its status, its response headers and
    what the cache did (see the module invariants)."""
    if outcome is not None and outcome.kind is Kind.ERROR:  # Stoker's own answer
        return Verdict("failed", f"status {status}")
    if status in STOPGAP_STATUSES or any(name == stopgap_header for name, _ in headers):
        return Verdict("stopgap")
    if status >= 400 or outcome is None:
        return Verdict("failed", f"status {status}")
    if outcome.kind is Kind.STALE_ERROR:
        return Verdict("failed", STALE_SERVED)
    if outcome.kind in FROM_CACHE:
        return Verdict("fresh")
    if outcome.stored or outcome.kind is Kind.COLLAPSED:  # collapsed: another fetch stored it
        return Verdict("not_modified" if outcome.fwd_status == 304 else "warmed")
    return Verdict("not_stored", outcome.detail or NOT_STORED)
