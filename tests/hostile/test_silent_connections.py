"""Connections that never send a byte cannot block new clients, and are closed, in every
server mode.

granian (``server = "granian"``, the TLS listener) never
closed them, and about 2,048 of them (its default cap, the backlog) stopped every new
client; the front closes a connection that sends no head within
:data:`~stoker.server.front.connection.HEAD_TIMEOUT`.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import time
from pathlib import Path

import httpx
import pytest
from tests.hostile.conftest import FrameworkOrigin
from tests.integration.conftest import running_proxy

from stoker.server import listeners as server
from stoker.server.front import connection as front_connection

SILENT = 2048 + 52  # more than granian's old cap (its backlog)
SILENCE = 2.0


def open_silent(port: int, count: int) -> list[socket.socket]:
    """``count`` connections to ``port`` that send nothing."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 3 * count:  # both ends live in this process
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * count), hard))
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]


def closed(socks: list[socket.socket]) -> int:
    """How many of ``socks`` the server has closed (a read gives EOF or a reset)."""
    count = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            if sock.recv(1) == b"":
                count += 1
        except BlockingIOError:
            pass
        except OSError:
            count += 1
    return count


async def test_silent_connections_neither_block_new_clients_nor_stay_open(
        framework: FrameworkOrigin, tmp_path: Path, mode: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 4 * SILENT:
        pytest.skip("needs an open-file limit for 4 x 2,100 descriptors")
    monkeypatch.setattr(front_connection, "HEAD_TIMEOUT", SILENCE)  # the front's own bound
    monkeypatch.setattr(server, "silence_for", lambda: SILENCE)  # granian's reaper
    async with running_proxy(framework.url, tmp_path, kind=mode) as proxy:
        url = proxy.url
        port = int(url.rsplit(":", 1)[1])
        socks = await asyncio.to_thread(open_silent, port, SILENT)
        try:
            await asyncio.sleep(0.5)
            async with httpx.AsyncClient(base_url=url, timeout=5) as client:
                started = time.monotonic()
                answer = await client.get("/fresh/1")
                took = time.monotonic() - started
            deadline = time.monotonic() + SILENCE + 15
            while closed(socks) < SILENT and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            gone = closed(socks)
        finally:
            for sock in socks:
                sock.close()
    assert answer.status_code == 200 and took < 2.0
    assert gone == SILENT
