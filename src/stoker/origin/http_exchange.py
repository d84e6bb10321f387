"""One HTTP/1.1 connection to the origin and the exchanges it carries, one at a time.

:class:`OriginConnection` is the asyncio protocol; an :class:`OriginExchange` is one request and its
response: :meth:`~OriginExchange.send` writes the request, :meth:`~OriginExchange.response_head`
waits for the response's head, the exchange itself iterates the body, and
:meth:`~OriginExchange.close` hands the connection back.  httptools' ``HttpResponseParser``
(its public API) reads the origin's bytes.

Invariants:
- Every wait on the origin (for the request body to drain into the connection, for the
  response head, for the next piece of the body) ends in :class:`OriginTimeout` once the
  connection's ``timeout`` passes without a byte from the origin or anything else to
  wake it: a stall, not a slow trickle.
- Writes honour the transport's flow control (``pause_writing``/``resume_writing``).
  The request stops being written once the response head has arrived (an origin may
  refuse a body before reading it all); such a connection is not reused.
- Interim responses (1xx but ``101``) are read and dropped.  A ``101`` is a malformed
  response (no request asks to switch: ``Upgrade`` is hop-by-hop, never forwarded), as
  is anything the parser rejects, or a head over :data:`MAX_HEAD` bytes (interim
  responses included); the error names the parser's reason, on one line.
- Framing per RFC 9112 §6.3: no body for a ``HEAD`` request nor a 204 or 304; else
  chunked, Content-Length, or (neither) the bytes until the connection closes.  The body
  is the origin's bytes, content codings untouched.
- The body is handed on as it arrives, in pieces of at most :data:`CHUNK` bytes; once
  more than :data:`BUFFERED` bytes wait for the consumer the socket is not read
  (``pause_reading``) until no more than :data:`CHUNK` do (the consumer still has a
  piece in hand while the next read comes): a body is never held whole.
- A connection closed or reset before the response head is :class:`OriginConnectionLost`;
  after it, before the body's end, an :class:`OriginError` (but a body delimited by the
  close ends there, if the close was orderly).
- Anything the origin sends after the response's end (bytes after a 204, a HEAD
  response's body, a second response), and any byte or EOF on an idle connection,
  closes the connection at once.  A connection is handed back for reuse only when its
  request was sent whole, its response was read to the end (every piece taken), and
  keep-alive holds (HTTP/1.1 without ``Connection: close``; HTTP/1.0 never).
- A closed exchange leaves no reference cycle behind (the heap policy, :mod:`stoker.server.heap`,
  counts on a request's objects dying by reference count).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterable
from typing import Protocol, cast

import httptools

from stoker.origin.errors import OriginConnectionLost, OriginError, OriginTimeout

CHUNK = 128 * 1024
"""The largest piece of a response body handed on at once."""
BUFFERED = 2 * CHUNK
"""Bytes of a response body read ahead of its consumer before the socket is not read."""
MAX_HEAD = 256 * 1024
"""Bytes the response's head may take, interim responses included."""
NO_BODY = frozenset({204, 304})
SLACK = 0.001
"""A wait this close to its deadline has reached it (timers may fire that early)."""


class Home(Protocol):
    """Where a connection rests between exchanges: the pool."""

    def release(self, connection: OriginConnection) -> None:
        """Keep ``connection`` for another exchange (or close it)."""

    def discard(self, connection: OriginConnection) -> None:
        """Forget ``connection``, which closed (if it was resting here)."""


