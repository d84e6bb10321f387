"""The live request log's relay between serving processes, on real Unix datagram
sockets in a real directory, in one event loop: the marker follows the first process's
watchers, another process sends only while it is there, garbage is ignored."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import replace
from pathlib import Path

from tests.integration.admin_harness import eventually

from stoker.app.log_relay import MARKER, SOCKET, gather, send
from stoker.clock import SystemClock
from stoker.proxy.log_filter import EVERYTHING, parse_filter
from stoker.proxy.log_record import LogRecord
from stoker.proxy.request_tap import RequestTap

RECORD = LogRecord(at=1_764_504_000.5, client="203.0.113.7", method="GET", host="a.test",
                   target="/x?y=1", status=502, outcome="pass", reason="status",
                   duration=0.25, size=3)


async def test_records_travel_only_while_the_first_process_is_watched(tmp_path: Path) -> None:
    first, other, clock = RequestTap(), RequestTap(), SystemClock()
    tasks = [asyncio.create_task(gather(first, tmp_path, 1, clock)),
             asyncio.create_task(send(other, tmp_path, clock))]
    try:
        await eventually(lambda: (tmp_path / SOCKET).exists(), "the socket bound")
        assert first.others == 1 and not (tmp_path / MARKER).exists()
        assert not other.watched  # nobody watches the first: the other builds nothing
        watch = first.watch(parse_filter({"status": "5xx"}))
        assert watch is not None
        await eventually(lambda: other.watched, "the other saw the marker")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as garbage:
            garbage.sendto(b"not json", str(tmp_path / SOCKET))
        other.publish(replace(RECORD, status=200))  # filtered out in the first
        other.publish(RECORD)
        batch = await watch.next(5)
        while not batch.records:
            batch = await watch.next(5)
        assert batch.records == (RECORD,)
        first.unwatch(watch)
        await eventually(lambda: not other.watched, "the other stopped with the marker")
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert not (tmp_path / SOCKET).exists() and not (tmp_path / MARKER).exists()
    assert first.others == 0 and first.watch(EVERYTHING) is not None
