"""Two low ones: no local process can pose as a relayed HTTP/2 client, and a deeply
nested JSON body to the admin API is a 400, not a 500.

The relay's registry of relayed connections used to key on the loopback source port
alone: a process connecting to the relay listener from ``127.0.0.2`` with a relayed
connection's port was taken for that client (and so could pass ``purge_allow``).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.integration.admin_harness import purging
from tests.integration.conftest import Origin
from tests.integration.test_http2_relay import front, h2_exchange


async def h2_status(sock: socket.socket, path: str,
                    opened: list[asyncio.StreamWriter]) -> int:
    """The status of an HTTP/2 GET of ``path`` on the connected ``sock``, left open (its
    writer added to ``opened``)."""
    reader, writer = await asyncio.open_connection(sock=sock)
    opened.append(writer)
    return (await h2_exchange(reader, writer, path, keep_open=True))[0]


def connected_from(source: tuple[str, int], port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind(source)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def test_a_local_process_cannot_pose_as_a_relayed_client() -> None:
    opened: list[asyncio.StreamWriter] = []
    async with front() as (port, relay):
        try:
            client = socket.create_connection(("127.0.0.1", port))
            assert await h2_status(client, "/who", opened) == 200  # relayed, still open
            [(host, source_port)] = list(relay.peers._by_source)
            assert host == "127.0.0.1"
            spoof = connected_from(("127.0.0.2", source_port), relay.port)
            assert await h2_status(spoof, "/who", opened) == 403
        finally:
            for writer in opened:
                writer.close()


async def test_deeply_nested_json_is_a_400(origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path) as (_, admin):
        answer = await admin.client.post("/api/purge", content=b"[" * 100_000,
                                         headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert "nested too deeply" in answer.text
