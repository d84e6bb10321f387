"""Cache-poisoning hygiene (RFC 9112 §3.2, §6.3): malformed requests never reach the origin
as something else, and Stoker adds no header the client did not send."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from tests.integration.conftest import Origin, running_proxy

CACHEABLE = [("cache-control", "max-age=60")]


async def raw(url: str, request: bytes) -> bytes:
    """Send ``request`` as is on a fresh connection; the status line of the answer."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 10)
    finally:
        writer.close()
    return line.strip()


@pytest.mark.parametrize("kind", ["granian", "stoker"])
async def test_host_must_be_there_once(origin: Origin, tmp_path: Path, kind: str) -> None:
    origin.app.set("/h", headers=CACHEABLE, body=b"page")
    async with running_proxy(origin.url, tmp_path, kind=kind) as proxy:
        await proxy.client.get("/h", headers={"host": "a"})  # cached for host a
        missing = await raw(proxy.url, b"GET /h HTTP/1.1\r\n\r\n")
        twice = await raw(proxy.url, b"GET /h HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
        old = await raw(proxy.url, b"GET /h HTTP/1.0\r\n\r\n")
    assert b" 400 " in missing + b" " and b" 400 " in twice + b" "
    assert b" 200 " in old + b" "  # HTTP/1.0 may omit Host
    assert origin.app.count("/h") == 2  # host a, then the HTTP/1.0 default host


async def test_no_header_is_added_on_the_way_to_the_origin(origin: Origin,
                                                          tmp_path: Path) -> None:
    origin.app.set("/form", body=b"ok")
    async with running_proxy(origin.url, tmp_path) as proxy:
        answer = await raw(proxy.url, b"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                                      b"\r\nabc")
    assert b" 200 " in answer + b" "
    method, _, headers = origin.app.requests[-1]
    assert method == "POST" and "content-type" not in headers


@pytest.mark.parametrize("kind", ["granian", "stoker"])
async def test_smuggling_shapes_reach_the_origin_once_or_not_at_all(
        origin: Origin, tmp_path: Path, kind: str) -> None:
    origin.app.set("/s", body=b"ok")
    async with running_proxy(origin.url, tmp_path, kind=kind) as proxy:
        both = await raw(proxy.url, b"POST /s HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n"
                                    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                                    b"GET /s HTTP/1.1\r\nHost: a\r\n\r\n")
        huge = await raw(proxy.url, b"GET /s HTTP/1.1\r\nHost: a\r\nX-Big: "
                                    + b"x" * 200_000 + b"\r\n\r\n")
    assert origin.app.count("/s") <= 1  # the smuggled GET never reached the origin
    assert all(method == "POST" for method, _, _ in origin.app.requests)
    assert b" 4" in both + b" " or b" 200 " in both + b" "
    assert b" 431 " in huge + b" " or b" 400 " in huge + b" " or huge == b""


@pytest.mark.parametrize("kind", ["stoker"])
async def test_absolute_form_target_names_the_host(origin: Origin, tmp_path: Path,
                                                   kind: str) -> None:
    """RFC 9112 §3.2.2 (Stoker's front keeps the target as sent; granian resolves
    it to the Host header before Stoker sees it)."""
    origin.app.set("/x", headers=CACHEABLE, body=b"x")
    async with running_proxy(origin.url, tmp_path, kind=kind) as proxy:
        await proxy.client.get("/x", headers={"host": "b.example"})  # b's page, cached
        answer = await raw(proxy.url, b"GET http://a.example/x HTTP/1.1\r\n"
                                      b"Host: b.example\r\n\r\n")
        cached = await proxy.stoker.store.get(proxy.stoker.pipeline.keying.key_for_url(
            "http://a.example/x"))
    _, _, headers = origin.app.requests[-1]
    assert b" 200 " in answer + b" "
    assert headers["host"] == "a.example" and len(cached) == 1


@pytest.mark.parametrize("kind", ["granian", "stoker"])
async def test_oversized_headers_never_reach_the_origin_nor_a_cached_page(
        origin: Origin, tmp_path: Path, kind: str) -> None:
    origin.app.set("/big", headers=CACHEABLE, body=b"page")
    async with running_proxy(origin.url, tmp_path, kind=kind) as proxy:
        await proxy.client.get("/big")  # cached: the fast path must refuse it too
        cookie = b"Cookie: a=" + b"x" * 70_000 + b"\r\n"
        for path in (b"/big", b"/other"):
            answer = await raw(proxy.url, b"GET " + path + b" HTTP/1.1\r\nHost: a\r\n"
                                          b"X-Pad: " + b"y" * 70_000 + b"\r\n\r\n")
            assert b" 431 " in answer + b" " or b" 400 " in answer + b" " or answer == b""
            answer = await raw(proxy.url, b"GET " + path + b" HTTP/1.1\r\nHost: a\r\n"
                                          + cookie + b"\r\n")
            assert b" 431 " in answer + b" " or b" 400 " in answer + b" " or answer == b""
    assert origin.app.count("/big") == 1 and origin.app.count("/other") == 0


@pytest.mark.parametrize("kind", ["stoker"])
async def test_a_head_that_never_ends_is_cut_off(origin: Origin, tmp_path: Path,
                                                  kind: str) -> None:
    """httptools buffers a head of any size: Stoker's protocol stops at HEAD_LIMIT."""
    async with running_proxy(origin.url, tmp_path, kind=kind) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1",
                                                       int(proxy.url.rsplit(":", 1)[1]))
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: a\r\nX-Endless: ")
            with contextlib.suppress(ConnectionError):
                for _ in range(200):  # 200 x 1 KiB, never a line end
                    writer.write(b"y" * 1024)
                    await writer.drain()
            try:  # without the limit nothing is answered and this times out
                answer = await asyncio.wait_for(reader.read(), 10)
            except ConnectionResetError:  # closed with our bytes unread: the 431 may be lost
                answer = b""
        finally:
            writer.close()
    assert answer.startswith(b"HTTP/1.1 431 ") or answer == b""
    assert origin.app.requests == []


@pytest.mark.parametrize("kind", ["granian", "stoker"])
async def test_one_date_the_origins_on_a_miss_and_a_hit(origin: Origin, tmp_path: Path,
                                                       kind: str) -> None:
    """Date is a singleton field (RFC 9110 §6.6.1): the server adds none of its own."""
    origin.app.set("/d", headers=CACHEABLE, body=b"d")
    async with running_proxy(origin.url, tmp_path, kind=kind) as proxy:
        answers = [await proxy.client.get("/d") for _ in range(2)]
    assert "hit" in answers[1].headers["cache-status"]
    for answer in answers:
        assert len(answer.headers.get_list("date")) == 1
