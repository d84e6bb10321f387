"""The access log: one line per request, combined format (cache status appended) or JSON.

Off unless ``access_log`` names ``-`` (standard output) or a file.  :class:`AccessLogApp`
wraps the proxy's ASGI app: it watches the response it sends (status, body bytes), and
reads what the cache did (the :class:`~stoker.cache.outcome.Outcome`) and the time spent
waiting for the origin (the request's :class:`~stoker.origin.context.RequestContext`, to
which :class:`~stoker.origin.monitored.MonitoredOrigin` adds it).

Invariants:
- A line never holds a cookie, an ``Authorization`` value or the value of a query
  parameter named in ``log_redact_query`` (replaced by ``REDACTED``): only the method,
  the path and (redacted) query, the status, the bytes, the times, the client
  address (resolved through ``trusted_proxies``) and the cache status are written.
- The formatting functions are pure; writes go to a line-buffered stream.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from stoker.adapters.asgi_proxy import ProxyApp
from stoker.asgi import Message, Receive, Send
from stoker.cache.outcome import FROM_CACHE, Kind, Outcome
from stoker.clock import Clock
from stoker.http.forwarded import TrustedProxies
from stoker.origin.context import RequestContext
from stoker.proxy.log_record import redact_query
from stoker.proxy.request import request_client, request_path


@dataclass(frozen=True, slots=True)
class Entry:
    """What one line says."""

    at: float
    client: str
    method: str
    target: str
    protocol: str
    status: int
    size: int
    duration: float
    origin: float
    cache: str
    referer: str
    agent: str


@dataclass(slots=True)
class _Seen:
    """What the response sent so far."""

    status: int = 0
    size: int = 0
    cache: str = "miss"


def cache_outcome(outcome: Outcome) -> str:
    """``hit``, ``stale``, ``collapsed``, ``bypass`` or ``miss``: the log's word for it."""
    if outcome.kind is Kind.HIT:
        return "hit"
    if outcome.kind in FROM_CACHE:
        return "stale"
    if outcome.kind is Kind.COLLAPSED:
        return "collapsed"
    if outcome.fwd not in (None, "uri-miss", "vary-miss", "stale"):
        return "bypass"
    return "miss"


def combined_line(entry: Entry) -> str:
    """The combined log format, then the cache status and the two durations (ms)."""
    when = datetime.fromtimestamp(entry.at, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")
    return (f'{entry.client} - - [{when}] "{entry.method} {entry.target} {entry.protocol}" '
            f'{entry.status} {entry.size} "{_quoted(entry.referer)}" "{_quoted(entry.agent)}" '
            f"{entry.cache} {entry.duration * 1000:.2f} {entry.origin * 1000:.2f}")


def json_line(entry: Entry) -> str:
    """One JSON object per line."""
    return json.dumps({
        "time": datetime.fromtimestamp(entry.at, UTC).isoformat(), "client": entry.client,
        "method": entry.method, "url": entry.target, "status": entry.status,
        "bytes": entry.size, "duration_ms": round(entry.duration * 1000, 3),
        "origin_ms": round(entry.origin * 1000, 3), "cache": entry.cache,
    }, separators=(",", ":"))


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"') or "-"


def _header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return ""


class AccessLogApp:
    """Wraps the proxy app and writes one line per HTTP request (see module invariants)."""

    def __init__(self, proxy: ProxyApp, stream: IO[str], clock: Clock, *, json_format: bool,
                 redact: Sequence[str], trusted: TrustedProxies) -> None:
        self.proxy = proxy
        self._stream = stream
        self._clock = clock
        self._format = json_line if json_format else combined_line
        self._redact = tuple(redact)
        self._trusted = trusted

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.proxy(scope, receive, send)
            return
        started, at = self._clock.monotonic(), self._clock.now()
        seen = _Seen()

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen.status = int(message["status"])
            elif message["type"] == "http.response.body":
                seen.size += len(message.get("body", b""))
            await send(message)

        context = RequestContext(scope=scope)
        try:
            seen.cache = cache_outcome(await self.proxy.respond(scope, receive, watch, context))
        finally:
            self._write(scope, at, self._clock.monotonic() - started, context.origin_wait, seen)
    def _write(self, scope: Message, at: float, duration: float, origin: float,
               seen: _Seen) -> None:
        headers = list(scope.get("headers") or ())
        query = redact_query((scope.get("query_string") or b"").decode("latin-1"),
                             self._redact)
        target = request_path(scope) + (f"?{query}" if query else "")
        entry = Entry(
            at=at, client=request_client(scope, headers, self._trusted) or "-",
            method=str(scope.get("method", "-")), target=target,
            protocol=f"HTTP/{scope.get('http_version', '1.1')}", status=seen.status,
            size=seen.size, duration=duration, origin=origin,
            cache=seen.cache, referer=_header(headers, b"referer"),
            agent=_header(headers, b"user-agent"))
        self._stream.write(self._format(entry) + "\n")


def open_stream(target: str) -> IO[str]:
    """``-``: standard output; else the file, appended to, line-buffered."""
    if target == "-":
        return sys.stdout
    return open(target, "a", buffering=1, encoding="utf-8")
