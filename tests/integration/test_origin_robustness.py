"""Origins as real sites run them: interim responses, malformed answers, short keep-alives."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from tests.integration.conftest import Proxy, running_proxy
from tests.integration.raw_origin import Answer, RawRequest, raw_origin, response

CACHEABLE = {"Cache-Control": "max-age=60"}
HINT = b"HTTP/1.1 103 Early Hints\r\nLink: </hint.css>; rel=preload; as=style\r\n\r\n"


async def _hinted(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    """103 with a Link, then a final response (with its own Link on /own-link)."""
    headers = dict(CACHEABLE)
    if request.path == "/own-link":
        headers["Link"] = "</final.css>; rel=stylesheet"
    writer.write(HINT + response("200 OK", headers, request.path.encode()))
    return True


async def test_interim_response_is_neither_forwarded_nor_stored(tmp_path: Path) -> None:
    async with raw_origin(_hinted) as origin, running_proxy(origin.url, tmp_path) as proxy:
        first = await proxy.client.get("/page")
        second = await proxy.client.get("/page")
        other = await proxy.client.get("/other")
    assert (first.status_code, first.content) == (200, b"/page")
    assert "link" not in first.headers
    assert "hit" in second.headers["cache-status"] and "link" not in second.headers
    assert other.content == b"/other"  # the connection after the 103 was reused cleanly
    assert (len(origin.requests), origin.connections) == (2, 1)


async def test_final_response_keeps_only_its_own_link(tmp_path: Path) -> None:
    async with raw_origin(_hinted) as origin, running_proxy(origin.url, tmp_path) as proxy:
        first = await proxy.client.get("/own-link")
        hit = await proxy.client.get("/own-link")
    for answer in (first, hit):
        assert answer.headers.get_list("link") == ["</final.css>; rel=stylesheet"]


async def test_bytes_after_a_response_never_reach_the_next_request(tmp_path: Path) -> None:
    smuggled = response("200 OK", CACHEABLE, b"smuggled")

    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/empty":  # a 204 has no body: what follows is garbage
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n" + smuggled)
        else:
            writer.write(response("200 OK", CACHEABLE, b"genuine"))
        return True

    async with raw_origin(answer) as origin, running_proxy(origin.url, tmp_path) as proxy:
        empty = await proxy.client.get("/empty")
        page = await proxy.client.get("/page")
    assert (empty.status_code, page.content) == (204, b"genuine")
    assert origin.connections == 2


async def test_bytes_sent_on_an_idle_pooled_connection_never_answer_a_request(
        tmp_path: Path) -> None:
    answered, sent = asyncio.Event(), asyncio.Event()

    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/empty":
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()
            await answered.wait()  # the 204 was answered: the connection idles in the pool
            writer.write(response("200 OK", CACHEABLE, b"smuggled"))
            await writer.drain()
            sent.set()
        else:
            writer.write(response("200 OK", CACHEABLE, b"genuine"))
        return True

    async with raw_origin(answer) as origin, running_proxy(origin.url, tmp_path) as proxy:
        empty = await proxy.client.get("/empty")
        answered.set()
        await sent.wait()
        await asyncio.sleep(0.05)  # let the proxy's loop read the bytes (a wait, not a check)
        page = await proxy.client.get("/page")
    assert (empty.status_code, page.content) == (204, b"genuine")
    assert origin.connections == 2


@pytest.mark.parametrize("wire", [
    b"HTTP/1.1 OK GO\r\nContent-Length: 2\r\n\r\nhi",
    b"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nhi",
    b"SPDY/9 200 OK\r\n\r\n",
], ids=["status-line", "header", "protocol"])
@pytest.mark.parametrize("path", ["/cached", "/passed"])
async def test_malformed_origin_response_is_a_502_with_one_log_line(
        wire: bytes, path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(wire)
        return False

    async with raw_origin(answer) as origin, running_proxy(origin.url, tmp_path) as proxy:
        with caplog.at_level(logging.INFO):
            reply = await (proxy.client.get(path) if path == "/cached"
                           else proxy.client.post(path, content=b"x"))
    assert reply.status_code == 502
    lines = [r for r in caplog.records if r.name.startswith("stoker")]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "malformed response" in lines[0].getMessage()
    assert origin.url in lines[0].getMessage()
    assert len(origin.requests) == 1  # a malformed answer is not retried


UNCACHED = {"Cache-Control": "no-store"}


async def _ok(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    writer.write(response("200 OK", UNCACHED, request.path.encode()))
    return True


async def test_connections_the_origin_closed_when_idle_are_not_a_502(tmp_path: Path) -> None:
    async with raw_origin(_ok, idle=0.2) as origin, running_proxy(origin.url, tmp_path) as proxy:
        for number in range(4):
            origin.idle_closed.clear()
            reply = await proxy.client.get(f"/page/{number}")
            assert (reply.status_code, reply.content) == (200, f"/page/{number}".encode())
            await asyncio.wait_for(origin.idle_closed.wait(), 10)


def _closing_on_reuse(pooled: int) -> tuple[asyncio.Event, Answer]:
    """Answers on new connections (holding the first ``pooled`` until all arrived);
    on a reused connection reads the request, then closes without answering."""
    arrived: list[RawRequest] = []
    all_in = asyncio.Event()

    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.index > 1:
            return False
        arrived.append(request)
        if len(arrived) >= pooled:
            all_in.set()
        await all_in.wait()
        writer.write(response("200 OK", UNCACHED, request.path.encode()))
        return True

    return all_in, answer


async def _fill_pool(proxy: Proxy, count: int) -> None:
    """Leave ``count`` idle keep-alive connections in the proxy's origin pool."""
    replies = await asyncio.gather(*(proxy.client.get(f"/warm/{n}") for n in range(count)))
    assert [r.status_code for r in replies] == [200] * count


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_request_on_a_connection_closed_under_it_is_retried_on_a_new_one(
        method: str, tmp_path: Path) -> None:
    _, answer = _closing_on_reuse(pooled=3)
    async with raw_origin(answer) as origin, running_proxy(origin.url, tmp_path) as proxy:
        await _fill_pool(proxy, 3)
        reply = await proxy.client.request(method, "/target")
    assert (reply.status_code, reply.content) == (200, b"/target")
    sent = [r for r in origin.requests if r.path == "/target"]
    assert [r.index for r in sent] == [2, 1]  # once on a pooled connection, once on a new one


async def test_post_with_a_body_is_not_retried(tmp_path: Path) -> None:
    _, answer = _closing_on_reuse(pooled=1)
    async with raw_origin(answer) as origin, running_proxy(origin.url, tmp_path) as proxy:
        await _fill_pool(proxy, 1)
        reply = await proxy.client.post("/order", content=b"one pizza")
    assert reply.status_code == 502
    assert [(r.method, r.body) for r in origin.requests if r.path == "/order"] == [
        ("POST", b"one pizza")]
