"""The request core's deliver step: the one place a response that is not Stoker's own
(a stored entry, or an origin response relayed) becomes the client's
:class:`~stoker.proxy.reply.Reply`.

Invariants:
- A stored entry is answered in the order of RFC 9110 §13.2.2: a GET/HEAD whose If-Match
  or If-Unmodified-Since fails gets 412, then a conditional one may get 304, then a GET's
  Range may get 206 or 416 (:func:`~stoker.http.ranges.decide_range`), else the entry's
  own status; always in the form :func:`~stoker.proxy.hit.form_for` picks (a coding not
  made yet is made first: :class:`~stoker.proxy.codings.Codings`), with ``Age``.
- An entry whose body file has vanished is dropped from the cache and nothing is sent
  (:meth:`Deliverer.entry` says False: the caller goes on without it).
- A relayed response's head goes out with its ``Cache-Status`` (:meth:`Relayed.shown`)
  before its body when the body may be large, after it otherwise
  (:func:`~stoker.proxy.client_feed.sends_whole`); a response first counted as stored
  whose store then failed has its outcome corrected; a body that broke off is never
  passed off as whole (the feed raises).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Outcome
from stoker.cache.port import Cache
from stoker.http.conditional import (
    not_modified_headers,
    precondition_failed,
    should_answer_not_modified,
)
from stoker.http.headers import get_header, without
from stoker.http.ranges import FULL, RangeDecision, decide_range
from stoker.proxy.client_feed import WholeBody, feed_for
from stoker.proxy.codings import Codings
from stoker.proxy.fetched import FetchKind, FetchResult, Relayed
from stoker.proxy.hit import form_for
from stoker.proxy.reply import ReplySink, error_response
from stoker.proxy.request import RequestInfo

log = logging.getLogger("stoker.proxy")


class Deliverer:
    """Gives entries and relayed responses to their clients (see the module invariants)."""

    def __init__(self, store: Cache, bodies: BodyStore, codings: Codings) -> None:
        self._store = store
        self._bodies = bodies
        self._codings = codings

    @property
    def directory(self) -> Path:
        """Where bodies waiting for slow clients spill to."""
        return self._bodies.directory

    async def entry(self, sink: ReplySink, request: RequestInfo, entry: CacheEntry,
                    now: float, outcome: Outcome) -> bool:
        """Answer ``request`` from ``entry``; False (nothing sent) if its body file has
        vanished."""
        form = _form(request, entry)
        if form is None:  # a coding not made yet: made now (none is due after)
            form = _form(request, await self._codings.coded(entry))
            assert form is not None
        entry = form
        extra = ((b"age", str(int(entry.age(now))).encode()), sink.stamp(outcome))
        conditional = request.fields.conditional
        if conditional and 200 <= entry.status < 300 and precondition_failed(
                request.headers, etag=entry.etag, last_modified=entry.last_modified):
            headers, body = error_response(412, "Precondition Failed", extra)
            sink.whole(412, headers, body, entry=entry)
            return True
        if entry.status == 200 and conditional and (
                should_answer_not_modified(request.headers, etag=entry.etag,
                                           last_modified=entry.last_modified,
                                           date=_text(get_header(entry.headers, b"date")))):
            sink.whole(304, [*not_modified_headers(entry.headers), *extra], b"", entry=entry)
            return True
        length = len(entry.body) if entry.body is not None else entry.body_size
        part = _range_for(request, entry, length)
        if part.status == 416:
            headers = [*not_modified_headers(entry.headers), *extra,
                       (b"content-range", part.content_range(length)), (b"content-length", b"0")]
            sink.whole(416, headers, b"", entry=entry)
            return True
        if part.status == 206:
            headers = [*without(entry.headers, (b"content-length",)), *extra,
                       (b"content-range", part.content_range(length)),
                       (b"content-length", str(part.size).encode())]
            return await self._send_body(sink, entry, 206, headers, part.start, part.size)
        return await self._send_body(sink, entry, entry.status, entry.headers, extra=extra)

    async def relayed(self, sink: ReplySink, relayed: Relayed) -> FetchResult | None:
        """Give ``relayed`` to the client while its body is pumped (and stored as decided);
        how its fetch ended (see the module invariants)."""
        feed = feed_for(self.directory, length=relayed.length, hold_last=relayed.hold_last)
        if isinstance(feed, WholeBody):
            result = await relayed.pump(feed)
            await feed.finished()
            outcome = _after_store(relayed.outcome, result)
            sink.whole(relayed.status, [*relayed.headers, sink.stamp(outcome)], feed.body)
            return result
        sink.stream(relayed.status, [*relayed.headers,
                                     sink.stamp(relayed.outcome, shown=relayed.shown())], feed)
        try:
            result = await relayed.pump(feed)
            await feed.finished()
        finally:
            feed.cancel()
        sink.outcome = _after_store(relayed.outcome, result)
        return result

    async def _send_body(self, sink: ReplySink, entry: CacheEntry, code: int,
                         headers: Sequence[tuple[bytes, bytes]], offset: int = 0,
                         size: int | None = None, *,
                         extra: Sequence[tuple[bytes, bytes]] = ()) -> bool:
        """Send ``size`` body bytes (default: all) from ``offset``; False if the file vanished."""
        if entry.body is not None:
            end = None if size is None else offset + size
            body = entry.body if offset == 0 and end is None else entry.body[offset:end]
            sink.whole(code, headers, body, entry=entry, extra=extra)
            return True
        assert entry.body_file is not None
        chunks = self._bodies.open(entry.body_file, offset=offset, length=size)
        try:
            first = await chunks.__anext__()
        except StopAsyncIteration:
            first = b""
        except FileNotFoundError:
            log.warning("body file of %s is missing; dropping the entry", entry.url)
            await self._store.delete_primary([entry.primary_key])
            return False
        sink.stream(code, headers, _after(first, chunks), entry=entry, extra=extra)
        return True


def _after_store(outcome: Outcome, result: FetchResult | None) -> Outcome:
    """``outcome``, no longer ``stored`` when its store failed (``result`` says why)."""
    if outcome.stored and result is not None and result.kind is FetchKind.PASSED:
        return outcome.not_stored(result.detail)
    return outcome


def _form(request: RequestInfo, entry: CacheEntry) -> CacheEntry | None:
    """:func:`~stoker.proxy.hit.form_for` ``request``."""
    fields = request.fields
    return form_for(entry, fields.joined(b"accept-encoding"), fields.has(b"range"))


def needs_coding(request: RequestInfo, entry: CacheEntry) -> bool:
    """``request`` would get a coding of ``entry`` not made yet."""
    return _form(request, entry) is None


def _range_for(request: RequestInfo, entry: CacheEntry, length: int) -> RangeDecision:
    """RFC 9110 §14.2: Range is defined for GET only, and we apply it to stored 200s."""
    range_header = request.fields.joined(b"range")
    if range_header is None or request.method != "GET" or entry.status != 200:
        return FULL
    return decide_range(range_header, request.fields.joined(b"if-range"),
                        etag=entry.etag, last_modified=entry.last_modified, length=length)


async def _after(first: bytes,
                 rest: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """``first``, then ``rest``'s pieces (``rest`` closed however this ends)."""
    try:
        yield first
        async for piece in rest:
            yield piece
    finally:
        await rest.aclose()


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")
