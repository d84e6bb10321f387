"""The request core without a transport: a parsed request in, a Reply (with its Outcome,
the entry it used, and its body as bytes or a stream) out, against a real origin."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.integration.conftest import Origin

from stoker.app.stoker import Stoker
from stoker.cache.outcome import Kind
from stoker.clock import FakeClock
from stoker.config.settings import settings_from
from stoker.origin.context import RequestContext, warm_context
from stoker.proxy.reply import Reply
from stoker.proxy.request import RequestInfo
from stoker.proxy.request_body import BodyBrokenOff, no_body

CACHEABLE = [("cache-control", "max-age=60")]


@pytest.fixture
async def stoker(origin: Origin, tmp_path: object) -> AsyncIterator[Stoker]:
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path)})
    opened = await Stoker.open(settings, clock=FakeClock(auto_advance=False))
    try:
        yield opened
    finally:
        await opened.close()


def get(path: str, *, method: str = "GET", context: RequestContext | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (), body: bool = False) -> RequestInfo:
    fields = [(b"host", b"site.test"), *headers]
    if body:
        fields.append((b"content-length", b"3"))
    return RequestInfo(method=method, scheme="http", host="site.test", path=path, query="",
                       headers=fields, client="203.0.113.9",
                       context=context or RequestContext(), declares_body=body)


async def read(reply: Reply) -> bytes:
    if isinstance(reply.body, bytes):
        return reply.body
    try:
        return b"".join([piece async for piece in reply.body])
    finally:
        await reply.body.aclose()


async def test_a_miss_then_a_hit_with_the_entry_it_used(origin: Origin, stoker: Stoker) -> None:
    origin.app.set("/p", headers=CACHEABLE, body=b"page")
    miss = await stoker.pipeline.serve(get("/p"), no_body())
    assert (miss.status, await read(miss)) == (200, b"page")
    assert miss.outcome.kind is Kind.MISS and miss.outcome.stored
    hit = await stoker.pipeline.serve(get("/p"), no_body())
    assert hit.outcome.kind is Kind.HIT and hit.entry is not None
    assert hit.entry.url == "http://site.test/p"
    assert await read(hit) == b"page"
    assert (b"cache-status", b"stoker; hit; ttl=60") in hit.fields()
    assert origin.app.count("/p") == 1


async def test_a_large_body_is_a_stream_read_at_the_readers_pace(origin: Origin,
                                                                 stoker: Stoker) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB: past the whole-reply limit, into a body file
    origin.app.set("/big", headers=CACHEABLE, body=big)
    miss = await stoker.pipeline.serve(get("/big"), no_body())
    assert not isinstance(miss.body, bytes)
    assert await read(miss) == big  # read before its fsync: the store may still be running
    await stoker.pipeline.drain()  # ... and drain waits for it
    hit = await stoker.pipeline.serve(get("/big"), no_body())
    assert hit.outcome.kind is Kind.HIT and not isinstance(hit.body, bytes)
    assert await read(hit) == big


async def test_a_reader_gone_midway_leaves_the_store_complete(origin: Origin,
                                                             stoker: Stoker) -> None:
    big = b"z" * (2 * 1024 * 1024)
    origin.app.set("/gone", headers=CACHEABLE, body=big)
    miss = await stoker.pipeline.serve(get("/gone"), no_body())
    assert not isinstance(miss.body, bytes)
    await anext(miss.body)
    await miss.body.aclose()  # the client went away after one piece
    await stoker.pipeline.drain()
    hit = await stoker.pipeline.serve(get("/gone"), no_body())
    assert hit.outcome.kind is Kind.HIT and await read(hit) == big


async def test_a_warm_visits_context_carries_its_allowance_and_its_origin_wait(
        origin: Origin, stoker: Stoker) -> None:
    origin.app.set("/w", headers=CACHEABLE, body=b"w")
    context = warm_context(2)
    reply = await stoker.pipeline.serve(get("/w", context=context), no_body())
    await read(reply)
    assert context.warm and len(context.origin_waits) == 1  # one origin request, timed
    assert len(stoker.pipeline.hits) == 0  # warm visits are not counted as visits


async def test_a_request_body_that_breaks_off_is_refused_and_closes(origin: Origin,
                                                                   stoker: Stoker) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"a"
        raise BodyBrokenOff("the request body ended before its end")

    reply = await stoker.pipeline.serve(get("/post", method="POST", body=True), broken())
    assert reply.status == 400 and reply.close
    assert reply.outcome.kind is Kind.ERROR
    assert origin.app.count("/post") == 0


async def test_a_head_gets_the_gets_fields(origin: Origin, stoker: Stoker) -> None:
    origin.app.set("/h", headers=CACHEABLE, body=b"12345")
    reply = await stoker.pipeline.serve(get("/h", method="HEAD"), no_body())
    assert (b"content-length", b"5") in reply.fields()
    assert reply.outcome.kind is Kind.MISS
