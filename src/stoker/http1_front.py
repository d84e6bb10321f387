"""Stoker's own HTTP/1.1 front (``server = "stoker"``, the default): uvicorn's httptools
protocol, with fresh hits (L1, or L2 where it reads inline) answered inside the protocol,
without an ASGI request cycle, and HTTP/2 connections relayed to granian
(:mod:`stoker.http2_relay`).
(:class:`Http1Protocol`, the same protocol without the hits and the relay, serves
``server = "uvicorn"``.)

A fresh hit through an ASGI server costs a task, a scope, two message dicts and
the server's serialisation; here it costs one header scan, one memoised key, one
dict lookup and one ``writelines`` of bytes kept per entry
(:meth:`~stoker.proxy.hot_path.HotPath.wire_for`).  A head whose very bytes were
answered as a hit before (a load balancer's, a bot's, a health check's) is not even
parsed again: one dict lookup by those bytes gives its key and headers
(:class:`KnownHead`).  Everything else (misses, stale or multi-variant hits, other
methods, refusals) runs the same ASGI app through uvicorn.

Invariants:
- A request is answered here only where uvicorn would start its ASGI cycle:
  once the previous response on the connection is complete, so responses keep
  the requests' order, pipelining included (queued requests are answered in a
  loop, never by recursion).
- Only while the transport is not paused for writing: a client that does not
  read its responses is left to the ASGI path, which waits for it, so what
  this front buffers per connection stays bounded.
- The bytes are those uvicorn writes for the fast path's ASGI messages with no
  default headers (this front runs uvicorn with ``server_header`` and
  ``date_header`` off, as granian adds neither: a cache sends the stored
  ``Date``, never a second one);
  the connection is closed afterwards exactly when uvicorn would (HTTP/1.0, or
  ``Connection: close``).
- What uvicorn does after a response (count it, resume reading, start the next
  queued request or arm the keep-alive timer) is done the same way.
- A read is answered from its bytes only when it is exactly one head, without body
  or forwarding headers (:func:`rememberable`), that an earlier parse of the same bytes
  answered as a hit under the same cache version; and only between requests (no
  request, body, queued request or undecided preface on the connection), so a body's
  bytes are never taken for a request.  Its key must still have a fresh hit;
  otherwise the read is parsed as usual.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from stoker.http2_relay import Relay, RelayTarget, starts_http2
from stoker.proxy.hot_path import FORWARDING_HEADERS, HotPath
from stoker.proxy.request import MAX_HEADER_BYTES, TARGET_SCOPE_KEY

HEAD_LIMIT = MAX_HEADER_BYTES + 16 * 1024
"""Bytes a request's head may take before it is complete (its headers may reach
:data:`~stoker.proxy.request.MAX_HEADER_BYTES`; the rest is room for the request line)."""
TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
             b"content-type: text/plain; charset=utf-8\r\ncontent-length: 25\r\n"
             b"connection: close\r\n\r\nrequest head is too large")
KNOWN_HEADS = 2048
"""Request heads the front remembers by their bytes (:func:`hit_protocol`)."""
KNOWN_HEAD_BYTES = 1024
"""The longest head remembered: :data:`KNOWN_HEADS` of them hold at most 2 MiB of bytes."""
UNREMEMBERED = frozenset({b"content-length", b"transfer-encoding", b"upgrade",
                          *FORWARDING_HEADERS})
"""Header names that keep a head from being remembered (:func:`rememberable`)."""
HEAD_TIMEOUT = 30.0
"""Seconds a connection may take to send a request's head, from when it opens or from the
first read that left the head incomplete (uvicorn's keep-alive timeout bounds the wait
between requests)."""


class Http1Protocol(HttpToolsProtocol):
    """uvicorn's httptools protocol as Stoker runs it (``server = "uvicorn"``):

    - an absolute-form target (RFC 9112 §3.2.2), whose authority uvicorn drops from
      ``raw_path``, is kept for the pipeline (:data:`TARGET_SCOPE_KEY`);
    - a head still incomplete after :data:`HEAD_LIMIT` bytes (not counting the read it
      began in) gets ``431`` and the connection is closed (httptools itself buffers a
      head of any size), so a connection holds at most that plus one read of a head;
    - a connection that sends no complete head within :data:`HEAD_TIMEOUT` seconds of
      opening, or of the first read that left its request's head incomplete, is closed
      (uvicorn has no such bound); a head that arrives in one read arms no timer;
    - a request asking to upgrade (``h2c``, ``websocket``) is answered as plain HTTP,
      without uvicorn's two log warnings per request.
    """

    _head_bytes = 0
    """Bytes received in the reads after the one the current request's head began in
    (-1 within that read), while the head is incomplete."""
    _in_head = False
    _in_message = False
    """From a request's first byte until its body has been read whole."""
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head and not self.transport.is_closing():
            if self._head_bytes < 0:  # it began in this read, after whatever came before
                self._head_bytes = 0
            else:
                self._head_bytes += len(data)
            if self._head_bytes > HEAD_LIMIT:
                self.transport.write(TOO_LARGE)
                self.transport.close()
            elif self._head_timer is None:
                self._arm_head_timer()

    def on_message_begin(self) -> None:
        self._in_head, self._in_message, self._head_bytes = True, True, -1
        super().on_message_begin()

    def on_message_complete(self) -> None:
        self._in_message = False
        super().on_message_complete()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm_head_timer()
        if not self.url.startswith(b"/"):
            scope: Any = self.scope
            scope[TARGET_SCOPE_KEY] = self.url
        super().on_headers_complete()

    def _unsupported_upgrade_warning(self) -> None:
        """Nothing: a request asking to upgrade is served as the plain HTTP request it also
        is (``Upgrade`` is hop-by-hop, never forwarded), and a warning per request would
        let any client flood the log."""

    def _arm_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT, self.transport.close)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None


