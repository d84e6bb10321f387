"""Talking to the origin: the ``OriginClient`` port and its HTTP implementation.

Invariants: bodies stream both ways (a response is read chunk by chunk as the
client or the cache consumes it, never buffered whole); redirects are never
followed and encodings never decoded (the proxy passes the origin's bytes
through); connect and per-read stalls longer than the timeout raise
:class:`OriginTimeout`; every other transport failure raises
:class:`OriginError` (:class:`OriginConnectionLost` when the connection
closed before a response); a response whose status line or headers do not
parse is an :class:`OriginError` saying so on one line, never retried;
interim (1xx) responses are consumed by aiohttp and never surface.
The framing sent is this client's alone: whatever ``Content-Length``,
``Transfer-Encoding`` or ``Expect`` the caller's headers carry is dropped, and a
request with a body declares exactly ``body.size`` bytes and sends exactly those
(one without a body declares none; aiohttp gives ``POST``/``PUT``/``PATCH`` a
``Content-Length: 0``); no request waits for a ``100 Continue``.  A body that
makes no progress into the connection for the timeout is an :class:`OriginTimeout`
too, so the timeout bounds every wait on the origin.
``OriginResponse.close`` is idempotent and must be called (the pipeline does
so in ``finally``); a connection goes back to the pool only when its
response was read to the end with nothing after it (aiohttp's
``should_close``), otherwise it is closed; a pooled connection that received
bytes while idle is closed, never reused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import aiohttp
from aiohttp.client_reqrep import ConnectionKey
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from yarl import URL

Headers = list[tuple[bytes, bytes]]
CHUNK = 128 * 1024


class OriginError(Exception):
    """The origin could not be reached or broke off the response."""


class OriginTimeout(OriginError):
    """The origin did not answer (or stalled) within the timeout."""


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

    async def fetch(self, method: str, target: str, headers: Headers,
                    body: Body | None) -> OriginResponse:
        """Send the request; return once response headers are in."""

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


class OriginConnectionLost(OriginError):
    """The connection closed or reset before a response arrived (often a stale keep-alive)."""


class _CleanPoolConnector(aiohttp.TCPConnector):
    """Never reuses a pooled connection that received bytes while idle.

    Bytes an origin sends on an idle keep-alive connection (a 408 before it
    closes, a body after a 204 or 304, garbage) would otherwise be read as
    the answer to the next request sent on it.  aiohttp checks for unread
    bytes only when a connection is released, so the check is repeated here,
    when a pooled connection is taken (``_get`` is aiohttp's internal hook
    for that; pyproject pins the aiohttp versions it has been tested with).
    """

    async def _get(self, key: ConnectionKey, traces: list[Trace]) -> Connection | None:
        while (connection := await super()._get(key, traces)) is not None:
            protocol = connection.protocol
            if protocol is None or not protocol.should_close:
                return connection
            connection.close()
        return None


class HttpOrigin:
    """An origin reached over HTTP with a pooled aiohttp session.

    An idempotent request that loses its connection before the response headers
    arrive is sent once more, body and all, on a new connection (RFC 9112 §9.3.1): a
    pooled connection may have been closed by the origin's keep-alive timeout just as
    we reused it.  Anything else is not retried.
    """

    def __init__(self, base_url: str, *, timeout: float, pool_size: int = 256) -> None:
        self._base = base_url.rstrip("/")
        self._seconds = timeout
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
        self._pool_size = pool_size
        self._sessions: dict[bool, aiohttp.ClientSession] = {}

    def _session(self, *, fresh: bool) -> aiohttp.ClientSession:
        """The pooled session, or (``fresh``) one whose every request gets a new connection."""
        session = self._sessions.get(fresh)
        if session is None:
            connector = _CleanPoolConnector(
                limit=self._pool_size, ttl_dns_cache=60, force_close=fresh,
                keepalive_timeout=None if fresh else KEEPALIVE_TIMEOUT)
            session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                auto_decompress=False,
                # never add a header the client did not send (aiohttp would add these)
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
            # aiohttp would retry on another *pooled* connection, which may be stale
            # too; fetch() retries itself, on a fresh one.  (aiohttp's test client
            # turns this private switch off the same way.)
            session._retry_connection = False
            self._sessions[fresh] = session
        return session

    async def fetch(self, method: str, target: str, headers: Headers,
                    body: Body | None) -> OriginResponse:
        url = URL(self._base + target, encoded=True)
        request_headers = [(name.decode("latin-1"), value.decode("latin-1"))
                           for name, value in framed(headers, body)]
        try:
            response = await self._send(method, url, request_headers, body, fresh=False)
        except OriginConnectionLost:
            if method not in IDEMPOTENT:
                raise
            response = await self._send(method, url, request_headers, body, fresh=True)
        return OriginResponse(
            status=response.status,
            headers=[(name.lower(), value) for name, value in response.raw_headers],
            chunks=_read_body(response, self._base),
            close=_closer(response),
        )

    async def _send(self, method: str, url: URL, headers: list[tuple[str, str]],
                    body: Body | None, *, fresh: bool) -> aiohttp.ClientResponse:
        pace = _Pace(self._seconds)
        try:
            async with asyncio.timeout(None) as pace.deadline:
                try:
                    return await self._session(fresh=fresh).request(
                        method, url, headers=headers,
                        data=pace.paced(body) if body is not None and body.size else None,
                        allow_redirects=False, compress=None, auto_decompress=False,
                    )
                finally:
                    pace.deadline = None
        except TimeoutError as error:
            raise OriginTimeout(f"origin {self._base} did not answer in time") from error
        except aiohttp.ClientResponseError as error:  # the status line or a header did not parse
            raise OriginError(f"origin {self._base} sent a malformed response: "
                              f"{_one_line(error.message)}") from error
        except aiohttp.ClientConnectorError as error:
            raise OriginError(f"origin {self._base} failed: {error}") from error
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as error:
            raise OriginConnectionLost(
                f"origin {self._base} closed the connection: {error}") from error
        except (aiohttp.ClientError, OSError) as error:
            raise OriginError(f"origin {self._base} failed: {error}") from error

    async def close(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            await session.close()


def _one_line(message: str) -> str:
    """aiohttp's parse errors span lines and point with ``^``: keep the words."""
    return " ".join(line.strip() for line in message.splitlines() if line.strip(" ^"))


