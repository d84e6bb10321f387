"""The front answers pipelined requests one to one, in order, however their bytes are cut.

Hypothesis draws a few requests (fresh hits the front writes itself, misses and HEADs
that go through ASGI, POSTs with a length or chunked body) and cuts their concatenation
into pieces sent one by one on one connection: every request gets exactly its own
response, in order, and the connection stays usable.  One Stoker (on the front) and
one origin (on uvicorn) run in a thread for the whole module.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import request_body, serving

from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.asgi import Message, Receive, Send
from stoker.config.settings import settings_from

HOT = 4
"""Pages cached before the examples run (their GETs are fresh hits)."""


async def echo(scope: Message, receive: Receive, send: Send) -> None:
    """An origin that names each request in ``x-echo`` (method, path, body length) and
    in its body; ``/hot/`` pages are cacheable, the rest are not."""
    if scope["type"] != "http":
        return
    body = await request_body(receive)
    text = f"{scope['method']} {scope['path']} {len(body)}".encode()
    cacheable = scope["path"].startswith("/hot/") and scope["method"] == "GET"
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"text/plain"), (b"x-echo", text),
        (b"cache-control", b"max-age=600" if cacheable else b"no-store")]})
    await send({"type": "http.response.body", "body": text})


@dataclass(frozen=True)
class Sent:
    method: str
    path: str
    raw: bytes
    body: int


def request(method: str, path: str, body: bytes | None = None, *,
            chunked: bool = False) -> Sent:
    head = f"{method} {path} HTTP/1.1\r\nHost: fuzz.test\r\nUser-Agent: fuzz\r\n"
    if body is None:
        return Sent(method, path, head.encode() + b"\r\n", 0)
    if chunked:
        pieces = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 3]), body[i:i + 3])
                          for i in range(0, len(body), 3))
        raw = head.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + pieces + b"0\r\n\r\n"
    else:
        raw = head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body
    return Sent(method, path, raw, len(body))


REQUESTS = st.one_of(
    st.integers(0, HOT - 1).map(lambda i: request("GET", f"/hot/{i}")),
    st.integers(0, HOT - 1).map(lambda i: request("HEAD", f"/hot/{i}")),
    st.integers(0, 99).map(lambda i: request("GET", f"/cold/{i}")),
    st.binary(min_size=0, max_size=40).map(lambda b: request("POST", "/post", b)),
    st.binary(min_size=1, max_size=40).map(lambda b: request("POST", "/post", b,
                                                               chunked=True)),
)


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The front's port, with Stoker and the origin running in a thread."""
    ready: list[int] = []
    stop = threading.Event()
    data_dir: Path = tmp_path_factory.mktemp("fuzz")

    async def main() -> None:
        async with serving(echo, kind="uvicorn") as origin_url:
            stoker = await Stoker.open(settings_from({"origin": origin_url,
                                                      "data_dir": str(data_dir)}))
            try:
                async with serving(ProxyApp(stoker.pipeline), kind="stoker") as url:
                    ready.append(int(url.rsplit(":", 1)[1]))
                    while not stop.is_set():
                        await asyncio.sleep(0.05)
            finally:
                await stoker.close()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready, "the front did not start"
    for i in range(HOT):  # cached, then fresh hits
        exchange(ready[0], [request("GET", f"/hot/{i}")], [len(request("GET", "/").raw)])
    yield ready[0]
    stop.set()
    thread.join(20)


def exchange(port: int, sent: list[Sent], cuts: list[int]) -> list[tuple[bytes, bytes]]:
    """Send ``sent`` on one connection, cut at ``cuts``; read one response per request
    (a HEAD's without its body): their heads and bodies."""
    data = b"".join(request.raw for request in sent)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        start = 0
        for cut in sorted({0, *[c for c in cuts if 0 < c < len(data)], len(data)})[1:]:
            sock.sendall(data[start:cut])
            start = cut
            time.sleep(0.0005)
        reader = sock.makefile("rb")
        return [read_response(reader, head_only=request.method == "HEAD") for request in sent]


def read_response(reader: BinaryIO, *, head_only: bool) -> tuple[bytes, bytes]:
    lines = []
    while (line := reader.readline()) not in (b"\r\n", b""):
        lines.append(line)
    head = b"".join(lines)
    fields = {name.strip().lower(): value.strip() for name, _, value in
              (line.partition(b":") for line in lines[1:])}
    if head_only:
        return head, b""
    if fields.get(b"transfer-encoding") == b"chunked":
        body = b""
        while (size := int(reader.readline().strip(), 16)):
            body += reader.read(size)
            reader.readline()
        reader.readline()
        return head, body
    return head, reader.read(int(fields[b"content-length"]))


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=st.lists(REQUESTS, min_size=1, max_size=6),
       cuts=st.lists(st.integers(0, 2000), max_size=12))
def test_pipelined_requests_get_their_own_responses_in_order(
        front: int, sent: list[Sent], cuts: list[int]) -> None:
    answers = exchange(front, sent, cuts)
    assert len(answers) == len(sent)
    for request, (head, body) in zip(sent, answers, strict=True):
        assert head.startswith(b"HTTP/1.1 200 "), (request, head)
        echoed = next(line for line in head.split(b"\r\n") if line.startswith(b"x-echo: "))
        method, path, length = echoed[len(b"x-echo: "):].decode().split(" ")
        assert path == request.path
        if request.method == "HEAD":
            assert body == b""  # a HEAD's answer is the cached GET's head
        else:
            assert (method, int(length)) == (request.method, request.body)
            assert body == echoed[len(b"x-echo: "):]
