"""HTTP/2 with prior knowledge on Stoker's HTTP/1.1 front, relayed to granian.

The front (``server = "stoker"``, :mod:`stoker.http1_front`) speaks HTTP/1.1 itself.  A
connection whose first bytes are the HTTP/2 connection preface (RFC 9113 §3.4) is
relayed byte for byte to a granian listener on a loopback port of its own, serving the
same app over HTTP/2 only.  HTTP/2 clients thus get granian's HTTP/2, at the price of
one loopback hop; HTTP/1.1 clients keep the front's hits.

Invariants:
- The app behind the relay sees the relayed client's address and the public listener's
  address, never the loopback hop's: each relayed connection registers the loopback
  address and port it connects from (:class:`Peers`) before it sends a byte, and
  unregisters them when it closes.  A request on a connection the relay did not make
  (anything else that reaches the loopback port) gets ``403`` and never reaches the
  app, so a local process cannot pose as a trusted loopback peer.
- Bytes are relayed in order.  Flow control holds both ways: while one side's
  transport has more buffered for writing than its high-water mark, the other side is
  not read.  Bytes that arrive before the loopback connection is up are held, and the
  client is not read meanwhile.
- Either side closing closes the other; a loopback connect that fails closes the client
  (logged on ``stoker.server``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from stoker.asgi import ASGIApp, Receive, Scope, Send

log = logging.getLogger("stoker.server")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What an HTTP/2 client with prior knowledge sends first (RFC 9113 §3.4)."""
REFUSED = b"connect to the public listener; this port serves Stoker's HTTP/2 relay only"

Address = tuple[str, int]


def starts_http2(data: bytes) -> bool | None:
    """Whether a connection whose first bytes are ``data`` speaks HTTP/2 with prior
    knowledge: ``None`` while ``data`` is a strict prefix of the preface (read more)."""
    if data.startswith(PREFACE):
        return True
    return None if PREFACE.startswith(data) else False


@dataclass
class Peers:
    """The real ends of the relayed connections, by the loopback address and port each
    connects from (the port alone would let a process connecting from another loopback
    address, ``127.0.0.2`` with the same port, pose as a relayed client)."""

    _by_source: dict[Address, tuple[Address | None, Address | None]] = field(
        default_factory=dict)

    def add(self, source: Address, client: Address | None, server: Address | None) -> None:
        self._by_source[source] = (client, server)

    def discard(self, source: Address) -> None:
        self._by_source.pop(source, None)

    def __len__(self) -> int:
        return len(self._by_source)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` as the relay listener serves it: each request's ``client`` and ``server``
        those of the relayed connection; a request on any other connection refused."""

        async def relayed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "lifespan":
                await app(scope, receive, send)
                return
            client = scope.get("client")
            ends = self._by_source.get((str(client[0]), int(client[1]))) if (  # port: a str
                client) else None
            if ends is None:
                await _refuse(scope, send)
                return
            await app({**scope, "client": ends[0], "server": ends[1]}, receive, send)

        return relayed


async def _refuse(scope: Scope, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(REFUSED)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": REFUSED})


@dataclass(frozen=True)
class RelayTarget:
    """Where the front relays HTTP/2 connections, and the registry of their ends."""

    host: str
    port: int
    peers: Peers


class Relay:
    """One client connection relayed to the loopback listener.

    Made by the front's protocol once the connection's first bytes are the preface; the
    protocol then hands it everything it reads (:meth:`from_client`), its transport's
    write-buffer signals (:meth:`pause_upstream`, :meth:`resume_upstream`) and its end
    (:meth:`close`).
    """

    def __init__(self, client: asyncio.Transport, target: RelayTarget, first: bytes) -> None:
        self._client = client
        self._target = target
        self._held = [first]
        self._upstream: asyncio.Transport | None = None
        self._source: Address | None = None
        self._closed = False
        client.pause_reading()
        self._connecting = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_connection(lambda: _Upstream(self),
                                                        self._target.host, self._target.port)
        except OSError as error:
            log.warning("HTTP/2 relay: cannot reach the relay listener on port %d: %s",
                        self._target.port, error)
            self._client.close()
            return
        if self._closed:
            transport.close()
            return
        self._source = _address(transport.get_extra_info("sockname"))
        assert self._source is not None
        self._target.peers.add(self._source,
                               _address(self._client.get_extra_info("peername")),
                               _address(self._client.get_extra_info("sockname")))
        self._upstream = transport
        transport.writelines(self._held)
        self._held = []
        if not self._client.is_closing():
            self._client.resume_reading()

    def from_client(self, data: bytes) -> None:
        if self._upstream is None:
            self._held.append(data)
        else:
            self._upstream.write(data)

    def to_client(self, data: bytes) -> None:
        self._client.write(data)

    def pause_client(self) -> None:
        """The loopback side's write buffer is full: stop reading the client."""
        self._client.pause_reading()

    def resume_client(self) -> None:
        if not self._client.is_closing():
            self._client.resume_reading()

    def pause_upstream(self) -> None:
        """The client's write buffer is full: stop reading the loopback side."""
        if self._upstream is not None:
            self._upstream.pause_reading()

    def resume_upstream(self) -> None:
        if self._upstream is not None and not self._upstream.is_closing():
            self._upstream.resume_reading()

    def close(self) -> None:
        """The client side is gone (or the loopback side is): close both, forget the port."""
        if self._closed:
            return
        self._closed = True
        if self._source is not None:
            self._target.peers.discard(self._source)
        if self._upstream is not None:
            self._upstream.close()
        self._client.close()


def _address(sockaddr: tuple[str, int] | tuple[str, int, int, int] | None) -> Address | None:
    """A socket address as ASGI gives one: ``(host, port)`` (IPv6's flow and scope dropped)."""
    return None if not sockaddr else (sockaddr[0], sockaddr[1])


class _Upstream(asyncio.Protocol):
    """The loopback side of a :class:`Relay`."""

    def __init__(self, relay: Relay) -> None:
        self._relay = relay

    def data_received(self, data: bytes) -> None:
        self._relay.to_client(data)

    def pause_writing(self) -> None:  # the relay listener reads slower than the client sends
        self._relay.pause_client()

    def resume_writing(self) -> None:
        self._relay.resume_client()

    def connection_lost(self, exc: Exception | None) -> None:
        self._relay.close()