def framed(headers: Sequence[tuple[bytes, bytes]], body: Body | None) -> Headers:
    """``headers`` as an origin gets them: without the caller's framing fields, with
    ``body``'s length when there is a body (every origin client frames through this)."""
    sent = [(name, value) for name, value in headers if name.lower() not in FRAMING]
    if body is not None:
        sent.append((b"content-length", b"%d" % body.size))
    return sent


class _Pace:
    """Bounds how long a request body may make no progress into the connection.

    aiohttp starts its read timeout only once the body is written, so an origin that
    does not read the body would otherwise hold the request forever.  Each time aiohttp
    asks for the next piece, the previous one has been written: the deadline moves
    ``seconds`` on; once the body is written, aiohttp's read timeout takes over.
    """

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self.deadline: asyncio.Timeout | None = None
        """The sending's deadline, while the request is being sent."""

    def _extend(self, seconds: float | None) -> None:
        if self.deadline is not None:
            loop = asyncio.get_running_loop()
            self.deadline.reschedule(None if seconds is None else loop.time() + seconds)

    async def paced(self, body: Body) -> AsyncIterator[bytes]:
        self._extend(self._seconds)
        async for piece in body.chunks():
            yield piece
            self._extend(self._seconds)
        self._extend(None)


async def _read_body(response: aiohttp.ClientResponse, base: str) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.content.iter_chunked(CHUNK):
            yield chunk
    except TimeoutError as error:
        raise OriginTimeout(f"origin {base} stalled while sending the body") from error
    except (aiohttp.ClientError, OSError) as error:
        raise OriginError(f"origin {base} broke off the body: {error}") from error


def _closer(response: aiohttp.ClientResponse) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        if not response.closed:
            if response.content.is_eof():
                response.release()
            else:
                response.close()  # unread body: drop the connection rather than drain it
        await asyncio.sleep(0)

    return close
