"""A GET or HEAD with a body cannot desync the origin connection.

Stoker used to send a cache fetch without the client's body but with its
``Content-Length``: an origin that reads declared bodies (uvicorn, h11, gunicorn) then took
the next request on that pooled connection as the missing body, and a visitor could store
a page of their choosing under another URL; an origin that waits for the body held the
request (and an origin slot) for ``origin_timeout``.  Now a cache fetch carries no body
and no framing of the client's; the client's body is read and dropped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from tests.hostile.conftest import FrameworkOrigin, exchange, final_status
from tests.integration.conftest import running_proxy
from tests.integration.raw_origin import RawRequest, raw_origin, response


def poisoning_pair(host: str) -> tuple[bytes, bytes]:
    """Two requests: a GET with a body as long as what Stoker would send of the second one
    up to the value of its first header, and a second one whose first header's value is a
    request line.  A desynced origin reads the second request's start as the first one's
    body and answers ``/evil`` for ``/account``."""
    forwarded_prefix = f"GET /account HTTP/1.1\r\nhost: {host}\r\nx-pad: ".encode()
    first = (f"GET /x HTTP/1.1\r\nHost: {host}\r\nContent-Length: "
             f"{len(forwarded_prefix)}\r\n\r\n").encode() + b"A" * len(forwarded_prefix)
    second = f"GET /account HTTP/1.1\r\nx-pad: GET /evil HTTP/1.1\r\nHost: {host}\r\n\r\n"
    return first, second.encode()


async def test_a_get_body_cannot_store_another_page_under_a_url(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    first, second = poisoning_pair("a.test")
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        answered, _ = await exchange(proxy.url, first, total=3)
        assert final_status(answered) == 200
        await exchange(proxy.url, second, total=3)
        victim = await proxy.client.get("/account", headers={"host": "a.test"})
    assert "/evil" not in framework.paths()
    assert b"page /account?" in victim.content, victim.content[:80]


async def test_a_cache_fetch_never_declares_a_body_it_does_not_send(
        tmp_path: Path, mode: str) -> None:
    """Over HTTP/1.1 (raw) and HTTP/2 (h2c with prior knowledge, on granian, which speaks
    it), a GET and a HEAD with bodies, chunked too, reach the origin without framing."""
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(response("200 OK", {"Cache-Control": "max-age=60"}, b"page"))
        return True

    async with raw_origin(answer) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode) as proxy:
        await exchange(proxy.url, b"GET /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 9\r\n"
                                  b"\r\n123456789", total=2)
        await exchange(proxy.url, b"HEAD /b HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: "
                                  b"chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", total=2)
        if mode == "granian":  # the front speaks HTTP/1.1 only
            async with httpx.AsyncClient(base_url=proxy.url, http1=False,
                                         http2=True) as h2:
                await h2.request("GET", "/c", content=b"12345")
    heads = [request.head.lower() for request in origin.requests]
    assert len(heads) == (3 if mode == "granian" else 2)
    assert not any(b"content-length" in head or b"transfer-encoding" in head
                   for head in heads), heads
    assert all(request.body == b"" for request in origin.requests)


async def test_a_get_body_does_not_hold_an_origin_that_waits_for_it(
        tmp_path: Path, mode: str) -> None:
    """Against an origin that waits for a declared body, the GET used to hang until
    ``origin_timeout``; now it is answered at once."""
    async def answer(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(response("200 OK", {"Cache-Control": "max-age=60"}, b"page"))
        return True

    async with raw_origin(answer) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode, origin_timeout="5s") as proxy:
        data, took = await exchange(proxy.url, b"GET /w HTTP/1.1\r\nHost: a.test\r\n"
                                               b"Content-Length: 4\r\n\r\nbody", total=8)
    assert final_status(data) == 200 and took < 2.5, (took, data[:100])


@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_a_body_past_client_max_body_size_is_413_and_not_fetched(
        framework: FrameworkOrigin, tmp_path: Path, method: str) -> None:
    head = f"{method} /huge HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5000\r\n\r\n"
    async with running_proxy(framework.url, tmp_path, kind="stoker",
                             client_max_body_size="1KiB") as proxy:
        data, _ = await exchange(proxy.url, head.encode() + b"x" * 5000, total=3)
    assert final_status(data) == 413
    assert framework.seen == []
