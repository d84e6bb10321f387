"""Stoker's HTTP/1.1 front (``server = "stoker"``): fresh hits answered in the protocol.

Raw sockets, so the bytes themselves are compared: a hit written by the front must be
exactly what the front's ASGI exchange writes for the same hit through the app,
responses must keep the requests' order when they are pipelined, and connections close
when the request asks for it (HTTP/1.0, ``Connection: close``).
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import free_port, serving
from tests.integration.conftest import Origin, drop_stoker_keys
from tests.integration.test_redis_down import listening, own_redis
from tests.job_backends import pg_schema, schema_url

from stoker.adapters.access_log import AccessLogApp
from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.asgi import Message, Send
from stoker.clock import FakeClock
from stoker.config.settings import settings_from
from stoker.proxy.reply import Reply
from stoker.purge.scope import PurgeScope
from stoker.server.front import heads as front_heads

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
        self.parsed = 0
        """Requests the front looked up from their parsed head (not from its bytes)."""
        key_of = app.hot.key_of

        def counted_key(*args: Any) -> str | None:
            self.parsed += 1
            return key_of(*args)

        app.hot.key_of = counted_key  # type: ignore[method-assign]
        self.served = 0
        """Requests the request core answered (the fast path's answers skip it)."""
        serve = stoker.pipeline.serve

        async def counted_serve(*args: Any) -> Reply:
            self.served += 1
            return await serve(*args)

        stoker.pipeline.serve = counted_serve  # type: ignore[method-assign]


@asynccontextmanager
async def fronted(origin: Origin, data_dir: Path, **settings: str) -> AsyncIterator[Front]:
    """One Stoker behind two listeners: the front, and the same server without the front's
    hits (the proxy behind its access log, which the front leaves to ASGI)."""
    stoker = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(data_dir),
                                              **settings}),
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


@pytest.fixture
async def front(origin: Origin, tmp_path: Path) -> AsyncIterator[Front]:
    async with fronted(origin, tmp_path) as running:
        yield running


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
    asgi, served = front.asgi_hits, front.served
    answers, closed = await exchange(front.front, raw, responses=4)
    assert front.asgi_hits == asgi  # the front reads its requests without ASGI
    assert front.served == served + 1  # only the miss reached the request core
    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in answers] == [
        b"hot", b"cold", b"hot", b"hot"]
    assert not closed


