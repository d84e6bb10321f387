"""The request core without a socket: Stoker's pipeline in front of the in-memory origin
(``AsgiOrigin`` calling a scripted ASGI app in process), its L2 a real SQLite file under
``tmp_path``, its time a :class:`~stoker.clock.FakeClock`; the client speaks to the
proxy's ASGI app through httpx's ``ASGITransport``.  No port is opened, no server runs:
these tests are the core's behaviour; ``tests/integration`` keeps one real-server test
per behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.integration.conftest import Origin, Proxy
from tests.integration.origin import ScriptedOrigin

from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.asgi import ASGIApp
from stoker.clock import Clock, FakeClock
from stoker.config.rules import Rule
from stoker.config.settings import settings_from
from stoker.origin.asgi import AsgiOrigin

BASE_URL = "http://127.0.0.1"
"""The proxy's address as the client names it (the ASGI client is ``127.0.0.1`` too)."""


@asynccontextmanager
async def core_proxy(app: ASGIApp, data_dir: Path, *, clock: Clock | None = None,
                     rules: tuple[Rule, ...] = (), **settings: Any) -> AsyncIterator[Proxy]:
    """Stoker's core in front of the ASGI ``app``, in process; closes the stores on exit."""
    config = settings_from({"data_dir": str(data_dir), **settings}, rules)
    # time stands still unless the test moves it (an auto-advancing clock would run out
    # the L2 write timeout of a write queued behind another at once)
    clock = clock or FakeClock(auto_advance=False)
    stoker = await Stoker.open(config, clock=clock, origin=AsgiOrigin(app))
    try:
        transport = httpx.ASGITransport(ProxyApp(stoker.pipeline))
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL,
                                     timeout=30) as client:
            yield Proxy(BASE_URL, stoker, client, "asgi")
    finally:
        await stoker.close()


@pytest.fixture
def origin() -> Origin:
    """The scripted origin, called in process (it has no URL)."""
    return Origin(ScriptedOrigin(), "")


@pytest.fixture
async def proxy(origin: Origin, tmp_path: Path) -> AsyncIterator[Proxy]:
    """Stoker's core in front of ``origin`` with the default settings."""
    async with core_proxy(origin.app, tmp_path / "data") as running:
        yield running
