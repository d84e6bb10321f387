"""Slow clients cannot starve visitors' misses of origin slots.

A slot of ``origin_max_concurrency`` used to be held from before the request was sent
until the response ended: clients trickling a POST body, not reading an uncached page,
or sending a GET whose body never comes each held one, and with every slot held every
visitor's miss waited.  Now a body is read whole before a slot is taken, an origin
response is read at the origin's pace into a buffer while the client is fed from it,
and a body that stalls for ``client_body_timeout`` is answered 408.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

from tests.hostile.conftest import FrameworkOrigin, address, exchange, final_status
from tests.integration.conftest import Proxy, running_proxy
from tests.integration.raw_origin import RawRequest, raw_origin, response

SLOTS = 4
HOSTILE = 2 * SLOTS
"""Hostile connections: twice the slots, so holding one each would leave none."""


@contextlib.asynccontextmanager
async def hostile(proxy: Proxy, heads: list[bytes], *,
                  receive_buffer: int | None = None) -> AsyncIterator[None]:
    """Connections that send ``heads`` (one each) and then neither send nor read."""
    socks = []
    try:
        for head in heads:
            sock = socket.socket()
            if receive_buffer is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, address(proxy.url))
            await asyncio.get_running_loop().sock_sendall(sock, head)
            socks.append(sock)
        await asyncio.sleep(0.5)  # let the server take them
        yield
    finally:
        for sock in socks:
            sock.close()


async def visitor_miss(proxy: Proxy, path: str) -> float:
    """Seconds a visitor's miss for ``path`` takes (it must be a 200)."""
    started = time.monotonic()
    answer = await asyncio.wait_for(proxy.client.get(path), 10)
    assert answer.status_code == 200
    return time.monotonic() - started


async def test_trickling_post_bodies_hold_no_origin_slot(framework: FrameworkOrigin,
                                                         tmp_path: Path, mode: str) -> None:
    heads = [b"POST /post/%d HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\nx" % i
             for i in range(HOSTILE)]
    async with running_proxy(framework.url, tmp_path, kind=mode,
                             origin_max_concurrency=SLOTS) as proxy, hostile(proxy, heads):
        took = await visitor_miss(proxy, "/fresh/1")
    assert took < 2.0
    assert framework.paths() == ["/fresh/1"]  # no body came whole: no POST was forwarded


async def test_clients_not_reading_a_page_free_its_slot_when_the_origin_is_done(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    heads = [b"GET /big/%d HTTP/1.1\r\nHost: a.test\r\n\r\n" % i for i in range(HOSTILE)]
    async with running_proxy(framework.url, tmp_path, kind=mode,
                             origin_max_concurrency=SLOTS) as proxy, \
            hostile(proxy, heads, receive_buffer=4096):
        took = await visitor_miss(proxy, "/fresh/2")
        limiter = proxy.stoker.origin.limiter  # type: ignore[attr-defined]
        for _ in range(50):
            if limiter.stats().in_use == 0:
                break
            await asyncio.sleep(0.1)
        held = limiter.stats().in_use
    assert took < 2.0
    assert held == 0  # every big page was read whole from the origin, none by its client
    assert sorted(framework.paths()) == sorted(
        ["/fresh/2", *(f"/big/{i}" for i in range(HOSTILE))])


async def test_gets_whose_body_never_comes_hold_no_origin_slot(tmp_path: Path,
                                                               mode: str) -> None:
    """Against an origin that waits for a declared body (RawOrigin reads it whole)."""
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(response("200 OK", {"Cache-Control": "max-age=60"}, b"page"))
        return True

    heads = [b"GET /stalled/%d HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\nx" % i
             for i in range(HOSTILE)]
    async with raw_origin(answer) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode, origin_max_concurrency=SLOTS,
                          origin_timeout="20s") as proxy, hostile(proxy, heads):
        took = await visitor_miss(proxy, "/fresh/3")
    assert took < 2.0
    assert [request.path for request in origin.requests] == ["/fresh/3"]


async def test_a_stalled_body_is_408_after_client_body_timeout_and_never_forwarded(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode,
                             client_body_timeout="1s") as proxy:
        data, took = await exchange(proxy.url, b"POST /post/t HTTP/1.1\r\nHost: a.test\r\n"
                                               b"Content-Length: 100\r\n\r\nabc", total=6)
    assert final_status(data) == 408, data[:120]
    assert 0.9 < took < 3.0
    assert framework.seen == []


async def test_a_large_body_is_forwarded_whole_with_its_length(framework: FrameworkOrigin,
                                                               tmp_path: Path,
                                                               mode: str) -> None:
    """A body past what is kept in memory waits in a temporary file, and the origin gets
    exactly its bytes with a Content-Length, whether the client sent it chunked or not."""
    body = bytes(range(256)) * 4096  # 1 MiB
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        sized = await proxy.client.post("/post/sized", content=body)

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 100_000):
                yield body[start:start + 100_000]

        streamed = await proxy.client.post("/post/chunked", content=chunks())
    assert sized.status_code == streamed.status_code == 200
    received = {path: (headers.get("content-length"), got)
                for path, _, headers, got in framework.seen}
    assert received == {"/post/sized": (str(len(body)), body),
                        "/post/chunked": (str(len(body)), body)}
