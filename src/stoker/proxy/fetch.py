"""One origin exchange for a cacheable request: fetch, decide, stream, store.

The fetcher never writes to a client: it tells how the exchange ended
(:class:`~stoker.proxy.fetched.FetchResult`), or gives the response to relay once its head
is known (:class:`~stoker.proxy.fetched.Relayed`, whose pump reads the body into the
client's feed and the store).

Invariants:
- Storage is decided from the response headers alone (RFC 9111 §3 via
  :func:`decide_storage`) before any byte reaches the client; a response that
  is not stored is passed through and never shared with collapsed followers.
- A stored body is complete: a body broken off by the origin, or larger than
  ``max_object_bytes``, is discarded, never stored.
- ``Cache-Status`` never says ``stored`` for a response that was not: a body kept
  whole before its head is sent (declared to fit in memory) gets the header of what
  happened; a streamed one's head goes out before that is known and says ``fwd``
  without ``stored`` (its :class:`~stoker.cache.outcome.Outcome` says ``stored``, and
  is corrected should the store fail).
- Storing never fails the client: a body over ``max_object_bytes`` or a disk
  error while spooling or saving it drops the stored copy (logged once) while
  the client gets the whole response; the client's response ends before the
  body is fsynced and stored.
- The client's disconnect does not stop a store in progress (followers may be
  waiting on it); it does stop a pass-through.
- A response to a request with personal cookies (``Fetch.personal``) is stored
  only when the origin vouches for sharing it (``origin_vouched``, not a rule's
  or a default's lifetime) and it is fresh for a positive time; otherwise it is
  passed through with ``fwd=bypass; detail=cookie`` and never displaces what is
  stored.
- A stopgap page (the origin's "being generated" placeholder, marked with
  ``stopgap_header``) is never stored.
- Within an entry's ``error_until`` — the origin's stale-if-error, or
  ``keep_stale`` unless must-revalidate, proxy-revalidate, no-cache or
  s-maxage forbid it — an origin error, timeout, 500, 502, 503 or 504 is
  answered with the stale entry (RFC 9111 §4.2.4).  An origin error is logged here only when
  no error response reports it (stale served, or no client waiting).
- A purge recorded in the :class:`~stoker.purge.list.PurgeList` after the
  origin request was sent and covering the entry means: not stored and not
  shared (hard purge), or stored and shared already stale (soft purge).  The
  purge list's check and ``store.put`` run without an ``await`` between them.
- One stored copy serves every ``Accept-Encoding``: the origin is offered only
  codings the client accepts and Stoker decodes
  (:func:`~stoker.http.encoding.origin_offer`), so the client is fed the origin's
  answer as it is, while a gzip or br body is stored decoded (Content-Encoding
  dropped, ETag made weak) and ``accept-encoding`` leaves the entry's ``vary``:
  every client gets the form it accepts from that copy.  A body in a coding Stoker
  cannot decode is stored as sent, keyed by the offer its request made (``vary``
  gains ``accept-encoding`` when the origin's lacks it).  A coded body that does not
  decode is not stored (``corrupt-coding``): never decoded garbage.
- Decoding is bounded (``FetchConfig.decoding``: ``max_decoded_body``,
  ``max_expansion_ratio``): a body that decodes past the bound is stored as the
  origin sent it, in its coding, keyed by the offer, and decoding stops there, so a
  bomb costs at most its bound in time and the spools' bounds in memory.  While a
  body is decoded the origin's bytes are spooled beside it; a decoded body stored in a
  file keeps them as its one compressed form when they fit inline (at most
  ``body_file_threshold``), so the clients that accept that coding get the origin's
  bytes, not the decoded file.
- Nothing is compressed here: with ``compress`` on, a stored inline body that
  :func:`~stoker.http.encoding.compressible` allows is stored identity-only
  with ``codings_due`` set, and its forms are made when a client first
  accepts a coding (:mod:`stoker.proxy.codings`); bodies stored in files
  (above ``body_file_threshold``) get none made (only the origin's, above).  A
  refresh keeps the codings (made or due) unless the new headers forbid them
  (``no-transform``); the origin's own form is always kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from stoker.cache.bodies import BodySpool, BodyStore
from stoker.cache.collapse import Flight
from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Kind, Outcome
from stoker.cache.port import Cache
from stoker.cache.store import EntryRef
from stoker.cache.tags import tags_from_headers
from stoker.clock import Clock
from stoker.http.conditional import merge_not_modified, revalidation_headers
from stoker.http.decoding import CorruptBody, DecodeBound, Decoder
from stoker.http.encoding import IDENTITY, Encoded, compressible, stored_coding, weakened
from stoker.http.headers import content_length, get_header, set_cookie_names, vary_names
from stoker.http.keys import variant_of, variants_to_drop
from stoker.http.policy import RuleTTL, StaleDefaults, StorageDecision, decide_storage
from stoker.origin.health import FAILING_STATUSES
from stoker.origin.port import OriginClient, OriginError, OriginResponse, error_status
from stoker.proxy.client_feed import Feed, carry
from stoker.proxy.fetched import FetchKind, FetchResult, Relayed
from stoker.proxy.forwarding import client_response_headers, origin_request_headers, stored_headers
from stoker.proxy.request import RequestInfo
from stoker.purge.list import PurgeList

log = logging.getLogger("stoker.proxy")



@dataclass(frozen=True, slots=True)
class FetchConfig:
    """The settings one fetch needs."""

    cache_name: str
    via: bytes
    origin_host: str | None
    defaults: StaleDefaults
    body_file_threshold: int
    max_object_bytes: int
    decoding: DecodeBound
    """How far a gzip or br body is decoded for storing (``max_decoded_body``,
    ``max_expansion_ratio``)."""
    tag_headers: tuple[bytes, ...]
    hidden_headers: frozenset[bytes]
    max_variants: int = 32
    stopgap_header: bytes = b"x-stoker-stopgap"
    keep_stale: float = 0.0
    compress: bool = True


@dataclass(slots=True)
class Fetch:
    """What to fetch and for whom."""

    request: RequestInfo
    primary_key: str
    target: str
    """The request target sent to the origin: the path, and the query as the key has it
    (``ignore_query`` members dropped, the rest in the key's order)."""
    rule_ttl: RuleTTL | None
    cookie: str | bool | None
    stale: CacheEntry | None
    client: bool
    """A client waits for the response (else: a background revalidation)."""
    fwd: str
    flight: Flight | None = None
    varying: Sequence[tuple[bytes, bytes]] | None = None
    """The request as forwarded, for Vary (default: the request's own headers)."""
    siblings: Sequence[CacheEntry] = ()
    """Variants stored under the key at lookup, least recently used first."""
    personal: Sequence[str] = ()
    """Cookies on the request that may personalise the page (``rules.personal_cookies``)."""


class Fetcher:
    """Performs fetches against one origin into one store."""

    def __init__(self, config: FetchConfig, origin: OriginClient, store: Cache,
                 bodies: BodyStore, clock: Clock, purges: PurgeList | None = None) -> None:
        self.config = config
        self.purges = purges if purges is not None else PurgeList(clock)
        self._origin = origin
        self._store = store
        self._bodies = bodies
        self._clock = clock

    async def run(self, fetch: Fetch) -> FetchResult | Relayed:
        """Ask the origin: how that ended, or the response to relay (and store as decided)
        once its head is known (:mod:`~stoker.proxy.fetched`'s invariants)."""
        stale = fetch.stale
        extra = revalidation_headers(etag=stale.etag, last_modified=stale.last_modified) if (
            stale is not None) else []
        headers = origin_request_headers(
            fetch.request, via=self.config.via, origin_host=self.config.origin_host,
            for_cache=True, cookie=fetch.cookie, extra=extra)
        request_time = self._clock.now()
        since = self.purges.seq
        try:
            response = await self._origin.fetch("GET", fetch.target, headers, None,
                                               fetch.request.context)
        except OriginError as error:
            outcome = self._fallback(stale, error_status(error), str(error), error.retry_after)
            if outcome.kind == "stale" or not fetch.client:  # else the caller's 5xx reports it
                log.warning("origin fetch of %s failed: %s", fetch.request.url, error)
            return outcome
        try:
            handled = await self._handle(fetch, response, request_time, since)
        except BaseException:
            await response.close()
            raise
        if not isinstance(handled, Relayed):
            await response.close()
        return handled

    def _error_until(self, decision: StorageDecision, fresh_until: float) -> float:
        """Until when the entry may answer on origin errors: the origin's
        ``stale-if-error``, or ``keep_stale`` where nothing forbids serving it stale."""
        keep = self.config.keep_stale if decision.stale_on_error_ok else 0.0
        return fresh_until + max(decision.sie, keep)

    def _fallback(self, stale: CacheEntry | None, status: int, detail: str,
                  retry_after: int | None = None) -> FetchResult:
        """Stale-if-error when allowed, else a failure the caller reports."""
        if stale is not None and self._clock.now() < stale.error_until:
            return FetchResult(FetchKind.STALE, stale, status, detail)
        return FetchResult(FetchKind.FAILED, None, status, detail, retry_after=retry_after)

    async def _handle(self, fetch: Fetch, response: OriginResponse,
                      request_time: float, since: int) -> FetchResult | Relayed:
        response_time = self._clock.now()
        stale = fetch.stale
        if response.status in FAILING_STATUSES:
            fallback = self._fallback(stale, response.status, "origin error")
            if fallback.kind is FetchKind.STALE:
                return fallback
        if response.status == 304 and stale is not None:
            return await self._refresh(fetch, stale, response, request_time, response_time,
                                       since)
        decision = decide_storage(
            method="GET", status=response.status, request_headers=fetch.request.headers,
            response_headers=response.headers, request_time=request_time,
            response_time=response_time, rule=fetch.rule_ttl, defaults=self.config.defaults)
        decision = self._size_limit(decision, response.headers)
        if decision.store and fetch.personal and not _shareable_for_personal(decision):
            decision = replace(decision, store=False, reason="cookie")
        if decision.store and get_header(response.headers, self.config.stopgap_header):
            decision = replace(decision, store=False, reason="stopgap")
        if not decision.store:
            if fetch.flight is not None:
                fetch.flight.share(None)  # followers must not wait for, or share, this response
            return self._pass_through(fetch, response, decision)
        return self._to_store(fetch, response, decision, response_time, since)

    def _size_limit(self, decision: StorageDecision,
                    headers: Sequence[tuple[bytes, bytes]]) -> StorageDecision:
        length = content_length(headers)
        if decision.store and length is not None and length > self.config.max_object_bytes:
            return replace(decision, store=False, reason="too-large")
        return decision

    def _pass_through(self, fetch: Fetch, response: OriginResponse,
                      decision: StorageDecision) -> Relayed:
        """The response, relayed as it is and not stored (``decision`` says why)."""
        kind, fwd = (Kind.BYPASS, "bypass") if decision.reason == "cookie" else (
            Kind.PASS, fetch.fwd)
        result = FetchResult(FetchKind.PASSED, None, response.status, decision.reason,
                             tuple(set_cookie_names(response.headers)) if (
                                 decision.reason == "set-cookie") else ())
        return Relayed(response.status,
                       client_response_headers(response.headers, self.config.hidden_headers),
                       Outcome(kind, fwd=fwd, fwd_status=response.status,
                               detail=decision.reason or None),
                       content_length(response.headers), partial(_passed, response, result))

    def _to_store(self, fetch: Fetch, response: OriginResponse, decision: StorageDecision,
                  response_time: float, since: int) -> Relayed:
        """The response, relayed while its body is stored as the origin sends it (the
        client fed at its own pace, :mod:`~stoker.proxy.client_feed`)."""
        outcome = Outcome(Kind.MISS, fwd=fetch.fwd, fwd_status=response.status, stored=True,
                          ttl=decision.fresh_for - decision.initial_age)

        return Relayed(response.status, self._stored_response_headers(response, decision),
                       outcome, content_length(response.headers),
                       partial(self._store_copy, fetch, response, decision, response_time, since),
                       hold_last=True)

    async def _store_copy(self, fetch: Fetch, response: OriginResponse,
                          decision: StorageDecision, response_time: float, since: int,
                          feed: Feed | None) -> FetchResult:
        """Read the body into ``feed`` and the store; closes the response (the origin's
        slot free) before anyone waits for the client."""
        try:
            stored = await self._read_and_store(fetch, response, decision, response_time,
                                                since, feed)
        finally:
            await response.close()
        if isinstance(stored, str):  # not stored: followers must not share it
            return FetchResult(FetchKind.PASSED, None, response.status, stored)
        return FetchResult(FetchKind.STORED, stored, response.status)

    async def _read_and_store(self, fetch: Fetch, response: OriginResponse,
                              decision: StorageDecision, response_time: float, since: int,
                              feed: Feed | None) -> CacheEntry | str:
        """Spool the body for storing, and pass it to ``feed``; end the feed once stored."""
        coding = stored_coding(response.headers)
        copy = _StoredCopy(lambda: self._bodies.spool(self.config.body_file_threshold),
                           fetch.request.url, self.config.max_object_bytes,
                           None if coding in (None, IDENTITY) else Decoder(coding),
                           self.config.decoding)
        try:
            async for chunk in response.chunks:
                await copy.write(chunk)
                if feed is not None:
                    await feed.put(chunk)
        except OriginError as error:
            await copy.give_up(str(error))
            if feed is not None and not feed.gone:
                feed.fail(error)  # truncated: the server drops the client's connection
            return "incomplete"
        except BaseException:  # cancelled or failed otherwise: never leave a temp file behind
            await asyncio.shield(copy.abort())
            raise
        if feed is not None and not copy.inline:
            feed.end()  # a body in a file: the client never waits for the fsync
        try:
            spooled = await copy.finish()
            if spooled is None:
                return copy.failure
            # stored before an inline body's response ends: the client's next request is
            # a hit in L1
            return await self._save(fetch, self._build(
                fetch, response, decision, response_time, spooled), since)
        finally:
            if feed is not None:
                feed.end()

    def _may_compress(self, status: int, headers: Sequence[tuple[bytes, bytes]],
                      size: int) -> bool:
        return self.config.compress and compressible(status, headers, size)

    def _stored_response_headers(self, response: OriginResponse,
                                 decision: StorageDecision) -> list[tuple[bytes, bytes]]:
        """The client's fields of a response to be stored (its ``Cache-Status`` aside)."""
        headers = client_response_headers(response.headers, self.config.hidden_headers)
        if decision.strip_set_cookie:
            headers = [(k, v) for k, v in headers if k != b"set-cookie"]
        return headers

    async def _save(self, fetch: Fetch, built: CacheEntry, since: int) -> CacheEntry | str:
        """Store ``built`` as purges since ``since`` allow (no ``await`` before the put)."""
        entry = self._screen(built, since)
        if entry is None:
            if built.body_file is not None:
                await self._bodies.remove(built.body_file)
            return "purged"
        await self._put(fetch, entry)
        if fetch.flight is not None:
            fetch.flight.share(entry, stored=True)  # followers need not wait for this client
        return entry

    async def _put(self, fetch: Fetch, entry: CacheEntry) -> None:
        """Store ``entry``, then forget the variants beyond ``max_variants`` (LRU first)."""
        await self._store.put(entry)
        drop = variants_to_drop([sibling.variant for sibling in fetch.siblings], entry.variant,
                                self.config.max_variants)
        if drop:
            log.info("%s holds more than %d variants; dropping the %d least recently used",
                     entry.url, self.config.max_variants, len(drop))
            await self._store.delete([EntryRef(entry.primary_key, variant) for variant in drop])

    def _screen(self, entry: CacheEntry, since: int) -> CacheEntry | None:
        """The entry to store given purges since ``since``: as is, softened, or None."""
        verdict = self.purges.check(since, entry)
        if verdict is None:
            return entry
        if verdict.hard:
            log.info("not storing %s: purged while it was being fetched", entry.url)
            return None
        return entry.softened(verdict.stale_from)

    def _build(self, fetch: Fetch, response: OriginResponse, decision: StorageDecision,
               response_time: float, spooled: _Spooled) -> CacheEntry:
        """The entry for a response whose body was spooled as ``spooled``: identity (sent
        so, or decoded) serves every ``Accept-Encoding``; a body kept in the coding the
        origin sent varies on it."""
        body, body_file, size = spooled.body, spooled.body_file, spooled.size
        vary = vary_names(response.headers) or ()
        headers = stored_headers(response.headers, strip_set_cookie=decision.strip_set_cookie,
                                 hidden=self.config.hidden_headers, body_size=size,
                                 decoded=spooled.decoded)
        if spooled.decoded or stored_coding(response.headers) == IDENTITY:
            vary = tuple(name for name in vary if name != "accept-encoding")
        elif "accept-encoding" not in vary:  # in the origin's coding: only for who accepts it
            vary += ("accept-encoding",)
            headers.append((b"vary", b"accept-encoding"))
        fresh_until = response_time + decision.fresh_for - decision.initial_age
        stale_until = fresh_until + decision.swr
        error_until = self._error_until(decision, fresh_until)
        return CacheEntry(
            primary_key=fetch.primary_key,
            variant=variant_of(vary, fetch.request.headers if fetch.varying is None
                               else fetch.varying),
            url=fetch.request.url,
            status=response.status,
            headers=tuple(headers),
            body=body,
            body_file=body_file,
            body_size=size,
            response_time=response_time,
            initial_age=decision.initial_age,
            fresh_until=fresh_until,
            stale_until=stale_until,
            error_until=error_until,
            keep_until=max(stale_until, error_until) + decision.keep,
            vary=vary,
            tags=tags_from_headers(response.headers, self.config.tag_headers),
            etag=_text(get_header(headers, b"etag")),
            last_modified=_text(get_header(response.headers, b"last-modified")),
            stored_at=self._clock.now(),
            origin_vouched=decision.origin_vouched,
            stale_ok=not decision.revalidate_only,
            encoded=spooled.origin_form,
            codings_due=body is not None and self._may_compress(response.status, headers, size),
        )

    async def _refresh(self, fetch: Fetch, stale: CacheEntry, response: OriginResponse,
                       request_time: float, response_time: float, since: int) -> FetchResult:
        """A 304 answered our conditional: update the stored entry, keep its body (§4.3.4)."""
        merged = merge_not_modified(stale.headers, response.headers)
        if stale.etag is not None and stale.etag.startswith("W/"):
            merged = weakened(merged)  # a decoded body's validator stays weak
        decision = decide_storage(
            method="GET", status=stale.status, request_headers=fetch.request.headers,
            response_headers=merged, request_time=request_time, response_time=response_time,
            rule=fetch.rule_ttl, defaults=self.config.defaults)
        if not decision.store:
            await self._store.delete_primary([stale.primary_key])
            return FetchResult(FetchKind.STALE, stale, 304, decision.reason)
        fresh_until = response_time + decision.fresh_for - decision.initial_age
        coded = self._may_compress(stale.status, merged, stale.body_size)  # no-transform?
        refreshed = replace(
            stale,
            headers=tuple(stored_headers(merged, strip_set_cookie=True,
                                         hidden=self.config.hidden_headers, body_size=None)),
            response_time=response_time, initial_age=decision.initial_age,
            fresh_until=fresh_until, stale_until=fresh_until + decision.swr,
            error_until=self._error_until(decision, fresh_until),
            keep_until=max(fresh_until + decision.swr,
                           self._error_until(decision, fresh_until)) + decision.keep,
            etag=_text(get_header(merged, b"etag")),
            last_modified=_text(get_header(merged, b"last-modified")),
            stored_at=self._clock.now(),
            origin_vouched=decision.origin_vouched,
            stale_ok=not decision.revalidate_only,
            encoded=stale.encoded if coded or stale.body_file is not None else (),
            codings_due=coded and stale.codings_due,
        )
        screened = self._screen(refreshed, since)
        if screened is None:
            return FetchResult(FetchKind.UNSHARED, refreshed, 304, "purged")
        await self._store.put(screened)
        if fetch.flight is not None:
            fetch.flight.share(screened, stored=True)
        return FetchResult(FetchKind.REFRESHED, screened, 304)


@dataclass(frozen=True, slots=True)
class _Spooled:
    """A body spooled whole for storing (as :meth:`BodySpool.finish` gives it)."""

    body: bytes | None
    body_file: str | None
    size: int
    decoded: bool = False
    """Decoded from the origin's coding (else as the origin sent it)."""
    origin_form: Encoded = ()
    """The origin's coded bytes, kept beside a decoded body stored in a file."""


class _StoredCopy:
    """The copy of a streamed body that is to be stored (decoded by ``decoder`` when
    given, as far as ``bound`` allows), given up on trouble.

    While decoding, the origin's bytes are spooled too: a body that decodes past
    ``bound`` is kept as the origin sent it (the decoded copy dropped, decoding stopped
    there); a decoded body that goes to a file keeps the origin's bytes beside it when
    they fit inline, so the clients that accept that coding get them.  Exceeding
    ``max_object_bytes``, data that does not decode, or a disk error (``OSError``)
    while spooling drops the copy (temp files removed), logs one warning and turns
    later writes into no-ops, so the client's stream goes on undisturbed.
    """

    __slots__ = ("_bound", "_decoder", "_limit", "_raw", "_spool", "_url", "failure")

    def __init__(self, spools: Callable[[], BodySpool], url: str, limit: int,
                 decoder: Decoder | None = None, bound: DecodeBound | None = None) -> None:
        self._spool = spools()
        self._raw = spools() if decoder is not None else None
        """The origin's bytes, while the body is decoded."""
        self._url = url
        self._limit = limit
        self._decoder = decoder
        self._bound = bound
        self.failure = ""

    async def write(self, chunk: bytes) -> None:
        if self.failure:
            return
        if self._decoder is None or self._raw is None:
            await self._keep(self._spool, chunk)
            return
        await self._keep(self._raw, chunk)
        try:
            for piece in self._decoder.feed(chunk):
                if self.failure:
                    return
                if self._bound is not None and self._bound.passed(
                        self._spool.size + len(piece), self._raw.size):
                    await self._keep_as_sent()
                    return
                await self._keep(self._spool, piece)
        except CorruptBody as error:
            await self.give_up(str(error), "corrupt-coding")

    async def _keep_as_sent(self) -> None:
        """Stop decoding: the body is kept as the origin sends it."""
        assert self._raw is not None
        log.info("storing %s as the origin sent it: it decodes past max_decoded_body or "
                 "max_expansion_ratio", self._url)
        decoded, self._spool, self._raw, self._decoder = self._spool, self._raw, None, None
        await decoded.abort()

    async def _keep(self, spool: BodySpool, data: bytes) -> None:
        if self.failure:
            return
        if spool.size + len(data) > self._limit:
            await self.give_up("response exceeds max_object_bytes", "too-large")
            return
        try:
            await spool.write(data)
        except OSError as error:
            await self.give_up(f"disk error while spooling the body: {error}", "disk-error")

    async def finish(self) -> _Spooled | None:
        """The spooled body, or None when it was given up."""
        if not self.failure and self._decoder is not None:
            try:
                self._decoder.end()
            except CorruptBody as error:
                await self.give_up(str(error), "corrupt-coding")
        if self.failure:
            return None
        try:
            origin_form = await self._origin_form()
            body, body_file, size = await self._spool.finish()
        except OSError as error:
            await self.abort()
            self.failure = "disk-error"
            log.warning("not storing %s: disk error while saving the body: %s", self._url, error)
            return None
        return _Spooled(body, body_file, size, self._decoder is not None, origin_form)

    async def _origin_form(self) -> Encoded:
        """The origin's bytes to keep beside the decoded body: when that goes to a file and
        they fit inline (else nothing, and the origin's spool is dropped)."""
        raw, self._raw = self._raw, None
        if raw is None or self._decoder is None:
            return ()
        if self._spool.inline or not raw.inline:
            await raw.abort()
            return ()
        kept, _, _ = await raw.finish()
        return ((self._decoder.coding, kept),) if kept is not None else ()

    @property
    def inline(self) -> bool:
        """Held in memory (given up, or not spilled to a file)."""
        return bool(self.failure) or self._spool.inline

    async def give_up(self, reason: str, failure: str = "incomplete") -> None:
        if not self.failure:
            self.failure = failure
            log.warning("not storing %s: %s", self._url, reason)
        await self.abort()

    async def abort(self) -> None:
        await self._spool.abort()
        if self._raw is not None:
            await self._raw.abort()


def _shareable_for_personal(decision: StorageDecision) -> bool:
    """Whether a response to a request with personal cookies may be stored (and so replace
    what is stored for everyone): only when the origin itself vouches for sharing it and
    it is fresh for a positive time.  A logged-in page marked ``no-cache, max-age=0``
    would otherwise displace the anonymous copy a rule made cacheable."""
    return decision.origin_vouched and decision.fresh_for - decision.initial_age > 0


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None


async def _passed(response: OriginResponse, result: FetchResult,
                  feed: Feed | None) -> FetchResult:
    """Carry a response not stored to ``feed``: ``result``, once it is carried."""
    await carry(response, feed)
    return result
