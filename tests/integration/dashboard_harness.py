"""Stoker with its admin side (pages, sessions, the status hub) on Stoker's own front,
for the dashboard's tests: log in, read the event stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import serving
from tests.integration.admin_harness import TOKEN
from tests.integration.conftest import Proxy, running_proxy

from stoker.admin.app import AdminSide, admin_side
from stoker.admin.events import StatusHub
from stoker.admin.sessions import COOKIE
from stoker.admin.status import StatusSource

FORM = {"content-type": "application/x-www-form-urlencoded"}


@dataclass
class Dashboard:
    proxy: Proxy
    side: AdminSide
    url: str
    client: httpx.AsyncClient
    """No token, no cookie: each call says who it is."""

    @property
    def bearer(self) -> dict[str, str]:
        return {"authorization": f"Bearer {TOKEN}"}

    @property
    def same_origin(self) -> dict[str, str]:
        return {"origin": self.url}

    async def login(self, token: str = TOKEN) -> httpx.Response:
        return await self.client.post("/login", content=f"token={token}",
                                      headers={**FORM, **self.same_origin})

    async def session(self) -> dict[str, str]:
        """The ``Cookie`` header of a new session."""
        answer = await self.login()
        assert answer.status_code == 303, answer.text
        return {"cookie": answer.headers["set-cookie"].split(";", 1)[0]}

    async def audit(self) -> list[dict[str, Any]]:
        return await self.audit_as(self.bearer)

    async def audit_as(self, headers: dict[str, str]) -> list[dict[str, Any]]:
        """The audit log, read with ``headers`` (a token, maybe a forwarded client)."""
        answer = await self.client.get("/api/audit", headers=headers)
        assert answer.status_code == 200, answer.text
        return list(answer.json()["records"])


@asynccontextmanager
async def dashboard(origin_url: str, data_dir: Path, *, token: str | None = TOKEN,
                    hub: dict[str, float] | None = None,
                    **settings: Any) -> AsyncIterator[Dashboard]:
    """A proxy in front of ``origin_url`` and its admin side on the front; ``hub``: the
    status hub's timings (``debounce``, ``keepalive``, ``check_every``)."""
    async with running_proxy(origin_url, data_dir, admin_token=token, **settings) as proxy:
        made = StatusHub(StatusSource(proxy.stoker, None), **(hub or {}))
        side = admin_side(proxy.stoker, hub=made)
        try:
            async with serving(side.app, kind="stoker") as url, httpx.AsyncClient(
                    base_url=url, timeout=30) as client:
                yield Dashboard(proxy, side, url, client)
        finally:
            await made.close()


def session_cookie(answer: httpx.Response) -> str:
    """The session id an answer set."""
    name, _, value = answer.headers["set-cookie"].split(";", 1)[0].partition("=")
    assert name == COOKIE
    return value
