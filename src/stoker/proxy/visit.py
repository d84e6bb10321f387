"""Warm visits through the pipeline, in process (implements :class:`~stoker.warm.visits.Visitor`),
and discovery's fetches from the origin (:class:`OriginFetch`).

Invariants: a visit is a plain GET built from the absolute URL — its scheme
and Host are the site's, so it fills exactly the entry visitors read — with
only the headers the warmer gives (never a visitor's cookies); it is answered as
a warm visit (``Pipeline.answer(warm=True)``), so the pipeline refreshes a stale entry synchronously
(a conditional request) instead of serving it stale, and leaves the visit out
of the hit statistics.  The body is read to the end (so the store completes)
and dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from stoker.asgi import Message
from stoker.clock import Clock
from stoker.http.headers import get_header
from stoker.proxy.access_log import origin_waits
from stoker.proxy.limited_origin import warm_visits
from stoker.proxy.origin import OriginClient
from stoker.proxy.pipeline import Pipeline
from stoker.warm.discovery import Fetched
from stoker.warm.visits import VisitResult, judge


class PipelineVisitor:
    """Visits URLs through one :class:`Pipeline`."""

    def __init__(self, pipeline: Pipeline, clock: Clock, *, stopgap_header: bytes) -> None:
        self._pipeline = pipeline
        self._clock = clock
        self._stopgap_header = stopgap_header

    async def visit(self, url: str, headers: Sequence[tuple[bytes, bytes]], *,
                    allowance: int) -> VisitResult:
        """GET ``url`` through the cache, as a warm visit at the origin; judge it."""
        parts = urlsplit(url)
        path = parts.path or "/"
        scope: Message = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "GET", "scheme": parts.scheme, "path": path,
            "raw_path": path.encode("latin-1"), "query_string": parts.query.encode("latin-1"),
            "headers": [(b"host", parts.netloc.encode("latin-1")),
                        *((name.lower(), value) for name, value in headers)],
            "client": None, "server": None,
        }
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                sent.append(message)

        started = self._clock.monotonic()
        with warm_visits(allowance), origin_waits() as waits:
            sink = await self._pipeline.answer(scope, receive, send, warm=True)
        # the throttle judges the origin: its own answer time, not Stoker's work around it
        latency = sum(waits) if waits else self._clock.monotonic() - started
        if not sent:
            return VisitResult(url, 0, "failed", latency, detail="no response")
        status = int(sent[0]["status"])
        response_headers = list(sent[0]["headers"])
        retry_after = get_header(response_headers, b"retry-after")
        outcome, detail = judge(status, response_headers, sink.outcome,
                                stopgap_header=self._stopgap_header)
        return VisitResult(url, status, outcome, latency,
                           retry_after.decode("latin-1") if retry_after is not None else None,
                           detail)


class OriginFetch:
    """Discovery's :class:`~stoker.warm.discovery.FetchPort`: robots.txt, sitemaps and the
    home page straight from the origin (not through the cache), as the site's Host."""

    def __init__(self, origin: OriginClient, *, origin_host: str | None,
                 user_agent: bytes) -> None:
        self._origin = origin
        self._origin_host = origin_host
        self._user_agent = user_agent

    async def fetch(self, url: str) -> Fetched:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = self._origin_host or parts.netloc
        headers = [(b"host", host.encode("latin-1")), (b"user-agent", self._user_agent),
                   (b"accept-encoding", b"gzip"),
                   (b"x-forwarded-proto", parts.scheme.encode("latin-1"))]
        with warm_visits(1):
            response = await self._origin.fetch("GET", target, headers, None)
        return Fetched(response.status, response.headers, response.chunks, response.close)
