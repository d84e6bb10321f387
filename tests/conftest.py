"""Shared test helpers: free ports and real servers run inside the test's event loop.

Property tests run without hypothesis's per-example deadline: no test depends on how
fast a loaded machine runs it (a 2-core CI box running the suite beside other work
would fail a 200 ms deadline at random).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import uvicorn
from hypothesis import settings

from stoker.asgi import ASGIApp, Receive
from stoker.server.listeners import Tls, run_apps

settings.register_profile("stoker", deadline=None)
settings.load_profile("stoker")

SERVICES = ("postgres", "redis")
"""Names that mark a test as one needing PostgreSQL or Redis (``-m "not services"``)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``services`` every test whose id names PostgreSQL or Redis: a contract suite's
    backend parameter, or a module or test named for one (``make test-fast`` leaves them
    out; ``make test`` and CI run them)."""
    for item in items:
        if any(name in item.nodeid.lower() for name in SERVICES):
            item.add_marker(pytest.mark.services)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Return once ``condition()`` holds, looking every 10 ms; fail naming ``what`` after
    ``timeout`` real seconds (a guard against a hang, not a measure of speed)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


async def wait_listening(port: int, timeout: float = 10.0) -> None:
    """Return once something accepts connections on ``port``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                raise TimeoutError(f"nothing listens on port {port}") from None
            await asyncio.sleep(0.02)
        else:
            writer.close()
            return


@asynccontextmanager
async def serving(app: ASGIApp, *, kind: str = "uvicorn", port: int | None = None,
                  tls: Tls | None = None) -> AsyncIterator[str]:
    """Serve ``app`` on a real server of ``kind`` (HTTPS with ``tls``); yield its base URL;
    stop on exit.  ``kind`` is a ``server`` setting (``stoker``, ``granian``) or
    ``uvicorn``: uvicorn itself, as the framework apps our origins stand for are run."""
    port = port or free_port()
    address = f"127.0.0.1:{port}"
    stop = asyncio.Event()
    task = asyncio.create_task(_uvicorn(app, port, stop, tls) if kind == "uvicorn" else (
        run_apps(kind, [(app, address)], stop, {address: tls} if tls else None)))
    try:
        await wait_listening(port)
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


async def _uvicorn(app: ASGIApp, port: int, stop: asyncio.Event, tls: Tls | None) -> None:
    """uvicorn serving ``app`` on 127.0.0.1:``port`` until ``stop`` is set."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off",
                            access_log=False, log_level="warning",
                            ssl_certfile=str(tls.cert) if tls else None,
                            ssl_keyfile=str(tls.key) if tls else None)
    server = uvicorn.Server(config)
    serve = asyncio.create_task(server.serve())
    await asyncio.wait([serve, asyncio.create_task(stop.wait())],
                       return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    await serve


async def request_body(receive: Receive) -> bytes:
    """The whole body of the request an ASGI test app is answering."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


HANG_GUARD = 20.0
"""Seconds a stopped loop may take to end before the test fails (only stops a hung test;
no claim about speed)."""


@asynccontextmanager
async def running(run: Callable[[asyncio.Event], Awaitable[None]]) -> AsyncIterator[asyncio.Event]:
    """Run ``run(stop)`` (a worker's or a ticker's loop) as a task inside the block; leaving
    it sets ``stop`` and waits for the task to end."""
    stop = asyncio.Event()
    task = asyncio.create_task(run(stop))
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, HANG_GUARD)
