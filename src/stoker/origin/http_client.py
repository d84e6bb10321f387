"""Stoker's HTTP/1.1 client for one origin: where it is, what a request looks like on the
wire, and the pool of connections (:mod:`~stoker.origin.http_exchange` carries the
exchanges themselves).

Invariants:
- A request head is ``METHOD target HTTP/1.1`` (the target as given, already
  percent-encoded, after the base URL's path), then the caller's fields in the caller's
  order, names as given.  Nothing is added but a Host (the base URL's authority) when the
  caller gives none: no User-Agent, Accept or Accept-Encoding.  A CR or LF inside any of
  it is refused (:class:`OriginError`), never sent.
- A connection is opened to the addresses ``loop.getaddrinfo`` gives for the host (kept
  :data:`DNS_TTL` seconds), tried in order; for ``https`` over TLS with the default
  context (the system's certificates, the host name checked).  Resolving, connecting
  and the handshake together take at most ``timeout`` (else :class:`OriginTimeout`);
  any other failure to open is an :class:`OriginError`, never retried here.
- At most ``size`` idle connections are kept.  A request takes the newest idle
  connection that has been idle for at most ``keepalive`` seconds (older ones are
  closed; a timer also closes each when its ``keepalive`` is up, freeing the socket);
  a ``fresh`` request always opens a new one.  There is no limit on connections in use
  (the :class:`~stoker.origin.limited.LimitedOrigin` in front limits requests).
- Once closed, the pool keeps nothing: connections still in use close when released.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from math import inf
from urllib.parse import urlsplit

from stoker.origin.errors import OriginError, OriginTimeout
from stoker.origin.http_exchange import OriginConnection, OriginExchange

DNS_TTL = 60.0
"""Seconds the origin host's addresses are kept once resolved."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the origin is, parsed once from its base URL."""

    url: str
    """The base URL without a trailing slash, as messages name the origin."""
    host: str
    port: int
    path: bytes
    """The base URL's path, before every request's target."""
    authority: bytes
    """The Host a request gets when its caller gives none."""
    tls: ssl.SSLContext | None
    timeout: float

    @classmethod
    def parse(cls, base_url: str, timeout: float) -> Endpoint:
        url = base_url.rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http:// or https:// origin URL, got {base_url!r}")
        secure = parts.scheme == "https"
        return cls(url=url, host=parts.hostname, port=parts.port or (443 if secure else 80),
                   path=parts.path.encode("latin-1"),
                   authority=parts.netloc.rpartition("@")[2].encode("idna"),
                   tls=ssl.create_default_context() if secure else None, timeout=timeout)

    def request_head(self, method: str, target: str,
                     fields: Sequence[tuple[bytes, bytes]]) -> bytes:
        """The request line and fields, as the module's invariants say."""
        lines = [b"%s %s%s HTTP/1.1" % (method.encode("ascii"), self.path,
                                        target.encode("latin-1"))]
        if not any(name.lower() == b"host" for name, _ in fields):
            lines.append(b"host: " + self.authority)
        lines += [b": ".join(field) for field in fields]
        head = b"\r\n".join(lines)
        breaks = len(lines) - 1
        if head.count(b"\r") != breaks or head.count(b"\n") != breaks:
            raise OriginError(f"origin {self.url}: a request field holds a line break; not sent")
        return head + b"\r\n\r\n"


class Pool:
    """Connections to one :class:`Endpoint`: idle ones kept, new ones opened (see the
    module's invariants)."""

    def __init__(self, endpoint: Endpoint, *, size: int, keepalive: float) -> None:
        self._endpoint = endpoint
        self._size = size
        self._keepalive = keepalive
        self._idle: deque[OriginConnection] = deque()
        self._closed = False
        self._addresses: list[str] = []
        self._resolved_until = -inf

    async def request(self, head: bytes, body: AsyncIterable[bytes] | None, *,
                      head_only: bool, fresh: bool) -> OriginExchange:
        """Send a request (``head_only``: one whose response has no body, a HEAD); the
        exchange once the response head is in.  On any failure the connection is closed."""
        connection = (None if fresh else self._take()) or await self._open()
        exchange = OriginExchange(connection, head_only=head_only)
        try:
            await exchange.send(head, body)
            await exchange.response_head()
        except BaseException:
            exchange.release()
            raise
        return exchange

    def _take(self) -> OriginConnection | None:
        """The newest idle connection, if it is within its keep-alive (older ones close)."""
        now = asyncio.get_running_loop().time()
        while self._idle:
            connection = self._idle.pop()
            connection.take()
            if now - connection.idle_since <= self._keepalive:
                return connection
            connection.close()
        return None

    async def _open(self) -> OriginConnection:
        url = self._endpoint.url
        try:
            async with asyncio.timeout(self._endpoint.timeout):
                addresses = await self._resolve()
                for address in addresses[:-1]:
                    with contextlib.suppress(OSError):
                        return await self._connect(address)
                return await self._connect(addresses[-1])
        except TimeoutError as error:
            raise OriginTimeout(f"origin {url} could not be reached in time") from error
        except OSError as error:
            raise OriginError(f"origin {url} failed: {error}") from error

    async def _resolve(self) -> list[str]:
        loop = asyncio.get_running_loop()
        if loop.time() >= self._resolved_until:
            infos = await loop.getaddrinfo(self._endpoint.host, self._endpoint.port,
                                           type=socket.SOCK_STREAM)
            self._addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
            self._resolved_until = loop.time() + DNS_TTL
        return self._addresses

    async def _connect(self, address: str) -> OriginConnection:
        endpoint = self._endpoint
        _, connection = await asyncio.get_running_loop().create_connection(
            lambda: OriginConnection(endpoint.url, endpoint.timeout, self), address, endpoint.port,
            ssl=endpoint.tls, server_hostname=endpoint.host if endpoint.tls else None)
        return connection

    def release(self, connection: OriginConnection) -> None:
        if self._closed or len(self._idle) >= self._size:
            connection.close()
        else:
            connection.rest(self._keepalive)
            self._idle.append(connection)

    def discard(self, connection: OriginConnection) -> None:
        with contextlib.suppress(ValueError):
            self._idle.remove(connection)

    def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
