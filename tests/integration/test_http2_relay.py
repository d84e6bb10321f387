"""HTTP/2 on the front (``server = "stoker"``): connections that open with the HTTP/2
preface are relayed to granian, which the app behind sees as the client itself.

Real servers and sockets; the HTTP/2 client is the ``h2`` state machine over a raw socket,
so the test knows the connection's own address and can split the preface.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import h2.config
import h2.connection
import h2.events
import httpx
import pytest
from tests.conftest import free_port, wait_listening

from stoker import http1_front
from stoker.asgi import Message, Receive, Send
from stoker.http2_relay import PREFACE, RelayTarget
from stoker.server import make_server

BIG = 8 * 1024 * 1024


async def app(scope: Message, receive: Receive, send: Send) -> None:
    """Echoes who it sees; ``/big`` answers :data:`BIG` bytes in 64 KiB chunks."""
    if scope["type"] != "http":
        return
    app.calls += 1  # type: ignore[attr-defined]
    if scope["path"] == "/big":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(BIG).encode())]})
        chunk = b"x" * 65536
        for _ in range(BIG // len(chunk)):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    body = json.dumps({"client": scope["client"], "server": scope["server"],
                       "version": scope["http_version"], "method": scope["method"]}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


app.calls = 0  # type: ignore[attr-defined]


@asynccontextmanager
async def front() -> AsyncIterator[tuple[int, RelayTarget]]:
    """The app on the front; yields the public port and the relay."""
    port = free_port()
    server = make_server("stoker", app, f"127.0.0.1:{port}")
    task = asyncio.create_task(server.serve())
    try:
        await wait_listening(port)
        yield port, server.relay  # type: ignore[attr-defined]
    finally:
        server.stop()
        await asyncio.wait_for(task, 15)


async def h2_get(port: int, path: str, *, split: int = len(PREFACE)
                 ) -> tuple[int, bytes, tuple[str, int]]:
    """GET ``path`` over HTTP/2 with prior knowledge, the preface's first ``split`` bytes
    sent alone; return the status, the body and the connection's own address."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    local = writer.get_extra_info("sockname")
    status, body = await h2_exchange(reader, writer, path, split=split)
    return status, body, (local[0], local[1])


async def h2_exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str,
                      *, split: int = len(PREFACE), keep_open: bool = False
                      ) -> tuple[int, bytes]:
    """GET ``path`` over HTTP/2 on an open connection (closed after, unless ``keep_open``):
    status and body."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    opening = conn.data_to_send()
    writer.write(opening[:split])
    await writer.drain()
    await asyncio.sleep(0.05)
    conn.send_headers(1, [(":method", "GET"), (":path", path), (":scheme", "http"),
                          (":authority", "site.test")], end_stream=True)
    writer.write(opening[split:] + conn.data_to_send())
    status, body = 0, bytearray()
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), 10)
            assert data, "the server closed the connection"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length,
                                                   event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    return status, bytes(body)
            writer.write(conn.data_to_send())
    finally:
        if not keep_open:
            writer.close()


@pytest.mark.parametrize("split", [1, 5, len(PREFACE)])
async def test_an_http2_client_is_relayed_and_seen_at_its_own_address(split: int) -> None:
    async with front() as (port, _):
        status, body, local = await h2_get(port, "/who", split=split)
    seen = json.loads(body)
    assert status == 200
    assert seen["version"] == "2"
    assert tuple(seen["client"]) == local
    assert tuple(seen["server"]) == ("127.0.0.1", port)


async def test_a_body_larger_than_every_buffer_crosses_the_relay_whole() -> None:
    async with front() as (port, _):
        status, body, _ = await h2_get(port, "/big")
    assert status == 200
    assert len(body) == BIG
    assert body == b"x" * BIG


async def test_a_closed_connection_is_forgotten() -> None:
    async with front() as (port, relay):
        await h2_get(port, "/who")
        for _ in range(200):
            if not len(relay.peers):
                break
            await asyncio.sleep(0.01)
        assert len(relay.peers) == 0


@pytest.mark.parametrize(("first", "method"), [(b"P", b"POST"), (b"PR", b"PROPFIND")])
async def test_http1_requests_that_begin_like_the_preface_stay_on_http1(
        first: bytes, method: bytes) -> None:
    async with front() as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(first)
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(method[len(first):] + b" /who HTTP/1.1\r\nHost: a\r\nContent-Length: 0"
                     b"\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200")
    assert json.loads(body)["method"] == method.decode()
    assert json.loads(body)["version"] == "1.1"


async def test_a_connection_the_relay_did_not_make_is_refused() -> None:
    calls = app.calls  # type: ignore[attr-defined]
    async with front() as (_, relay), httpx.AsyncClient(http1=False, http2=True) as client:
        reply = await client.get(f"http://127.0.0.1:{relay.port}/who")
    assert reply.status_code == 403
    assert reply.headers["cache-control"] == "no-store"
    assert app.calls == calls  # type: ignore[attr-defined]


@pytest.mark.parametrize("sent", [b"", b"GET /who HTTP/1.1\r\nHo"])
async def test_a_connection_without_a_whole_head_in_time_is_closed(
        monkeypatch: pytest.MonkeyPatch, sent: bytes) -> None:
    monkeypatch.setattr(http1_front, "HEAD_TIMEOUT", 0.3)
    async with front() as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(sent)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()


async def test_a_slow_but_timely_head_is_served(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1_front, "HEAD_TIMEOUT", 0.5)
    async with front() as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /who HTTP/1.1\r\n")
        await asyncio.sleep(0.3)
        writer.write(b"Host: a\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200")


def test_the_relay_port_is_held_from_other_binders_and_is_none_of_the_listeners() -> None:
    from stoker.server import _reserve_loopback_port

    probe = _reserve_loopback_port(())
    taken = probe.getsockname()[1]
    probe.close()
    held = _reserve_loopback_port({taken})
    try:
        port = held.getsockname()[1]
        assert port != taken
        with socket.socket() as plain, pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))  # uvicorn, varnish: kept off
        with socket.socket() as granian_like:
            granian_like.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            granian_like.bind(("127.0.0.1", port))
    finally:
        held.close()


@pytest.mark.parametrize("upgrade", [b"h2c", b"websocket"])
async def test_an_upgrade_request_is_answered_as_plain_http_without_log_noise(
        upgrade: bytes, capfd: pytest.CaptureFixture[str]) -> None:
    answer = await upgrade_request(upgrade)
    assert answer.startswith(b"HTTP/1.1 200")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["version"] == "1.1"
    assert "upgrade" not in capfd.readouterr().err.lower()  # uvicorn logs to stderr


async def upgrade_request(upgrade: bytes) -> bytes:
    async with front() as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /who HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, close\r\n"
                     b"Upgrade: " + upgrade + b"\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    return answer
