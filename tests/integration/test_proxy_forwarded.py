"""Invalidation before a streamed answer, clients behind trusted proxies and the scheme
they report, on real servers (the rest in process: ``tests/core/test_forwarded.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import serving
from tests.core.test_forwarded import (  # again, on real servers
    hit,
    test_origin_hears_the_scheme_a_trusted_proxy_reports,  # noqa: F401
)
from tests.integration.conftest import Origin, running_proxy

from stoker.config.rules import Rule

Message = MutableMapping[str, Any]




class SlowPost:
    """An origin whose POST answer starts at once and finishes on ``release``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.gets = 0

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        await receive()
        if scope["method"] == "POST":
            await send({"type": "http.response.start", "status": 303,
                        "headers": [(b"location", b"/tracked?utm_campaign=z")]})
            # servers may hold the head back until the body starts: send a first part
            await send({"type": "http.response.body", "body": b"part", "more_body": True})
            await self.release.wait()
            await send({"type": "http.response.body", "body": b"done"})
            return
        self.gets += 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"cache-control", b"max-age=60")]})
        await send({"type": "http.response.body", "body": b"v%d" % self.gets})


async def test_unsafe_method_invalidates_before_the_answer_starts(tmp_path: Path) -> None:
    origin = SlowPost()
    rules = (Rule(path="/tracked", ignore_query=("utm_*",)),)
    async with serving(origin) as origin_url, \
            running_proxy(origin_url, tmp_path, rules=rules) as proxy:
        await proxy.client.get("/item")
        await proxy.client.get("/tracked?utm_source=a")
        assert hit(await proxy.client.get("/item"))
        assert hit(await proxy.client.get("/tracked"))
        async with proxy.client.stream("POST", "/item", content=b"x") as posted:
            assert posted.status_code == 303  # headers are in; the body is still held back
            during_item = await proxy.client.get("/item")
            during_location = await proxy.client.get("/tracked?utm_medium=b")
            origin.release.set()
            await posted.aread()
    assert not hit(during_item) and during_item.text == "v3"
    assert not hit(during_location)


@pytest.mark.parametrize("kind", ["granian", "stoker"])
async def test_purge_allow_sees_the_client_behind_a_trusted_proxy(origin: Origin,
                                                                  tmp_path: Path,
                                                                  kind: str) -> None:
    behind = {"x-forwarded-for": "203.0.113.7"}
    async with running_proxy(origin.url, tmp_path / "a", purge_allow="203.0.113.7",
                             kind=kind) as proxy:
        allowed = await proxy.client.request("PURGE", "/x", headers=behind)
        direct = await proxy.client.request("PURGE", "/x")
    async with running_proxy(origin.url, tmp_path / "b", purge_allow="203.0.113.7",
                             trusted_proxies="", kind=kind) as proxy:
        untrusted = await proxy.client.request("PURGE", "/x", headers=behind)
    assert allowed.status_code == 200
    assert direct.status_code == 403
    assert untrusted.status_code == 403
