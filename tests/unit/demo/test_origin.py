"""The demo origin: routes, validators, sitemaps, stats and unbuffered streaming."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from tests.conftest import free_port, request_body, serving

from stoker.asgi import Receive, Scope, Send
from stoker.clock import FakeClock
from stoker.demo.origin import DemoOrigin, make_demo_app

SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@pytest.fixture
def app() -> DemoOrigin:
    return make_demo_app(pages=25, delay=0.0, sitemap_chunk=10, clock=FakeClock())


@pytest.fixture
async def client(app: DemoOrigin) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo.test") as c:
        yield c


async def test_page_sends_tags_cache_headers_and_validators(client: httpx.AsyncClient) -> None:
    r = await client.get("/page/13")
    assert r.status_code == 200
    assert r.headers["surrogate-key"] == "page-13 collection-3"
    assert r.headers["cache-control"] == "public, max-age=0"  # browsers revalidate
    # Stoker keeps it 10 minutes, then serves it at once for a day while revalidating
    assert r.headers["cdn-cache-control"] == "max-age=600, stale-while-revalidate=86400"
    assert r.headers["etag"].startswith('"')
    assert "last-modified" in r.headers
    assert r.headers["content-type"].startswith("text/html")
    assert 5 * 1024 <= len(r.content) <= 21 * 1024
    assert int(r.headers["content-length"]) == len(r.content)
    assert "<title>Page 13: " in r.text
    assert 'href="/page/12"' in r.text and 'href="/page/14"' in r.text


async def test_page_bodies_are_deterministic_and_out_of_range_is_404(
    client: httpx.AsyncClient,
) -> None:
    first, again = await client.get("/page/5"), await client.get("/page/5")
    assert first.content == again.content
    assert first.headers["etag"] == again.headers["etag"]
    assert (await client.get("/page/0")).status_code == 404
    assert (await client.get("/page/26")).status_code == 404
    assert (await client.get("/page/x")).status_code == 404
    assert (await client.get("/nowhere")).status_code == 404


async def test_if_none_match_gives_304_with_validators(client: httpx.AsyncClient) -> None:
    etag = (await client.get("/page/7")).headers["etag"]
    r = await client.get("/page/7", headers={"If-None-Match": f'"nope", W/{etag}'})
    assert r.status_code == 304
    assert r.content == b""
    assert r.headers["etag"] == etag
    assert r.headers["cdn-cache-control"] == "max-age=600, stale-while-revalidate=86400"
    stale = await client.get("/page/7", headers={"If-None-Match": '"other"'})
    assert stale.status_code == 200


async def test_if_modified_since_gives_304(client: httpx.AsyncClient) -> None:
    last_modified = (await client.get("/page/2")).headers["last-modified"]
    r = await client.get("/page/2", headers={"If-Modified-Since": last_modified})
    assert r.status_code == 304
    long_ago = "Mon, 01 Jan 2001 00:00:00 GMT"
    old = await client.get("/page/2", headers={"If-Modified-Since": long_ago})
    assert old.status_code == 200


async def test_edit_changes_body_etag_and_last_modified(client: httpx.AsyncClient) -> None:
    before = await client.get("/page/4")
    edited = await client.post("/edit/4")
    assert edited.status_code == 200
    assert edited.json()["version"] == 2
    after = await client.get("/page/4")
    assert after.content != before.content
    assert after.headers["etag"] == edited.json()["etag"] != before.headers["etag"]
    assert after.headers["last-modified"] != before.headers["last-modified"]
    r = await client.get("/page/4", headers={"If-None-Match": before.headers["etag"]})
    assert r.status_code == 200
    assert (await client.get("/edit/4")).status_code == 405
    assert (await client.post("/edit/99")).status_code == 404


async def test_home_and_collections_link_pages(client: httpx.AsyncClient) -> None:
    home = await client.get("/")
    assert home.headers["surrogate-key"] == "home list"
    for c in range(10):
        assert f'href="/collection/{c}"' in home.text
    assert 'href="/page/1"' in home.text
    coll = await client.get("/collection/3")
    assert coll.headers["surrogate-key"] == "collection-3 list"
    assert coll.headers["cdn-cache-control"] == "max-age=600, stale-while-revalidate=86400"
    for n in (3, 13, 23):
        assert f'href="/page/{n}"' in coll.text
    assert 'href="/page/4"' not in coll.text
    assert 'href="/page/10"' in (await client.get("/collection/0")).text
    assert (await client.get("/collection/10")).status_code == 404


async def test_robots_sitemap_index_and_gzip_children(client: httpx.AsyncClient) -> None:
    robots = await client.get("/robots.txt")
    assert "Sitemap: http://demo.test/sitemap.xml" in robots.text
    index = await client.get("/sitemap.xml")
    assert index.headers["content-type"] == "application/xml"
    root = ET.fromstring(index.content)
    assert root.tag == f"{SITEMAP_NS}sitemapindex"
    locs = [e.text for e in root.iter(f"{SITEMAP_NS}loc")]
    assert locs == [f"http://demo.test/sitemaps/{i}.xml.gz" for i in (1, 2, 3)]
    pages: list[str] = []
    for loc in locs:
        assert loc is not None
        child = await client.get(loc)
        assert child.status_code == 200
        assert child.headers["content-type"] == "application/gzip"
        assert child.content[:2] == b"\x1f\x8b"  # really gzip, not Content-Encoding
        urlset = ET.fromstring(gzip.decompress(child.content))
        assert urlset.tag == f"{SITEMAP_NS}urlset"
        pages += [e.text or "" for e in urlset.iter(f"{SITEMAP_NS}loc")]
        assert len(list(urlset.iter(f"{SITEMAP_NS}lastmod"))) == len(list(urlset))
    assert pages == [f"http://demo.test/page/{n}" for n in range(1, 26)]
    assert (await client.get("/sitemaps/4.xml.gz")).status_code == 404


async def test_account_sets_cookie_without_cache_headers(client: httpx.AsyncClient) -> None:
    r = await client.get("/account")
    assert r.status_code == 200
    assert r.headers["set-cookie"].startswith("session=")
    assert "cache-control" not in r.headers
    assert "etag" not in r.headers and "expires" not in r.headers


async def test_private_page(client: httpx.AsyncClient) -> None:
    r = await client.get("/private")
    assert r.headers["cache-control"] == "private, max-age=60"


async def test_head_sends_headers_only(client: httpx.AsyncClient) -> None:
    get, head = await client.get("/page/9"), await client.head("/page/9")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    assert head.headers["etag"] == get.headers["etag"]


async def test_stats_count_requests_by_path_and_reset(client: httpx.AsyncClient) -> None:
    await client.get("/page/1")
    await client.get("/page/1", headers={"If-None-Match": "*"})
    await client.get("/slow?ms=0")
    await client.get("/health")
    stats = (await client.get("/__stats")).json()
    assert stats["total"] == 4
    assert stats["paths"] == {"/page/1": 2, "/slow": 1, "/health": 1}
    assert stats["statuses"] == {"200": 3, "304": 1}
    reset = await client.post("/__stats/reset")
    assert reset.json() == {"total": 0, "paths": {}, "statuses": {}}
    assert (await client.get("/__stats")).json()["total"] == 0


async def test_every_page_waits_delay_but_health_does_not() -> None:
    clock = FakeClock()
    app = make_demo_app(pages=3, delay=0.5, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo.test") as c:
        await c.get("/health")
        assert clock.monotonic() == 0.0
        await c.get("/page/1")
        assert clock.monotonic() == 0.5
        await c.get("/slow?ms=250")
        assert clock.monotonic() == 0.75


async def test_big_streams_chunks_without_buffering() -> None:
    app = make_demo_app(delay=0.0)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append({k: (len(v) if k == "body" else v) for k, v in message.items()})

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/big",
        "query_string": b"mb=3",
        "headers": [(b"host", b"demo.test")],
        "scheme": "http",
    }
    await app(scope, receive, send)
    start, *bodies = sent
    headers = dict(start["headers"])
    assert headers[b"content-length"] == str(3 * 1024 * 1024).encode()
    assert len(bodies) == 3 * 16
    assert all(b["body"] == 64 * 1024 for b in bodies)
    assert [b["more_body"] for b in bodies] == [True] * 47 + [False]


class RecordingAdmin:
    """A stand-in for Stoker's admin API: records each request, answers ``status``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.calls: list[tuple[str, str, str | None, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await request_body(receive)
        token = dict(scope["headers"]).get(b"authorization")
        self.calls.append((scope["method"], scope["path"],
                           token.decode() if token else None, json.loads(body or b"null")))
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})


