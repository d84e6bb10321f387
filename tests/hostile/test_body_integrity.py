"""A request body reaches the origin only when it arrived whole.

Stoker used to stream a body to the origin as it came: a malformed chunked body, or one
the client broke off, reached the origin as a complete request (with a terminating chunk
the client never sent); requests answered 400 still ran at the origin with an empty
body.  Now the body is read first, and the origin is asked only for one that parsed
whole.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.hostile.conftest import FrameworkOrigin, address, exchange, final_status
from tests.integration.conftest import running_proxy


async def test_a_malformed_chunked_body_never_reaches_the_origin(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    head = b"POST /post/m HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n"
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        data, _ = await exchange(proxy.url, head + b"5\r\nhello\r\nzz\r\nnot hex\r\n",
                                 total=3)
        await asyncio.sleep(0.5)
    status = final_status(data)
    assert status is None or 400 <= status < 500, data[:120]
    assert framework.seen == []


async def test_a_body_the_client_breaks_off_never_reaches_the_origin(
        framework: FrameworkOrigin, tmp_path: Path, mode: str) -> None:
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        for head in (b"POST /post/a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\n\r\n"
                     b"only part", b"POST /post/b HTTP/1.1\r\nHost: a.test\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"):
            _, writer = await asyncio.open_connection(*address(proxy.url))
            writer.write(head)
            await writer.drain()
            await asyncio.sleep(0.3)
            writer.close()  # gone mid-body
        await asyncio.sleep(0.5)
        after = await proxy.client.get("/fresh/after")
    assert after.status_code == 200
    assert framework.paths() == ["/fresh/after"]