class OriginConnection(asyncio.Protocol):
    """A connection to the origin: one :class:`OriginExchange` at a time, resting in its
    :class:`Home` in between."""

    def __init__(self, url: str, timeout: float, home: Home) -> None:
        self.url = url
        """The origin's URL, for messages."""
        self.timeout = timeout
        self._home = home
        self.transport: asyncio.Transport
        self.exchange: OriginExchange | None = None
        self.closed = False
        self.write_paused = False
        self.idle_since = 0.0
        self._expiry: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.exchange is None:
            self.close()  # bytes while idle would be taken for the next request's answer
        else:
            self.exchange.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.exchange is None:
            self._home.discard(self)
        else:
            self.exchange.lost(exc)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.exchange is not None:
            self.exchange.wake()

    def rest(self, seconds: float) -> None:
        """Go idle; closed ``seconds`` from now unless taken first."""
        loop = asyncio.get_running_loop()
        self.idle_since = loop.time()
        self._expiry = loop.call_at(self.idle_since + seconds, self.close)

    def take(self) -> None:
        """Leave the idle: the expiry is off."""
        if self._expiry is not None:
            self._expiry.cancel()

    def finish(self, *, reuse: bool) -> None:
        """The exchange is over: rest at home for another if ``reuse``, else close."""
        self.exchange = None
        if reuse and not self.closed:
            self._home.release(self)
        else:
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()
            if self.exchange is None:
                self._home.discard(self)


