"""One client's slow URLs cannot take every origin slot from the other visitors.

Issue 34: sixteen requests from one client to an origin URL answering in 10 s held
every slot of ``origin_max_concurrency``, so every other visitor's miss waited 10 s.
Now a client holds at most its share (``origin_max_per_client``, a quarter by default)
and borrows beyond it only outside the last quarter of the slots, so another client's
miss finds a slot free.  The clients are told apart the real way: the hostile one's
sockets are bound to 127.0.0.2, the visitor's to 127.0.0.1 (both loopback on Linux).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

from tests.conftest import serving
from tests.hostile.conftest import address
from tests.integration.conftest import running_proxy

from stoker.asgi import Message, Receive, Send

SLOW = 3.0
"""Seconds the origin takes to answer a ``/slow/`` page."""
HOG = "127.0.0.2"
SLOTS = 16
HOG_REQUESTS = SLOTS + 4


async def slow_origin(scope: Message, receive: Receive, send: Send) -> None:
    """``/slow/…`` answers after :data:`SLOW` seconds, anything else at once; cacheable."""
    if scope["type"] != "http":
        return
    if scope["path"].startswith("/slow/"):
        await asyncio.sleep(SLOW)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"cache-control", b"max-age=60")]})
    await send({"type": "http.response.body", "body": scope["path"].encode()})


@contextlib.asynccontextmanager
async def from_one_client(url: str, paths: list[str]) -> AsyncIterator[None]:
    """One GET of each of ``paths``, each on a connection of its own from :data:`HOG`."""
    loop = asyncio.get_running_loop()
    socks = []
    try:
        for path in paths:
            sock = socket.socket()
            sock.bind((HOG, 0))
            sock.setblocking(False)
            await loop.sock_connect(sock, address(url))
            await loop.sock_sendall(sock, f"GET {path} HTTP/1.1\r\nHost: a.test\r\n\r\n".encode())
            socks.append(sock)
        yield
    finally:
        for sock in socks:
            sock.close()


async def test_one_clients_slow_urls_leave_other_visitors_a_slot(tmp_path: Path,
                                                                  mode: str) -> None:
    async with serving(slow_origin) as origin_url, \
            running_proxy(origin_url, tmp_path, kind=mode,
                          origin_max_concurrency=SLOTS) as proxy, \
            from_one_client(proxy.url, [f"/slow/{n}" for n in range(HOG_REQUESTS)]):
        limiter = proxy.stoker.origin.limiter  # type: ignore[attr-defined]
        while (now := limiter.stats()).in_use + now.visitors_waiting < HOG_REQUESTS:
            await asyncio.sleep(0.02)  # until each of the hog's requests holds or waits
        held = limiter.holding(HOG)
        started = time.monotonic()
        answers = await asyncio.gather(*(proxy.client.get(f"/page/{n}") for n in range(3)))
        took = time.monotonic() - started
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert took < 1.0, f"the visitor's misses waited {took:.2f} s for a slot"
    assert held == SLOTS - SLOTS // 4  # its share and what it may borrow, not the reserve
