"""``Expect: 100-continue`` is answered by Stoker and never forwarded, and
``origin_timeout`` bounds every wait on the origin, the request body's included.

Stoker used to forward ``Expect``; against an origin that never sends ``100 Continue``
(allowed, and common) neither side sent the body and the request got no answer for
minutes (``curl -T`` sends the header for uploads over 1 MB).  An origin that stops
reading a request body held it forever: the origin client's read timeout only starts
once the body is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.hostile.conftest import exchange, final_status
from tests.integration.conftest import running_proxy
from tests.integration.raw_origin import RawRequest, raw_origin, response


async def answer_posted(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    """Never a 100: the body is read (RawOrigin waits for it), then answered."""
    writer.write(response("200 OK", {"Cache-Control": "no-store"}, b"got %d" % len(
        request.body)))
    return True


async def test_expect_100_continue_is_answered_by_stoker_and_not_forwarded(
        tmp_path: Path, mode: str) -> None:
    head = (b"POST /upload HTTP/1.1\r\nHost: a.test\r\nExpect: 100-continue\r\n"
            b"Content-Length: 5\r\n\r\n")
    async with raw_origin(answer_posted) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode, origin_timeout="5s") as proxy:
        data, took = await exchange(proxy.url, head, then=b"hello", wait=1.0, total=8)
    assert data.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), data[:80]
    assert final_status(data) == 200 and data.endswith(b"got 5"), data[-80:]
    assert took < 3.0
    [forwarded] = origin.requests
    assert forwarded.body == b"hello"
    assert b"expect" not in forwarded.head.lower()


@asynccontextmanager
async def deaf_origin() -> AsyncIterator[str]:
    """An origin that reads a request's head and then nothing more, never answering."""
    connections: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.Event().wait()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        for writer in connections:
            writer.close()
        server.close()


async def test_an_origin_that_stops_reading_the_body_is_a_timeout(tmp_path: Path,
                                                                  mode: str) -> None:
    body = b"x" * (32 * 1024 * 1024)  # far more than the sockets between them buffer
    async with deaf_origin() as origin_url, \
            running_proxy(origin_url, tmp_path, kind=mode, origin_timeout="1s") as proxy:
        answer = await asyncio.wait_for(proxy.client.put("/upload", content=body), 15)
    assert answer.status_code == 504