class FrontProtocol(Http1Protocol):
    """:class:`Http1Protocol` relaying a connection that opens with the HTTP/2 preface to
    :attr:`relay_target` (set by :func:`front_protocol`); its first bytes are held only
    while they may still be the preface."""

    relay_target: ClassVar[RelayTarget]
    _opening: bytes | None = b""
    """The connection's first bytes while undecided; ``None`` once decided."""
    _relay: Relay | None = None

    def data_received(self, data: bytes) -> None:
        if self._relay is not None:
            self._relay.from_client(data)
            return
        if self._opening is not None:
            data = self._opening + data
            http2 = starts_http2(data)
            if http2 is None:
                self._opening = data
                return
            self._opening = None
            if http2:
                self._disarm_head_timer()
                self._relay = Relay(self.transport, self.relay_target, data)
                return
        super().data_received(data)

    def pause_writing(self) -> None:
        if self._relay is not None:
            self._relay.pause_upstream()
        else:
            super().pause_writing()

    def resume_writing(self) -> None:
        if self._relay is not None:
            self._relay.resume_upstream()
        else:
            super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._relay is not None:
            self._relay.close()
        super().connection_lost(exc)


def front_protocol(relay: RelayTarget, hot: HotPath | None) -> type[HttpToolsProtocol]:
    """The protocol class of ``server = "stoker"``: HTTP/2 relayed to ``relay``; with
    ``hot`` (the proxy app), ``hot``'s fresh hits answered in the protocol."""
    if hot is None:
        return type("RelayingProtocol", (FrontProtocol,), {"relay_target": relay})
    return hit_protocol(hot, relay)


@dataclass(frozen=True, slots=True)
class KnownHead:
    """What parsing one request head gave, for answering the same bytes again unparsed."""

    version: str
    """The cache version when it was parsed (a version bump makes it unknown again)."""
    primary: str
    headers: list[tuple[bytes, bytes]]
    close: bool
    """Whether the connection closes after the response (HTTP/1.0, ``Connection: close``)."""


