"""Range requests answered from a stored 200 (RFC 9110 §14), in process (on real servers,
and the If-Modified-Since fallback to the Date a real server adds:
``tests/integration/test_proxy_range.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.core.conftest import core_proxy
from tests.integration.conftest import Origin, Proxy

PAGE = bytes(range(256)) * 78 + b"tail-of-page" + b"!" * 20  # 20,000 bytes
CACHEABLE = [("cache-control", "public, max-age=600"), ("etag", '"v1"'),
             ("content-type", "application/octet-stream")]


@pytest.fixture
async def small_file_proxy(origin: Origin, tmp_path: Path) -> AsyncIterator[Proxy]:
    """A proxy that stores every body over 1,000 bytes in a file."""
    async with core_proxy(origin.app, tmp_path / "data", body_file_threshold="1000") as proxy:
        yield proxy


async def store_page(origin: Origin, proxy: Proxy, path: str) -> None:
    assert len(PAGE) == 20000
    origin.app.set(path, headers=CACHEABLE, body=PAGE)
    miss = await proxy.client.get(path, headers={"range": "bytes=0-9"})
    # A miss fetches (and stores) the whole representation and sends it whole.
    assert miss.status_code == 200 and miss.content == PAGE
    _, _, sent = origin.app.requests[-1]
    assert "range" not in sent and "if-range" not in sent
    await until_stored(proxy, path)


async def until_stored(proxy: Proxy, path: str) -> None:
    """Wait for the miss's store: the client has its response before the entry is put,
    and a request looking up in that window would fetch again instead of hitting."""
    key = proxy.stoker.pipeline.keying.key_for_url(f"{proxy.url}{path}")
    while not await proxy.stoker.store.get(key):
        await asyncio.sleep(0.005)  # bounded by the test timeout


async def check_slices(origin: Origin, proxy: Proxy, path: str) -> None:
    first = await proxy.client.get(path, headers={"range": "bytes=0-99"})
    assert first.status_code == 206, first.headers
    assert first.content == PAGE[:100]
    assert first.headers["content-range"] == "bytes 0-99/20000"
    assert first.headers["content-length"] == "100"
    assert first.headers["content-type"] == "application/octet-stream"
    assert first.headers["etag"] == '"v1"'
    assert first.headers["cache-status"].startswith("stoker; hit")
    assert "age" in first.headers

    last = await proxy.client.get(path, headers={"range": "bytes=-50"})
    assert (last.status_code, last.content) == (206, PAGE[-50:])
    assert last.headers["content-range"] == "bytes 19950-19999/20000"

    rest = await proxy.client.get(path, headers={"range": "bytes=100-"})
    assert (rest.status_code, rest.content) == (206, PAGE[100:])
    assert rest.headers["content-length"] == "19900"

    middle = await proxy.client.get(path, headers={"range": "bytes=12345-12399"})
    assert (middle.status_code, middle.content) == (206, PAGE[12345:12400])
    assert origin.app.count(path) == 1


async def test_ranges_from_an_inline_body(origin: Origin, proxy: Proxy) -> None:
    await store_page(origin, proxy, "/page")
    await check_slices(origin, proxy, "/page")


async def test_ranges_from_a_file_body(origin: Origin, small_file_proxy: Proxy,
                                       tmp_path: Path) -> None:
    await store_page(origin, small_file_proxy, "/big")
    await check_slices(origin, small_file_proxy, "/big")
    # The hits above came from a stored entry whose body is in a file.
    assert len(list((tmp_path / "data" / "bodies").glob("*.body"))) == 1


async def test_unsatisfiable_range_is_416(origin: Origin, proxy: Proxy) -> None:
    await store_page(origin, proxy, "/page")
    response = await proxy.client.get("/page", headers={"range": "bytes=30000-"})
    assert response.status_code == 416
    assert response.headers["content-range"] == "bytes */20000"
    assert response.content == b""
    assert origin.app.count("/page") == 1


async def test_if_range_decides(origin: Origin, proxy: Proxy) -> None:
    await store_page(origin, proxy, "/page")
    stale = await proxy.client.get("/page", headers={"range": "bytes=0-9", "if-range": '"v0"'})
    assert (stale.status_code, stale.content) == (200, PAGE)
    assert "content-range" not in stale.headers
    current = await proxy.client.get("/page", headers={"range": "bytes=0-9", "if-range": '"v1"'})
    assert (current.status_code, current.content) == (206, PAGE[:10])
    assert origin.app.count("/page") == 1


async def test_multi_and_invalid_ranges_get_the_whole_page(origin: Origin, proxy: Proxy) -> None:
    await store_page(origin, proxy, "/page")
    for value in ("bytes=0-1,5-6", "bytes=9-1", "lines=1-2"):
        response = await proxy.client.get("/page", headers={"range": value})
        assert (response.status_code, response.content) == (200, PAGE), value
        assert response.headers["content-length"] == "20000"


async def test_head_ignores_range(origin: Origin, proxy: Proxy) -> None:
    # RFC 9110 §14.2: GET is the only method for which range handling is defined.
    await store_page(origin, proxy, "/page")
    response = await proxy.client.head("/page", headers={"range": "bytes=0-99"})
    assert response.status_code == 200
    assert response.headers["content-length"] == "20000"
    assert response.content == b""


async def test_conditional_comes_before_range(origin: Origin, proxy: Proxy) -> None:
    await store_page(origin, proxy, "/page")
    response = await proxy.client.get("/page", headers={"range": "bytes=0-9",
                                                        "if-none-match": '"v1"'})
    assert response.status_code == 304
