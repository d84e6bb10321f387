"""The front's listening socket, its connections, and the one timer they share.

Invariants:
- One timer per listener, every :data:`SWEEP_EVERY` seconds, closes each connection
  whose :attr:`~stoker.server.front.connection.Connection.deadline` has passed: a deadline is
  one float set per response or head, never a timer handle, so a keep-alive costs no
  timer per response (a timeout fires at most :data:`SWEEP_EVERY` late).
- On :meth:`FrontServer.stop` the socket stops accepting, idle connections close, and
  each busy one closes after its current response; requests still running after
  ``grace`` seconds (``None``: however long they take) are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from math import inf
from typing import TYPE_CHECKING, Any

from stoker.asgi import ASGIApp
from stoker.clock import SystemClock
from stoker.http.dates import format_http_date
from stoker.server.front.batch import WriteBatch
from stoker.server.front.connection import Connection
from stoker.server.front.heads import KnownHeads

if TYPE_CHECKING:
    from stoker.adapters.asgi_proxy import ProxyApp
    from stoker.proxy.request import LookedUp
    from stoker.server.front.exchange import Exchange

log = logging.getLogger("stoker.server")

SWEEP_EVERY = 0.5
BACKLOG = 2048
"""Connections a listener (the front's, or granian's) queues before it accepts them."""


class Listener:
    """What the connections of one listener share: the app (and, when it is Stoker's proxy,
    the proxy's fast path and request core), the heads remembered, the write batch, the
    live connections and the running requests."""

    def __init__(self, app: ASGIApp, proxy: ProxyApp | None, *, date_header: bool) -> None:
        self.app = app
        self.proxy = proxy
        """``app`` when it is Stoker's proxy (bare): its requests are answered without
        ASGI, fresh hits by its fast path, the rest by its request core."""
        self.hot = proxy.hot if proxy is not None else None
        """The proxy's fast path, whose fresh hits are answered without ASGI."""
        self.loop = asyncio.get_running_loop()
        self.known = KnownHeads()
        self.batch = WriteBatch()
        self.connections: set[Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self._date_header = date_header
        self._date: tuple[int, list[tuple[bytes, bytes]]] = (-1, [])
        self._clock = SystemClock()

    def default_headers(self) -> list[tuple[bytes, bytes]]:
        """Headers the front adds to every ASGI response: a ``Date`` for apps that are not
        the proxy (a cache sends the stored ``Date``, never a second one)."""
        if not self._date_header:
            return []
        second = int(self._clock.now())
        if self._date[0] != second:
            self._date = (second, [(b"date", format_http_date(second).encode())])
        return self._date[1]

    def answer(self, exchange: Exchange, looked_up: LookedUp | None = None
               ) -> Coroutine[Any, Any, None]:
        """``exchange``'s answer: by the proxy's request core (``looked_up``: what the fast
        path read from L2 for it), else by the app over ASGI."""
        if self.proxy is None:
            return exchange.run(self.app)
        return exchange.serve(self.proxy.pipeline, looked_up)

    def run(self, answering: Coroutine[Any, Any, None]) -> None:
        """Run ``answering`` (a request's answer: its exchange's ``run``, or the
        connection's L2 read before it) in a task of its own."""
        task = self.loop.create_task(answering)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def sweep(self) -> None:
        """Close the connections whose deadline has passed."""
        now = self.loop.time()
        for connection in [c for c in self.connections if c.deadline <= now]:
            connection.deadline = inf
            connection.transport.close()


class FrontServer:
    """``server = "stoker"`` on one plain-HTTP address (``serve`` / ``stop``, as
    :mod:`stoker.server.listeners` runs its servers); ``shared``: bound with
    ``SO_REUSEPORT``, beside the other serving processes of this Stoker."""

    granian_ports: tuple[int, ...] = ()

    def __init__(self, app: ASGIApp, host: str, port: int, *, proxy: ProxyApp | None,
                 date_header: bool, grace: float | None = None, shared: bool = False) -> None:
        self._app, self._host, self._port = app, host, port
        self._proxy, self._date_header, self._grace = proxy, date_header, grace
        self._shared = shared
        self._stopped = asyncio.Event()

    async def serve(self) -> None:
        """Accept connections until :meth:`stop`, then wind them down."""
        listener = Listener(self._app, self._proxy, date_header=self._date_header)
        server = await listener.loop.create_server(
            lambda: Connection(listener), self._host or None, self._port, backlog=BACKLOG,
            reuse_address=True, reuse_port=self._shared or None)
        sweeping = asyncio.create_task(self._sweep(listener))
        try:
            await self._stopped.wait()
        finally:
            server.close()
            for connection in list(listener.connections):
                connection.shutdown()
            await self._finish(listener)
            sweeping.cancel()
            for connection in list(listener.connections):
                connection.transport.close()
            await server.wait_closed()

    def stop(self) -> None:
        self._stopped.set()

    async def _sweep(self, listener: Listener) -> None:
        while True:
            await asyncio.sleep(SWEEP_EVERY)
            listener.sweep()

    async def _finish(self, listener: Listener) -> None:
        """Let the requests in flight finish within the grace, then cancel them."""
        if not listener.tasks:
            return
        _, late = await asyncio.wait(set(listener.tasks), timeout=self._grace)
        if late:
            log.warning("front on port %d: %d requests still running %g s after the stop "
                        "were cancelled", self._port, len(late), self._grace)
            for task in late:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*late, return_exceptions=True)
