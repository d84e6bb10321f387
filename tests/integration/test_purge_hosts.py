"""Purges that name the CMS's own host: aliases stand for the site, paths for its hosts.

Wagtail's ``frontend_cache`` and WordPress purge plugins send ``PURGE`` (or name URLs)
with the host the CMS knows — its own address.  With that host in ``site_aliases``
the purge covers the page on the site's own hosts; a path covers every one of the
site's hosts and never ``origin_host``; a host that is neither is named in
``unknown_hosts``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import free_port
from tests.integration.admin_harness import CACHEABLE, Admin, purging
from tests.integration.conftest import Origin, Proxy

CMS = "cms.internal:8000"


@pytest.fixture
async def site(origin: Origin, tmp_path: Path) -> AsyncIterator[tuple[Proxy, Admin]]:
    for path in ("/post/", "/blog/a", "/blog/b"):
        origin.app.set(path, headers=CACHEABLE, body=path.encode())
    port = free_port()
    async with purging(origin.url, tmp_path / "data", port=port,
                       site_url=f"http://127.0.0.1:{port}", site_aliases=[CMS],
                       origin_host="origin.internal", purge_allow=["127.0.0.1"]) as running:
        yield running


async def cached(proxy: Proxy, path: str) -> bool:
    response = await proxy.client.get(path)
    return response.headers["cache-status"].startswith("stoker; hit")


async def test_purge_with_the_cms_host_purges_the_page(site: tuple[Proxy, Admin]) -> None:
    proxy, _ = site
    await proxy.client.get("/post/")
    assert await cached(proxy, "/post/")
    answer = await proxy.client.request("PURGE", "/post/", headers={"host": CMS})
    assert answer.status_code == 200
    assert answer.json()["purged"] == 1 and answer.json()["unknown_hosts"] == []
    assert not await cached(proxy, "/post/")


async def test_the_api_maps_the_cms_host_too(site: tuple[Proxy, Admin]) -> None:
    proxy, admin = site
    for path in ("/post/", "/blog/a", "/blog/b"):
        await proxy.client.get(path)
    answer = await admin.purge(urls=[f"http://{CMS}/post/"], prefixes=[f"http://{CMS}/blog/"])
    assert answer.json()["purged"] == 3 and answer.json()["unknown_hosts"] == []
    assert not any([await cached(proxy, path) for path in ("/post/", "/blog/a", "/blog/b")])


async def test_a_path_purges_the_sites_hosts_not_origin_host(site: tuple[Proxy, Admin]) -> None:
    proxy, admin = site
    await proxy.client.get("/post/")
    answer = (await admin.purge(urls=["/post/"])).json()
    assert answer["purged"] == 1
    assert not any("origin.internal" in url for url in answer["scope"]["urls"])
    assert not await cached(proxy, "/post/")


async def test_a_host_stoker_does_not_serve_is_named(site: tuple[Proxy, Admin],
                                                     caplog: pytest.LogCaptureFixture) -> None:
    proxy, admin = site
    await proxy.client.get("/post/")
    with caplog.at_level(logging.WARNING, logger="stoker.purge"):
        method = (await proxy.client.request("PURGE", "/post/",
                                             headers={"host": "wrong.example"})).json()
        api = (await admin.purge(urls=["https://wrong.example/post/"])).json()
    assert method["purged"] == api["purged"] == 0
    assert method["unknown_hosts"] == api["unknown_hosts"] == ["wrong.example"]
    assert sum("unknown_hosts=wrong.example" in record.getMessage()
               for record in caplog.records) == 2
    assert await cached(proxy, "/post/")  # named the wrong host: nothing purged
