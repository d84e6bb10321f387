"""What a cacheable request does with what is stored: one pure decision.

Like Varnish's request state machine (``vcl_hit`` / ``vcl_miss``), the pipeline asks
:func:`decide` once per cacheable request, with the variant the request selected
(already screened for sharing: credentials, personal cookies), and does what the
:class:`Action` says: serve the stored response (fresh, or stale), or go forward to the
origin, collapsed with others, with an RFC 9211 ``fwd`` reason.

Invariants:
- Revalidation is forced by a client's ``Cache-Control: no-cache`` (when honoured), by a
  warm visit to an entry that is not fresh and by a refresh visit (refresh ahead) to any
  entry; a forced request is never served from cache and goes forward as ``fwd=request``.
- A fresh entry is served (:attr:`Kind.HIT`).  A stale entry inside its
  stale-while-revalidate window is served (:attr:`Kind.STALE_SWR`) and revalidated in
  the background.  A stale entry inside its stale-if-error window while the origin is
  down is served (:attr:`Kind.STALE_ERROR`), revalidated in the background only when a
  probe of the origin is due.  Nothing else is served.
- ``fwd`` is always the reason the request would go forward: ``request`` (forced, with
  an entry), ``stale`` (an entry that may not be served), ``vary-miss`` (only other
  variants stored), ``uri-miss`` (nothing stored).  The pipeline also goes forward with
  it when serving fails (a body file gone).
- Pure: it reads the entry's windows, ``now`` and the origin's health, and changes
  nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from stoker.cache.entry import CacheEntry, Freshness
from stoker.cache.outcome import Kind


class OriginState(Protocol):
    """What :func:`decide` reads of the origin's health."""

    def is_down(self) -> bool: ...

    def probe_due(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Action:
    """What the pipeline does with one cacheable request (see the module invariants)."""

    serve: Kind | None
    """The stored response is served so (one of :data:`~stoker.cache.outcome.FROM_CACHE`);
    None: the request goes forward."""
    fwd: str
    revalidate: bool = False
    """Revalidate the served stale entry in the background."""


def decide(entry: CacheEntry | None, now: float, *, other_variants: bool,
           client_no_cache: bool, warm: bool, origin: OriginState,
           refresh: bool = False) -> Action:
    """The :class:`Action` for a request that selected ``entry`` (None: no stored variant
    matches, or it may not be shared with this request) among the URL's variants
    (``other_variants``: the URL holds some), at ``now`` (``refresh``: a refresh visit)."""
    if entry is None:
        return Action(None, "vary-miss" if other_variants else "uri-miss")
    state = entry.freshness(now)
    if client_no_cache or refresh or (warm and state is not Freshness.FRESH):
        return Action(None, "request")
    if state is Freshness.FRESH:
        return Action(Kind.HIT, "stale")
    if state is Freshness.STALE_SWR:
        return Action(Kind.STALE_SWR, "stale", revalidate=True)
    if now < entry.error_until and origin.is_down():
        return Action(Kind.STALE_ERROR, "stale", revalidate=origin.probe_due())
    return Action(None, "stale")


def may_take(entry: CacheEntry, now: float, *, fetched: bool, fell_back: bool,
             client_no_cache: bool) -> bool:
    """Whether a collapsed follower may be answered with the ``entry`` its flight
    offers (already screened for sharing with this follower: credentials, personal
    cookies, its variant): only what it could itself reuse from the cache at ``now``.

    A stale copy standing in for a failed origin (``fell_back``) answers within its
    stale-if-error window; anything else only while fresh (an answer stored already
    stale, ``no-cache`` or ``max-age=0``, must be revalidated for each request).  A
    follower forcing revalidation (``client_no_cache``) takes only a response its
    flight has just ``fetched``."""
    if fell_back:
        return now < entry.error_until
    if client_no_cache and not fetched:
        return False
    return entry.freshness(now) is Freshness.FRESH
