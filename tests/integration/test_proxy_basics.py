"""Hit and miss, a malformed request and a restart on real servers (the behaviours
one at a time, in process: ``tests/core/test_basics.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import free_port
from tests.core.test_basics import (  # these behaviours again, on real servers
    CACHEABLE,
    test_malformed_request_gets_400_not_a_crash,  # noqa: F401
    test_miss_then_hit_with_age_and_cache_status,  # noqa: F401
)
from tests.integration.conftest import Origin, running_proxy


async def test_restart_keeps_l2_entries(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/keep", headers=CACHEABLE, body=b"persisted")
    port = free_port()  # the Host header, and so the key, names the port
    async with running_proxy(origin.url, tmp_path / "data", port=port) as proxy:
        await proxy.client.get("/keep")
    async with running_proxy(origin.url, tmp_path / "data", port=port) as proxy:
        again = await proxy.client.get("/keep")
    assert again.text == "persisted"
    assert "hit" in again.headers["cache-status"]
    assert origin.app.count("/keep") == 1
