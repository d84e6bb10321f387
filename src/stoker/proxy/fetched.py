"""What a fetch gives the request core: a :class:`FetchResult` (how it ended), or a
:class:`Relayed` origin response whose head is known and whose body is yet to be read.

The fetcher (:mod:`stoker.proxy.fetch`) never writes to a client: the core's deliver step
gives a :class:`Relayed` response's head and body to the client
(:meth:`Relayed.pump`, which also stores it when the fetcher decided so) and learns from
the pump how the fetch ended.

Invariants:
- A :class:`Relayed` response holds its origin response open until :meth:`Relayed.pump`
  has run, once: whoever gets one pumps it (with no feed when nobody waits for it).
- :attr:`Relayed.outcome` is what the response's ``Cache-Status`` says when all goes as
  decided; a response to be stored whose head goes out before its body has ended says
  ``stored`` only once the store happened (:meth:`Relayed.shown`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Outcome
from stoker.proxy.client_feed import Feed

Header = tuple[bytes, bytes]


class FetchKind(StrEnum):
    """How a fetch ended (:attr:`FetchResult.kind`)."""

    STORED = "stored"
    """The origin's response was stored (and sent)."""
    REFRESHED = "refreshed"
    """A ``304`` revalidated the stored entry, which was updated."""
    UNSHARED = "unshared"
    """A ``304`` revalidated an entry a purge removed meanwhile: it answers this request
    only."""
    PASSED = "passed"
    """The origin's response was sent, not stored (:attr:`FetchResult.detail` says why)."""
    STALE = "stale"
    """The stale entry answers: the origin failed (stale-if-error) or its ``304`` may not
    be stored."""
    FAILED = "failed"
    """The origin failed and nothing may answer in its place."""


SERVE_KINDS = frozenset({FetchKind.REFRESHED, FetchKind.STALE, FetchKind.UNSHARED})
"""FetchResult kinds whose entry the caller must still send to the client."""


@dataclass(slots=True)
class FetchResult:
    """How a fetch ended: what the client was sent and what may be shared."""

    kind: FetchKind
    entry: CacheEntry | None
    status: int
    detail: str = ""
    cookies_set: tuple[str, ...] = ()
    """The cookies a response not stored for ``set-cookie`` sets (names only)."""
    retry_after: int | None = None
    """A failure's ``Retry-After`` (the origin is down: seconds until it is asked again)."""

    @property
    def not_stored(self) -> str | None:
        """Why the origin's response was not stored: a pass-through's reason, or why a
        ``304`` that answered a revalidation did not refresh the stored entry (its new
        headers forbid storing it, or a purge came meanwhile); None when it was stored or
        there was no response to store (the origin failed)."""
        if self.kind is FetchKind.PASSED or (
                self.status == 304 and self.kind in (FetchKind.STALE, FetchKind.UNSHARED)):
            return self.detail
        return None

    @property
    def fell_back(self) -> bool:
        """The origin failed and the stale entry answers in its place (stale-if-error)."""
        return self.kind is FetchKind.STALE and self.status != 304


SERVE_KINDS = frozenset({FetchKind.REFRESHED, FetchKind.STALE, FetchKind.UNSHARED})
"""Results whose entry the core sends the client itself (a revalidation, a fallback)."""
SHAREABLE = frozenset({FetchKind.STORED, FetchKind.REFRESHED, FetchKind.STALE})
"""Results whose entry a flight's followers may be answered with."""
RENEWED = frozenset({FetchKind.STORED, FetchKind.REFRESHED})
"""Results that stored an entry, new or revalidated."""


@dataclass(slots=True)
class Relayed:
    """An origin response on its way to a client (see the module invariants): its head
    (``status``, the client's ``headers`` without ``Cache-Status``), the ``outcome``
    decided for it, the body's declared ``length``, and ``copy``, which reads the body
    into a feed (storing it as decided) and tells how the fetch ended (None: a pass-through
    that was no fetch)."""

    status: int
    headers: list[Header]
    outcome: Outcome
    length: int | None
    copy: Callable[[Feed | None], Awaitable[FetchResult | None]]
    hold_last: bool = False
    """Send the body's last piece only once the copy has ended (stored first, so the
    client's next request is a hit)."""

    def shown(self) -> Outcome:
        """What the ``Cache-Status`` may claim when the head goes out before the body has
        been read: never ``stored``."""
        return replace(self.outcome, stored=False) if self.outcome.stored else self.outcome

    async def pump(self, feed: Feed | None) -> FetchResult | None:
        """Read the body into ``feed`` (None: nobody waits for it); how the fetch ended."""
        return await self.copy(feed)
