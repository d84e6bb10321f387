"""Collapsing under real concurrency and stale-if-error with the origin server stopped, on
real servers (the rest in process: ``tests/core/test_concurrency.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import serving
from tests.core.test_concurrency import (  # collapsing again, on real servers
    proxy_host,
    slow_clock,
    test_200_concurrent_misses_make_one_origin_request,  # noqa: F401
)
from tests.integration.conftest import running_proxy
from tests.integration.origin import ScriptedOrigin


async def test_stale_if_error_when_origin_is_down(tmp_path: Path) -> None:
    clock = slow_clock()
    app = ScriptedOrigin()
    app.set("/sie", headers=[("cache-control", "max-age=10, stale-if-error=600")], body=b"safe")
    async with serving(app) as origin_url, running_proxy(origin_url, tmp_path / "d",
                                                         clock=clock, keep_stale=0) as proxy:
        await proxy.client.get("/sie")
        await proxy.stoker.store.flush()
        clock.advance(60)
        app.set("/sie", status=503, body=b"down")
        on_5xx = await proxy.client.get("/sie")
        assert on_5xx.status_code == 200 and on_5xx.content == b"safe"
        assert "detail=stale-if-error" in on_5xx.headers["cache-status"]
    # the origin server is now stopped entirely
    async with running_proxy(origin_url, tmp_path / "d", clock=clock, keep_stale=0) as proxy:
        stopped = await proxy.client.get("/sie", headers={"host": proxy_host(on_5xx)})
        assert stopped.status_code == 200 and stopped.content == b"safe"
        assert "detail=stale-if-error" in stopped.headers["cache-status"]
        clock.advance(1000)  # past the window: the error shows
        failed = await proxy.client.get("/sie", headers={"host": proxy_host(on_5xx)})
        assert failed.status_code == 502