async def until_closed(url: str, raw: bytes) -> bytes:
    """Send ``raw`` on one connection; everything read until the server closes it, less
    the origin's ``Date`` lines (the one field two answers a second apart may differ by)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(url))
    try:
        writer.write(raw)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    return re.sub(rb"(?im)^date: [^\r\n]*\r\n", b"", answer)


@pytest.mark.parametrize("raw", [
    b"GET /%s HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n",
    b"HEAD /%s HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n",
    b"GET /%s HTTP/1.0\r\nHost: site.test\r\n\r\n",
    b"POST /%s HTTP/1.1\r\nHost: site.test\r\nContent-Length: 4\r\n"
    b"Connection: close\r\n\r\nbody",
    b"GET /%s HTTP/1.1\r\nHost: bad host\r\n\r\n",
    b"GET /%s HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
], ids=["miss", "head", "http10", "post", "bad-host", "two-hosts"])
async def test_what_the_core_answers_the_front_writes_byte_for_byte_as_asgi_does(
        origin: Origin, front: Front, raw: bytes) -> None:
    """A request the fast path does not answer is read by the front without a scope and
    its reply written without ASGI messages: the same bytes as through ASGI."""
    for name in ("by-front", "by-asgi"):
        origin.app.set(f"/{name}", headers=CACHEABLE, body=b"<p>page</p>" * 50)
    asgi = front.asgi_hits
    by_front = await until_closed(front.front, raw % b"by-front")
    assert front.asgi_hits == asgi
    by_asgi = await until_closed(front.plain, raw % b"by-asgi")
    assert by_front == by_asgi and by_front.startswith(b"HTTP/1.1 ")


async def test_a_hit_held_for_the_batch_leaves_before_a_400_to_the_next_request(
        origin: Origin, front: Front) -> None:
    origin.app.set("/hot", headers=CACHEABLE, body=b"hot")
    await exchange(front.front, get("/hot"))
    answers, closed = await exchange(front.front, get("/hot") + b"NOT HTTP AT ALL\r\n\r\n",
                                     responses=2)
    assert answers[0].endswith(b"\r\n\r\nhot")
    assert answers[1].startswith(b"HTTP/1.1 400 ")
    assert closed


async def test_hits_on_many_connections_at_once_are_each_answered(
        origin: Origin, front: Front) -> None:
    """Requests that arrive together are answered in one batch (one loop iteration): each
    connection gets its own response, whole."""
    for name in ("a", "b"):
        origin.app.set(f"/{name}", headers=CACHEABLE, body=name.encode() * 3000)
        await exchange(front.front, get(f"/{name}"))
    asgi = front.asgi_hits
    answers = await two_each_on_40_connections(_port(front.front))
    for number, pair in enumerate(answers):
        body = (b"a" if number % 2 else b"b") * 3000
        assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in pair] == [body, body]
    assert front.asgi_hits == asgi


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


async def read_response(reader: asyncio.StreamReader) -> bytes:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = int(re.search(rb"\r\ncontent-length: (\d+)\r\n", head, re.I)[1])  # type: ignore[index]
    return head + await reader.readexactly(length)


async def reads(url: str, *chunks: bytes, responses: int) -> list[bytes]:
    """Send ``chunks`` as separate reads on one connection (a pause between them), then
    read ``responses`` responses, and check that no more bytes follow them."""
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(url))
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.05)
        answers = [await read_response(reader) for _ in range(responses)]
        with pytest.raises(TimeoutError):
            extra = await asyncio.wait_for(reader.read(1), 0.3)
            pytest.fail(f"more than {responses} responses: {extra!r}…")
        return answers
    finally:
        writer.close()


async def test_a_head_answered_again_from_its_bytes_is_the_same_answer(
        origin: Origin, front: Front) -> None:
    origin.app.set("/again", headers=CACHEABLE, body=b"again")
    await exchange(front.front, get("/again"))  # the miss
    asgi, hits, parsed = front.asgi_hits, front.stoker.pipeline.stats["hit"], front.parsed
    answers = await reads(front.front, *[get("/again")] * 4, responses=4)
    assert len(set(answers)) == 1
    assert answers[0].endswith(b"\r\n\r\nagain")
    assert front.parsed == parsed + 2  # seen, then remembered; the rest from the bytes
    assert front.asgi_hits == asgi
    assert front.stoker.pipeline.stats["hit"] == hits + 4
    assert origin.app.count("/again") == 1


async def test_a_body_that_reads_like_a_known_head_is_a_body(origin: Origin,
                                                            front: Front) -> None:
    """A request body whose bytes are a remembered head must reach the origin as the body,
    never be answered as a request of its own (no request smuggling)."""
    origin.app.set("/known", headers=CACHEABLE, body=b"known")
    await reads(front.front, get("/known"), get("/known"), responses=2)  # remembered now
    origin.app.set("/form", body=b"form")
    smuggled = get("/known")
    post = (b"POST /form HTTP/1.1\r\nHost: site.test\r\nContent-Length: %d\r\n\r\n"
            % len(smuggled))
    [answer] = await reads(front.front, post, smuggled, responses=1)
    assert answer.endswith(b"\r\n\r\nform")
    assert origin.app.requests[-1][:2] == ("POST", "/form")


async def test_a_head_with_a_body_is_not_remembered(origin: Origin, front: Front) -> None:
    origin.app.set("/cl", headers=CACHEABLE, body=b"cl")
    await exchange(front.front, get("/cl"))
    with_body = get("/cl", extra=b"Content-Length: 4\r\n")
    # the head alone, then its body in a later read, twice: each body is read as a body
    answers = await reads(front.front, with_body, b"abcd", with_body, b"efgh", get("/cl"),
                          responses=3)
    assert all(answer.endswith(b"\r\n\r\ncl") for answer in answers)


async def test_pipelined_reads_are_parsed_not_looked_up(origin: Origin, front: Front) -> None:
    origin.app.set("/a", headers=CACHEABLE, body=b"a")
    origin.app.set("/b", headers=CACHEABLE, body=b"b")
    await reads(front.front, get("/a"), get("/a"), get("/b"), get("/b"), responses=4)
    parsed = front.parsed
    answers = await reads(front.front, get("/a") + get("/b"), get("/a") + get("/b"),
                          responses=4)
    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in answers] == [b"a", b"b", b"a", b"b"]
    assert front.parsed == parsed + 4


async def test_a_version_bump_and_a_purge_reach_remembered_heads(origin: Origin,
                                                                  front: Front) -> None:
    origin.app.set("/v", headers=CACHEABLE, body=b"one")
    await reads(front.front, get("/v"), get("/v"), responses=2)
    origin.app.set("/v", headers=CACHEABLE, body=b"two")
    await front.stoker.purger.purge(PurgeScope(everything=True))
    [after_bump] = await reads(front.front, get("/v"), responses=1)
    assert after_bump.endswith(b"two")
    origin.app.set("/v", headers=CACHEABLE, body=b"three")
    await front.stoker.purger.purge(PurgeScope(urls=("http://site.test/v",)))
    [after_purge] = await reads(front.front, get("/v"), responses=1)
    assert after_purge.endswith(b"three")


async def test_an_http10_head_answered_from_its_bytes_still_closes(origin: Origin,
                                                                   front: Front) -> None:
    origin.app.set("/old", headers=CACHEABLE, body=b"old")
    await exchange(front.front, get("/old"))
    parsed = front.parsed
    for _ in range(3):  # seen, remembered, then answered from its bytes
        [answer], closed = await exchange(front.front, get("/old", version=b"1.0"))
        assert closed
        assert b"\r\nconnection: close\r\n" in answer
    assert front.parsed == parsed + 2


async def test_a_full_table_of_known_heads_is_forgotten(origin: Origin, front: Front,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(front_heads, "KNOWN_HEADS", 1)
    origin.app.set("/a", headers=CACHEABLE, body=b"a")
    origin.app.set("/b", headers=CACHEABLE, body=b"b")
    # each: a miss, a hit seen, a hit remembered
    await reads(front.front, *[get("/a")] * 3, *[get("/b")] * 3, responses=6)
    parsed = front.parsed
    await reads(front.front, get("/b"), responses=1)  # remembered
    assert front.parsed == parsed
    await reads(front.front, get("/a"), responses=1)  # forgotten when /b filled the table
    assert front.parsed == parsed + 1


async def test_an_l2_hit_is_answered_by_the_front_too(origin: Origin, tmp_path: Path) -> None:
    """With nothing kept in L1, a fresh hit read from L2 (inline) is written by the front,
    byte for byte what the ASGI path writes for it."""
    async with fronted(origin, tmp_path, l1_max_bytes="0") as counted:
        origin.app.set("/deep", headers=CACHEABLE, body=b"deep")
        await exchange(counted.plain, get("/deep"))  # the miss
        await counted.stoker.store.flush()
        key = counted.stoker.pipeline.keying.key_for_url("http://site.test/deep")
        assert counted.stoker.store.get_l1(key) is None
        asgi = counted.asgi_hits
        [by_front], _ = await exchange(counted.front, get("/deep"))
        assert counted.asgi_hits == asgi  # answered in the protocol
        [by_asgi], _ = await exchange(counted.plain, get("/deep"))
        assert counted.asgi_hits == asgi + 1
    assert by_front == by_asgi
    assert by_front.endswith(b"\r\n\r\ndeep")
    assert origin.app.count("/deep") == 1


REDIS_FRONT_URL = "redis://127.0.0.1:6379/12"
"""The Redis database of the front's Redis-tier tests: emptied of Stoker's keys around them."""


@asynccontextmanager
async def waited_for(origin: Origin, data_dir: Path, tier: str) -> AsyncIterator[Front]:
    """A front over an L1 that holds nothing and an L2 that must be waited for: SQLite read
    on its thread, or Redis."""
    if tier == "sqlite-thread":
        async with fronted(origin, data_dir, l1_max_bytes="0", l2_inline_reads="false") as f:
            yield f
        return
    await drop_stoker_keys(REDIS_FRONT_URL)
    try:
        with pg_schema(migrated=False) as schema:
            async with fronted(origin, data_dir, l1_max_bytes="0", l2_url=REDIS_FRONT_URL,
                               database_url=schema_url(schema)) as f:
                yield f
    finally:
        await drop_stoker_keys(REDIS_FRONT_URL)


def count_l2_reads(front: Front) -> list[str]:
    """The primary keys L2 is asked for from now on (the tier's ``get``, wrapped)."""
    reads: list[str] = []
    l2 = front.stoker.l2
    real_get = l2.get

    async def counting_get(primary_key: str) -> list[Any]:
        reads.append(primary_key)
        return await real_get(primary_key)

    l2.get = counting_get  # type: ignore[method-assign]
    return reads


@pytest.mark.parametrize("tier", ["sqlite-thread", "redis"])
async def test_an_l2_hit_waited_for_is_answered_by_the_front_too(
        origin: Origin, tmp_path: Path, tier: str) -> None:
    """Where L2 must be waited for, the front still writes the fresh hit it reads, byte for
    byte what the ASGI path writes for it."""
    async with waited_for(origin, tmp_path, tier) as counted:
        origin.app.set("/deep", headers=[*CACHEABLE, ("etag", '"d"')], body=b"deep" * 300)
        await exchange(counted.plain, get("/deep"))  # the miss
        await counted.stoker.store.flush()
        key = counted.stoker.pipeline.keying.key_for_url("http://site.test/deep")
        assert counted.stoker.store.get_l1(key) is None
        assert counted.stoker.store.read_now(key) is None  # L2 must be waited for
        asgi, hits = counted.asgi_hits, counted.stoker.pipeline.stats["hit"]
        [by_front], _ = await exchange(counted.front, get("/deep"))
        assert counted.asgi_hits == asgi  # answered by the front, not the ASGI fast path
        [by_asgi], _ = await exchange(counted.plain, get("/deep"))
        assert counted.asgi_hits == asgi + 1
        [closing], closed = await exchange(counted.front, get("/deep", version=b"1.0"))
        [closing_asgi], _ = await exchange(counted.plain, get("/deep", version=b"1.0"))
        assert counted.stoker.pipeline.stats["hit"] == hits + 4
    assert by_front == by_asgi
    assert by_front.endswith(b"\r\n\r\n" + b"deep" * 300)
    assert closed and closing == closing_asgi
    assert origin.app.count("/deep") == 1


@pytest.mark.parametrize("tier", ["sqlite-thread", "redis"])
async def test_requests_waiting_for_l2_are_answered_in_order_and_misses_read_it_once(
        origin: Origin, tmp_path: Path, tier: str) -> None:
    """Pipelined hits and a miss, each read from L2 in turn: answered in order; the miss's
    read is handed to the pipeline, which reads L2 no more."""
    async with waited_for(origin, tmp_path, tier) as counted:
        origin.app.set("/hot", headers=CACHEABLE, body=b"hot")
        origin.app.set("/cold", headers=CACHEABLE, body=b"cold", delay=0.2)
        await exchange(counted.front, get("/hot"))
        await counted.stoker.store.flush()
        reads = count_l2_reads(counted)
        asgi = counted.asgi_hits
        raw = get("/hot") + get("/cold") + get("/hot") + get("/hot")
        answers, closed = await exchange(counted.front, raw, responses=4)
        assert counted.asgi_hits == asgi  # the miss, too, was looked up by the front only
    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in answers] == [
        b"hot", b"cold", b"hot", b"hot"]
    assert b"hit" in answers[0].lower() and b"miss" in answers[1].lower()
    assert not closed
    cold = counted.stoker.pipeline.keying.key_for_url("http://site.test/cold")
    assert reads.count(cold) == 1
    assert origin.app.count("/cold") == 1


