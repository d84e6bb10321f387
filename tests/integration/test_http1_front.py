"""Stoker's HTTP/1.1 front (``server = "stoker"``): fresh hits answered in the protocol.

Raw sockets, so the bytes themselves are compared: a hit written by the front must be
exactly what uvicorn writes for the same hit through the ASGI app, responses must keep
the requests' order when they are pipelined, and connections close when uvicorn would.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import serving
from tests.integration.conftest import Origin

from stoker.asgi import Message, Send
from stoker.clock import FakeClock
from stoker.proxy.access_log import AccessLogApp
from stoker.proxy.asgi_proxy import ProxyApp
from stoker.runtime import Stoker
from stoker.settings import settings_from

CACHEABLE = [("cache-control", "max-age=600")]


class Front:
    def __init__(self, stoker: Stoker, app: ProxyApp, front: str, plain: str) -> None:
        self.stoker = stoker
        self.app = app
        self.front = front
        self.plain = plain
        self.asgi_hits = 0
        """Requests the fast path saw through ASGI (the front's own answers skip it)."""
        try_serve = app.hot.try_serve

        async def counted(scope: Message, send: Send) -> bool:
            self.asgi_hits += 1
            return await try_serve(scope, send)

        app.hot.try_serve = counted  # type: ignore[method-assign]


@pytest.fixture
async def front(origin: Origin, tmp_path: Path) -> AsyncIterator[Front]:
    """One Stoker behind two listeners: the front, and the same server without the front's
    hits (the proxy behind its access log, which the front leaves to ASGI)."""
    stoker = await Stoker.open(settings_from({"origin": origin.url,
                                              "data_dir": str(tmp_path)}),
                               clock=FakeClock(auto_advance=False))
    app = ProxyApp(stoker.pipeline)
    through_asgi = AccessLogApp(app, io.StringIO(), stoker.clock, json_format=False,
                                redact=(), trusted=stoker.pipeline.config.trusted)
    try:
        async with serving(app, kind="stoker") as front_url, \
                serving(through_asgi, kind="stoker") as plain_url:
            yield Front(stoker, app, front_url, plain_url)
    finally:
        await stoker.close()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def exchange(url: str, raw: bytes, responses: int = 1) -> tuple[list[bytes], bool]:
    """Send ``raw`` on one connection; read ``responses`` whole responses (Content-Length
    framed); also tell whether the server closed the connection after them."""
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(url))
    try:
        writer.write(raw)
        await writer.drain()
        out = []
        for _ in range(responses):
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"\r\ncontent-length: (\d+)\r\n", head, re.I)[1])  # type: ignore[index]
            out.append(head + await reader.readexactly(length))
        try:
            closed = await asyncio.wait_for(reader.read(1), 0.5) == b""
        except TimeoutError:
            closed = False
        return out, closed
    finally:
        writer.close()


def get(path: str, *, version: bytes = b"1.1", extra: bytes = b"") -> bytes:
    return b"GET %s HTTP/%s\r\nHost: site.test\r\n%s\r\n" % (path.encode(), version, extra)


async def test_a_hit_written_by_the_front_is_byte_for_byte_the_asgi_one(
        origin: Origin, front: Front) -> None:
    origin.app.set("/page", headers=[*CACHEABLE, ("etag", '"v1"')], body=b"<p>page</p>" * 50)
    await exchange(front.plain, get("/page"))  # the miss
    await front.stoker.store.flush()
    hits, asgi = front.stoker.pipeline.stats["hit"], front.asgi_hits
    [by_front], _ = await exchange(front.front, get("/page"))
    assert front.asgi_hits == asgi  # answered in the protocol
    [by_asgi], _ = await exchange(front.plain, get("/page"))
    assert front.asgi_hits == asgi + 1
    assert b"cache-status: stoker; hit" in by_front.lower()
    assert by_front == by_asgi
    assert front.stoker.pipeline.stats["hit"] == hits + 2  # both counted
    assert origin.app.count("/page") == 1


async def test_pipelined_requests_are_answered_in_order(origin: Origin, front: Front) -> None:
    origin.app.set("/hot", headers=CACHEABLE, body=b"hot")
    origin.app.set("/cold", headers=CACHEABLE, body=b"cold", delay=0.2)
    await exchange(front.front, get("/hot"))
    raw = get("/hot") + get("/cold") + get("/hot") + get("/hot")
    asgi = front.asgi_hits
    answers, closed = await exchange(front.front, raw, responses=4)
    assert front.asgi_hits == asgi + 1  # only the miss went through ASGI
    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in answers] == [
        b"hot", b"cold", b"hot", b"hot"]
    assert not closed


async def test_a_long_pipeline_of_hits_is_answered_whole(origin: Origin, front: Front) -> None:
    origin.app.set("/p", headers=CACHEABLE, body=b"p")
    await exchange(front.front, get("/p"))
    asgi = front.asgi_hits
    answers, _ = await exchange(front.front, get("/p") * 3000, responses=3000)
    assert all(answer.endswith(b"\r\n\r\np") for answer in answers)
    assert front.asgi_hits == asgi
    assert origin.app.count("/p") == 1


@pytest.mark.parametrize(("version", "extra"), [(b"1.0", b""), (b"1.1", b"Connection: close\r\n")])
async def test_the_connection_closes_after_a_hit_when_uvicorn_would_close_it(
        origin: Origin, front: Front, version: bytes, extra: bytes) -> None:
    origin.app.set("/c", headers=CACHEABLE, body=b"c")
    await exchange(front.front, get("/c"))
    [by_front], closed = await exchange(front.front, get("/c", version=version, extra=extra))
    [by_asgi], _ = await exchange(front.plain, get("/c", version=version, extra=extra))
    assert closed
    assert b"\r\nconnection: close\r\n" in by_front
    assert by_front == by_asgi
