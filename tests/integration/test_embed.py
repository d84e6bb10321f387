"""The public embedding API (``stoker.Stoker``) around real Starlette and FastAPI apps:
the examples' sitemap site purged through ``stoker.purge`` and re-warmed by ordinary
requests only, several apps on one store, rules and settings refused by name, the admin
side mounted and purging."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from examples.fastapi_site import make_app
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from stoker import PurgeRequestError, Rule, SettingsError, Stoker
from stoker.asgi import ASGIApp

SITE = "http://testserver"


def client(app: ASGIApp, base: str = SITE) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base)


@pytest.fixture
async def blog(tmp_path: Path) -> AsyncIterator[tuple[Stoker, ASGIApp, dict[str, str]]]:
    stoker = Stoker(data_dir=str(tmp_path), site_url=SITE, warm=True, admin_token="t0ken")
    posts = {"hello": "Hello.", "second": "Second."}
    async with stoker:
        yield stoker, make_app(stoker, posts), posts


async def cached_urls(stoker: Stoker) -> set[str]:
    core = await stoker.core()
    found = set()
    for url in (f"{SITE}/", f"{SITE}/posts/hello", f"{SITE}/posts/second"):
        _, entries, _ = await core.purger.entries_for_url(url)
        if entries:
            found.add(url)
    return found


async def ordinary_requests(stoker: Stoker, browser: httpx.AsyncClient, count: int) -> None:
    """``count`` requests for the sitemap (never for a page), each followed by its batch."""
    runtime = await stoker.runtime()
    assert runtime.traffic is not None
    for _ in range(count):
        await browser.get("/sitemap.xml")
        await runtime.traffic.settle()


async def test_a_sitemap_site_is_warmed_purged_and_rewarmed_by_its_own_traffic(
        blog: tuple[Stoker, ASGIApp, dict[str, str]]) -> None:
    stoker, app, _ = blog
    async with client(app) as browser:
        await ordinary_requests(stoker, browser, 6)  # warm_on_start: the cache was empty
        assert await cached_urls(stoker) == {f"{SITE}/", f"{SITE}/posts/hello",
                                             f"{SITE}/posts/second"}
        page = await browser.get("/posts/hello")
        assert "hit" in page.headers["cache-status"] and "Hello." in page.text
        assert page.headers["cache-control"] == "max-age=300, stale-while-revalidate=30"
        assert "surrogate-key" not in page.headers

        edited = await browser.post("/posts/hello", params={"text": "Edited."})
        assert edited.json()["purged"] == 2  # the post and the home page
        assert await cached_urls(stoker) == {f"{SITE}/posts/second"}
        runtime = await stoker.runtime()
        assert runtime.warm is not None  # the purge records its URLs in the background:
        await runtime.warm.warmer.rewarms.settle()  # the next batch must find them
        await ordinary_requests(stoker, browser, 3)
        assert await cached_urls(stoker) == {f"{SITE}/", f"{SITE}/posts/hello",
                                             f"{SITE}/posts/second"}
        again = await browser.get("/posts/hello")
    assert "hit" in again.headers["cache-status"] and "Edited." in again.text
    status = await stoker.status()
    assert status["requests"]["hit"] >= 2 and status["warm"]["last"]["reason"] == "purge"


async def test_nothing_due_starts_no_batch(blog: tuple[Stoker, ASGIApp, dict[str, str]]
                                           ) -> None:
    stoker, app, _ = blog
    runtime = await stoker.runtime()
    assert runtime.traffic is not None
    async with client(app) as browser:
        await ordinary_requests(stoker, browser, 6)
        batches = runtime.traffic.batches
        for _ in range(20):
            await browser.get("/posts/second")
            await runtime.traffic.settle()
    assert runtime.traffic.batches == batches  # no store asked: nothing was due


async def test_the_admin_side_is_mounted_guarded_and_purges(
        blog: tuple[Stoker, ASGIApp, dict[str, str]]) -> None:
    _, app, _ = blog
    token = {"authorization": "Bearer t0ken"}
    async with client(app) as browser:
        await browser.get("/posts/second")
        assert "hit" in (await browser.get("/posts/second")).headers["cache-status"]
        refused = await browser.post("/stoker/api/purge", json={"tags": ["post-second"]})
        cross = await browser.post("/stoker/api/purge", json={"tags": ["post-second"]},
                                   headers={**token, "origin": "https://evil.example"})
        purged = await browser.post("/stoker/api/purge", json={"tags": ["post-second"]},
                                    headers=token)
        metrics = await browser.get("/stoker/metrics", headers=token)
        after = await browser.get("/posts/second")
    assert refused.status_code == 401 and cross.status_code == 403
    assert purged.status_code == 200 and purged.json()["purged"] == 1
    assert purged.headers["cache-control"] == "no-store"
    assert metrics.status_code == 200 and "stoker_" in metrics.text
    assert "fwd=uri-miss" in after.headers["cache-status"]


def counting_app(name: str) -> tuple[Starlette, list[str]]:
    seen: list[str] = []

    async def page(request: Request) -> PlainTextResponse:
        seen.append(request.url.path)
        return PlainTextResponse(f"{name} {len(seen)}", headers={"cache-control": "max-age=60",
                                                                 "surrogate-key": name})

    return Starlette(routes=[Route("/{path:path}", page)]), seen


async def test_one_stoker_caches_several_apps_each_asked_for_its_own(tmp_path: Path) -> None:
    stoker = Stoker(data_dir=str(tmp_path))
    shop, shop_seen = counting_app("shop")
    blog, blog_seen = counting_app("blog")
    async with stoker, client(stoker.asgi(shop), "http://shop.example") as to_shop, client(
            stoker.asgi(blog), "http://blog.example") as to_blog:
        answers = [await to_shop.get("/a"), await to_blog.get("/a"), await to_shop.get("/a"),
                   await to_blog.get("/a")]
        result = await stoker.purge(tags=["blog"])
        refill = await to_blog.get("/a")
    assert [r.text for r in answers] == ["shop 1", "blog 1", "shop 1", "blog 1"]
    assert result.urls == ("http://blog.example/a",) and refill.text == "blog 2"
    assert shop_seen == ["/a"] and blog_seen == ["/a", "/a"]


async def test_rules_as_dicts_or_rule_objects_and_mistakes_named(tmp_path: Path) -> None:
    async def plain(request: Request) -> PlainTextResponse:
        return PlainTextResponse("plain")  # no Cache-Control: the rule's ttl stores it

    stoker = Stoker(data_dir=str(tmp_path), rules=[{"path": "/", "ttl": "5m"}])
    other = Stoker(data_dir=str(tmp_path / "b"), rules=[Rule(path="/", ttl="5m")])
    assert stoker.settings.rules == other.settings.rules
    async with stoker, client(stoker.asgi(Starlette(routes=[Route("/", plain)]))) as browser:
        await browser.get("/")
        assert "hit" in (await browser.get("/")).headers["cache-status"]
    with pytest.raises(SettingsError, match=r"rules\[1\]: ttl"):
        Stoker(rules=[{"path": "/"}, {"path": "/x", "ttl": "5 minutes"}])
    with pytest.raises(SettingsError, match="rules must be a list"):
        Stoker(rules="/: 5m")
    with pytest.raises(SettingsError, match=r"rules\[0\] must be a Rule or a dict"):
        Stoker(rules=[("/", "5m")])
    with pytest.raises(SettingsError, match="Rule: ttl"):
        Rule(path="/", ttl="soon")
    with pytest.raises(SettingsError, match="listen is a setting of Stoker's own servers"):
        Stoker(listen="0.0.0.0:80")
    with pytest.raises(SettingsError, match="warm=True needs site_url"):
        Stoker(warm=True)
    with pytest.raises(SettingsError, match="bad value for 'default_swr'"):
        Stoker(default_swr="soon")


async def test_hosts_are_the_apps_not_the_proxys_listener(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app, _ = counting_app("site")
    stoker = Stoker(data_dir=str(tmp_path), purge_allow=["127.0.0.1"])
    async with stoker, client(stoker.asgi(app), "http://app.example:8000") as browser:
        await browser.get("/page")
        with caplog.at_level(logging.WARNING, "stoker.purge"):
            answer = await browser.request("PURGE", "/page")
        with pytest.raises(PurgeRequestError, match=r"urls\[0\].*is a path"):
            await stoker.purge(urls=["/page"])
        with pytest.raises(TypeError, match="tags must be a list of strings"):
            await stoker.purge(tags="site")
    assert answer.status_code == 200 and answer.json()["unknown_hosts"] == []
    assert answer.json()["purged"] == 1 and "unknown_hosts" not in caplog.text


async def test_cached_functions_use_the_stokers_store(tmp_path: Path) -> None:
    """The wiring to the function cache (``stoker.functions``): ``Stoker.cached`` on this
    store, ``stoker.cached`` on the default one."""
    import stoker as package

    calls: list[int] = []
    stoker = Stoker(data_dir=str(tmp_path))

    @stoker.cached(ttl="1m", tags=lambda n: [f"n-{n}"])
    async def square(n: int) -> int:
        calls.append(n)
        return n * n

    async with stoker:
        assert [await square(3), await square(3)] == [9, 9]
        assert calls == [3]
    assert callable(package.cached(ttl="1m"))