async def _demo_client(admin_url: str | None, token: str | None = None) -> httpx.AsyncClient:
    app = make_demo_app(pages=25, delay=0.0, clock=FakeClock(), admin_url=admin_url,
                        admin_token=token)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://demo.test")


async def test_edit_button_purges_only_the_page_tag_and_redirects_to_saved() -> None:
    admin = RecordingAdmin()
    async with serving(admin) as admin_url, await _demo_client(admin_url, "t0k") as client:
        page = await client.get("/page/4")
        edited = await client.post("/page/4/edit", data={})
        saved = await client.get(edited.headers["location"])
        after = await client.get("/page/4")
    assert '<form method="post" action="/page/4/edit">' in page.text
    assert "Revision 1." in page.text
    assert edited.status_code == 303
    assert edited.headers["location"] == "/page/4/saved?purge=ok"
    assert edited.headers["cache-control"] == "no-store"
    assert admin.calls == [("POST", "/api/purge", "Bearer t0k", {"tags": ["page-4"]})]
    assert saved.status_code == 200 and saved.headers["cache-control"] == "no-store"
    assert "now revision 2" in saved.text and "purged the tag page-4" in saved.text
    assert 'href="/page/4"' in saved.text
    assert "Revision 2." in after.text
    assert after.headers["surrogate-key"] == "page-4 collection-4"


