"""The request core, shared by every transport: :meth:`Pipeline.serve` takes a parsed
request and its body and gives a :class:`~stoker.proxy.reply.Reply`; the front, granian,
the middleware (through :mod:`~stoker.adapters.asgi_reply`) and the warmer are adapters.

Each request runs as a :class:`~stoker.proxy.steps.Transaction` through the steps of
:mod:`~stoker.proxy.steps` (Varnish's request state machine), one loop
(:meth:`Pipeline._run`) calling one method per :class:`~stoker.proxy.steps.Step`:
recv → lookup (key → L1 → L2 → :func:`~stoker.proxy.decide.decide`) → hit (fresh,
stale-while-revalidate, stale-if-error) | miss (collapsed) → fetch, with its ``fwd``; pass
for what skips the cache; purge for ``PURGE``.  The fetcher never writes to the client:
only the deliver step (:class:`~stoker.proxy.deliver.Deliverer`: an entry, or the origin's
response relayed) and the synth step (Stoker's own answers) give a reply.

Invariants:
- Nothing here knows a transport: no ASGI scope, message or ``send``; what travels with
  a request to its origin requests is its :class:`~stoker.origin.context.RequestContext`.
- A bypassed request (unsafe method, a rule's ``bypass``, a bypass cookie,
  a request ``no-store``) is neither served from nor stored in the cache.
- A request with ``Authorization`` is answered from cache only with an entry
  whose response allows sharing it (``public``, ``s-maxage``,
  ``must-revalidate``: RFC 9111 §3.5), collapsed followers included; its own
  response is stored only on the same terms (``decide_storage``).
- A stale-while-revalidate hit is answered at once and starts at most one
  background revalidation per entry; concurrent misses for a key make one
  origin request (see :mod:`stoker.cache.collapse`), including a miss whose
  L2 read outlasted the flight that filled L1 (the new leader looks at L1
  again, without awaiting, before it goes to the origin); across the processes
  and nodes sharing the persistent tier too, through fetch leases
  (:mod:`stoker.proxy.shared_flights`: a holder that dies mid-fetch is taken over
  by one waiting member, and the waiting flights' followers wait again from then).
- A collapsed follower is answered with its flight's entry only if it could reuse
  that entry from the cache itself at that moment (its credentials and variant, fresh
  for it, its ``no-cache``: :func:`~stoker.proxy.decide.may_take`); otherwise it goes
  forward with its own request.  A flight led by a request with ``Authorization``
  shares only an answer marked ``public`` or ``s-maxage``; its followers then
  collapse among themselves.
- A successful unsafe request invalidates its URL and same-host
  ``Location``/``Content-Location`` (RFC 9111 §4.4) before the first byte of
  its response is sent, so the client's next GET cannot get the old copy; through
  the :class:`Invalidator` it was built with (the purger: the path every purge takes).
- A request with personal cookies (:func:`~stoker.config.rules.personal_cookies`)
  is answered from cache only with an entry the origin vouched for
  (``CacheEntry.origin_vouched``); it never joins or leads a collapsed
  flight, and its response is stored only when the origin vouches for it.
  Such bypasses are counted per cookie name (:attr:`Pipeline.cookie_bypasses`)
  and logged once per name.
- Every origin response not stored and every request that bypasses the cache is
  recorded with its reason in :attr:`Pipeline.not_cached`
  (:class:`~stoker.cache.not_cached.NotCachedLog`), and so is a miss that found only
  other variants stored (``vary-miss``, by the names they vary on); nothing is recorded
  for a request answered from the cache.
- Vary selection (lookup, collapsing, storing) compares the request as
  forwarded: the Cookie after the rule's ``strip_cookies``, without the
  rule's ``vary_ignore_cookies`` (:func:`~stoker.config.rules.vary_view`).
- Every response carries ``Cache-Status`` and ``Via``; responses from cache
  carry ``Age``.
- A response from an entry with codings (made or due) is the form
  :func:`~stoker.proxy.hit.form_for` picks (the best coding the client accepts; identity for
  a Range request), with that form's headers and ETag, conditionals judged
  against that ETag.  A request that would get a coding the entry has not
  made yet waits for it
  (:class:`~stoker.proxy.codings.Codings`: made once per stored response); a
  miss whose client accepts a coding starts making it once its response has
  ended.
- While the origin is down (:class:`~stoker.origin.health.OriginHealth`),
  a request whose entry may answer on error (``error_until``) gets it at once
  (``detail=stale-if-error``) instead of waiting for the origin; one
  background revalidation per cooldown probes the origin.  Any other request
  is answered ``503`` with ``Retry-After`` at once (``detail=origin-down``),
  unless it is the one probe (:class:`~stoker.origin.monitored.MonitoredOrigin`).
- A warm visit (``RequestInfo.warm``) is never answered with a stale entry:
  it revalidates it (a conditional request) before answering; a refresh visit
  (``RequestContext.refresh``) revalidates even a fresh one.
- With refresh ahead on (:attr:`PipelineConfig.refresh_ahead`), every visitor request
  answered from an entry, or whose response was stored, is told to :attr:`Pipeline.reads`
  (the fast path's hits too), and so is every entry a fetch stored or renewed, whoever
  asked (:mod:`stoker.cache.reads`).
- ``PURGE`` never reaches the origin: it goes to the ``purge_method`` the pipeline was
  built with (405 without one).
- A request body is read whole before the origin is asked (and before an origin slot
  is taken): a forwarded request's body is sent with its exact length, a GET's or
  HEAD's is read and dropped; a body that stalls, is too large or breaks off is
  answered 408, 413 or 400 and nothing is forwarded
  (:mod:`~stoker.proxy.request_body`).  A response from the origin is read at the
  origin's pace and fed to the client at the client's
  (:mod:`~stoker.proxy.client_feed`).
- A cache fetch asks the origin for :func:`~stoker.http.keys.cache_target`: what the
  key leaves out (``ignore_query`` members, member order) is not sent.
- Keys come from the :class:`~stoker.proxy.keying.Keying` the pipeline was built with
  (:attr:`Pipeline.keying`), the purger's too: one key function, one cache version; a
  reload hands the new rules on to it in the same step (:meth:`Pipeline.reconfigure`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Final, Protocol
from urllib.parse import urljoin, urlsplit

from stoker.cache.bodies import BodyStore
from stoker.cache.budget import MemoryBudget, share_memory
from stoker.cache.collapse import Collapser, Flight
from stoker.cache.entry import CacheEntry, Freshness
from stoker.cache.hits import HitCounter
from stoker.cache.not_cached import NotCachedLog
from stoker.cache.outcome import GENERATED, Kind, Outcome
from stoker.cache.port import Cache
from stoker.cache.reads import ReadTracker
from stoker.cache.warm_reads import WarmReads
from stoker.clock import Clock
from stoker.config.rules import (
    Rule,
    has_cookie,
    match_rule,
    personal_cookies,
    strip_cookies,
    vary_view,
)
from stoker.config.settings import Settings
from stoker.http.forwarded import TrustedProxies
from stoker.http.headers import content_length, get_header
from stoker.http.keys import (
    cache_target,
    normalise_host,
    select_variant,
    variant_of,
)
from stoker.origin.health import OriginHealth
from stoker.origin.port import OriginClient, OriginError, OriginResponse, error_status
from stoker.proxy.client_feed import Feed, carry
from stoker.proxy.codings import Codings
from stoker.proxy.decide import decide, may_take
from stoker.proxy.deliver import Deliverer, needs_coding
from stoker.proxy.error_page import with_error_page
from stoker.proxy.fetch import Fetch, FetchConfig, Fetcher
from stoker.proxy.fetched import (
    RENEWED,
    SERVE_KINDS,
    SHAREABLE,
    FetchKind,
    FetchResult,
    Relayed,
)
from stoker.proxy.forwarding import client_response_headers, origin_request_headers
from stoker.proxy.keying import Keying
from stoker.proxy.log_record import served
from stoker.proxy.reply import Reply, ReplySink
from stoker.proxy.request import BadRequest, RequestInfo
from stoker.proxy.request_body import discard_body, read_body
from stoker.proxy.request_tap import RequestTap
from stoker.proxy.shared_flights import SharedFlights
from stoker.proxy.steps import FromCache, Lookup, Step, Synth, Transaction, synthetic
from stoker.purge.method import Answer

FROM_CACHE = frozenset({Kind.HIT, Kind.STALE_SWR, Kind.STALE_ERROR, Kind.REVALIDATED})
"""Outcomes whose body came from the cache (counted in :attr:`Pipeline.cache_bytes`)."""
log = logging.getLogger("stoker.proxy")

_FAILURES = {504: ("origin timed out", "origin-timeout"),
             503: ("origin down", "origin-down"),
             502: ("origin unavailable", "origin-error")}
"""An origin failure's status: the text and the ``Cache-Status`` detail it is answered with."""
PurgeMethodHandler = Callable[[RequestInfo], Awaitable[Answer]]


