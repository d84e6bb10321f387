"""Talking to the origin: the ``OriginClient`` port and its HTTP implementation.

Invariants: bodies stream both ways (a request body is written piece by piece as the
connection takes it; a response body is read as the client or the cache consumes it, in
pieces of at most :data:`CHUNK` bytes, the socket left unread while too much waits:
never buffered whole); redirects are never followed and codings never decoded (the
proxy passes the origin's bytes through); connecting, and every wait for the origin's
next bytes, longer than the timeout raise :class:`OriginTimeout`, and so does a request
body that makes no progress into the connection for the timeout, so the timeout bounds
every wait on the origin; every other failure raises :class:`OriginError`
(:class:`OriginConnectionLost` when the connection closed before a response); a
response whose status line or headers do not parse is an :class:`OriginError` saying so
on one line, never retried; interim (1xx) responses are consumed and never surface (a
``101``, which no request asks for, is a malformed response).
The framing sent is this client's alone: whatever ``Content-Length``,
``Transfer-Encoding`` or ``Expect`` the caller's headers carry is dropped, and a
request with a body declares exactly ``body.size`` bytes and sends exactly those (one
without a body declares none, but ``POST``/``PUT``/``PATCH`` say ``Content-Length: 0``,
as RFC 9110 §8.6 asks); no request waits for a ``100 Continue``; no field is added but
a Host when the caller's headers have none.
``OriginResponse.close`` is idempotent and must be called (the pipeline does so in
``finally``); a connection goes back to the pool only when its response was read to the
end with nothing after it and keep-alive holds, otherwise it is closed (an unread body
is not drained); a pooled connection that received bytes while idle is closed, never
reused.  The wire itself: :mod:`~stoker.proxy.http_client` (request heads, the pool) and
:mod:`~stoker.proxy.http_exchange` (one exchange, on asyncio and httptools' parser).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from stoker.proxy.context import RequestContext
from stoker.proxy.http_client import Endpoint, Pool
from stoker.proxy.http_exchange import CHUNK, OriginExchange
from stoker.proxy.origin_errors import (
    OriginConnectionLost,
    OriginDown,
    OriginError,
    OriginTimeout,
    error_status,
)

__all__ = [
    "CHUNK", "FRAMING", "IDEMPOTENT", "KEEPALIVE_TIMEOUT", "Body", "Headers", "HttpOrigin",
    "OriginClient", "OriginConnectionLost", "OriginDown", "OriginError", "OriginResponse",
    "OriginTimeout", "error_status", "framed",
]

Headers = list[tuple[bytes, bytes]]


@dataclass(slots=True)
class OriginResponse:
    """An origin response whose headers have arrived and whose body has not been read."""

    status: int
    headers: Headers
    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]


class Body(Protocol):
    """A request body known whole before it is sent (:class:`~stoker.proxy.request_body.
    RequestBody`): its length, and its bytes (each iteration from the start)."""

    size: int

    def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes."""


class OriginClient(Protocol):
    """Something that can answer a request: a remote origin or a wrapped ASGI app."""

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        """Send the request (made for the client request ``context`` is of; ``None``: for
        none, as a visitor's); return once response headers are in."""

    async def close(self) -> None:
        """Release connections."""


KEEPALIVE_TIMEOUT = 1.0
"""Seconds an idle pooled origin connection is reused for.  Below the shortest
common origin keep-alive (gunicorn 2 s; Node, Apache and uvicorn 5 s; nginx
75 s) so we rarely pick a connection the origin is closing; the retry in
:meth:`HttpOrigin.fetch` covers the race that remains."""

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
FRAMING = frozenset({b"content-length", b"transfer-encoding", b"expect"})
"""Request fields this client sets itself (or never sends), whatever the caller gives."""
DECLARES_EMPTY = frozenset({"POST", "PUT", "PATCH"})
"""Methods whose request without a body still says ``Content-Length: 0`` (RFC 9110 §8.6)."""


class HttpOrigin:
    """An origin reached over HTTP/1.1 (or HTTPS) through Stoker's own pooled client.

    An idempotent request that loses its connection before the response headers
    arrive is sent once more, body and all, on a new connection (RFC 9112 §9.3.1): a
    pooled connection may have been closed by the origin's keep-alive timeout just as we
    reused it.  Anything else is not retried.
    """

    def __init__(self, base_url: str, *, timeout: float, pool_size: int = 256) -> None:
        self._endpoint = Endpoint.parse(base_url, timeout)
        self._pool = Pool(self._endpoint, size=pool_size, keepalive=KEEPALIVE_TIMEOUT)

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        fields = framed(headers, body)
        if body is None and method in DECLARES_EMPTY:
            fields.append((b"content-length", b"0"))
        head = self._endpoint.request_head(method, target, fields)
        try:
            exchange = await self._send(method, head, body, fresh=False)
        except OriginConnectionLost:
            if method not in IDEMPOTENT:
                raise
            exchange = await self._send(method, head, body, fresh=True)
        return OriginResponse(exchange.status, exchange.headers, exchange, exchange.close)

    async def _send(self, method: str, head: bytes, body: Body | None, *,
                    fresh: bool) -> OriginExchange:
        pieces = body.chunks() if body is not None and body.size else None
        return await self._pool.request(head, pieces, head_only=method == "HEAD", fresh=fresh)

    async def close(self) -> None:
        self._pool.close()


def framed(headers: Sequence[tuple[bytes, bytes]], body: Body | None) -> Headers:
    """``headers`` as an origin gets them: without the caller's framing fields, with
    ``body``'s length when there is a body (every origin client frames through this)."""
    sent = [(name, value) for name, value in headers if name.lower() not in FRAMING]
    if body is not None:
        sent.append((b"content-length", b"%d" % body.size))
    return sent
