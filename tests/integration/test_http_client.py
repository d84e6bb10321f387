"""Stoker's own HTTP/1.1 origin client (``HttpOrigin`` on :mod:`stoker.origin.http_client`
and :mod:`stoker.origin.http_exchange`) against origins that write raw bytes.

The parser's edges (a response cut anywhere into reads) are driven through the
connection protocol directly, so every cut is the one meant; everything else runs on
real sockets: framing, interim responses, which connections are reused, the pool's
limits, the timeouts, back-pressure and TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import free_port
from tests.hostile.test_origin_framing import Body
from tests.integration.raw_origin import RawRequest, chunked, raw_origin, response
from tests.integration.test_http2 import self_signed

from stoker.origin import http as origin_module
from stoker.origin.http import HttpOrigin
from stoker.origin.http_exchange import CHUNK, OriginConnection, OriginExchange
from stoker.origin.port import (
    OriginConnectionLost,
    OriginError,
    OriginResponse,
    OriginTimeout,
)

OK = response("200 OK", {}, b"genuine")


async def read(response: OriginResponse) -> bytes:
    """The whole body (each piece at most CHUNK bytes), the response closed."""
    try:
        pieces = [piece async for piece in response.chunks]
    finally:
        await response.close()
    assert all(0 < len(piece) <= CHUNK for piece in pieces)
    return b"".join(pieces)


async def fetch(origin: HttpOrigin, method: str = "GET", target: str = "/p",
                body: Body | None = None) -> tuple[int, dict[bytes, bytes], bytes]:
    response = await origin.fetch(method, target, [(b"host", b"a.test")], body)
    return response.status, dict(response.headers), await read(response)


@asynccontextmanager
async def client(url: str, *, timeout: float = 5, pool_size: int = 256
                 ) -> AsyncIterator[HttpOrigin]:
    origin = HttpOrigin(url, timeout=timeout, pool_size=pool_size)
    try:
        yield origin
    finally:
        await origin.close()


@asynccontextmanager
async def tcp_origin(serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                                     Awaitable[None]], **tls: ssl.SSLContext
                     ) -> AsyncIterator[str]:
    """``serve`` on a free port (``ssl=`` for HTTPS) for the block: its URL."""
    server = await asyncio.start_server(serve, "127.0.0.1", 0, **tls)
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


def answering(*wires: bytes) -> Callable[[RawRequest, asyncio.StreamWriter], Awaitable[bool]]:
    """Answers the n-th request on a connection with ``wires[n - 1]`` (the last one after
    that), keeping the connection open."""
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(wires[min(request.index, len(wires)) - 1])
        return True

    return answer


# -- the parser's edges, through the protocol --------------------------------


@dataclass
class Wire(asyncio.Transport):
    """The transport under a :class:`Connection` fed by hand."""

    closing: bool = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


@dataclass
class Home:
    released: list[OriginConnection] = field(default_factory=list)

    def release(self, connection: OriginConnection) -> None:
        self.released.append(connection)

    def discard(self, connection: OriginConnection) -> None:
        pass


async def parse_cut(wire: bytes, cuts: list[int], *, head_only: bool = False,
                    close: bool = False) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """``wire`` read in the pieces ``cuts`` makes (then the connection closed, with
    ``close``): the status, headers, body, and whether the connection was kept."""
    home = Home()
    connection = OriginConnection("http://o.test", 5.0, home)
    connection.connection_made(Wire())
    exchange = OriginExchange(connection, head_only=head_only)
    await exchange.send(b"GET / HTTP/1.1\r\n\r\n", None)
    for start, end in pairwise([0, *sorted(set(cuts)), len(wire)]):
        connection.data_received(wire[start:end])
    if close:
        connection.connection_lost(None)
    await exchange.response_head()
    pieces = [piece async for piece in exchange]
    await exchange.close()
    assert all(0 < len(piece) <= CHUNK for piece in pieces)
    return exchange.status, exchange.headers, b"".join(pieces), home.released == [connection]


HINTS = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"


def chunked_wire(body: bytes, sizes: list[int]) -> bytes:
    pieces, rest = [], body
    for size in sizes:
        pieces.append(rest[:size])
        rest = rest[size:]
    return chunked("200 OK", {"X-Kind": "chunked"}, [p for p in [*pieces, rest] if p])


@given(body=st.binary(max_size=3000), sizes=st.lists(st.integers(1, 700), max_size=6),
       framing=st.sampled_from(["length", "chunked", "close"]), interim=st.booleans(),
       cuts=st.lists(st.integers(1, 5000), max_size=12))
def test_a_response_cut_anywhere_into_reads_parses_the_same(
        body: bytes, sizes: list[int], framing: str, interim: bool, cuts: list[int]) -> None:
    wire = {"length": response("200 OK", {"X-Kind": "length"}, body),
            "chunked": chunked_wire(body, sizes),
            "close": b"HTTP/1.1 200 OK\r\nX-Kind: close\r\n\r\n" + body}[framing]
    wire = HINTS + wire if interim else wire
    status, headers, received, kept = asyncio.run(parse_cut(
        wire, [cut for cut in cuts if cut < len(wire)], close=framing == "close"))
    assert (status, received) == (200, body)
    assert (b"x-kind", framing.encode()) in headers and b"link" not in dict(headers)
    assert kept == (framing != "close")


def test_a_chunked_response_cut_at_every_byte_parses_the_same() -> None:
    wire = HINTS + chunked("200 OK", {}, [b"a" * 10, b"b" * 300, b"c"])
    cuts = [[cut] for cut in range(1, len(wire))] + [list(range(1, len(wire)))]
    results = set()
    for cut in cuts:
        status, _, body, kept = asyncio.run(parse_cut(wire, cut))
        results.add((status, body, kept))
    assert results == {(200, b"a" * 10 + b"b" * 300 + b"c", True)}


def test_a_long_read_is_handed_on_in_pieces_of_at_most_chunk_bytes() -> None:
    body = bytes(range(256)) * (3 * CHUNK // 256) + b"tail"
    assert asyncio.run(parse_cut(response("200 OK", {}, body), []))[2] == body


def test_a_head_response_ends_at_its_head_whatever_its_length_says() -> None:
    wire = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    assert asyncio.run(parse_cut(wire, [10], head_only=True))[2:] == (b"", True)
    assert asyncio.run(parse_cut(wire + b"x" * 1000, [], head_only=True))[2:] == (b"", False)


@pytest.mark.parametrize("wire", [
    b"HTTP/1.1 200 OK\r\n" + (b"x-filler: " + b"a" * 1000 + b"\r\n") * 300,
    b"HTTP/1.1 103 Early Hints\r\n\r\n" * 20_000,
], ids=["fields", "interim-responses"])
def test_a_head_that_does_not_end_is_a_malformed_response(wire: bytes) -> None:
    with pytest.raises(OriginError, match="malformed response: a head over"):
        asyncio.run(parse_cut(wire, list(range(4096, len(wire), 4096))))


async def test_a_connection_closed_before_its_exchange_began_is_lost_not_a_timeout() -> None:
    connection = OriginConnection("http://o.test", 30.0, Home())
    connection.connection_made(Wire())
    connection.connection_lost(None)  # the origin hung up while the request was on its way
    exchange = OriginExchange(connection, head_only=False)
    await exchange.send(b"GET / HTTP/1.1\r\n\r\n", None)
    with pytest.raises(OriginConnectionLost):
        await asyncio.wait_for(exchange.response_head(), 5)


# -- framing and reuse on real sockets ----------------------------------------


async def test_a_chunked_body_trickled_byte_by_byte_arrives_whole_and_reuses() -> None:
    wire = chunked("200 OK", {}, [b"first ", b"second " * 50, b"third"])

    async def trickle(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        for at in range(len(wire)):
            writer.write(wire[at:at + 1])
            await writer.drain()
            await asyncio.sleep(0)
        return True

    async with raw_origin(trickle) as raw, client(raw.url) as origin:
        first, second = await fetch(origin), await fetch(origin)
    assert first[2] == second[2] == b"first " + b"second " * 50 + b"third"
    assert raw.connections == 1


@pytest.mark.parametrize("version", ["1.1", "1.0"])
async def test_a_body_without_length_ends_when_the_connection_closes(version: str) -> None:
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(f"HTTP/{version} 200 OK\r\n\r\n".encode() + b"until close " * 1000)
        return False

    async with raw_origin(answer) as raw, client(raw.url) as origin:
        first, second = await fetch(origin), await fetch(origin)
    assert first[2] == second[2] == b"until close " * 1000
    assert raw.connections == 2


async def test_a_body_cut_short_is_an_error_not_a_lost_connection() -> None:
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        return False

    async with raw_origin(answer) as raw, client(raw.url) as origin:
        with pytest.raises(OriginError, match="broke off the body") as caught:
            await fetch(origin)
    assert not isinstance(caught.value, OriginConnectionLost)


async def test_a_head_response_has_no_body_and_its_connection_is_reused() -> None:
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        length = "1000" if request.method == "HEAD" else "7"
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n".encode())
        if request.method != "HEAD":
            writer.write(b"genuine")
        return True

    async with raw_origin(answer) as raw, client(raw.url) as origin:
        head, get = await fetch(origin, "HEAD"), await fetch(origin)
    assert (head[0], head[1][b"content-length"], head[2]) == (200, b"1000", b"")
    assert get[2] == b"genuine" and raw.connections == 1


async def test_a_body_after_a_head_response_closes_the_connection() -> None:
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(response("200 OK", {}, b"smuggled" if request.method == "HEAD"
                              else b"genuine"))
        return True

    async with raw_origin(answer) as raw, client(raw.url) as origin:
        head, get = await fetch(origin, "HEAD"), await fetch(origin)
    assert (head[2], get[2]) == (b"", b"genuine")
    assert raw.connections == 2


@pytest.mark.parametrize("status", ["204 No Content", "304 Not Modified"])
async def test_204_and_304_have_no_body_whatever_their_length_says(status: str) -> None:
    wire = f"HTTP/1.1 {status}\r\nContent-Length: 7\r\nETag: \"1\"\r\n\r\n".encode()
    async with raw_origin(answering(wire, OK)) as raw, client(raw.url) as origin:
        empty, page = await fetch(origin), await fetch(origin)
    assert (empty[0], empty[2], page[2]) == (int(status[:3]), b"", b"genuine")
    assert raw.connections == 1


@pytest.mark.parametrize(("wire", "reused"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", True),
    (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok", False),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", False),
], ids=["http/1.1", "connection-close", "http/1.0"])
async def test_keep_alive_is_http_1_1_without_connection_close(wire: bytes,
                                                              reused: bool) -> None:
    async with raw_origin(answering(wire)) as raw, client(raw.url) as origin:
        for _ in range(2):
            assert (await fetch(origin))[2] == b"ok"
    assert raw.connections == (1 if reused else 2)


async def test_interim_responses_are_dropped_and_the_connection_reused() -> None:
    async with raw_origin(answering(HINTS + OK)) as raw, client(raw.url) as origin:
        first, second = await fetch(origin), await fetch(origin)
    assert first == second and first[0] == 200 and b"link" not in first[1]
    assert first[2] == b"genuine" and raw.connections == 1


async def test_101_is_a_malformed_response_and_not_retried() -> None:
    wire = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\nPRI * HTTP/2.0"
    async with raw_origin(answering(wire)) as raw, client(raw.url) as origin:
        with pytest.raises(OriginError, match="malformed response: 101"):
            await fetch(origin)
    assert len(raw.requests) == 1


async def test_bytes_on_an_idle_connection_close_it() -> None:
    idle, sent = asyncio.Event(), asyncio.Event()

    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(OK)
        if request.connection == 1:
            await writer.drain()
            await idle.wait()
            writer.write(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            await writer.drain()
            sent.set()
        return True

    async with raw_origin(answer) as raw, client(raw.url) as origin:
        await fetch(origin)
        idle.set()
        await sent.wait()
        await asyncio.sleep(0.05)  # the client's loop reads the bytes (a wait, not a check)
        page = await fetch(origin)
    assert (page[0], page[2], raw.connections) == (200, b"genuine", 2)


async def test_codings_and_redirects_pass_through_untouched() -> None:
    gzipped = b"\x1f\x8b\x08\x00not really gzip"
    wires = (response("200 OK", {"Content-Encoding": "gzip"}, gzipped),
             response("302 Found", {"Location": "/elsewhere"}, b"moved"))
    async with raw_origin(answering(*wires)) as raw, client(raw.url) as origin:
        coded, moved = await fetch(origin), await fetch(origin)
    assert (coded[1][b"content-encoding"], coded[2]) == (b"gzip", gzipped)
    assert (moved[0], moved[1][b"location"], moved[2]) == (302, b"/elsewhere", b"moved")
    assert [r.path for r in raw.requests] == ["/p", "/p"]


# -- what is sent --------------------------------------------------------------


async def test_the_request_is_sent_as_given_with_this_clients_framing() -> None:
    fields = [(b"Host", b"a.test"), (b"X-B", b"2"), (b"content-length", b"99"),
              (b"x-a", b"1"), (b"Expect", b"100-continue")]
    async with raw_origin(answering(OK)) as raw, client(raw.url + "/base/") as origin:
        for method, body in [("GET", None), ("POST", None), ("PUT", Body([b"ab", b"c"]))]:
            await read(await origin.fetch(method, "/p%20q?a=%2F", fields, body))
        await read(await origin.fetch("GET", "/no-host", [], None))
    get, post, put, hostless = raw.requests
    assert get.head == b"GET /base/p%20q?a=%2F HTTP/1.1\r\nHost: a.test\r\nX-B: 2\r\nx-a: 1\r\n\r\n"
    assert post.head.endswith(b"x-a: 1\r\ncontent-length: 0\r\n\r\n")
    assert put.head.endswith(b"x-a: 1\r\ncontent-length: 3\r\n\r\n") and put.body == b"abc"
    host = raw.url.removeprefix("http://").encode()
    assert hostless.head == b"GET /base/no-host HTTP/1.1\r\nhost: " + host + b"\r\n\r\n"


async def test_a_line_break_in_a_field_is_refused_and_nothing_sent() -> None:
    async with raw_origin(answering(OK)) as raw, client(raw.url) as origin:
        with pytest.raises(OriginError, match="line break"):
            await origin.fetch("GET", "/p", [(b"x-a", b"1\r\nx-injected: 1")], None)
    assert raw.connections == 0


# -- the pool --------------------------------------------------------------------


async def test_idle_connections_are_reused_within_the_keepalive_and_not_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(origin_module, "KEEPALIVE_TIMEOUT", 0.2)
    async with raw_origin(answering(OK)) as raw, client(raw.url) as origin:
        await fetch(origin)
        await fetch(origin)
        within = raw.connections
        await asyncio.sleep(0.3)
        await fetch(origin)
    assert (within, raw.connections) == (1, 2)


async def test_an_expired_idle_connection_is_closed_without_another_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(origin_module, "KEEPALIVE_TIMEOUT", 0.2)
    closed = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await reader.read()  # until the client closes
        closed.set()
        writer.close()

    loop = asyncio.get_running_loop()
    async with tcp_origin(serve) as url, client(url) as origin:
        await fetch(origin)
        idle_from = loop.time()
        await asyncio.wait_for(closed.wait(), 5)
    assert loop.time() - idle_from >= 0.15


async def test_at_most_pool_size_idle_connections_are_kept() -> None:
    arrived, all_in = 0, asyncio.Event()

    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        nonlocal arrived
        arrived += 1
        if arrived >= 4:
            all_in.set()
        await all_in.wait()
        writer.write(OK)
        return True

    async with raw_origin(answer) as raw, client(raw.url, timeout=5, pool_size=2) as origin:
        await asyncio.gather(*(fetch(origin) for _ in range(4)))
        await asyncio.gather(*(fetch(origin) for _ in range(3)))
    assert raw.connections == 5  # 2 of the first 4 kept, reused; 1 more opened


# -- failures and timeouts -------------------------------------------------------


@pytest.mark.parametrize(("method", "attempts"), [("GET", 2), ("DELETE", 2), ("POST", 1)])
async def test_a_connection_lost_before_the_answer_is_retried_once_if_idempotent(
        method: str, attempts: int) -> None:
    async def hang_up(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        return False

    async with raw_origin(hang_up) as raw, client(raw.url) as origin:
        with pytest.raises(OriginConnectionLost):
            await fetch(origin, method, body=Body([b"x"]))
    assert [r.connection for r in raw.requests] == list(range(1, attempts + 1))


async def test_a_refused_connection_is_an_error_and_not_retried() -> None:
    async with client(f"http://127.0.0.1:{free_port()}") as origin:
        with pytest.raises(OriginError, match="failed") as caught:
            await fetch(origin)
    assert not isinstance(caught.value, OriginConnectionLost | OriginTimeout)


async def stalls(wire: bytes, timeout: float, *, body: Body | None = None) -> float:
    """Seconds until a request to an origin that writes ``wire`` and no more (reading
    nothing after the request head) raised :class:`OriginTimeout`."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(wire)
        await asyncio.sleep(30)

    loop = asyncio.get_running_loop()
    async with tcp_origin(serve) as url, client(url, timeout=timeout) as origin:
        started = loop.time()
        with pytest.raises(OriginTimeout):
            await fetch(origin, "PUT" if body else "GET", body=body)
        return loop.time() - started