class OriginExchange:
    """One request and its response on a :class:`OriginConnection` (see the module's invariants).

    ``status`` and ``headers`` (names lower-cased, in the origin's order) are the final
    response's, once :meth:`response_head` has returned."""

    __slots__ = ("_buffered", "_complete", "_connection", "_ends_at_close", "_failure",
                 "_head_bytes", "_head_done", "_head_only", "_keep_alive", "_loop", "_mark",
                 "_parser", "_paused", "_pieces", "_sent", "_waiter", "headers", "status")

    def __init__(self, connection: OriginConnection, *, head_only: bool) -> None:
        self._connection = connection
        self._head_only = head_only
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._head_done = False
        self._complete = False
        self._keep_alive = False
        self._ends_at_close = False
        self._sent = False
        self._failure: OriginError | None = None
        self._pieces: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future[bool] | None = None
        self._mark = 0.0
        connection.exchange = self
        if connection.closed:  # a new connection the origin closed before we could use it
            self.lost(None)

    # -- the request -------------------------------------------------------

    async def send(self, head: bytes, body: AsyncIterable[bytes] | None) -> None:
        """Write ``head``, then ``body``'s pieces as the connection takes them, until the
        response head (or a failure) cuts the body short."""
        if self._cut_short():  # the connection was lost before the exchange began
            return
        transport = self._connection.transport
        transport.write(head)
        if body is not None:
            async for piece in body:
                if self._cut_short():
                    return
                transport.write(piece)
                await self._drained()
        self._sent = True

    def _cut_short(self) -> bool:
        return (self._head_done or self._failure is not None
                or self._connection.transport.is_closing())

    async def _drained(self) -> None:
        while self._connection.write_paused and not self._cut_short():
            if not await self._wait():
                raise OriginTimeout(
                    f"origin {self._connection.url} stopped reading the request body")

    # -- the response ------------------------------------------------------

    async def response_head(self) -> None:
        """Return once the final response's head is in."""
        while not self._head_done:
            if self._failure is not None:
                raise self._failure
            if not await self._wait():
                raise OriginTimeout(f"origin {self._connection.url} did not answer in time")

    def __aiter__(self) -> OriginExchange:
        return self

    async def __anext__(self) -> bytes:
        while not self._pieces:
            if self._complete:
                raise StopAsyncIteration
            if self._failure is not None:
                raise self._failure
            if not await self._wait():
                raise OriginTimeout(
                    f"origin {self._connection.url} stalled while sending the body")
        return self._take()

    def _take(self) -> bytes:
        """The next piece: what is buffered, joined up to :data:`CHUNK` bytes."""
        pieces = self._pieces
        joined = [pieces.popleft()]
        size = len(joined[0])
        while pieces and size + len(pieces[0]) <= CHUNK:
            joined.append(pieces.popleft())
            size += len(joined[-1])
        self._buffered -= size
        if self._paused and self._buffered <= CHUNK:
            self._paused = False
            self._connection.transport.resume_reading()
        return b"".join(joined)

    async def close(self) -> None:
        """Idempotent, and must be called: :meth:`release`."""
        self.release()

    def release(self) -> None:
        """Hand the connection back: for reuse only as the module's invariants say."""
        connection = self._connection
        if connection.exchange is self:
            del self._parser  # it holds this exchange's callbacks: no cycle is left
            self._failure = None  # nor one through the failure's traceback
            connection.finish(reuse=self._complete and self._sent and self._keep_alive
                              and not self._pieces)

    # -- from the connection -----------------------------------------------

    def feed(self, data: bytes) -> None:
        self._mark = self._loop.time()
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            self._broken(str(error))
            return
        if not self._head_done:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD:
                self._broken(f"a head over {MAX_HEAD} bytes")

    def lost(self, exc: Exception | None) -> None:
        """The connection closed (``exc``: why, unless it was an orderly close)."""
        if self._complete or self._failure is not None:
            return
        url, why = self._connection.url, "" if exc is None else f": {exc}"
        if not self._head_done:
            self._fail(OriginConnectionLost(f"origin {url} closed the connection{why}"))
        elif self._ends_at_close and exc is None:
            self._complete = True
            self.wake()
        else:
            self._fail(OriginError(f"origin {url} broke off the body{why}"))

    def wake(self) -> None:
        """Something happened: whoever waits looks again."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    # -- httptools' callbacks ----------------------------------------------

    def on_message_begin(self) -> None:
        if self._complete:  # a second response after ours
            self._connection.close()

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._head_done:  # neither trailers nor what follows the response
            self.headers.append((name.lower(), value.rstrip(b" \t")))

    def on_headers_complete(self) -> None:
        if self._head_done:
            return
        status = self._parser.get_status_code()
        if status < 200:
            if status == 101:
                self._broken("101 Switching Protocols, though no request asks to switch")
            self.headers = []  # an interim response's fields are not the final one's
            return
        self.status = status
        self._head_done = True
        closes, self._ends_at_close = _framing(self.headers)
        self._keep_alive = not closes and self._parser.get_http_version() == "1.1"
        self._complete = self._head_only or status in NO_BODY
        self.wake()

    def on_body(self, body: bytes) -> None:
        if self._complete:  # a HEAD response's body, or bytes after the end
            self._connection.close()
            return
        if len(body) <= CHUNK:
            self._pieces.append(body)
        else:
            self._pieces.extend(body[at:at + CHUNK] for at in range(0, len(body), CHUNK))
        self._buffered += len(body)
        if self._buffered > BUFFERED and not self._paused:
            self._paused = True
            self._connection.transport.pause_reading()
        self.wake()

    def on_message_complete(self) -> None:
        if self._head_done and not self._complete:
            self._complete = True
            self.wake()

    # -- helpers -----------------------------------------------------------

    def _broken(self, reason: str) -> None:
        """The bytes do not parse (as a response, if it has not ended): drop the connection."""
        if not self._complete:
            self._fail(OriginError(
                f"origin {self._connection.url} sent a malformed response: {reason}"))
        self._connection.close()

    def _fail(self, error: OriginError) -> None:
        if self._failure is None:
            self._failure = error
            self.wake()

    async def _wait(self) -> bool:
        """Until woken (True), or until ``timeout`` passes without a byte from the
        origin (False)."""
        loop = self._loop
        timeout = self._connection.timeout
        self._mark = loop.time()
        while True:
            self._waiter = waiter = loop.create_future()
            timer = loop.call_at(self._mark + timeout, _expire, waiter)
            try:
                if await waiter:
                    return True
            finally:
                self._waiter = None
                timer.cancel()
            if loop.time() + SLACK >= self._mark + timeout:  # no byte came meanwhile
                return False


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


def _framing(headers: list[tuple[bytes, bytes]]) -> tuple[bool, bool]:
    """Whether the response says ``Connection: close``, and whether its body ends when
    the connection closes (chunked is not its last coding, or it has neither
    Transfer-Encoding nor Content-Length: RFC 9112 §6.3)."""
    connection: list[bytes] = []
    codings: list[bytes] = []
    length = False
    for name, value in headers:
        if name == b"connection":
            connection += _tokens(value)
        elif name == b"transfer-encoding":
            codings += _tokens(value)
        elif name == b"content-length":
            length = True
    return b"close" in connection, codings[-1] != b"chunked" if codings else not length


def _tokens(value: bytes) -> list[bytes]:
    return [token.strip().lower() for token in value.split(b",")]
