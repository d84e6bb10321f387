"""The request core's steps, as Varnish's request state machine (``cache_req_fsm.c``): a
:class:`Step` names what the core does next with one request, a :class:`Transaction`
holds what the steps so far have learnt, and :meth:`~stoker.proxy.pipeline.Pipeline.serve`
runs one step after another until :attr:`Step.DONE`.

recv → purge → synth | pass → deliver | synth | lookup → hit | miss;
hit → deliver; miss → fetch | deliver (a collapsed follower, a flight landed meanwhile);
fetch → deliver | synth; deliver → done, or where :attr:`FromCache.otherwise` says when
the entry's body has vanished.

Invariants:
- Each step returns the next; exactly one :attr:`Step.DELIVER` or :attr:`Step.SYNTH` gives
  a request its reply (a deliver that found an entry's body gone gives none and moves on).
- :attr:`Transaction.reply` is what deliver sends (an entry, or an origin response
  relayed); :attr:`Transaction.synth` what synth sends (Stoker's own answer).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from enum import Enum

from stoker.cache.collapse import Flight
from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Outcome
from stoker.config.rules import Rule
from stoker.http.policy import shareable_with_authorization
from stoker.proxy.fetched import FetchResult, Relayed
from stoker.proxy.reply import ReplySink, error_response
from stoker.proxy.request import RequestInfo
from stoker.proxy.request_body import RequestBody
from stoker.proxy.shared_flights import SharedFlights

Header = tuple[bytes, bytes]


class Step(Enum):
    """What the core does next with a request (see the module invariants)."""

    RECV = "recv"
    """Route it: purge, pass (not cacheable) or look it up."""
    PURGE = "purge"
    """The ``PURGE`` method: answered by the purge method, never forwarded."""
    PASS = "pass"
    """Forwarded as it is, answered with the origin's response, nothing stored."""
    LOOKUP = "lookup"
    """Its key and the stored variants: :func:`~stoker.proxy.decide.decide` says hit or miss."""
    HIT = "hit"
    """Answered from the stored entry (fresh, or stale as allowed)."""
    MISS = "miss"
    """Collapsed with the other requests for its key: a follower waits, the leader fetches."""
    FETCH = "fetch"
    """Asks the origin (:class:`~stoker.proxy.fetch.Fetcher`)."""
    DELIVER = "deliver"
    """Gives :attr:`Transaction.reply` to the client."""
    SYNTH = "synth"
    """Gives :attr:`Transaction.synth`, Stoker's own answer, to the client."""
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Lookup:
    """One cacheable request as the cache sees it.

    ``varying`` is the request as forwarded, for Vary selection;
    ``siblings`` are the variants stored under ``primary`` when it was looked up.
    """

    request: RequestInfo
    rule: Rule | None
    primary: str
    varying: list[tuple[bytes, bytes]]
    siblings: Sequence[CacheEntry] = ()
    personal: Sequence[str] = ()

    def flight_key(self, variant: str) -> str:
        """The key of the flight that fetches ``variant`` of this request's URL."""
        return f"{self.primary}\n{variant}"

    def may_reuse(self, entry: CacheEntry) -> bool:
        """False when the request has credentials or personal cookies the entry
        may not be shared with."""
        if self.personal and not entry.origin_vouched:
            return False
        return not self.request.fields.has(b"authorization") or (
            shareable_with_authorization(entry.headers))


@dataclass(frozen=True, slots=True)
class FromCache:
    """Deliver ``entry`` with ``outcome`` as of ``now``; should its body have vanished, go
    on to ``otherwise`` (a step, or Stoker's own answer)."""

    entry: CacheEntry
    outcome: Outcome
    otherwise: Step | Synth
    now: float


@dataclass(frozen=True, slots=True)
class Synth:
    """Stoker's own answer: ``headers`` (its ``Cache-Status`` aside, stamped for
    ``outcome`` by the synth step; None: :data:`~stoker.cache.outcome.GENERATED`'s) and
    ``body``; ``close``: a refusal, after which an HTTP/1 connection closes."""

    status: int
    headers: Sequence[Header]
    body: bytes
    outcome: Outcome | None = None
    close: bool = False
    reason: str = ""
    """Logged when it is sent (what went wrong)."""


def synthetic(status: int, text: str, outcome: Outcome | None = None, *,
              extra: Sequence[Header] = (), close: bool = False, reason: str = "") -> Synth:
    """A plain-text answer of Stoker's (never cacheable downstream)."""
    headers, body = error_response(status, text, extra)
    return Synth(status, headers, body, outcome, close, reason)


@dataclass(slots=True)
class Transaction:
    """One request on its way through the steps: what they have learnt so far."""

    request: RequestInfo
    body: AsyncIterator[bytes]
    sink: ReplySink
    rule: Rule | None
    lookup: Lookup | None = None
    entry: CacheEntry | None = None
    """The stored entry this request selected and may use (served, or revalidated)."""
    fwd: str = ""
    """Why it goes forward (RFC 9211 ``fwd``)."""
    variant: str = ""
    """The variant it asks for, for collapsing."""
    invalidate: bool = False
    """A pass of an unsafe method: a success invalidates what it changed."""
    upload: RequestBody | None = None
    """A passed request's body, read whole (closed when the request is done)."""
    rejoin: bool = True
    """A follower whose leader's answer was withheld may collapse once more."""
    flight: Flight | None = None
    """The flight this request's fetch lands (its followers get what it shares)."""
    lease: SharedFlights | None = None
    """The fetch lease it holds on its key, given back when it is done."""
    reply: FromCache | Relayed | None = None
    synth: Synth | None = None
    result: FetchResult | None = None
    """How its fetch ended."""
