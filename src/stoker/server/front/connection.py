"""One HTTP/1.1 client connection to the front: httptools' parser, requests answered in
order, fresh hits written without ASGI.

A fresh hit through ASGI costs a task, a scope, two message dicts and their rendering;
here it costs the parse, one header scan, one memoised key, one dict lookup and one
``writelines`` of bytes kept per entry (:meth:`~stoker.adapters.hot_path.HotPath.reply_now`,
rendered by :func:`~stoker.server.front.render.reply_bytes`).
A read that is the very bytes of a head answered as a hit before is not even parsed
(:mod:`~stoker.server.front.heads`).  Where L2 must be waited for (Redis), the request's
task reads it (:meth:`~stoker.adapters.hot_path.HotPath.reply_later`) and writes a fresh
hit as those bytes too.  Everything else is an
:class:`~stoker.server.front.exchange.Exchange`: served by the request core from its
parsed head when the listener's app is Stoker's proxy (told what was read from L2), else
run by the listener's ASGI app.

Invariants:
- Responses leave in the order of the requests, pipelining included: one request is
  answered at a time; the next is started once the previous response is complete
  (queued requests are answered in a loop, never by recursion), and reading stops while
  a request waits in the queue, so at most one read beyond it is buffered.
- A hit is written here only while the transport is not paused for writing: a client
  that does not read its responses gets its hit through an exchange, which waits for it.
- A head still incomplete after :data:`HEAD_LIMIT` bytes (not counting the read it
  began in) gets ``431``; a request the parser rejects gets ``400``; both close the
  connection once the responses before them are written.  A connection that sends no
  complete head within :data:`HEAD_TIMEOUT` of opening, or of the first read that left
  a head incomplete while no request was being answered, or nothing within
  :data:`KEEP_ALIVE` of its last response, is closed (by the listener's one timer).
- A request that asks to upgrade (``h2c``, ``websocket``, ``CONNECT``) is answered as
  the plain HTTP request it also is, and the connection is closed after it (the bytes
  after such a head are not read: they may be another protocol's).
- A read is answered from its bytes only between requests (nothing parsed, answered or
  queued), so a body's bytes are never taken for a request.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from math import inf
from typing import TYPE_CHECKING, Any

import httptools

from stoker.adapters.hot_path import Wait
from stoker.proxy.request import MAX_HEADER_BYTES, RequestHead
from stoker.server.front import heads
from stoker.server.front.exchange import HIGH_WATER, Exchange, request_head
from stoker.server.front.render import reply_bytes

if TYPE_CHECKING:
    from stoker.adapters.hot_path import HotPath
    from stoker.proxy.request import LookedUp
    from stoker.server.front.listener import Listener

log = logging.getLogger("stoker.front")

HEAD_LIMIT = MAX_HEADER_BYTES + 16 * 1024
"""Bytes a request's head may take before it is complete (its headers may reach
:data:`~stoker.proxy.request.MAX_HEADER_BYTES`; the rest is room for the request line)."""
HEAD_TIMEOUT = 30.0
"""Seconds a connection may take to send a request's head (see the module's invariants)."""
KEEP_ALIVE = 5.0
"""Seconds an idle connection stays open after its last response (as uvicorn, Node and
Apache; nginx keeps 75 s)."""


def refusal(status: int, reason: bytes, text: bytes) -> bytes:
    """The whole response that refuses a request the front cannot read."""
    return (b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s"
            % (status, reason, len(text), text))


BAD_REQUEST = refusal(400, b"Bad Request", b"Invalid HTTP request received.")
TOO_LARGE = refusal(431, b"Request Header Fields Too Large", b"request head is too large")


class Answered:
    """The request being parsed, answered from its head alone (a hit): its body, if it has
    one, is read and dropped."""

    done = True
    body = b""

    def add_body(self, data: bytes) -> None:
        """Dropped."""

    def body_complete(self) -> None:
        """Nothing waits for it."""

    def lost(self) -> None:
        """Nothing waits for it."""


ANSWERED = Answered()


@dataclass(frozen=True, slots=True)
class ReadFirst:
    """A ``GET`` the fast path may answer once the cache has been read for ``primary`` in
    its task (L2 must be waited for, or the client must be)."""

    primary: str


class Connection(asyncio.Protocol):
    """The front's protocol for one connection (see the module's invariants)."""

    transport: asyncio.Transport

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.loop = listener.loop
        self.client: tuple[str, int] | None = None
        self.peer: str | None = None
        """The client's address (:attr:`client`'s host)."""
        self.server: tuple[str, int] | None = None
        self.write_paused = False
        self.deadline = inf
        """When the listener's timer closes this connection (``loop.time()``)."""
        self._parser = httptools.HttpRequestParser(self)
        self._reading = True
        self._drain: asyncio.Future[None] | None = None
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect = False
        self._in_head = False
        self._head_clock = True
        """Whether :attr:`deadline` is the head's (else the keep-alive's, or none)."""
        self._head_bytes = 0
        """Bytes received in the reads after the one the current head began in (-1 within
        that read), while the head is incomplete."""
        self._parsing: Exchange | Answered | None = None
        """The request whose body the parser is reading."""
        self._active: Exchange | None = None
        """The request the app is answering."""
        self._queue: deque[Exchange] = deque()
        self._final: bytes | None = None
        """A refusal written once the responses before it are."""
        self._unread = False
        """Set once the connection's further bytes are not to be read."""
        self._whole: bytes | None = None
        """The current read, while it may be one whole head to remember."""
        self._held: list[bytes] | None = None
        """Hit bytes written at the end of this loop iteration
        (:mod:`~stoker.server.front.batch`)."""

    # asyncio.Protocol

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.client = _address(transport.get_extra_info("peername"))
        self.peer = self.client[0] if self.client is not None else None
        self.server = _address(transport.get_extra_info("sockname"))
        self.deadline = self.loop.time() + HEAD_TIMEOUT
        self.listener.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.connections.discard(self)
        self._held = None
        for exchange in (self._active, self._parsing, *self._queue):
            if exchange is not None:
                exchange.lost()
        self._queue.clear()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.release()  # whatever this read makes us write goes after it
        if self._unread:
            return
        if self.listener.hot is not None and self._between_requests():
            head = self.listener.known.get(data)
            if head is not None and self._answer_known(head):
                return
            self._whole = data
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._unread = True  # the upgrade request was read whole and is answered
        except httptools.HttpParserError:
            self._refuse(BAD_REQUEST)
            return
        finally:
            self._whole = None
        if self._in_head:
            self._head_read(len(data))

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # httptools callbacks

    def on_message_begin(self) -> None:
        self._url, self._headers, self._expect = b"", [], False
        self._in_head, self._head_bytes = True, -1

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect = True
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._in_head = False
        parser = self._parser
        method, version = parser.get_method(), parser.get_http_version()
        keep_alive = version != "1.0" and parser.should_keep_alive() and (
            not parser.should_upgrade())
        idle = self._active is None and not self._queue
        if idle:
            self._head_clock = False
            if method == b"GET" and self.listener.hot is not None:
                hit = self._hit(version, self._url, self._headers, keep_alive,
                                self._head)
                if isinstance(hit, list):  # answered from the head: no exchange needed
                    self._parsing = ANSWERED
                    self._send_hit(hit, close=not keep_alive)
                    if not self.transport.is_closing():
                        self._idle()
                    return
                if isinstance(hit, ReadFirst):
                    self._parsing = exchange = self._exchange(method, version, keep_alive)
                    self._read_first(exchange, hit.primary)
                    return
        exchange = self._parsing = self._exchange(method, version, keep_alive)
        if idle:
            self._start(exchange)
        else:
            self._queue.append(exchange)
            self._pause_reading()

    def _exchange(self, method: bytes, version: str, keep_alive: bool) -> Exchange:
        """The exchange of the head just parsed (only within ``on_headers_complete``)."""
        return Exchange(self, method, self._url, version, self._headers,
                        keep_alive=keep_alive, expect_continue=self._expect)

    def _head(self) -> RequestHead:
        """The head just parsed (only within ``on_headers_complete``)."""
        return request_head(self._parser.get_method(), self._url,
                            self._parser.get_http_version(), self._headers, self.client)

    def on_body(self, body: bytes) -> None:
        exchange = self._parsing
        assert exchange is not None
        exchange.add_body(body)
        if len(exchange.body) > HIGH_WATER:
            self._pause_reading()

    def on_message_complete(self) -> None:
        exchange, self._parsing = self._parsing, None
        assert exchange is not None
        exchange.body_complete()

    # answering

    def _start(self, exchange: Exchange | None) -> None:
        """Answer ``exchange``, and the queued requests after it while they are hits."""
        hot = self.listener.hot
        while exchange is not None:
            if hot is not None and exchange.method == b"GET":
                hit = self._hit(exchange.http_version, exchange.target, exchange.headers,
                                exchange.keep_alive, exchange.head)
                if isinstance(hit, list):
                    exchange = self._answered(exchange, hit)
                    continue
                if isinstance(hit, ReadFirst):
                    self._read_first(exchange, hit.primary)
                    return
            self._active = exchange
            self.deadline = inf
            self.listener.run(self.listener.answer(exchange))
            return

    def _answered(self, exchange: Exchange, wire: list[bytes]) -> Exchange | None:
        """Send ``exchange``'s hit; the queued request to answer next, if any."""
        exchange.done = True
        self._send_hit(wire, close=not exchange.keep_alive)
        if self.transport.is_closing():
            return None
        if self._queue:
            return self._queue.popleft()
        self._idle()
        return None

    def _read_first(self, exchange: Exchange, primary: str) -> None:
        """Answer ``exchange`` in a task that first reads L2 for ``primary``."""
        self._active = exchange
        self.deadline = inf
        self.listener.run(self._read_then_answer(exchange, primary))

    async def _read_then_answer(self, exchange: Exchange, primary: str) -> None:
        """Send the fresh hit L1 or L2 holds for ``exchange`` (through the exchange, which
        waits for the client, while writing is paused), else have the request core answer
        it, told what was read."""
        hot = self.listener.hot
        assert hot is not None
        looked_up: LookedUp | None = None
        reply = None
        try:
            reply, looked_up = await hot.reply_later(primary, exchange.headers)
        except Exception:  # the core, which reads again, answers (a 500 if it fails too)
            log.exception("the fast path failed on GET %r", exchange.target)
        except asyncio.CancelledError:
            self.close()
            raise
        if exchange.disconnected:
            return
        if reply is None:
            await self.listener.answer(exchange, looked_up)
            return
        hot.count(reply, exchange.headers, self.peer)
        wire = None if self.write_paused else reply_bytes(reply, close=not exchange.keep_alive)
        if wire is None:
            await exchange.answer_with(reply)
            return
        self._active = None
        self._start(self._answered(exchange, wire))

    def response_done(self, exchange: Exchange) -> None:
        """``exchange``'s response is complete: close, or go on to the next request."""
        self._active = None
        if not exchange.keep_alive:
            self.close()
        elif self._queue:
            self._start(self._queue.popleft())
        else:
            self._idle()

    def _idle(self) -> None:
        """No request is being answered: write a pending refusal, or read on."""
        if self._final is not None:
            self.write(self._final)
            self.close()
            return
        self.resume_reading()
        if not self._in_head:
            self._head_clock = False
            self.deadline = self.loop.time() + KEEP_ALIVE
        elif not self._head_clock:
            self._head_clock = True
            self.deadline = self.loop.time() + HEAD_TIMEOUT

    def _hit(self, http_version: str, target: bytes, headers: list[tuple[bytes, bytes]],
             keep_alive: bool, head: Callable[[], RequestHead]
             ) -> list[bytes] | ReadFirst | None:
        """The bytes of the hit a ``GET`` of ``target`` is (remembering its head if it came
        as one whole read), :class:`ReadFirst` where L2 must be waited for or writing is
        paused, or ``None``."""
        hot = self.listener.hot
        assert hot is not None
        primary = hot.key_of(http_version, target, headers, "http", head)
        if primary is None:
            return None
        if self.write_paused:  # its exchange writes the hit, waiting for the client
            return ReadFirst(primary)
        close = not keep_alive
        wire = _hit_bytes(hot, primary, headers, close, self.peer)
        whole, self._whole = self._whole, None
        if isinstance(wire, Wait):
            return ReadFirst(primary)
        known = self.listener.known
        if wire is not None and whole is not None and known.second_time(whole) and (
                heads.rememberable(whole, headers)):
            known.keep(whole, heads.KnownHead(hot.keying, primary, headers, close))
        return wire

    def _answer_known(self, head: heads.KnownHead) -> bool:
        hot = self.listener.hot
        assert hot is not None
        if self.write_paused or head.keying != hot.keying:
            return False
        wire = _hit_bytes(hot, head.primary, head.headers, head.close, self.peer)
        if not isinstance(wire, list):  # not a hit, or L2 must be waited for: parse it
            return False
        self._send_hit(wire, close=head.close)
        if not head.close:
            self._idle()
        return True

    def _between_requests(self) -> bool:
        return (self._active is None and self._parsing is None and not self._in_head
                and not self._queue)

    def _head_read(self, size: int) -> None:
        """Count a read that left a head incomplete against the head's limits."""
        if self._head_bytes < 0:  # it began in this read, after whatever came before
            self._head_bytes = 0
        else:
            self._head_bytes += size
        if self._head_bytes > HEAD_LIMIT:
            self._refuse(TOO_LARGE)
        elif not self._head_clock and self._active is None:
            self._head_clock = True
            self.deadline = self.loop.time() + HEAD_TIMEOUT

    def _refuse(self, response: bytes) -> None:
        """Answer ``response`` after the responses owed, then close; read nothing more."""
        self._unread = True
        self._pause_reading()
        broken, self._parsing = self._parsing, None
        if isinstance(broken, Exchange) and not broken.done:  # its body never arrives whole
            broken.lost()
            if broken is self._active:
                self._active = None
                self._queue.clear()
                if not broken.started:
                    self.write(response)
                self.close()
                return
            self._queue.remove(broken)
        self._final = response
        if self._active is None and not self._queue:
            self._idle()

    # writing

    def _send_hit(self, wire: list[bytes], *, close: bool) -> None:
        """Write a hit's bytes at the end of the loop iteration (at once, then close the
        connection, if ``close``)."""
        if close:
            self.release()
            self.transport.writelines(wire)
            self.transport.close()
        elif self._held is not None:
            self._held += wire
        else:
            self._held = wire
            self.listener.batch.hold(self)

    def release(self) -> None:
        """Write the hit bytes held for this connection now."""
        held, self._held = self._held, None
        if held is not None and not self.transport.is_closing():
            self.transport.writelines(held)

    def write(self, data: bytes) -> None:
        """Write ``data`` after anything held."""
        self.release()
        if not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        """Close the connection once what was written has been sent."""
        self.release()
        self.transport.close()

    async def drained(self) -> None:
        """Return once the transport takes writes again (or the client is gone)."""
        if self._drain is None or self._drain.done():
            self._drain = self.loop.create_future()
        await self._drain

    def _pause_reading(self) -> None:
        if self._reading:
            self._reading = False
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        """Read again (a request body is wanted, or the queue is free)."""
        if not self._reading and not self._unread and not self._queue:
            self._reading = True
            self.transport.resume_reading()

    def shutdown(self) -> None:
        """The server stops: close now if idle, else after the current response."""
        if self._active is None:
            self.close()
        else:
            self._active.keep_alive = False
            self._queue.clear()
            self._unread = True


def _address(value: Any) -> tuple[str, int] | None:
    return (str(value[0]), int(value[1])) if isinstance(value, tuple) else None


def _hit_bytes(hot: HotPath, primary: str, headers: list[tuple[bytes, bytes]],
               close: bool, peer: str | None) -> list[bytes] | Wait | None:
    """The bytes of the fresh hit a request from ``peer`` for ``primary`` with ``headers``
    is (counted),
    :data:`~stoker.adapters.hot_path.WAIT` where L2 must be waited for, else ``None``."""
    reply = hot.reply_now(primary, headers)
    if reply is None or isinstance(reply, Wait):
        return reply
    wire = reply_bytes(reply, close=close)
    if wire is not None:
        hot.count(reply, headers, peer)
    return wire
