"""One request and its response on a front connection (RFC 9112): answered by the request
core straight from the parsed head (:meth:`Exchange.serve`, when the listener's app is
Stoker's proxy: no ASGI scope or message is made), or by an ASGI app (:meth:`Exchange.run`).

Invariants (both ways write the response with the same methods, so the same bytes):
- The response head is written by :func:`~stoker.http.wire.http1_head` (the one
  HTTP/1.1 head renderer; a name or value it refuses fails the response) followed by
  the framing this module adds: ``connection: close`` when the connection closes after
  it, ``transfer-encoding: chunked`` for an HTTP/1.1 body of unknown length (an
  HTTP/1.0 one is delimited by the close instead).
- A body never exceeds its ``Content-Length``, and a response that ends short of it
  closes the connection; a ``HEAD`` response, a ``204`` and a ``304`` carry no body.
- :meth:`Exchange.head` is the head the front parsed, as every server's requests are read
  (:class:`~stoker.proxy.request.RequestHead`: the scope's ``raw_path``, ``query_string``,
  ``http_version``, headers, scheme and peer, without a scope).
- ``receive`` gives the request body as it arrives, in at most what one read brought,
  then waits, and gives ``http.disconnect`` once the response is complete or the client
  is gone (an app listening for the disconnect while it streams never spins); the
  connection reads no further while :data:`HIGH_WATER` bytes wait unread
  (``Expect: 100-continue`` is answered on the first ``receive``).
- ``send``, :meth:`Exchange.write_head` and :meth:`Exchange.write_body` wait while the
  transport is paused for writing, so a slow reader holds at most the transport's buffer;
  once the client is gone they drop what they are given.
- An exception before the response starts becomes a ``500``; after, a closed connection;
  so does a response left unended.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from stoker.adapters.core import reply_to, write_reply
from stoker.asgi import ASGIApp, Message, Scope, http_scope, target_parts
from stoker.http.wire import http1_head
from stoker.proxy.request import RequestHead
from stoker.proxy.request_body import asgi_body

if TYPE_CHECKING:
    from stoker.proxy.pipeline import Pipeline
    from stoker.proxy.reply import Headers, Reply
    from stoker.proxy.request import LookedUp
    from stoker.server.front.connection import Connection

log = logging.getLogger("stoker.front")

HIGH_WATER = 64 * 1024
"""Request body bytes buffered for the app before the connection stops reading."""
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
BODILESS = frozenset({204, 304})
SERVER_ERROR = (500, [(b"content-type", b"text/plain; charset=utf-8"),
                      (b"content-length", b"21"), (b"connection", b"close")],
                b"Internal Server Error")


class Exchange:
    """A parsed request head, its body as it arrives, and the app's response to it."""

    __slots__ = (
        "_arrived",
        "_chunked",
        "_left",
        "_told_whole",
        "body",
        "connection",
        "disconnected",
        "done",
        "expect_continue",
        "headers",
        "http_version",
        "keep_alive",
        "method",
        "more_body",
        "started",
        "target",
    )

    def __init__(self, connection: Connection, method: bytes, target: bytes,
                 http_version: str, headers: list[tuple[bytes, bytes]], *,
                 keep_alive: bool, expect_continue: bool) -> None:
        self.connection = connection
        self.method = method
        self.target = target
        self.http_version = http_version
        self.headers = headers
        self.keep_alive = keep_alive
        """Whether the connection stays open after the response."""
        self.expect_continue = expect_continue
        self.body = bytearray()
        self.more_body = True
        """Until the request's message has been read whole."""
        self.done = False
        """Once the response is complete (later body bytes are dropped)."""
        self.disconnected = False
        self.started = False
        self._chunked = False
        self._left: int | None = None
        """Body bytes the response's ``Content-Length`` still owes."""
        self._arrived: asyncio.Event | None = None
        self._told_whole = False
        """Once the app was given the body's last message: only the disconnect is left."""

    # the connection's side

    def add_body(self, data: bytes) -> None:
        """Body bytes read off the connection for this request."""
        if not self.done:
            self.body += data
            self._wake()

    def body_complete(self) -> None:
        """The request's message has been read whole."""
        self.more_body = False
        self._wake()

    def lost(self) -> None:
        """The client is gone."""
        self.disconnected = True
        self._wake()

    def _wake(self) -> None:
        if self._arrived is not None:
            self._arrived.set()

    def head(self) -> RequestHead:
        """This request's head, as the request core reads it."""
        return request_head(self.method, self.target, self.http_version, self.headers,
                            self.connection.client)

    def scope(self) -> Scope:
        """This request's ASGI scope."""
        connection = self.connection
        return http_scope(self.method, self.target, self.http_version, self.headers,
                          scheme="http", client=connection.client, server=connection.server)

    async def serve(self, pipeline: Pipeline, looked_up: LookedUp | None = None) -> None:
        """Answer this request through ``pipeline`` (``looked_up``: what the fast path read
        from L2 for it), its reply written here; ``500`` or close when that fails."""
        await self._guarded(self._serve(pipeline, looked_up))

    async def answer_with(self, reply: Reply) -> None:
        """Write ``reply``, made already (a fresh hit read while writing was paused);
        close when that fails."""
        await self._guarded(self._deliver(reply))

    async def _serve(self, pipeline: Pipeline, looked_up: LookedUp | None) -> None:
        """The core's reply to the parsed head, the body read as it arrives, written."""
        reply = await reply_to(pipeline, self.head(), asgi_body(self.receive),
                               looked_up=looked_up)
        await self._deliver(reply)

    async def _deliver(self, reply: Reply) -> None:
        """Write ``reply`` here, as :func:`~stoker.adapters.core.write_reply` does anywhere."""
        await write_reply(reply, self, head=self.method == b"HEAD",
                      http1=self.http_version.startswith("1"))

    async def run(self, app: ASGIApp) -> None:
        """Run ``app`` for this request; answer ``500`` or close when it fails."""
        await self._guarded(app(self.scope(), self.receive, self.send))

    async def _guarded(self, answering: Awaitable[None]) -> None:
        """Await ``answering``; answer ``500`` or close when it fails or returns before the
        response is complete."""
        try:
            await answering
        except Exception:
            log.exception("the application failed on %s %r", self.method.decode(), self.target)
            self._fail()
        except asyncio.CancelledError:
            self._fail()
            raise
        else:
            if not self.done:
                if self.started and not self.disconnected:  # else it saw the client go
                    log.error("the application returned before completing its response")
                self._fail()

    def _fail(self) -> None:
        if self.started or self.disconnected:
            self.connection.close()
            return
        status, headers, body = SERVER_ERROR
        self.keep_alive = False
        self._start(status, headers)
        self._body(body, more=False)

    # the app's side (ASGI)

    async def receive(self) -> Message:
        """The next ``http.request`` message, or ``http.disconnect``."""
        if self.expect_continue:
            self.expect_continue = False
            if not self.started:
                self.connection.write(CONTINUE)
        while not (self.disconnected or self.done) and (
                self._told_whole or not (self.body or not self.more_body)):
            self.connection.resume_reading()
            if self._arrived is None:
                self._arrived = asyncio.Event()
            self._arrived.clear()
            await self._arrived.wait()
        if self.disconnected or self.done:
            return {"type": "http.disconnect"}
        body, self.body = bytes(self.body), bytearray()
        if self.more_body:
            self.connection.resume_reading()
        else:
            self._told_whole = True
        return {"type": "http.request", "body": body, "more_body": self.more_body}

    async def send(self, message: Message) -> None:
        """Write ``message`` (``http.response.start``, then ``http.response.body``)."""
        if not await self._writable():
            return
        kind = message["type"]
        if not self.started:
            if kind != "http.response.start":
                raise RuntimeError(f"expected http.response.start, got {kind!r}")
            self._start(message["status"], message.get("headers", []))
        elif self.done:
            raise RuntimeError(f"{kind!r} sent after the response was complete")
        elif kind != "http.response.body":
            raise RuntimeError(f"expected http.response.body, got {kind!r}")
        else:
            self._body(message.get("body", b""), more=message.get("more_body", False))

    async def write_head(self, status: int, headers: Headers) -> None:
        """Write the response's head (its framing added)."""
        if await self._writable():
            self._start(status, headers)

    async def write_body(self, piece: bytes, *, more: bool) -> None:
        """Write a piece of the response's body (``more``: not the last one)."""
        if await self._writable():
            self._body(piece, more=more)

    async def _writable(self) -> bool:
        """Wait while the transport is paused for writing; whether the client is still
        there."""
        connection = self.connection
        if connection.write_paused and not self.disconnected:
            await connection.drained()
        return not self.disconnected

    def _start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        connection = self.connection
        head = http1_head(status, [*connection.listener.default_headers(), *headers])
        if head is None:
            raise RuntimeError("a response header name or value is not writable")
        self.started = True
        self.expect_continue = False
        close = False
        for name, value in headers:
            lowered = name.lower()
            if lowered == b"content-length" and self._left is None:
                self._left = int(value)
            elif lowered == b"transfer-encoding":
                self._chunked = value.lower() == b"chunked"
            elif lowered == b"connection" and b"close" in value.lower():
                self.keep_alive, close = False, True
        if self.method == b"HEAD" or status in BODILESS or status < 200:
            self._left = 0
        elif self._left is None and not self._chunked:
            if self.http_version == "1.1":
                self._chunked = True
                head += b"transfer-encoding: chunked\r\n"
            else:  # HTTP/1.0 has no chunks: the close ends the body
                self.keep_alive = False
        if not self.keep_alive and not close:
            head += b"connection: close\r\n"
        connection.write(head + b"\r\n")

    def _body(self, body: bytes, *, more: bool) -> None:
        connection = self.connection
        if self.method == b"HEAD":
            pass
        elif self._chunked:
            chunk = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
            if chunk or not more:
                connection.write(chunk if more else chunk + b"0\r\n\r\n")
        elif self._left is not None:
            if len(body) > self._left:
                raise RuntimeError("the response body is longer than its Content-Length")
            self._left -= len(body)
            connection.write(body)
        else:
            connection.write(body)
        if not more:
            if self._left:
                raise RuntimeError("the response body is shorter than its Content-Length")
            self.done = True
            self._wake()
            connection.response_done(self)


def request_head(method: bytes, target: bytes, http_version: str,
                 headers: list[tuple[bytes, bytes]],
                 client: tuple[str, int] | None) -> RequestHead:
    """The head of a request the front parsed from ``client`` (a plain-HTTP connection)."""
    raw_path, query = target_parts(target)
    return RequestHead(method.decode("ascii"), raw_path.decode("latin-1"),
                       query.decode("latin-1"), http_version, headers, "http",
                       client[0] if client else None)