async def test_many_connections_waiting_for_redis_are_each_answered(
        origin: Origin, tmp_path: Path) -> None:
    """Requests that arrive together wait for one Redis read: each connection gets its own
    response, whole, and its next one after it."""
    async with waited_for(origin, tmp_path, "redis") as counted:
        for name in ("a", "b"):
            origin.app.set(f"/{name}", headers=CACHEABLE, body=name.encode() * 3000)
            await exchange(counted.front, get(f"/{name}"))
        await counted.stoker.store.flush()
        answers = await two_each_on_40_connections(_port(counted.front))
    for number, pair in enumerate(answers):
        body = (b"a" if number % 2 else b"b") * 3000
        assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in pair] == [body, body]
    assert origin.app.count("/a") == origin.app.count("/b") == 1


async def test_with_redis_gone_the_front_answers_from_the_origin(origin: Origin,
                                                                 tmp_path: Path) -> None:
    """Redis stopped: the front's read fails, the request is a miss the origin answers (no
    5xx); Redis back: hits again."""
    port = free_port()
    origin.app.set("/r", headers=CACHEABLE, body=b"r")
    with own_redis(port, tmp_path) as redis_server, pg_schema(migrated=False) as schema:
        await listening(port)
        async with fronted(origin, tmp_path / "data", l1_max_bytes="0", l2_write_timeout="2",
                           l2_url=f"redis://127.0.0.1:{port}/0",
                           database_url=schema_url(schema)) as counted:
            await exchange(counted.front, get("/r"))
            await counted.stoker.store.flush()
            [hit], _ = await exchange(counted.front, get("/r"))
            redis_server.terminate()
            redis_server.wait(10)
            down = [(await exchange(counted.front, get("/r")))[0][0] for _ in range(3)]
            with own_redis(port, tmp_path):  # back (empty): the queued writes reach it
                await listening(port)
                clock = counted.stoker.clock
                assert isinstance(clock, FakeClock)
                for _ in range(120):  # the writes' retries wait on the test's clock
                    if counted.stoker.store.pending() == 0:
                        break
                    clock.advance(1.0)
                    await asyncio.sleep(0.02)
                assert counted.stoker.store.pending() == 0
                [back], _ = await exchange(counted.front, get("/r"))
    assert b"cache-status: stoker; hit" in hit.lower()
    assert b"cache-status: stoker; hit" in back.lower()
    assert all(answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"\r\n\r\nr")
               for answer in down)
    assert origin.app.count("/r") == 1 + 3


async def two_each_on_40_connections(port: int) -> list[list[bytes]]:
    """40 connections at once, each sending two pipelined GETs (of ``/a`` on the odd ones,
    ``/b`` on the even); each connection's two responses, in order."""
    connections = [await asyncio.open_connection("127.0.0.1", port) for _ in range(40)]
    try:
        for number, (_, writer) in enumerate(connections):
            writer.write(get("/a" if number % 2 else "/b") * 2)
        return [[await read_response(reader) for _ in range(2)] for reader, _ in connections]
    finally:
        for _, writer in connections:
            writer.close()
