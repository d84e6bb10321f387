"""Range requests answered from a stored file body through real servers, and the
If-Modified-Since fallback to the stored Date (RFC 9110 §13.1.3) the origin's server
adds (every range case in process: ``tests/core/test_range.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.core.test_range import (  # the file-body case again, on real servers
    test_ranges_from_a_file_body,  # noqa: F401
    until_stored,
)
from tests.integration.conftest import Origin, Proxy, running_proxy


@pytest.fixture
async def small_file_proxy(origin: Origin, tmp_path: Path) -> AsyncIterator[Proxy]:
    """A proxy that stores every body over 1,000 bytes in a file."""
    async with running_proxy(origin.url, tmp_path / "data", body_file_threshold="1000") as proxy:
        yield proxy


async def test_if_modified_since_uses_date_without_last_modified(
        origin: Origin, proxy: Proxy) -> None:
    origin.app.set("/dated", headers=[("cache-control", "max-age=600")], body=b"no validators")
    stored = await proxy.client.get("/dated")
    await until_stored(proxy, "/dated")
    date = stored.headers["date"]
    hit = await proxy.client.get("/dated", headers={"if-modified-since": date})
    assert hit.status_code == 304
    assert hit.content == b""
    assert origin.app.count("/dated") == 1
