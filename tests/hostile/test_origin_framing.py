"""The origin client's framing is its own: for any request it sends, the length it
declares is the number of body bytes it writes, whatever framing fields the caller's
headers carry, so a pooled connection never falls out of step (the desync behind the
GET-body cache poisoning).

Property test over methods, framing-like headers a client may have sent, and bodies
(none, empty, one piece, many pieces, past what memory keeps); the origin is an h11
server parsing every request on one kept-alive connection, so a byte too many or too few
shows up as the next request failing to parse.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import h11
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.origin.http import HttpOrigin


@dataclass
class Parsed:
    """What the h11 origin parsed: each request's head fields and its body."""

    requests: list[tuple[bytes, list[tuple[bytes, bytes]], bytes]] = field(
        default_factory=list)
    errors: list[str] = field(default_factory=list)


async def h11_origin(parsed: Parsed, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
    conn = h11.Connection(h11.SERVER)
    current: tuple[bytes, list[tuple[bytes, bytes]]] | None = None
    body = b""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                conn.receive_data(data)
                if not data:
                    return
            elif isinstance(event, h11.Request):
                current, body = (event.method, list(event.headers)), b""
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert current is not None
                parsed.requests.append((*current, body))
                answer = conn.send(h11.Response(status_code=200, headers=[
                    (b"content-length", b"2")]))
                if current[0] != b"HEAD":
                    answer += conn.send(h11.Data(data=b"ok"))
                writer.write(answer + conn.send(h11.EndOfMessage()))
                await writer.drain()
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return
    except h11.RemoteProtocolError as error:
        parsed.errors.append(str(error))
    finally:
        writer.close()


@dataclass
class Body:
    """A request body known whole, in pieces (as :class:`RequestBody` is)."""

    pieces: list[bytes]

    @property
    def size(self) -> int:
        return sum(len(piece) for piece in self.pieces)

    async def chunks(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


FRAMING = st.sampled_from([
    (b"content-length", b"45"), (b"content-length", b"0"), (b"transfer-encoding", b"chunked"),
    (b"Transfer-Encoding", b"gzip, chunked"), (b"expect", b"100-continue"),
    (b"Content-Length", b"999999"), (b"x-other", b"1"),
])
BODIES = st.one_of(
    st.none(),
    st.lists(st.binary(max_size=70_000), max_size=4).map(Body),
)
METHODS = st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
REQUESTS = st.lists(st.tuples(METHODS, st.lists(FRAMING, max_size=3), BODIES),
                    min_size=1, max_size=4)


async def send_all(requests: list[tuple[str, list[tuple[bytes, bytes]], Body | None]]
                   ) -> Parsed:
    parsed = Parsed()
    server = await asyncio.start_server(lambda r, w: h11_origin(parsed, r, w), "127.0.0.1", 0)
    origin = HttpOrigin(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", timeout=5)
    try:
        for method, extra, body in requests:
            response = await origin.fetch(method, "/p", [(b"host", b"a.test"), *extra], body)
            async for _ in response.chunks:
                pass
            await response.close()
    finally:
        await origin.close()
        server.close()
    return parsed


@settings(max_examples=60)
@given(REQUESTS)
def test_the_declared_length_is_the_body_written(
        requests: list[tuple[str, list[tuple[bytes, bytes]], Body | None]]) -> None:
    parsed = asyncio.run(send_all(requests))
    assert parsed.errors == []
    assert len(parsed.requests) == len(requests)
    for (method, _, body), (sent_method, headers, received) in zip(
            requests, parsed.requests, strict=True):
        names = [name.lower() for name, _ in headers]
        assert sent_method == method.encode()
        assert b"transfer-encoding" not in names and b"expect" not in names
        lengths = [value for name, value in headers if name.lower() == b"content-length"]
        expected = b"".join(body.pieces) if body is not None else b""
        assert received == expected
        if body is not None:
            assert lengths == [str(body.size).encode()]
        else:
            assert lengths in ([], [b"0"])  # POST/PUT/PATCH say an explicit 0 (RFC 9110 §8.6)