class Invalidator(Protocol):
    """What a successful unsafe request's invalidation goes through (RFC 9111 §4.4): the
    purger (:meth:`~stoker.purge.purger.Purger.invalidate`), as every purge does."""

    async def invalidate(self, keys: Sequence[str]) -> object:
        """Hard-purge every variant of the primary keys ``keys``, in force for every read
        when it returns."""
        ...


AMONG: Final = {Kind.COLLAPSED: "collapsed", Kind.ERROR: "error"}
"""The :attr:`Pipeline.stats` counter an outcome of these kinds adds to its tally's."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The pipeline's settings."""

    rules: tuple[Rule, ...]
    collapse_timeout: float
    honor_client_no_cache: bool
    default_host: str
    trusted: TrustedProxies = field(default_factory=TrustedProxies)
    kept_overrides: frozenset[bytes] = frozenset()
    """The override fields a trusted proxy's requests keep (``keep_override_headers``)."""
    memory: MemoryBudget = field(
        default_factory=lambda: share_memory(Settings.l1_max_bytes))
    """Sizes of the per-URL tables: the fast path's key memo, the hit counter."""
    client_body_timeout: float = Settings.client_body_timeout
    client_max_body_size: int = Settings.client_max_body_size
    refresh_ahead: float = 0.0
    """Refresh ahead's lead (0: off, nothing is tracked)."""
    refresh_window: float = Settings.refresh_window
    """How long a visitor's read keeps its entry refreshed."""
    error_page: bytes | None = None
    """The body of Stoker's own answers to origin failures for clients that accept HTML
    (``error_page``, read when the configuration is: :func:`with_error_page`)."""
    log_redact_query: tuple[str, ...] = ()
    """Query parameters whose values the live request log shows as ``REDACTED``."""


