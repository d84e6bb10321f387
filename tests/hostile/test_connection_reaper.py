"""The reaper behind granian's listeners touches only silent, established connections of
its ports: never a listener, never another port's connection (an origin's, a
database's), never one with recent traffic."""

from __future__ import annotations

import socket
import struct

import pytest

from stoker.server.connection_reaper import (
    TCP_ESTABLISHED,
    ConnectionReaper,
    TcpQuiet,
    is_silent,
    parse_tcp_info,
)


def test_the_reaper_leaves_listeners_and_other_ports_alone() -> None:
    """A sweep touches only established connections on its ports."""
    listener = socket.create_server(("127.0.0.1", 0))
    other = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    mine = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    elsewhere = socket.create_connection(("127.0.0.1", other.getsockname()[1]))
    theirs, _ = other.accept()
    try:
        reaper = ConnectionReaper([port], silence=0.0, every=1.0)
        if not reaper.supported():
            pytest.skip("Linux only")
        reaped = reaper.sweep()
        mine.setblocking(False)
        assert reaped == 1  # the accepted end; the connecting end has a port of its own
        assert mine.recv(1) == b""
        elsewhere.setblocking(False)
        with pytest.raises(BlockingIOError):
            elsewhere.recv(1)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # still listening, nothing pending
    finally:
        for sock in (listener, other, mine, accepted, elsewhere, theirs):
            sock.close()


def test_a_connection_with_recent_traffic_is_not_reaped() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    try:
        client.sendall(b"x")
        accepted.recv(1)
        reaper = ConnectionReaper([port], silence=5.0, every=1.0)
        if not reaper.supported():
            pytest.skip("Linux only")
        assert reaper.sweep() == 0
    finally:
        for sock in (listener, client, accepted):
            sock.close()


@pytest.mark.parametrize(("quiet", "silent"), [
    (TcpQuiet(TCP_ESTABLISHED, 10.0, 10.0), True),
    (TcpQuiet(TCP_ESTABLISHED, 10.0, 1.0), False),   # received a byte lately
    (TcpQuiet(TCP_ESTABLISHED, 1.0, 10.0), False),   # sent one (a slow download)
    (TcpQuiet(8, 10.0, 10.0), False),                # CLOSE_WAIT: its owner is closing it
])
def test_is_silent(quiet: TcpQuiet, silent: bool) -> None:
    assert is_silent(quiet, 5.0) is silent


def test_parse_tcp_info_reads_the_state_and_the_data_timers() -> None:
    raw = bytes([TCP_ESTABLISHED]) + bytes(43) + struct.pack("=III", 1500, 7, 2500) + bytes(48)
    assert parse_tcp_info(raw) == TcpQuiet(TCP_ESTABLISHED, 1.5, 2.5)