@pytest.mark.parametrize("reachable", [True, False])
async def test_edit_is_kept_and_reported_when_the_purge_fails(reachable: bool) -> None:
    admin = RecordingAdmin(status=401)
    async with serving(admin) as running:
        admin_url = running if reachable else f"http://127.0.0.1:{free_port()}"
        async with await _demo_client(admin_url) as client:
            edited = await client.post("/page/9/edit")
            saved = await client.get(edited.headers["location"])
            after = await client.get("/page/9")
    assert edited.headers["location"] == "/page/9/saved?purge=failed"
    assert "purge page-9 failed" in saved.text
    assert "Revision 2." in after.text
    assert [call[2] for call in admin.calls] == ([None] if reachable else [])


async def test_edit_without_an_admin_api_purges_nothing(client: httpx.AsyncClient) -> None:
    edited = await client.post("/page/2/edit")
    saved = await client.get(edited.headers["location"])
    assert edited.headers["location"] == "/page/2/saved?purge=off"
    assert "nothing was purged" in saved.text and "now revision 2" in saved.text


async def test_page_actions_check_method_page_and_action(client: httpx.AsyncClient) -> None:
    wrong_edit = await client.get("/page/4/edit")
    assert (wrong_edit.status_code, wrong_edit.headers["allow"]) == (405, "POST")
    wrong_saved = await client.post("/page/4/saved")
    assert (wrong_saved.status_code, wrong_saved.headers["allow"]) == (405, "GET, HEAD")
    assert (await client.post("/page/26/edit")).status_code == 404
    assert (await client.post("/page/x/edit")).status_code == 404
    assert (await client.get("/page/4/other")).status_code == 404
    assert "Revision 1." in (await client.get("/page/4")).text


@pytest.fixture
def live_origin() -> Iterator[str]:
    """The demo origin on a real uvicorn server on a loopback port."""
    import threading

    port = free_port()
    config = uvicorn.Config(
        make_demo_app(pages=50, delay=0.0),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "demo origin did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_big_over_real_server_arrives_in_pieces(live_origin: str) -> None:
    with httpx.Client(base_url=live_origin) as c:
        with c.stream("GET", "/big?mb=4") as r:
            assert r.headers["content-length"] == str(4 * 1024 * 1024)
            sizes = [len(chunk) for chunk in r.iter_raw()]
        assert sum(sizes) == 4 * 1024 * 1024
        assert len(sizes) > 1
        robots = c.get("/robots.txt").text
        assert f"Sitemap: {live_origin}/sitemap.xml" in robots
        assert c.get("/__stats").json()["paths"] == {"/big": 1, "/robots.txt": 1}
