"""Closing the silent connections of listeners that would keep them forever (granian's).

granian (2.8) never closes a connection that sends nothing: its HTTP/1 header timeout
starts at the first byte, and its protocol detection (HTTP/1.1 or HTTP/2, on a plain
listener and after a TLS handshake) waits for bytes without any.  With its default cap
of concurrent connections, about 2,048 such connections stop every new client.  Stoker's
own front bounds them itself (30 s to send a head); for granian's listeners a
:class:`ConnectionReaper` looks at the process's TCP connections on their ports, as the
kernel counts them (``TCP_INFO``), and shuts down each one that has neither sent nor
received a byte for ``silence`` seconds.  granian then sees the connection end and
closes it.

Invariants: the decision (:func:`is_silent`) is pure, on the kernel's figures; only
established connections whose local port is a watched listener's are touched, never a
listening socket or a connection of another port (an origin's, the database's); a
connection with any byte either way within ``silence`` is left alone, so ``silence``
must exceed every pause Stoker allows a live connection (the origin's answer,
``client_body_timeout``).  Linux only: elsewhere :meth:`ConnectionReaper.supported`
is false and nothing is reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
import sys
from collections.abc import Collection
from dataclasses import dataclass

log = logging.getLogger("stoker.server")

TCP_ESTABLISHED = 1
_TCP_INFO_TIMES = struct.Struct("=44xIII")
"""``struct tcp_info`` up to ``tcpi_last_data_recv`` (Linux ``<linux/tcp.h>``): the state
is its first byte; ``tcpi_last_data_sent`` is at offset 44, ``tcpi_last_data_recv`` at 52
(milliseconds since the last byte sent or received)."""
FD_DIR = "/proc/self/fd"


@dataclass(frozen=True, slots=True)
class TcpQuiet:
    """What the kernel says of one TCP connection's recent traffic."""

    state: int
    since_sent: float
    """Seconds since it last sent a byte of data."""
    since_received: float
    """Seconds since it last received one."""


def parse_tcp_info(raw: bytes) -> TcpQuiet:
    """The state and the two data timers of a ``TCP_INFO`` answer."""
    sent, _, received = _TCP_INFO_TIMES.unpack_from(raw)
    return TcpQuiet(raw[0], sent / 1000, received / 1000)


def is_silent(quiet: TcpQuiet, silence: float) -> bool:
    """An established connection with no data either way for ``silence`` seconds."""
    return quiet.state == TCP_ESTABLISHED and min(quiet.since_sent,
                                                  quiet.since_received) >= silence


class ConnectionReaper:
    """Shuts down the silent connections of the listeners on ``ports`` (see the module)."""

    def __init__(self, ports: Collection[int], *, silence: float, every: float) -> None:
        self._ports = frozenset(ports)
        self._silence = silence
        self._every = every
        self.reaped = 0
        """Connections shut down so far."""

    @staticmethod
    def supported() -> bool:
        """Whether this platform shows the process's sockets and their ``TCP_INFO``."""
        return sys.platform.startswith("linux") and os.path.isdir(FD_DIR)

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep every ``every`` seconds until ``stop`` is set."""
        if not self.supported():
            log.warning("silent connections to granian's listeners cannot be closed on this "
                        "platform (it needs Linux's /proc and TCP_INFO)")
            return
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._every)
            if stop.is_set():
                return
            reaped = await asyncio.to_thread(self.sweep)
            if reaped:
                log.info("closed %d connections silent for %g s", reaped, self._silence)

    def sweep(self) -> int:
        """Shut down every silent connection on a watched port now; how many."""
        reaped = 0
        for name in os.listdir(FD_DIR):
            with contextlib.suppress(OSError, ValueError):
                if self._reap(int(name)):
                    reaped += 1
        self.reaped += reaped
        return reaped

    def _reap(self, fd: int) -> bool:
        if not os.readlink(f"{FD_DIR}/{fd}").startswith("socket:"):
            return False
        # a duplicate: whatever happens to fd meanwhile, this looks at one socket only
        with socket.socket(fileno=os.dup(fd)) as sock:
            if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET,
                                                                      socket.AF_INET6):
                return False
            if sock.getsockname()[1] not in self._ports:
                return False
            sock.getpeername()  # a listening socket has none: OSError, skipped
            quiet = parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104))
            if not is_silent(quiet, self._silence):
                return False
            sock.shutdown(socket.SHUT_RDWR)  # the owner's reads end: it closes its end
            return True
