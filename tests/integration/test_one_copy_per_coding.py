"""One stored copy serves every Accept-Encoding, behind an origin that compresses.

The origin is offered only codings the client accepts and Stoker can decode; a gzip
or br answer is stored decoded, without Accept-Encoding in its key, and every later
client gets the form it accepts (Stoker's own br/gzip, or identity) from that copy.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from pathlib import Path

import brotli
import httpx
import pytest
from tests.conftest import serving
from tests.integration.conftest import Proxy, running_proxy
from tests.integration.wordpress_like import NGINX, WordPressLike, behind_nginx, page

from stoker.adapters.visit import PipelineVisitor
from stoker.config.settings import DEFAULT_VARIANTS
from stoker.purge.scope import PurgeScope

VISITORS = ["gzip", "gzip, deflate", "gzip, deflate, br", "br", "identity", None]
"""Accept-Encoding of real clients: curl --compressed, old bots, browsers, none."""


def decoded(response: httpx.Response, body: bytes) -> bytes:
    coding = response.headers.get("content-encoding")
    if coding == "gzip":
        return gzip.decompress(body)
    if coding == "br":
        return brotli.decompress(body)
    assert coding is None, coding
    return body


async def get(proxy: Proxy, path: str, accept: str | None) -> tuple[httpx.Response, bytes]:
    """The response and its body as sent; ``accept`` None sends no Accept-Encoding."""
    request = proxy.client.build_request("GET", path)
    if accept is None:
        del request.headers["accept-encoding"]
    else:
        request.headers["accept-encoding"] = accept
    response = await proxy.client.send(request, stream=True)
    body = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return response, body


def acceptable(response: httpx.Response, accept: str | None) -> bool:
    coding = response.headers.get("content-encoding")
    return coding is None or (accept is not None and coding in accept)


@pytest.fixture
async def site() -> AsyncIterator[tuple[WordPressLike, str]]:
    app = WordPressLike(compress=True)
    async with serving(app, kind="uvicorn") as url:
        yield app, url


@pytest.fixture
async def proxy(site: tuple[WordPressLike, str], tmp_path: Path) -> AsyncIterator[Proxy]:
    async with running_proxy(site[1], tmp_path / "data") as running:
        yield running


@pytest.mark.parametrize("first", VISITORS)
async def test_after_one_fetch_every_accept_encoding_is_a_hit(
        site: tuple[WordPressLike, str], proxy: Proxy, first: str | None) -> None:
    app, _ = site
    miss, body = await get(proxy, "/page-1/", first)
    assert "fwd=uri-miss" in miss.headers["cache-status"] and acceptable(miss, first)
    assert decoded(miss, body) == page("/page-1/")
    for accept in VISITORS:
        response, body = await get(proxy, "/page-1/", accept)
        assert response.headers["cache-status"].startswith("stoker; hit"), (accept, response)
        assert acceptable(response, accept) and decoded(response, body) == page("/page-1/")
        assert "accept-encoding" in response.headers["vary"].lower()
        assert response.headers["content-length"] == str(len(body))
    assert app.hits["/page-1/"] == 1


async def test_the_origin_is_offered_only_codings_stoker_decodes(
        site: tuple[WordPressLike, str], proxy: Proxy) -> None:
    app, _ = site
    for path, accept in (("/page-1/", "gzip, deflate, br, zstd"), ("/page-2/", "deflate"),
                         ("/page-3/", None)):
        await get(proxy, path, accept)
    offers = [request["accept-encoding"] for request in app.requests]
    assert offers == ["br, gzip", "identity", "identity"]


async def test_one_warm_visit_warms_every_coding(site: tuple[WordPressLike, str],
                                                proxy: Proxy) -> None:
    app, _ = site
    stoker = proxy.stoker
    visitor = PipelineVisitor(stoker.pipeline, stoker.clock, stopgap_header=b"x-stoker-stopgap")
    warm_headers = [(name.encode(), value.encode()) for name, value in DEFAULT_VARIANTS[0]]
    for path in app.paths:
        visit = await visitor.visit(f"{proxy.url}{path}", warm_headers, allowance=2)
        assert visit.outcome == "warmed"
    waited = 0
    for path in app.paths:
        for accept in VISITORS:
            response, body = await get(proxy, path, accept)
            waited += not response.headers["cache-status"].startswith("stoker; hit")
            assert decoded(response, body) == page(path)
    assert waited == 0
    assert all(count == 1 for count in app.hits.values())


async def test_a_gzip_copy_is_revalidated_with_its_weak_etag(
        site: tuple[WordPressLike, str], proxy: Proxy) -> None:
    app, _ = site
    miss, _ = await get(proxy, "/page-4/", "gzip")
    assert miss.headers["etag"].startswith('W/"')
    stored, _ = await get(proxy, "/page-4/", None)
    assert stored.headers["etag"] == miss.headers["etag"]  # identity: the weak validator
    await proxy.stoker.purger.purge(PurgeScope(urls=(f"{proxy.url}/page-4/",), soft=True))
    await get(proxy, "/page-4/", "br")  # stale: served, and revalidated in the background
    after, body = await asyncio.wait_for(fresh_hit(proxy, "/page-4/", "br"), 20)
    assert app.requests[-1]["if-none-match"] == miss.headers["etag"]
    assert decoded(after, body) == page("/page-4/") and app.hits["/page-4/"] == 2


async def fresh_hit(proxy: Proxy, path: str, accept: str) -> tuple[httpx.Response, bytes]:
    """The first answer to ``path`` that is a fresh hit (polled)."""
    while True:
        response, body = await get(proxy, path, accept)
        status = response.headers["cache-status"]
        if status.startswith("stoker; hit") and "stale" not in status:
            return response, body
        await asyncio.sleep(0.01)


async def test_other_vary_fields_still_vary(site: tuple[WordPressLike, str],
                                            proxy: Proxy) -> None:
    app, _ = site
    app.extra = [(b"vary", b"Origin")]  # a second Vary line, as WordPress's REST API sends
    await get(proxy, "/page-5/", "gzip")
    proxy.client.headers["origin"] = "https://a.example"
    other, _ = await get(proxy, "/page-5/", "gzip")
    again, body = await get(proxy, "/page-5/", "br")
    assert "fwd=vary-miss" in other.headers["cache-status"]
    assert again.headers["cache-status"].startswith("stoker; hit")
    assert decoded(again, body) == page("/page-5/") and app.hits["/page-5/"] == 2


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")
async def test_a_wordpress_like_site_behind_nginx_gzip(tmp_path: Path) -> None:
    app = WordPressLike(compress=False)  # nginx compresses
    async with serving(app, kind="uvicorn") as upstream, behind_nginx(upstream) as nginx, \
            running_proxy(nginx, tmp_path / "data") as proxy:
        direct = await proxy.client.get(f"{nginx}/page-1/", headers={"accept-encoding": "gzip"})
        assert direct.headers["content-encoding"] == "gzip"  # nginx really compresses
        assert direct.headers["vary"] == "Accept-Encoding"
        for path in app.paths:
            await get(proxy, path, "gzip, deflate, br, zstd")  # a browser fills the cache
        waited = 0
        for path in app.paths:
            for accept in VISITORS:
                response, body = await get(proxy, path, accept)
                waited += not response.headers["cache-status"].startswith("stoker; hit")
                assert acceptable(response, accept) and decoded(response, body) == page(path)
    assert waited == 0
    assert sum(app.hits.values()) == len(app.paths) + 1  # one fetch each, and `direct`
