"""Malformed request heads are refused before anything reaches the origin, in every server
mode: a missing version, Content-Length with Transfer-Encoding, HTTP/1.0 with
Transfer-Encoding (RFC 9112 §6.1), too many header lines (431), HTTP/1.1 without Host
(even after an HTTP/1.0 request without one filled the fast path's memo)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.hostile.conftest import FrameworkOrigin, exchange, final_status
from tests.integration.conftest import running_proxy

MAX_HEADERS = 100  # the limit the issue asks for (Apache's LimitRequestFields)

REFUSED = {
    "no version": b"GET /fresh/1\r\n\r\n",
    "chunked HTTP/1.0": (b"GET /fresh/2 HTTP/1.0\r\nHost: a.test\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    "too many headers": (b"GET /fresh/3 HTTP/1.1\r\nHost: a.test\r\n" + b"".join(
        b"X-H%d: v\r\n" % i for i in range(MAX_HEADERS)) + b"\r\n"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_a_malformed_head_is_refused_and_never_forwarded(
        framework: FrameworkOrigin, tmp_path: Path, mode: str, case: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        data, _ = await exchange(proxy.url, REFUSED[case], total=5)
    status = final_status(data)
    assert status is not None and 400 <= status < 500, data[:200]
    if case == "too many headers":
        assert status == 431
    assert framework.seen == []


SMUGGLE = (b"POST /post/1 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 6\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n"
           b"Host: a.test\r\n\r\n")


async def test_content_length_with_transfer_encoding_smuggles_nothing(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    """The front answers 400; granian does what RFC 9112 §6.3 also allows: it
    drops Content-Length, reads the chunked body and closes the connection after its
    answer (the pipeline never sees the Content-Length).  In no mode does the origin see
    a request the client did not send as one."""
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        data, _ = await exchange(proxy.url, SMUGGLE, total=5)
    assert "/smuggled" not in framework.paths()
    if mode == "granian":
        assert [(path, body) for path, _, _, body in framework.seen] in ([], [("/post/1", b"")])
        assert b"connection: close" in data.lower()
    else:
        assert final_status(data) == 400 and framework.seen == []


async def test_exactly_the_header_limit_is_forwarded(framework: FrameworkOrigin,
                                                     tmp_path: Path, mode: str) -> None:
    head = b"GET /fresh/4 HTTP/1.1\r\nHost: a.test\r\n" + b"".join(
        b"X-H%d: v\r\n" % i for i in range(MAX_HEADERS - 1)) + b"\r\n"
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        data, _ = await exchange(proxy.url, head, total=5)
    assert final_status(data) == 200
    assert framework.paths() == ["/fresh/4"]


async def test_http11_without_host_is_400_even_after_http10_filled_the_memo(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        for _ in range(2):  # a miss, then a hit: the fast path has seen this URL hostless
            old, _ = await exchange(proxy.url, b"GET /page HTTP/1.0\r\n\r\n", total=5)
            assert final_status(old) == 200
        new, _ = await exchange(proxy.url, b"GET /page HTTP/1.1\r\n\r\n", total=5)
    assert final_status(new) == 400, new[:200]
