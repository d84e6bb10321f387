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

import h2.config
import h2.connection
import h2.events
from tests.integration.admin_harness import purging
from tests.integration.conftest import Origin
from tests.integration.test_http2_relay import front


async def h2_status(sock: socket.socket, path: str) -> int:
    """The status of an HTTP/2 GET of ``path`` on the connected ``sock``."""
    reader, writer = await asyncio.open_connection(sock=sock)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "GET"), (":path", path), (":scheme", "http"),
                          (":authority", "site.test")], end_stream=True)
    writer.write(conn.data_to_send())
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), 10)
            assert data, "the server closed the connection"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    return int(dict(event.headers)[b":status"])
            writer.write(conn.data_to_send())
    finally:
        writer.close()


def connected_from(source: tuple[str, int], port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind(source)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def test_a_local_process_cannot_pose_as_a_relayed_client() -> None:
    async with front() as (port, relay):
        client = socket.create_connection(("127.0.0.1", port))
        try:
            assert await h2_status(client, "/who") == 200  # relayed, and still open
            [(host, source_port)] = list(relay.peers._by_source)
            assert host == "127.0.0.1"
            spoof = connected_from(("127.0.0.2", source_port), relay.port)
            assert await h2_status(spoof, "/who") == 403
        finally:
            client.close()


async def test_deeply_nested_json_is_a_400(origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path) as (_, admin):
        answer = await admin.client.post("/api/purge", content=b"[" * 100_000,
                                         headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert "nested too deeply" in answer.text
