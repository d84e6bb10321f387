"""Serving ASGI apps on real HTTP servers (Stoker's HTTP/1.1 front, or granian embedded)
in one process.

The proxy and the admin listener run in the same event loop so a purge on the
admin side reaches the proxy's memory tier directly.

Invariants: :func:`run_apps` returns only after every server has stopped
(on ``stop`` being set, SIGINT/SIGTERM, or one server failing — then the
others are stopped too and the failure is re-raised).  It starts nothing
when any of its addresses is already taken by another process
(:class:`AddressInUse`): granian listens with ``SO_REUSEPORT``, so without
that check a second process would silently share the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import resource
import signal
import socket
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from stoker.asgi import ASGIApp
from stoker.config.settings import Settings, SettingsError
from stoker.server.connection_reaper import ConnectionReaper
from stoker.server.front.listener import BACKLOG, FrontServer
from stoker.server.heap import HeapKeeper, freeze_heap
from stoker.server.heap import applies as heap_policy_applies

T = TypeVar("T")
log = logging.getLogger("stoker.server")


class _Server(Protocol):
    granian_ports: tuple[int, ...]
    """The ports of this server's granian listeners (their silent connections are reaped;
    the front closes its own)."""

    async def serve(self) -> None: ...

    def stop(self) -> None: ...


REAP_EVERY = 5.0


def silence_for(origin_timeout: float = Settings.origin_timeout,
                client_body_timeout: float = Settings.client_body_timeout) -> float:
    """Seconds without a byte either way after which a connection to a granian listener
    is closed (:mod:`stoker.server.connection_reaper`): beyond every pause Stoker allows a live
    one (the origin's answer, ``client_body_timeout``, and the front's
    :data:`~stoker.server.front.connection.HEAD_TIMEOUT`), 65 s with the defaults."""
    from stoker.server.front.connection import HEAD_TIMEOUT

    return max(HEAD_TIMEOUT, origin_timeout, client_body_timeout) + REAP_EVERY


def open_file_limit() -> int:
    """The process's limit on open files, raised to the hard limit first (as nginx's
    ``worker_rlimit_nofile``): every connection is a file."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return soft


def split_address(address: str) -> tuple[str, int]:
    """``"127.0.0.1:8080"`` → ``("127.0.0.1", 8080)`` (brackets around IPv6 removed)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


class AddressInUse(SettingsError):
    """Another process already listens on an address Stoker was told to serve on."""


def ensure_free(address: str, setting: str) -> None:
    """Raise :class:`AddressInUse` when another process listens on ``address``.

    Probes with a socket bound *without* ``SO_REUSEPORT`` (so it cannot share
    a port a stranger holds) but with ``SO_REUSEADDR`` (so connections of a
    previous run lingering in TIME_WAIT do not count as "in use").
    """
    host, port = split_address(address)
    family, kind, proto, _, sockaddr = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(sockaddr)
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            raise AddressInUse(f"{setting} {address} is already in use by another process; "
                               f"stop it or set {setting} to a free address") from None


@dataclass(frozen=True)
class Tls:
    """A certificate chain and its private key (PEM files) for one listener."""

    cert: Path
    key: Path


class _Granian:
    """granian on one listener.  Its cap on concurrent connections is raised to what the
    process may open (by default it is the backlog, 2,048, which silent connections
    filled); silent connections are closed by a :class:`ConnectionReaper` on ``port``.
    Once stopped, it waits for connections in flight at most ``grace`` seconds (granian
    itself would wait for them however long they take)."""

    def __init__(self, app: ASGIApp, address: str, tls: Tls | None, *,
                 grace: float | None = None) -> None:
        from granian.constants import HTTPModes, Interfaces
        from granian.server.embed import Server

        host, port = split_address(address)
        self.granian_ports: tuple[int, ...] = (port,)
        # HTTP/1.1 and HTTP/2 (h2c with prior knowledge; ALPN under TLS)
        self._server = Server(app, address=host, port=port, interface=Interfaces.ASGINL,
                              http=HTTPModes.auto,
                              log_enabled=False, backlog=BACKLOG,
                              backpressure=max(BACKLOG, open_file_limit()),
                              ssl_cert=tls.cert if tls else None,
                              ssl_key=tls.key if tls else None)
        # granian's --workers-kill-timeout, typed int; a wait_for timeout: any number
        self._server.workers_kill_timeout = cast("int | None", grace)
        self._grace = grace

    async def serve(self) -> None:
        try:
            await self._server.serve()
        except TimeoutError:  # its worker outlived the grace: granian cancelled it
            log.warning("granian on port %d: requests still running %g s after the stop "
                        "were abandoned", self.granian_ports[0], self._grace)

    def stop(self) -> None:
        self._server.stop()  # type: ignore[no-untyped-call]


def _is_proxy(app: ASGIApp) -> bool:
    """Whether ``app`` is the proxy (bare, or behind its access log)."""
    from stoker.adapters.access_log import AccessLogApp
    from stoker.adapters.asgi_proxy import ProxyApp

    return isinstance(app, ProxyApp | AccessLogApp)


def make_server(kind: str, app: ASGIApp, address: str, tls: Tls | None = None,
                grace: float | None = None, shared: bool = False) -> _Server:
    """A server of ``kind`` for ``app`` on ``address``: ``granian``, or ``stoker``
    (Stoker's HTTP/1.1 front; on a TLS listener, granian, which negotiates HTTP/2 by
    ALPN).  Once stopped, a server lets requests in flight finish for ``grace`` seconds
    (default: as long as they take), then cancels them.  A ``shared`` address is bound
    with ``SO_REUSEPORT`` (granian always binds so), for several serving processes."""
    if kind == "granian" or tls is not None:
        return _Granian(app, address, tls, grace=grace)
    from stoker.adapters.asgi_proxy import ProxyApp

    host, port = split_address(address)
    return FrontServer(app, host, port, proxy=app if isinstance(app, ProxyApp) else None,
                       date_header=not _is_proxy(app), grace=grace, shared=shared)


async def run_apps(kind: str, apps: Sequence[tuple[ASGIApp, str]],
                   stop: asyncio.Event | None = None,
                   tls: Mapping[str, Tls] | None = None, *, grace: float | None = None,
                   silence: float | None = None, shared: frozenset[str] = frozenset()) -> None:
    """Serve every ``(app, address)`` (with TLS where ``tls`` names the address) until
    ``stop`` is set or a signal arrives; requests in flight then get ``grace`` seconds
    (:func:`make_server`).  A connection to a granian listener without a byte either way
    for ``silence`` seconds (default :func:`silence_for` the default settings) is closed.
    The ``shared`` addresses are bound beside other processes (checked free by whoever
    started them)."""
    for _, address in apps:
        if address not in shared:
            ensure_free(address, "listen address")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
    servers = [make_server(kind, app, address, (tls or {}).get(address), grace,
                           shared=address in shared) for app, address in apps]
    tasks = [asyncio.create_task(server.serve()) for server in servers]
    granian = [port for server in servers for port in server.granian_ports]
    reaper = ConnectionReaper(granian, silence=silence_for() if silence is None else silence,
                              every=REAP_EVERY)
    reaping = asyncio.create_task(reaper.run(stop)) if granian else None
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for server in servers:
        server.stop()
    waiter.cancel()
    if reaping is not None:
        reaping.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signum)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on uvloop when installed (it serves faster), else asyncio;
    where :mod:`stoker.server.heap`'s policy applies (the CPython versions it was measured on),
    the heap built so far is frozen first, and the process's full collections follow the
    policy from then on."""
    if heap_policy_applies():
        freeze_heap()
        HeapKeeper().install()
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
