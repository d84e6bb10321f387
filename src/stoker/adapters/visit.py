"""Warm visits through the pipeline, in process (implements :class:`~stoker.warm.visits.Visitor`),
and discovery's fetches from the origin (:class:`OriginFetch`).

Invariants: a visit is a plain GET built from the absolute URL — its scheme
and Host are the site's, so it fills exactly the entry visitors read — with
only the headers the warmer gives (never a visitor's cookies), its origin requests
carrying the warm credentials (:mod:`stoker.warm.credentials`) besides; it is answered by the
request core (:meth:`Pipeline.serve`) as a warm visit (its context has a warm allowance),
so the pipeline refreshes a stale entry synchronously (a conditional request) instead of
serving it stale (a refresh visit, refresh ahead's, revalidates a fresh one too), and
leaves the visit out of the hit statistics; the visit is judged on the reply's
:class:`~stoker.cache.outcome.Outcome`, never on header text; a visit that stored its
response is noted in the pipeline's :class:`~stoker.cache.warm_reads.WarmReads`.  The
body is read to the end (so the store completes) and dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from stoker.clock import Clock
from stoker.http.headers import get_header
from stoker.http.keys import normalise_host
from stoker.origin.context import RequestContext, warm_context
from stoker.origin.port import OriginClient
from stoker.proxy.pipeline import Pipeline
from stoker.proxy.request import RequestInfo
from stoker.proxy.request_body import no_body
from stoker.warm.credentials import CredentialBook, Header
from stoker.warm.discovery import Fetched
from stoker.warm.visits import VisitResult, judge


class PipelineVisitor:
    """Visits URLs through one :class:`Pipeline`."""

    def __init__(self, pipeline: Pipeline, clock: Clock, *, stopgap_header: bytes,
                 credentials: CredentialBook | None = None) -> None:
        self._pipeline = pipeline
        self._clock = clock
        self._stopgap_header = stopgap_header
        self._credentials = credentials

    async def visit(self, url: str, headers: Sequence[tuple[bytes, bytes]], *,
                    allowance: int, refresh: bool = False) -> VisitResult:
        """GET ``url`` through the cache, as a warm visit at the origin (``refresh``: one
        that revalidates the stored entry even while fresh); judge it."""
        request = visit_request(url, headers, warm_context(
            allowance, await credential_headers(self._credentials), refresh=refresh))
        started = self._clock.monotonic()
        reply = await self._pipeline.serve(request, no_body())
        try:
            if not isinstance(reply.body, bytes):
                async for _ in reply.body:  # read to the end, so the store completes
                    pass
        finally:
            if not isinstance(reply.body, bytes):
                await reply.body.aclose()
        # the throttle judges the origin: its own answer time, not Stoker's work around it
        waits = request.context.origin_waits
        latency = sum(waits) if waits else self._clock.monotonic() - started
        retry_after = get_header(reply.headers, b"retry-after")
        if reply.outcome.stored:
            self._pipeline.warm_reads.note_stored(request.url)
        outcome, detail = judge(reply.status, reply.headers, reply.outcome,
                                stopgap_header=self._stopgap_header)
        return VisitResult(url, reply.status, outcome, latency,
                           retry_after.decode("latin-1") if retry_after is not None else None,
                           detail)


def visit_request(url: str, headers: Sequence[tuple[bytes, bytes]],
                  context: RequestContext) -> RequestInfo:
    """The plain GET of absolute ``url`` a warm visit makes: the site's scheme and Host,
    only ``headers`` (names lower-cased) besides Host."""
    parts = urlsplit(url)
    return RequestInfo(
        method="GET", scheme=parts.scheme, host=normalise_host(parts.scheme, parts.netloc),
        path=parts.path or "/", query=parts.query,
        headers=[(b"host", parts.netloc.encode("latin-1")),
                 *((name.lower(), value) for name, value in headers)],
        client=None, context=context)


class OriginFetch:
    """Discovery's :class:`~stoker.warm.discovery.FetchPort`: robots.txt, sitemaps and the
    home page straight from the origin (not through the cache), as the site's Host."""

    def __init__(self, origin: OriginClient, *, origin_host: str | None,
                 user_agent: bytes, credentials: CredentialBook | None = None) -> None:
        self._origin = origin
        self._origin_host = origin_host
        self._user_agent = user_agent
        self._credentials = credentials

    async def fetch(self, url: str) -> Fetched:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = self._origin_host or parts.netloc
        headers = [(b"host", host.encode("latin-1")), (b"user-agent", self._user_agent),
                   (b"accept-encoding", b"gzip"),
                   (b"x-forwarded-proto", parts.scheme.encode("latin-1"))]
        response = await self._origin.fetch("GET", target, headers, None, warm_context(
            1, await credential_headers(self._credentials)))
        return Fetched(response.status, response.headers, response.chunks, response.close)


async def credential_headers(book: CredentialBook | None) -> tuple[Header, ...]:
    """The warm credentials' headers now (none without a book)."""
    return () if book is None else await book.headers()
