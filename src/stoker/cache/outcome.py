"""What the cache did for one request, as a value (its ``Cache-Status`` is a rendering).

Invariants:
- Every response the proxy sends has exactly one :class:`Outcome`, recorded by the
  response's sink when its head is stamped; readers in process (the warmer) read the
  value, never the header's text.
- :meth:`Outcome.cache_status` is the RFC 9211 list member for it: ``hit`` exactly for
  the kinds answered from the cache (:data:`FROM_CACHE`), ``collapsed`` exactly for
  :attr:`Kind.COLLAPSED`, ``fwd``, ``fwd-status``, ``stored``, ``ttl`` and ``detail`` as
  given.  Pure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from stoker.http.cache_status import cache_status


class Kind(enum.Enum):
    """How a request was answered."""

    HIT = "hit"
    """A fresh stored response."""
    STALE_SWR = "stale-while-revalidate"
    """A stale stored response, revalidated in the background."""
    STALE_ERROR = "stale-if-error"
    """A stale stored response, because the origin failed."""
    REVALIDATED = "revalidated"
    """The origin answered a conditional request ``304``: the stored response, refreshed."""
    MISS = "miss"
    """The origin's response (stored when :attr:`Outcome.stored`)."""
    COLLAPSED = "collapsed"
    """The response another request's fetch brought."""
    PASS = "pass"
    """Forwarded and not stored: the origin's answer may not be (``detail`` says why)."""
    BYPASS = "bypass"
    """Forwarded without touching the cache: the request may not be (``fwd`` says why)."""
    ERROR = "error"
    """Stoker's own answer: a refusal, an origin failure, a generated response."""

    __hash__ = object.__hash__  # members are singletons: hashed in C (Enum's is Python)


FROM_CACHE = frozenset({Kind.HIT, Kind.STALE_SWR, Kind.STALE_ERROR})
ORIGIN_FAILURES = frozenset({"origin-timeout", "origin-down", "origin-error"})
"""The ``detail`` of Stoker's own answer (an :attr:`Kind.ERROR` outcome) when the origin
failed: timed out (504), is down (503), failed otherwise (502).  The pipeline answers
with these, the hit ratio counts them as the origin's, ``error_page`` replaces their
body."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One request's outcome (see the module's invariants)."""

    kind: Kind
    fwd: str | None = None
    """RFC 9211 ``fwd``: why the request went forward (``None``: it did not)."""
    fwd_status: int | None = None
    stored: bool = False
    ttl: float | None = None
    detail: str | None = None
    counted: tuple[tuple[str, str, bool], tuple[str, str, bool]] = field(
        init=False, repr=False, compare=False)
    """How the proxy's counters key it, a visitor's then a warm visit's: the kind's value,
    :attr:`reason` and whether warm (computed once, here: a hit is counted without
    reading an enum's value)."""

    def __post_init__(self) -> None:
        kind, reason = self.kind.value, self.reason
        object.__setattr__(self, "counted", ((kind, reason, False), (kind, reason, True)))

    def cache_status(self, name: str) -> bytes:
        """This outcome's ``Cache-Status`` member for the cache called ``name``."""
        return cache_status(hit=self.kind in FROM_CACHE, fwd=self.fwd,
                            fwd_status=self.fwd_status, stored=self.stored,
                            collapsed=self.kind is Kind.COLLAPSED, ttl=self.ttl,
                            detail=self.detail, name=name)

    @property
    def reason(self) -> str:
        """Why the cache was left out: ``detail``, else ``fwd``, for a bypass (a personal
        cookie's bypass is ``cookie``, not its ``fwd=bypass``), ``detail`` for a pass and for
        Stoker's own answer (``origin-down``, ``bad-request``…), ``""`` for the other kinds
        (a label for counting outcomes)."""
        if self.kind is Kind.BYPASS:
            return self.detail or self.fwd or ""
        if self.kind is Kind.PASS or self.kind is Kind.ERROR:
            return self.detail or ""
        return ""

    def not_stored(self, reason: str) -> Outcome:
        """This outcome for a response that turned out not stored, for ``reason``."""
        return replace(self, kind=Kind.PASS if self.kind is Kind.MISS else self.kind,
                       stored=False, detail=reason or None)


GENERATED = Outcome(Kind.ERROR, detail="generated")
"""A response Stoker makes itself (a PURGE answer, a refusal before any lookup)."""