class Pipeline:
    """Answers HTTP requests from the cache or the origin."""

    def __init__(self, config: PipelineConfig, fetcher: Fetcher, store: Cache,
                 bodies: BodyStore, origin: OriginClient, clock: Clock, keying: Keying,
                 health: OriginHealth | None = None, *,
                 invalidator: Invalidator,
                 purge_method: PurgeMethodHandler | None = None,
                 shared_flights: SharedFlights | None = None) -> None:
        """``keying`` keys every request (under ``config.rules``: both change together
        in :meth:`reconfigure`); ``invalidator`` takes the unsafe methods' invalidations;
        ``purge_method`` answers ``PURGE`` (405 without one)."""
        self.config = config
        self.fetcher = fetcher
        self.store = store
        self.bodies = bodies
        self.origin = origin
        self.clock = clock
        self.keying = keying
        """The cache version and the key function (shared with the purger)."""
        self.collapser = Collapser()
        self.tap = RequestTap()
        """The live request log's watchers: each visitor's reply, once answered."""
        self.codings = Codings(store)
        """Compressed forms of stored entries, made when first wanted."""
        self.stats: Counter[str] = Counter()
        """Requests by what their lookup counted them as (:attr:`ReplySink.tally`: hit,
        stale, miss, bypass; ``collapsed`` and ``error`` among those), warm visits
        included."""
        self.outcomes: Counter[tuple[str, str, bool]] = Counter()
        """Replies by ``(kind, reason, warm)`` (:attr:`Outcome.counted`: the
        :class:`Kind`'s value, :attr:`Outcome.reason`; ``warm``: a warm visit), each
        counted once by :meth:`count`, with its final outcome."""
        self.hits = HitCounter(config.memory.counted_urls)
        """Per-URL visitor hits and misses (warm visits left out), flushed by the owner."""
        self.reads = ReadTracker(config.memory.counted_urls, config.refresh_window,
                                 config.refresh_ahead) if config.refresh_ahead > 0 else None
        """The entries visitors read, for refresh ahead (None: off)."""
        self.warm_reads = WarmReads()
        """Responses warm visits stored, and how many a visitor then read."""
        self.health = health or OriginHealth(clock)
        """The origin's breaker (the origin client given reports to it)."""
        self.not_cached = NotCachedLog()
        """Why responses were not stored and requests bypassed the cache."""
        self.cache_bytes = 0
        """Body bytes of the stored responses visitors were answered with: what the origin
        was spared (whole bodies; the fast path counts its own hits here too)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._producing: set[asyncio.Future[None]] = set()
        self._name = fetcher.config.cache_name
        self._invalidator = invalidator
        self._purge_method = purge_method
        self._shared_flights = shared_flights
        """Fetch leases, when other processes share the cache: their misses collapse."""
        self._via = (b"via", fetcher.config.via)
        self._deliverer = Deliverer(store, bodies, self.codings)
        self._steps: dict[Step, Callable[[Transaction], Awaitable[Step]]] = {
            Step.RECV: self._recv, Step.PURGE: self._purge, Step.PASS: self._pass,
            Step.LOOKUP: self._lookup, Step.HIT: self._hit, Step.MISS: self._miss,
            Step.FETCH: self._fetch, Step.DELIVER: self._deliver, Step.SYNTH: self._synth}

    @property
    def cookie_bypasses(self) -> Mapping[str, int]:
        """Requests whose personal cookies kept them from the cache, by cookie name."""
        return self.not_cached.details("cookie")

    def reconfigure(self, config: PipelineConfig, fetch: FetchConfig) -> None:
        """Take a reloaded configuration: from now on every request is answered under
        ``config`` and fetched under ``fetch``, and no memo answers by the old rules."""
        self.config = config
        self.fetcher.config = fetch
        self.keying.reconfigure(config.rules)

    async def serve(self, request: RequestInfo, body: AsyncIterator[bytes]) -> Reply:
        """Answer one parsed request whose body is ``body`` (its pieces, as they arrive;
        raising :class:`~stoker.proxy.request_body.BodyBrokenOff` if it breaks off): the
        :class:`~stoker.proxy.reply.Reply`, given as soon as its head is known.

        The work runs in a task of its own, which outlives this call while the reply's
        body is read (it may go on reading the origin after the client has gone, to
        finish a store); cancelling this call before the reply is given cancels it."""
        sink = ReplySink(via=self._via, name=self._name)
        task = asyncio.ensure_future(self._produce(request, body, sink))
        self._producing.add(task)
        task.add_done_callback(self._producing.discard)
        try:
            return await sink.reply
        except asyncio.CancelledError:
            task.cancel()
            raise

    def refusal(self, error: BadRequest) -> Reply:
        """The reply to a request Stoker will not forward: ``error``'s status, and on
        HTTP/1 the connection closes after it (what is left of the request is never
        read)."""
        sink = ReplySink(via=self._via, name=self._name)
        self._give(sink, _refusal(error))
        return sink.reply.result()

    async def _produce(self, request: RequestInfo, body: AsyncIterator[bytes],
                       sink: ReplySink) -> None:
        tap = self.tap
        started = self.clock.monotonic() if tap.watched else None
        rule = match_rule(self.config.rules, request.host, request.path, request.query)
        txn = Transaction(request, body, sink, rule)
        try:
            await self._run(txn)
        except BadRequest as error:  # its body could not be read: nothing was forwarded
            log.info("refused %s %s: %s", request.method, request.url, error)
            if not sink.started:
                self._give(sink, _refusal(error))
        except OriginError as error:  # broke off mid-body: the body stream raised it
            log.warning("response to %s truncated: %s", request.url, error)
            if not sink.started:
                self._give(sink, _failure(502, "uri-miss", str(error)), request)
        except BaseException as error:
            sink.fail(error)
            if not isinstance(error, Exception):
                raise
            log.exception("answering %s %s failed", request.method, request.url)
        else:
            sink.fail(RuntimeError("the pipeline gave no reply"))
        finally:  # none stamped: a failure Stoker answered
            outcome = sink.outcome or GENERATED
            self.count(outcome, sink.tally, sink.entry, request.url, request.warm,
                       request.headers, self.clock.now())
            if tap.watched and not request.warm:
                tap.publish(served(
                    request, outcome, sink.given, at=self.clock.now(),
                    duration=None if started is None else self.clock.monotonic() - started,
                    redact=self.config.log_redact_query))

    async def _run(self, txn: Transaction) -> None:
        """Run ``txn``'s steps from :attr:`Step.RECV` to :attr:`Step.DONE`; then land the
        flight it led and give back its lease and its request body, however it ended."""
        steps = self._steps
        step = Step.RECV
        try:
            while step is not Step.DONE:
                step = await steps[step](txn)
        finally:
            if txn.upload is not None:
                txn.upload.close()
            if txn.flight is not None:
                assert txn.lookup is not None
                self._land(txn.lookup.flight_key(txn.variant), txn.flight, txn.result)
                if txn.lease is not None:
                    await txn.lease.release(txn.lookup.primary)

    # -- the steps -----------------------------------------------------------

    async def _recv(self, txn: Transaction) -> Step:
        """Purge, pass (an other method than GET or HEAD, a bypass) or look up."""
        request = txn.request
        method = request.method
        if method == "PURGE":
            return Step.PURGE
        if method not in ("GET", "HEAD"):
            self.not_cached.record("method", request.url, self.clock.now(), details=(method,))
            txn.fwd, txn.invalidate = "method", method not in SAFE_METHODS
            return Step.PASS
        reason = self._bypass(request, txn.rule)
        if reason is not None:
            rule = txn.rule
            self.not_cached.record(reason, request.url, self.clock.now(), details=(
                ("bypass = true" if rule is not None and rule.bypass else "bypass_cookies",)
                if reason == "bypass" else ()))
            txn.fwd = reason
            return Step.PASS
        if request.declares_body:  # a cache fetch sends none: read it, so none is pending
            await discard_body(txn.body, timeout=self.config.client_body_timeout,
                               limit=self.config.client_max_body_size, clock=self.clock)
        return Step.LOOKUP

    async def _purge(self, txn: Transaction) -> Step:
        if self._purge_method is None:
            txn.synth = synthetic(405, "the PURGE method is not enabled")
        else:
            status, headers, body = await self._purge_method(txn.request)
            txn.synth = Synth(status, headers, body)
        return Step.SYNTH

    async def _pass(self, txn: Transaction) -> Step:
        """Forward the request with its body, read whole first; relay the answer."""
        request = txn.request
        txn.sink.tally = "bypass"
        if request.declares_body:
            txn.upload = await read_body(
                txn.body, timeout=self.config.client_body_timeout,
                limit=self.config.client_max_body_size, directory=self.bodies.directory,
                clock=self.clock)
        config = self.fetcher.config
        headers = origin_request_headers(request, via=config.via, origin_host=config.origin_host,
                                         for_cache=False)
        try:
            response = await self.origin.fetch(request.method, request.target, headers,
                                               txn.upload, request.context)
        except OriginError as error:
            txn.synth = _failure(error_status(error), txn.fwd, str(error), error.retry_after)
            return Step.SYNTH
        try:
            if txn.invalidate and 200 <= response.status < 400:
                await self._invalidate_after_unsafe(request, response.headers)
        except BaseException:
            await response.close()
            raise
        txn.reply = Relayed(response.status,
                            client_response_headers(response.headers, config.hidden_headers),
                            Outcome(Kind.BYPASS, fwd=txn.fwd, fwd_status=response.status),
                            content_length(response.headers), partial(_carried, response))
        return Step.DELIVER

    async def _lookup(self, txn: Transaction) -> Step:
        """The stored variants of the request's key; :func:`decide` picks hit or miss."""
        request = txn.request
        primary = self.keying.key_for(request, txn.rule)
        entries = self.store.get_l1(primary)
        if entries is None:
            looked_up = request.looked_up
            entries = looked_up[1] if looked_up is not None and looked_up[0] == primary else (
                await self.store.get(primary))
        lookup = txn.lookup = Lookup(request, txn.rule, primary,
                                     vary_view(request.headers, txn.rule), entries,
                                     personal_cookies(request.headers, txn.rule))
        matched = select_variant(entries, lookup.varying) if entries else None
        entry = txn.entry = matched if matched is None or lookup.may_reuse(matched) else None
        now = self.clock.now()
        action = decide(entry, now, other_variants=bool(entries),
                        client_no_cache=self._client_forces_revalidation(request),
                        warm=request.warm, origin=self.health,
                        refresh=request.context.refresh)
        if entry is not None and len(entries) > 1:
            self.store.touch(entry)
        txn.fwd = action.fwd
        txn.variant = entry.variant if entry else (
            variant_of(entries[0].vary, lookup.varying) if entries else "")
        kind = action.serve
        if kind is not None and entry is not None:
            txn.sink.tally = "hit" if kind is Kind.HIT else "stale"
            if action.revalidate:
                self._revalidate_in_background(lookup, entry)
            txn.reply = FromCache(entry, Outcome(kind, ttl=entry.ttl(now), detail=None if (
                kind is Kind.HIT) else kind.value), Step.MISS, now)
            return Step.HIT
        if entries and matched is None:  # only other variants stored: by what they vary on
            self.not_cached.record("vary-miss", request.url, now, details=entries[0].vary)
        return Step.MISS

    async def _hit(self, txn: Transaction) -> Step:
        """Deliver the entry (a miss, should its body have vanished)."""
        return Step.DELIVER

    async def _miss(self, txn: Transaction) -> Step:
        """Collapse with the other requests for the key and variant: a follower waits for
        its flight's answer; the leader takes what landed meanwhile, in L1 or (sharing the
        persistent tier) from another process, else fetches."""
        txn.sink.tally = "miss"
        lookup = txn.lookup
        assert lookup is not None
        if lookup.personal:  # a personalised answer is never shared with waiting requests
            return Step.FETCH
        key = lookup.flight_key(txn.variant)
        flight, leader = self._join(key, lookup.request)
        if not leader:
            return await self._follow(txn, flight)
        forced = txn.fwd == "request"
        landed = self._fresh(lookup, self.store.get_l1(lookup.primary)) if not forced else None
        if landed is not None:  # a flight for this key landed while we read L2
            return self._landed(txn, key, flight, landed,
                                Outcome(Kind.HIT, ttl=landed.ttl(self.clock.now())))
        leased = self._shared_flights if not (forced or flight.credentialed) else None
        if leased is not None:
            elsewhere = await self._fetched_elsewhere(lookup, leased, flight)
            if elsewhere is not None:  # another process fetched it for us
                return self._landed(txn, key, flight, elsewhere, Outcome(
                    Kind.COLLAPSED, fwd=txn.fwd, fwd_status=elsewhere.status, stored=True,
                    ttl=elsewhere.ttl(self.clock.now())))
            if not leased.holds(lookup.primary):
                leased = None  # it gave up waiting: fetch ourselves, holding no lease
        txn.flight, txn.lease = flight, leased
        return Step.FETCH

    async def _follow(self, txn: Transaction, flight: Flight) -> Step:
        """Wait for ``flight``; deliver what it shares when this request may take it,
        else collapse once more (its leader's answer was its own) or fetch alone."""
        lookup = txn.lookup
        assert lookup is not None
        shared = await flight.wait(self.config.collapse_timeout)
        otherwise = Step.MISS if flight.withheld and txn.rejoin else Step.FETCH
        txn.rejoin = False if otherwise is Step.MISS else txn.rejoin
        if shared is not None and self._may_take(lookup, flight, shared):
            now = self.clock.now()
            txn.reply = FromCache(shared, Outcome(
                Kind.COLLAPSED, fwd=txn.fwd, fwd_status=shared.status, stored=flight.stored,
                ttl=shared.ttl(now)), otherwise, now)
            return Step.DELIVER
        return otherwise

    def _landed(self, txn: Transaction, key: str, flight: Flight, entry: CacheEntry,
                outcome: Outcome) -> Step:
        """Land ``flight`` with ``entry`` (its followers get it) and deliver it; fetch, with
        no stored entry to revalidate, when its body is gone."""
        self.collapser.land(key, flight, entry)
        txn.entry = None
        txn.reply = FromCache(entry, outcome, Step.FETCH, self.clock.now())
        return Step.DELIVER

    async def _fetch(self, txn: Transaction) -> Step:
        """Ask the origin: deliver its response, the entry it revalidated or the stale
        one standing in for it, or synthesise its failure."""
        lookup = txn.lookup
        assert lookup is not None
        fetched = await self._origin_fetch(lookup, txn.entry, txn.fwd, txn.flight,
                                           client=True)
        if isinstance(fetched, Relayed):
            txn.reply = fetched
            return Step.DELIVER
        txn.result = fetched
        self._account(lookup, fetched, client=True)
        if fetched.kind is FetchKind.FAILED:
            txn.synth = _failure(fetched.status, txn.fwd, fetched.detail, fetched.retry_after)
            return Step.SYNTH
        entry = fetched.entry
        assert fetched.kind in SERVE_KINDS and entry is not None
        now = self.clock.now()
        ttl = entry.ttl(now)
        outcome = Outcome(Kind.STALE_ERROR, ttl=ttl, detail=Kind.STALE_ERROR.value) if (
            fetched.kind is FetchKind.STALE) else Outcome(
            Kind.REVALIDATED, fwd=txn.fwd, fwd_status=304,
            stored=fetched.kind is FetchKind.REFRESHED, ttl=ttl)
        txn.reply = FromCache(entry, outcome,
                              _failure(502, txn.fwd, "cached body missing"), now)
        return Step.DELIVER

    async def _deliver(self, txn: Transaction) -> Step:
        """Give :attr:`Transaction.reply` to the client (:class:`Deliverer`)."""
        reply = txn.reply
        if isinstance(reply, Relayed):
            result = await self._deliverer.relayed(txn.sink, reply)
            if result is not None and txn.lookup is not None:
                txn.result = result
                self._account(txn.lookup, result, client=True)
                entry = result.entry
                if result.kind is FetchKind.STORED and entry is not None and needs_coding(
                        txn.request, entry):
                    self.codings.prefetch(entry)  # the response has ended: off its path
            return Step.DONE
        assert reply is not None
        if await self._deliverer.entry(txn.sink, txn.request, reply.entry, reply.now,
                                       reply.outcome):
            return Step.DONE
        if isinstance(reply.otherwise, Synth):
            txn.synth = reply.otherwise
            return Step.SYNTH
        return reply.otherwise

    async def _synth(self, txn: Transaction) -> Step:
        """Give :attr:`Transaction.synth`, Stoker's own answer, to the client."""
        assert txn.synth is not None
        self._give(txn.sink, txn.synth, txn.request)
        return Step.DONE

    def _give(self, sink: ReplySink, synth: Synth, request: RequestInfo | None = None) -> None:
        """Give ``synth`` (with the configured error page for ``request``, when it
        answers an origin failure: :func:`with_error_page`)."""
        if request is not None:
            synth = with_error_page(synth, self.config.error_page, request.headers)
        if synth.reason:
            log.info("answering %d: %s", synth.status, synth.reason)
        headers = synth.headers if synth.outcome is None else [
            *synth.headers, sink.stamp(synth.outcome)]
        sink.whole(synth.status, headers, synth.body, close=synth.close)

    # -- what the steps share ------------------------------------------------

    async def _origin_fetch(self, lookup: Lookup, entry: CacheEntry | None, fwd: str,
                            flight: Flight | None, *, client: bool) -> FetchResult | Relayed:
        """Fetch ``lookup``'s target (revalidating ``entry``), feeding ``flight``."""
        request, rule = lookup.request, lookup.rule
        target = cache_target(request.path, request.query, rule.ignore_query if rule else ())
        return await self.fetcher.run(Fetch(
            request=request, primary_key=lookup.primary, target=target,
            rule_ttl=rule.ttl if rule else None,
            cookie=self._origin_cookie(request, rule), stale=entry, client=client, fwd=fwd,
            flight=flight, varying=lookup.varying, siblings=lookup.siblings,
            personal=lookup.personal))

    def _account(self, lookup: Lookup, result: FetchResult, *, client: bool) -> None:
        """Record how a fetch for ``lookup`` ended: why its response was not stored; with
        refresh ahead, the entry it stored or renewed (a visitor's read when a visitor's
        response was stored)."""
        reason = result.not_stored
        if reason is not None:
            self._not_stored(lookup, reason, result)
        request = lookup.request
        if self.reads is not None and result.entry is not None and result.kind in RENEWED:
            if result.kind is FetchKind.STORED and client and not request.warm:
                self.reads.read(result.entry, request.headers, self.clock.now())
            else:  # revalidated (a visitor's read is told once it is served), or not a visitor
                self.reads.renewed(result.entry)

    async def _background(self, lookup: Lookup, entry: CacheEntry, key: str,
                          flight: Flight) -> None:
        result: FetchResult | None = None
        try:
            fetched = await self._origin_fetch(lookup, entry, "stale", flight, client=False)
            result = await fetched.pump(None) if isinstance(fetched, Relayed) else fetched
            if result is not None:
                self._account(lookup, result, client=False)
        except Exception:
            log.exception("background revalidation of %s failed", lookup.request.url)
        finally:
            self._land(key, flight, result)

    def count(self, outcome: Outcome, tally: str | None, entry: CacheEntry | None, url: str,
              warm: bool, headers: Sequence[tuple[bytes, bytes]], now: float) -> None:
        """Count one reply, once, the core's and the fast path's: :attr:`outcomes` by its
        final ``outcome``; :attr:`stats` by ``tally``, what its lookup counted it as (as
        Varnish counts hits and misses at lookup; ``None``: no lookup, a refusal or a
        purge), and ``collapsed``/``error`` by the outcome; for a visitor (not ``warm``),
        ``url``'s hit or miss, the warmed entry read, the body bytes the origin was spared
        and, with refresh ahead, the read of ``entry`` (asked with ``headers``)."""
        kind = outcome.kind
        self.outcomes[outcome.counted[warm]] += 1
        if tally is not None:
            self.stats[tally] += 1
            among = AMONG.get(kind)
            if among is not None:
                self.stats[among] += 1
        if warm:
            return
        if tally == "hit" or tally == "stale":
            self.hits.hit(url)
            self.warm_reads.note_read(url)
        elif tally == "miss":
            self.hits.miss(url)
        if entry is not None:
            if kind in FROM_CACHE:
                self.cache_bytes += entry.body_size
            if self.reads is not None:
                self.reads.read(entry, headers, now)


    def _bypass(self, request: RequestInfo, rule: Rule | None) -> str | None:
        """``fwd`` value when the request must not touch the cache, else ``None``."""
        fields = request.fields
        if rule is not None and rule.bypass:
            return "bypass"
        if rule is not None and rule.bypass_cookies and has_cookie(
                fields.joined(b"cookie"), rule.bypass_cookies):
            return "bypass"
        cache_control = fields.cache_control
        return "request" if cache_control is not None and cache_control.no_store else None


    def _client_forces_revalidation(self, request: RequestInfo) -> bool:
        if not self.config.honor_client_no_cache:
            return False
        cache_control = request.fields.cache_control
        return cache_control is not None and cache_control.no_cache


    def _join(self, key: str, request: RequestInfo) -> tuple[Flight, bool]:
        """The flight for ``key`` and whether ``request`` leads it (a flight led by a
        request with credentials shares only answers meant for everyone)."""
        return self.collapser.join(
            key, credentialed=request.fields.has(b"authorization"))


    def _land(self, key: str, flight: Flight, result: FetchResult | None) -> None:
        """Land the leader's ``flight`` with what its fetch ``result`` may share."""
        shared = result.entry if result and result.kind in SHAREABLE else None
        self.collapser.land(key, flight, shared, fell_back=result is not None and (
            result.fell_back))


    def _may_take(self, lookup: Lookup, flight: Flight, shared: CacheEntry) -> bool:
        """Whether a follower may be answered with what its flight shares: the entry
        it would itself select and reuse from the cache now (:func:`may_take`)."""
        return lookup.may_reuse(shared) and (
            shared.variant == variant_of(shared.vary, lookup.varying)) and may_take(
            shared, self.clock.now(), fetched=flight.stored, fell_back=flight.fell_back,
            client_no_cache=self._client_forces_revalidation(lookup.request))


    async def _fetched_elsewhere(self, lookup: Lookup, leased: SharedFlights,
                                 flight: Flight) -> CacheEntry | None:
        """The entry another process sharing the persistent tier fetched for this request:
        waited for while it holds the key's lease live (``flight``'s followers wait
        again from when a waiter took a dead lease over); looked for once more when this
        one took the lease (the other's write may have landed since this request's
        lookup, and its lease been given back).  None: this one fetches (holding the
        lease if it took it over)."""
        usable = partial(self._fresh, lookup)
        if not await leased.take(lookup.primary):
            return await leased.wait(lookup.primary, usable, flight.began)
        found = usable(await self.store.get(lookup.primary))
        if found is not None:
            await leased.release(lookup.primary)
        return found


    def _fresh(self, lookup: Lookup, entries: list[CacheEntry] | None) -> CacheEntry | None:
        """The fresh entry among ``entries`` this request may use (checked without
        awaiting)."""
        entry = select_variant(entries, lookup.varying) if entries else None
        if entry is None or not lookup.may_reuse(entry):
            return None
        return entry if entry.freshness(self.clock.now()) is Freshness.FRESH else None


    def _not_stored(self, lookup: Lookup, reason: str, result: FetchResult) -> None:
        """Record why ``result``'s response was not stored (a cookie bypass by the cookies'
        names, logged once per name)."""
        details: Sequence[str] = (
            lookup.personal if reason == "cookie" else result.cookies_set or (
                (str(result.status),) if reason == "status" else ()))
        first = self.not_cached.record(reason, lookup.request.url, self.clock.now(),
                                       status=result.status, details=details)
        if reason != "cookie":
            return
        for name in first:
            log.warning("not caching pages for requests with cookie %r: the origin does "
                        "not mark them shareable; if this cookie never changes a page, "
                        "add it to ignore_cookies or strip_cookies", name)


    def _origin_cookie(self, request: RequestInfo, rule: Rule | None) -> str | bool | None:
        if rule is None or not rule.strip_cookies:
            return True
        cookie = request.fields.joined(b"cookie")
        return strip_cookies(cookie, rule.strip_cookies) if cookie else True


    def _revalidate_in_background(self, lookup: Lookup, entry: CacheEntry) -> None:
        key = lookup.flight_key(entry.variant)
        if self.collapser.busy(key):
            return
        flight, _ = self._join(key, lookup.request)
        task = asyncio.create_task(self._background(lookup, entry, key, flight))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


    async def _invalidate_after_unsafe(self, request: RequestInfo,
                                       headers: list[tuple[bytes, bytes]]) -> None:
        """RFC 9111 §4.4: drop the target URI and same-host Location/Content-Location,
        through the :class:`Invalidator` (the purger: the purge list's mark, the
        applier, the relay, the purge events).

        Runs before the response starts; the purge list's mark stops a fetch already
        in flight from storing the old representation afterwards.
        """
        rule = match_rule(self.config.rules, request.host, request.path, request.query)
        keys = [self.keying.key_for(request, rule)]
        host = normalise_host(request.scheme, request.host)
        for name in (b"location", b"content-location"):
            value = get_header(headers, name)
            if value is None:
                continue
            target = urljoin(request.url, value.decode("latin-1"))
            parts = urlsplit(target)
            if parts.scheme in ("http", "https") and normalise_host(
                    parts.scheme, parts.netloc) == host:
                keys.append(self.keying.key_for_url(target))
        await self._invalidator.invalidate(keys)

    def pending(self) -> int:
        """Requests still being answered after their reply was given (their body read,
        their store finished), background revalidations and compressions running now
        (cancelling :meth:`drain` cancels them)."""
        return len(self._producing) + len(self._tasks) + self.codings.pending()

    async def drain(self) -> None:
        """Wait for requests still being answered, background revalidations and
        compressions (shutdown and tests)."""
        while self._producing or self._tasks:
            await asyncio.gather(*self._producing, *self._tasks, return_exceptions=True)
        await self.codings.drain()


def _failure(status: int, fwd: str, detail: str, retry_after: int | None = None) -> Synth:
    """The answer to an origin failure (``retry_after``: the origin is down, not asked)."""
    text, reason = _FAILURES.get(status, _FAILURES[502])
    extra = () if retry_after is None else ((b"retry-after", str(retry_after).encode()),)
    return synthetic(status, text, Outcome(Kind.ERROR, fwd=fwd, fwd_status=status,
                                           detail=reason), extra=extra, reason=detail)


def _refusal(error: BadRequest) -> Synth:
    """The answer to a request Stoker will not forward (HTTP/1 closes after it)."""
    return synthetic(error.status, str(error), Outcome(Kind.ERROR, detail="bad-request"),
                     close=True)


async def _carried(response: OriginResponse, feed: Feed | None) -> None:
    """Carry a passed request's response to ``feed``: it was no fetch (nothing to tell)."""
    await carry(response, feed)
