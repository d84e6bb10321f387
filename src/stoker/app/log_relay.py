"""The live request log across ``--processes N``: the other serving processes send the
requests they answer to the first one (whose admin API the watchers read), over a Unix
datagram socket in ``data_dir``, and only while someone watches there.

Invariants:
- The first process (:func:`gather`) binds :data:`SOCKET` and publishes each datagram
  it reads into its own :class:`~stoker.proxy.request_tap.RequestTap` (where each
  watcher's filter applies), and keeps the file :data:`MARKER` in ``data_dir`` exactly
  while its tap is watched (looked at every :data:`CHECK_EVERY` seconds); both are
  removed when it stops.
- Another process (:func:`send`) looks for :data:`MARKER` every :data:`CHECK_EVERY`
  seconds: while it is there, it watches its own tap (everything) and sends each record
  as one JSON datagram; else its tap is unwatched, so it builds nothing per request.
  A watcher sees another process's requests at most :data:`CHECK_EVERY` seconds after
  it opened.
- Sending never waits: a datagram the socket refuses (full, or the first process gone)
  is dropped and counted (:attr:`Sender.lost`, logged once per burst); a datagram that
  is not a record is ignored.
- ``data_dir`` is private to Stoker's user (0700), so only its processes can send.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path
from typing import Final

from stoker.clock import Clock
from stoker.proxy.log_filter import EVERYTHING
from stoker.proxy.log_record import from_json
from stoker.proxy.request_tap import Batch, RequestTap, Watch

log = logging.getLogger("stoker")

SOCKET: Final = "log-relay.sock"
MARKER: Final = "log-watched"
CHECK_EVERY: Final = 1.0
MAX_DATAGRAM: Final = 64 * 1024


async def gather(tap: RequestTap, data_dir: Path, others: int, clock: Clock) -> None:
    """Publish into ``tap`` what the ``others`` processes send, and keep the marker while
    ``tap`` is watched, until cancelled (see the module's invariants)."""
    address, marker = data_dir / SOCKET, data_dir / MARKER
    address.unlink(missing_ok=True)
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        receiver.bind(str(address))
    except OSError as error:
        receiver.close()
        log.warning("the live request log shows this process's requests only: "
                    "%s cannot be bound (%s)", address, error)
        return
    receiver.setblocking(False)
    loop = asyncio.get_running_loop()
    loop.add_reader(receiver.fileno(), _receive, receiver, tap)
    tap.others = others
    try:
        while True:
            if tap.watched:
                marker.touch()
            else:
                marker.unlink(missing_ok=True)
            await clock.sleep(CHECK_EVERY)
    finally:
        tap.others = 0
        loop.remove_reader(receiver.fileno())
        receiver.close()
        address.unlink(missing_ok=True)
        marker.unlink(missing_ok=True)


def _receive(receiver: socket.socket, tap: RequestTap) -> None:
    """Publish every datagram waiting (read until none is)."""
    while True:
        try:
            datagram = receiver.recv(MAX_DATAGRAM)
        except BlockingIOError:
            return
        try:
            record = from_json(json.loads(datagram))
        except (ValueError, KeyError, TypeError):
            continue
        if tap.watched:
            tap.publish(record)


class Sender:
    """A process other than the first: its records to the first's socket."""

    def __init__(self, tap: RequestTap, data_dir: Path, clock: Clock) -> None:
        self._tap = tap
        self._address = str(data_dir / SOCKET)
        self._marker = data_dir / MARKER
        self._clock = clock
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.setblocking(False)
        self.lost = 0
        """Records dropped: refused by the socket, or left behind by a full watch."""

    async def run(self) -> None:
        """Send while the marker is there, until cancelled."""
        watch: Watch | None = None
        try:
            while True:
                if self._marker.exists() != (watch is not None):
                    watch = self._toggle(watch)
                if watch is None:
                    await self._clock.sleep(CHECK_EVERY)
                else:
                    self._send(await watch.next(CHECK_EVERY))
        finally:
            if watch is not None:
                self._tap.unwatch(watch)
            self._socket.close()

    def _toggle(self, watch: Watch | None) -> Watch | None:
        if watch is None:
            return self._tap.watch(EVERYTHING)
        self._tap.unwatch(watch)
        return None

    def _send(self, batch: Batch) -> None:
        lost = batch.dropped
        for record in batch.records:
            try:
                self._socket.sendto(json.dumps(record.as_json(), separators=(",", ":"))
                                    .encode(), self._address)
            except OSError:
                lost += 1
        if lost:
            self.lost += lost
            log.warning("the live request log lost %d lines of this process (%d in all)",
                        lost, self.lost)


async def send(tap: RequestTap, data_dir: Path, clock: Clock) -> None:
    """:meth:`Sender.run` for ``tap``, until cancelled."""
    await Sender(tap, data_dir, clock).run()