@pytest.mark.parametrize("wire", [b"", b"HTTP/1.1 200 OK\r\nContent", OK[:-3]],
                         ids=["silent", "half-a-head", "half-a-body"])
async def test_an_origin_that_stalls_is_a_timeout(wire: bytes) -> None:
    assert 0.3 <= await stalls(wire, 0.3) < 2


async def test_an_origin_that_stops_reading_the_body_is_a_timeout() -> None:
    assert 0.3 <= await stalls(b"", 0.3, body=Body([b"x" * 1024 * 1024] * 32)) < 3


async def test_a_head_trickling_in_is_not_a_stall() -> None:
    async def trickle(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        for at in range(0, len(OK), 4):
            writer.write(OK[at:at + 4])
            await writer.drain()
            await asyncio.sleep(0.05)
        return True

    async with raw_origin(trickle) as raw, client(raw.url, timeout=0.3) as origin:
        assert (await fetch(origin))[2] == b"genuine"


async def test_an_answer_before_the_body_is_read_ends_the_upload() -> None:
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(response("413 Content Too Large", {}, b"too big"))
        await asyncio.sleep(30)

    async with tcp_origin(refuse) as url, client(url) as origin:
        status, _, body = await asyncio.wait_for(
            fetch(origin, "PUT", body=Body([b"x" * 1024 * 1024] * 32)), 3)
    assert (status, body) == (413, b"too big")


async def test_an_unread_body_stops_the_origin_rather_than_filling_memory() -> None:
    size, written = 64 * 1024 * 1024, asyncio.Event()

    async def flood(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        for _ in range(size // CHUNK):
            writer.write(b"x" * CHUNK)
            await writer.drain()
        written.set()
        return True

    async with raw_origin(flood) as raw, client(raw.url) as origin:
        response = await origin.fetch("GET", "/big", [(b"host", b"a.test")], None)
        await asyncio.sleep(0.3)
        assert not written.is_set()  # the client stopped reading: the origin waits
        assert len(await read(response)) == size


# -- TLS -----------------------------------------------------------------------


def serving_tls(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a self-signed certificate, and the certificate."""
    tls = self_signed(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls.cert, tls.key)
    return context, tls.cert


async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await writer.drain()
    writer.close()


async def test_an_https_origin_is_checked_against_the_trusted_certificates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    context, cert = serving_tls(tmp_path)
    async with tcp_origin(answer_once, ssl=context) as url, client(url) as untrusted:
        with pytest.raises(OriginError, match="certificate verify failed"):
            await fetch(untrusted)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the default context trusts it
        async with client(url) as trusted:
            assert (await fetch(trusted))[2] == b"genuine"