def rememberable(data: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the request read as ``data`` may be answered from its bytes alone next time:
    ``data`` is exactly one head of at most :data:`KNOWN_HEAD_BYTES` bytes, with no body
    (no framing header) and nothing whose meaning depends on the connection (no
    forwarding headers, whose trust depends on the peer; no upgrade)."""
    return (len(data) <= KNOWN_HEAD_BYTES and data.find(b"\r\n\r\n") == len(data) - 4
            and not any(name in UNREMEMBERED for name, _ in headers))


class Holder(Protocol):
    """A connection holding bytes for the end of the loop iteration."""

    loop: asyncio.AbstractEventLoop

    def release(self) -> None:
        """Write the bytes held now."""


class WriteBatch:
    """The hit responses of one loop iteration, written together at its end.

    A hit's bytes are held, not written, until the callbacks the loop runs in this
    iteration (the reads it found ready, each answered in turn) are done; then every
    connection's bytes are written, in the order they were held.  A client reading on
    this machine (a TLS terminator, a load balancer, a benchmark) is then woken once per
    batch, not once per response: on a 2-core VM a wake-up of the reader costs the
    writer ~10 µs, as much as the hit itself.  Nothing waits longer than the rest of
    the iteration (one read at low load).

    Invariant: per connection, bytes leave in the order the responses were made: a
    connection writes what it holds before anything it writes directly (the next read's
    answers, a ``400``, a close; :meth:`Holder.release`), and an ASGI response to a
    later request starts in a task, after this batch has been written.
    """

    def __init__(self) -> None:
        self._holders: list[Holder] = []

    def hold(self, holder: Holder) -> None:
        """Have ``holder`` released at the end of this loop iteration."""
        if not self._holders:
            holder.loop.call_soon(self._release)
        self._holders.append(holder)

    def _release(self) -> None:
        holders, self._holders = self._holders, []
        for holder in holders:
            holder.release()


def hit_protocol(hot: HotPath, relay: RelayTarget) -> type[HttpToolsProtocol]:
    """:class:`FrontProtocol` relaying to ``relay`` and answering ``hot``'s fresh hits
    itself.

    Heads answered as hits are remembered by their bytes (:class:`KnownHead`, at most
    :data:`KNOWN_HEADS`, oldest forgotten first): a read that is exactly a remembered head,
    on a connection between requests, is answered without parsing it again.
    """
    known: dict[bytes, KnownHead] = {}
    batch = WriteBatch()

    class HitProtocol(FrontProtocol):
        relay_target = relay
        _whole: bytes | None = None
        """The current read, while it may be one whole head to remember."""
        _held: list[bytes] | None = None
        """Hit bytes written at the end of this loop iteration (:class:`WriteBatch`)."""

        def data_received(self, data: bytes) -> None:
            self.release()  # whatever this read makes us write goes after it
            head = known.get(data)
            if head is not None and self._between_requests() and self._answer(head):
                return
            self._whole = data
            try:
                super().data_received(data)
            finally:
                self._whole = None

        def _between_requests(self) -> bool:
            """No request, relay or preface under way (a known head is an HTTP/1.x one, so
            it also decides a new connection's protocol)."""
            return (not self._opening and self._relay is None and not self._in_message
                    and not self.pipeline and (self.cycle is None
                                               or self.cycle.response_complete))

        def _answer(self, head: KnownHead) -> bool:
            if self.flow.write_paused or head.version != hot.version:
                return False
            wire = hot.wire_for(head.primary, head.headers, close=head.close)
            if wire is None:
                return False
            self._opening = None
            self._disarm_head_timer()
            self._unset_keepalive_if_required()  # as uvicorn's data_received would
            self._send(wire, close=head.close)  # the pipeline is empty: nothing to start
            return True

        def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
            while True:
                scope: Any = cycle.scope
                wire = None if self.flow.write_paused else self._hit(scope, cycle.keep_alive)
                if wire is None:
                    super()._start_asgi_task(cycle, app)
                    return
                cycle.response_started = cycle.response_complete = True
                queued = self._send(wire, close=not cycle.keep_alive)
                if queued is None:
                    return
                cycle, app = queued

        def _hit(self, scope: Any, keep_alive: bool) -> list[bytes] | None:
            """The hit's bytes (remembering the head if it came as one whole read), or
            ``None``."""
            primary = hot.key(scope)
            if primary is None:
                return None
            headers = scope["headers"]
            wire = hot.wire_for(primary, headers, close=not keep_alive)
            whole, self._whole = self._whole, None
            if wire is not None and whole is not None and rememberable(whole, headers):
                if len(known) >= KNOWN_HEADS:
                    del known[next(iter(known))]
                known[whole] = KnownHead(hot.version, primary, headers, not keep_alive)
            return wire

        def _send(self, wire: list[bytes], *, close: bool
                  ) -> tuple[RequestResponseCycle, Any] | None:
            """Write a hit's bytes (at the end of the loop iteration, see
            :class:`WriteBatch`), close the connection if ``close`` (at once, after the
            bytes held), and do what uvicorn does after a response; return the next
            queued request, if any."""
            if close:
                self.release()
                self.transport.writelines(wire)
                self.transport.close()
            elif self._held is not None:
                self._held += wire
            else:
                self._held = wire
                batch.hold(self)
            return self._after_response()

        def release(self) -> None:
            """Write the hit bytes held for this connection now."""
            held, self._held = self._held, None
            if held is not None and not self.transport.is_closing():
                self.transport.writelines(held)

        def send_400_response(self, msg: str) -> None:
            self.release()
            super().send_400_response(msg)

        def shutdown(self) -> None:
            self.release()
            super().shutdown()

        def _after_response(self) -> tuple[RequestResponseCycle, Any] | None:
            """uvicorn's ``on_response_complete``, returning the next queued request
            instead of starting it."""
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return None
            self._unset_keepalive_if_required()
            self.flow.resume_reading()
            if self.pipeline:
                return self.pipeline.pop()
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler)
            return None

    return HitProtocol
