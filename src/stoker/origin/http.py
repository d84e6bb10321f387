"""The origin reached over HTTP/1.1 (or HTTPS): :class:`HttpOrigin`, the ``OriginClient``
(:mod:`~stoker.origin.port`, whose invariants it keeps) over Stoker's own pooled client
(:mod:`~stoker.origin.http_client`: request heads, the pool;
:mod:`~stoker.origin.http_exchange`: one exchange on asyncio and httptools' parser)."""

from __future__ import annotations

from stoker.origin.context import RequestContext
from stoker.origin.errors import OriginConnectionLost
from stoker.origin.http_client import Endpoint, Pool
from stoker.origin.http_exchange import OriginExchange
from stoker.origin.port import Body, Headers, OriginResponse, framed

KEEPALIVE_TIMEOUT = 1.0
"""Seconds an idle pooled origin connection is reused for.  Below the shortest
common origin keep-alive (gunicorn 2 s; Node, Apache and uvicorn 5 s; nginx
75 s) so we rarely pick a connection the origin is closing; the retry in
:meth:`HttpOrigin.fetch` covers the race that remains."""

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
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
