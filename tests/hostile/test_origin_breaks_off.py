"""An origin that breaks off a body, or sends one that does not decode.

Every server mode gives the client of a chunked body broken off mid-stream what Stoker's
own front gives it (the head, the bytes that came, no terminal chunk, the connection
closed), never a server's bare 500.  And a response that was not stored never says
``stored`` in its ``Cache-Status``: not one broken off, not one whose gzip is corrupt
(which is not stored, decoded garbage least of all).
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from tests.hostile.conftest import exchange, final_status
from tests.integration.conftest import running_proxy
from tests.integration.raw_origin import RawRequest, raw_origin

HEAD = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n"
        b"Cache-Control: public, max-age=60\r\n\r\n")
GET = b"GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n"


def breaking_off(first: bytes) -> Callable[[RawRequest, asyncio.StreamWriter],
                                           Awaitable[bool]]:
    """An origin answer: the head, ``first`` as one chunk (if any), then half a chunk and
    the connection closed."""
    async def answer(_: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(HEAD + (b"%x\r\n%s\r\n" % (len(first), first) if first else b""))
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(b"5\r\nab")
        return False
    return answer


def sending(head: bytes, body: bytes) -> Callable[[RawRequest, asyncio.StreamWriter],
                                                  Awaitable[bool]]:
    async def answer(_: RawRequest, writer: asyncio.StreamWriter) -> bool:
        writer.write(head + body)
        return True
    return answer


def chunked(body: bytes, size: int = 65536) -> bytes:
    pieces = [body[at:at + size] for at in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


@pytest.mark.parametrize("first", [b"", b"0123456789"])
async def test_a_body_broken_off_is_sent_unended_in_every_mode(
        tmp_path: Path, mode: str, first: bytes) -> None:
    async with raw_origin(breaking_off(first)) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode) as proxy:
        data, _ = await exchange(proxy.url, GET, total=5)
    assert final_status(data) == 200, data[:200]
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert body.lower() == (b"a\r\n%s\r\n" % first if first else b"")  # and no last chunk


async def test_a_body_broken_off_is_not_said_stored(tmp_path: Path, mode: str) -> None:
    async with raw_origin(breaking_off(b"0123456789")) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode) as proxy:
        data, _ = await exchange(proxy.url, GET, total=5)
        assert proxy.stoker.store.get_l1(proxy.stoker.pipeline.keying.key_for_url(
            f"{proxy.url}/p")) in (None, [])
    assert b"cache-status: stoker; fwd=uri-miss; fwd-status=200; ttl=59\r\n" in data


CORRUPT = gzip.compress(b"<p>a page</p>" * 40_000)[:-40] + b"\x00" * 40  # bad crc, bad data


@pytest.mark.parametrize("framing", ["length", "chunked"])
async def test_corrupt_gzip_is_not_stored_nor_said_stored(tmp_path: Path, mode: str,
                                                          framing: str) -> None:
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
            b"Cache-Control: public, max-age=60\r\n")
    answer = sending(head + b"Content-Length: %d\r\n\r\n" % len(CORRUPT), CORRUPT) if (
        framing == "length") else sending(head + b"Transfer-Encoding: chunked\r\n\r\n",
                                          chunked(CORRUPT, 1000))
    async with raw_origin(answer) as origin, \
            running_proxy(origin.url, tmp_path, kind=mode) as proxy:
        request = b"GET /p HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: gzip\r\n\r\n"
        first, _ = await exchange(proxy.url, request, total=5)
        second, _ = await exchange(proxy.url, request, total=5)
        assert len(origin.requests) == 2  # nothing was stored: the second went forward too
    for data in (first, second):
        head_sent = data.partition(b"\r\n\r\n")[0]
        assert final_status(data) == 200
        assert b"; stored" not in head_sent and b"fwd=uri-miss" in head_sent
        assert b"content-encoding: gzip" in head_sent.lower()
    if framing == "length":  # known before the head went out: the header says why
        assert b"detail=corrupt-coding" in first
    assert CORRUPT[-40:] in first  # the client got the origin's bytes as they came
