"""The hostile-client suite: Stoker on a real server of every mode, attacked with raw
sockets, in front of origins that behave like real frameworks (a uvicorn app that drains
declared bodies; byte-level origins that wait for them)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from tests.conftest import serving
from tests.integration.conftest import origin  # noqa: F401 (the scripted origin fixture)

from stoker.asgi import Message, Receive, Send

SERVER_MODES = ("stoker", "granian")
"""Every ``server`` setting: each hostile case runs on all of them."""


@pytest.fixture(params=SERVER_MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@dataclass
class FrameworkOrigin:
    """A uvicorn app as a framework is one: a view reads the body of a POST (or PUT, ...)
    before it answers and ignores a GET's (uvicorn then reads it off the connection);
    every GET is a cacheable page naming the path, the query and the headers the tests
    look at; each request it parsed is remembered."""

    seen: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while scope["method"] not in ("GET", "HEAD"):
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path, query = scope["path"], scope["query_string"].decode("latin-1")
        self.seen.append((path, query, headers, body))
        text = (f"page {path}?{query} host={headers.get('host')} "
                f"lang={headers.get('accept-language', 'none')} "
                f"cookie={headers.get('cookie', 'none')} body={len(body)}").encode()
        if path.startswith("/big/"):
            text += b" " + b"x" * BIG
        response = [(b"content-type", b"text/plain"),
                    (b"cache-control", b"no-store" if scope["method"] != "GET"
                     else b"public, max-age=3600")]
        if path.startswith("/varyl/"):
            response.append((b"vary", b"accept-language"))
        if path.startswith("/varyc/"):
            response.append((b"vary", b"cookie"))
        await send({"type": "http.response.start", "status": 200, "headers": response})
        await send({"type": "http.response.body", "body": text})

    def paths(self) -> list[str]:
        return [path for path, *_ in self.seen]


BIG = 4 * 1024 * 1024
"""Bytes of a ``/big/`` page: far more than a socket buffers for a client not reading."""


@pytest.fixture
async def framework() -> AsyncIterator[FrameworkOrigin]:
    app = FrameworkOrigin()
    async with serving(app, kind="uvicorn") as url:
        app.url = url
        yield app


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


async def exchange(url: str, payload: bytes, *, then: bytes | None = None,
                   wait: float = 0.5, total: float = 10.0) -> tuple[bytes, float]:
    """Send ``payload`` on a new connection, ``then`` after ``wait`` seconds; read until
    a whole final response has come, the connection closes or ``total`` seconds pass.
    What came back, and how long the final (non-1xx) response's status line took."""
    reader, writer = await asyncio.open_connection(*address(url))
    started = time.monotonic()
    final: float | None = None
    data = b""
    try:
        writer.write(payload)
        if then is not None:
            data += await _read_for(reader, wait)
            writer.write(then)
        deadline = started + total
        while (left := deadline - time.monotonic()) > 0:
            try:
                chunk = await asyncio.wait_for(reader.read(65536), left)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
            if final is None and final_status(data) is not None:
                final = time.monotonic() - started
            if final is not None and _complete(data, head=payload.startswith(b"HEAD ")):
                break
    finally:
        writer.close()
    return data, final if final is not None else time.monotonic() - started


async def _read_for(reader: asyncio.StreamReader, seconds: float) -> bytes:
    try:
        return await asyncio.wait_for(reader.read(65536), seconds)
    except TimeoutError:
        return b""


def _complete(data: bytes, *, head: bool) -> bool:
    """Whether ``data`` ends with a whole final response (Content-Length or chunked)."""
    start = max(data.rfind(b"HTTP/1.1 "), data.rfind(b"HTTP/1.0 "))
    end = data.find(b"\r\n\r\n", start)
    if start < 0 or end < 0:
        return False
    fields = data[start:end].lower().split(b"\r\n")[1:]
    body = data[end + 4:]
    if head:
        return True
    for line in fields:
        if line.startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return body.endswith(b"0\r\n\r\n") if b"transfer-encoding: chunked" in fields else False


def final_status(data: bytes) -> int | None:
    """The status of the first non-1xx response in ``data``, if its line has arrived."""
    for line in data.split(b"\r\n"):
        if line.startswith(b"HTTP/1.") and len(line) >= 12 and line[9:10] != b"1":
            return int(line[9:12])
    return None
