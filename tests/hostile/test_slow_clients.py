"""Slow clients cannot starve visitors' misses of origin slots.

A slot of ``origin_max_concurrency`` used to be held from before the request was sent
until the response ended: clients trickling a POST body, not reading an uncached page,
or sending a GET whose body never comes each held one, and with every slot held every
visitor's miss waited.  Now a body is read whole before a slot is taken, an origin
response is read at the origin's pace into a buffer while the client is fed from it,
and a body that stalls for ``client_body_timeout`` is answered 408.

The hostile connections are real sockets; that no slot is held is read off the limiter
once each stands where it stalls, and the body timeout runs on a :class:`SteppedClock`
the test moves (nothing here depends on how fast the machine is).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from tests.clocks import SteppedClock
from tests.conftest import until
from tests.hostile.conftest import FrameworkOrigin, address, final_status
from tests.integration.conftest import Proxy, running_proxy
from tests.integration.raw_origin import RawRequest, raw_origin, response

from stoker.origin.slots import LimiterStats

SLOTS = 4
HOSTILE = 2 * SLOTS
"""Hostile connections: twice the slots, so holding one each would leave none."""
BODY_TIMEOUT = 30.0
"""``client_body_timeout``: seconds on the test's :class:`SteppedClock`."""
IDLE = LimiterStats(in_use=0, warm_in_use=0, visitors_waiting=0, warm_waiting=0)


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


def slots(proxy: Proxy) -> LimiterStats:
    """The origin slots held and waited for now."""
    return proxy.stoker.origin.limiter.stats()  # type: ignore[attr-defined,no-any-return]


async def visitor_miss(proxy: Proxy, path: str) -> int:
    """The status of a visitor's miss for ``path``."""
    return (await proxy.client.get(path)).status_code


async def while_bodies_stall(origin_url: str, tmp_path: Path, mode: str, heads: list[bytes],
                             fresh: str, **settings: str) -> tuple[LimiterStats, int]:
    """The origin slots held while every one of ``heads``' declared bodies stalls mid-read
    (each read waiting on the clock, which only the test moves), and the status a
    visitor's miss of ``fresh`` gets meanwhile."""
    clock = SteppedClock()
    async with running_proxy(origin_url, tmp_path, clock=clock, kind=mode,
                             origin_max_concurrency=SLOTS,
                             client_body_timeout=f"{BODY_TIMEOUT:g}s", **settings) as proxy, \
            hostile(proxy, heads):
        await clock.sleeping(BODY_TIMEOUT, HOSTILE)  # every body's read waits for more
        return slots(proxy), await visitor_miss(proxy, fresh)


async def test_trickling_post_bodies_hold_no_origin_slot(framework: FrameworkOrigin,
                                                         tmp_path: Path, mode: str) -> None:
    heads = [b"POST /post/%d HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\nx" % i
             for i in range(HOSTILE)]
    held, status = await while_bodies_stall(framework.url, tmp_path, mode, heads, "/fresh/1")
    assert held == IDLE
    assert status == 200
    assert framework.paths() == ["/fresh/1"]  # no body came whole: no POST was forwarded


async def test_clients_not_reading_a_page_free_its_slot_when_the_origin_is_done(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    heads = [b"GET /big/%d HTTP/1.1\r\nHost: a.test\r\n\r\n" % i for i in range(HOSTILE)]
    async with running_proxy(framework.url, tmp_path, kind=mode,
                             origin_max_concurrency=SLOTS) as proxy, \
            hostile(proxy, heads, receive_buffer=4096):
        # every big page is read whole from the origin, none by its client
        await until(lambda: slots(proxy) == IDLE, "every slot free")
        status = await visitor_miss(proxy, "/fresh/2")
    assert status == 200
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
    async with raw_origin(answer) as origin:
        held, status = await while_bodies_stall(origin.url, tmp_path, mode, heads, "/fresh/3",
                                                origin_timeout="20s")
    assert held == IDLE
    assert status == 200
    assert [request.path for request in origin.requests] == ["/fresh/3"]


async def test_a_stalled_body_is_408_after_client_body_timeout_and_never_forwarded(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    clock = SteppedClock()
    async with running_proxy(framework.url, tmp_path, clock=clock, kind=mode,
                             client_body_timeout=f"{BODY_TIMEOUT:g}s") as proxy:
        reader, writer = await asyncio.open_connection(*address(proxy.url))
        try:
            writer.write(b"POST /post/t HTTP/1.1\r\nHost: a.test\r\n"
                         b"Content-Length: 100\r\n\r\nabc")
            await clock.sleeping(BODY_TIMEOUT)  # the body's read waits for more
            clock.advance(BODY_TIMEOUT - 1)
            early = await read_for(reader, 0.3)
            clock.advance(1)
            data = await read_for(reader, 10, until_status=True)
        finally:
            writer.close()
    assert early == b""  # not answered before client_body_timeout
    assert final_status(data) == 408, data[:120]
    assert framework.seen == []


async def read_for(reader: asyncio.StreamReader, seconds: float, *,
                   until_status: bool = False) -> bytes:
    """What arrives within ``seconds`` (or, ``until_status``, until a final status line
    has, or the connection closes)."""
    data = b""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while chunk := await reader.read(65536):
                data += chunk
                if until_status and final_status(data) is not None:
                    break
    return data


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
