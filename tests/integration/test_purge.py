"""Purges through the admin API against a real proxy and origin: what goes, what stays."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import serving
from tests.integration.admin_harness import CACHEABLE, eventually, purging
from tests.integration.conftest import Origin, running_proxy

from stoker.purge.scope import PurgeScope

VARY = [*CACHEABLE, ("vary", "Accept-Language")]


async def test_tag_purge_drops_every_variant_and_only_those(origin: Origin,
                                                            tmp_path: Path) -> None:
    origin.app.set("/p1", headers=[*VARY, ("surrogate-key", "post-1 posts")], body=b"one")
    origin.app.set("/p10", headers=[*CACHEABLE, ("cache-tag", "post-10,posts")], body=b"ten")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        first = await proxy.client.get("/p1", headers={"accept-language": "en"})
        await proxy.client.get("/p1", headers={"accept-language": "de"})
        await proxy.client.get("/p10")
        assert "surrogate-key" not in first.headers  # tag headers are not sent to clients
        purged = await admin.purge(tags=["post-1"])
        assert purged.status_code == 200
        assert purged.headers["cache-control"] == "no-store"
        assert purged.json()["purged"] == 2
        assert purged.json()["urls"] == [f"{proxy.url}/p1"]
        ten = await proxy.client.get("/p10")
        en = await proxy.client.get("/p1", headers={"accept-language": "en"})
        de = await proxy.client.get("/p1", headers={"accept-language": "de"})
    assert "hit" in ten.headers["cache-status"]
    assert "fwd=uri-miss" in en.headers["cache-status"]
    assert "fwd=vary-miss" in de.headers["cache-status"] or "miss" in de.headers["cache-status"]
    assert origin.app.count("/p1") == 4 and origin.app.count("/p10") == 1


async def test_purges_find_entries_only_in_l2(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/l2", headers=[*VARY, ("cache-tag", "only-l2")], body=b"x")
    async with purging(origin.url, tmp_path / "d", l1_max_bytes="1") as (proxy, admin):
        for language in ("en", "de", "fr"):
            await proxy.client.get("/l2", headers={"accept-language": language})
        assert proxy.stoker.store.get_l1(proxy.stoker.pipeline.keying.key_for_url(
            f"{proxy.url}/l2")) is None
        by_tag = await admin.purge(tags=["only-l2"], soft=True)
        by_url = await admin.purge(urls=[f"{proxy.url}/l2"])
    assert by_tag.json()["purged"] == 3
    assert by_url.json()["purged"] == 3


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
async def test_a_purge_answers_before_l2_is_done_and_l2_never_serves_what_it_purged(
        origin: Origin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, soft: bool) -> None:
    origin.app.set("/bg", headers=[("cache-control", "max-age=600, stale-while-revalidate=60"),
                                   ("cache-tag", "bg")], body=b"old")
    async with purging(origin.url, tmp_path / "d", l1_max_bytes="1") as (proxy, admin):
        await proxy.client.get("/bg")  # stored in L2 only: every read below is an L2 read
        method = "soften" if soft else "delete"
        change = getattr(proxy.stoker.l2, method)
        held = asyncio.Event()

        async def held_back(*args: Any) -> Any:  # an L2 that takes its time
            await held.wait()
            return await change(*args)

        monkeypatch.setattr(proxy.stoker.l2, method, held_back)
        purged = await admin.purge(tags=["bg"], soft=soft)
        assert proxy.stoker.store.pending() == 1  # the L2 part is still running
        during = await proxy.client.get("/bg")
        await proxy.stoker.pipeline.drain()
        held.set()
        await proxy.stoker.store.flush()
    assert purged.json()["purged"] == 1
    if soft:
        assert during.content == b"old"
        assert "detail=stale-while-revalidate" in during.headers["cache-status"]
    else:
        assert "fwd=uri-miss" in during.headers["cache-status"]
    assert origin.app.count("/bg") == 2  # the fill, then the refetch (or revalidation)


async def test_url_prefix_and_path_purges(origin: Origin, tmp_path: Path) -> None:
    for path in ("/blog/1", "/blog/2", "/blogger", "/shop"):
        origin.app.set(path, headers=CACHEABLE, body=path.encode())
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        for path in ("/blog/1", "/blog/2?page=2", "/blogger", "/shop"):
            await proxy.client.get(path)
        host = proxy.url.removeprefix("http://")
        prefix = await admin.purge(prefixes=["/blog/"], host=host)
        path = await admin.purge(urls=["/shop"], host=host)
        again = await admin.purge(urls=["/shop"], host=host)
        blogger = await proxy.client.get("/blogger")
    assert prefix.json()["purged"] == 2
    assert (path.json()["purged"], again.json()["purged"]) == (1, 0)
    assert "hit" in blogger.headers["cache-status"]


async def test_soft_purge_serves_stale_and_revalidates_exactly_once(origin: Origin,
                                                                    tmp_path: Path) -> None:
    headers = [("cache-control", "max-age=600, stale-while-revalidate=120"),
               ("etag", '"1"'), ("surrogate-key", "soft")]
    origin.app.set("/s", headers=headers, body=b"old")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/s")
        soft = await admin.purge(tags=["soft"], soft=True)
        assert soft.json() | {"purged": 1, "soft": True} == soft.json()
        origin.app.set("/s", headers=[("cache-control", "max-age=600"), ("etag", '"2"')],
                       body=b"new", delay=0.3)
        burst = await asyncio.gather(*(proxy.client.get("/s") for _ in range(30)))
        await proxy.stoker.pipeline.drain()
        after = await proxy.client.get("/s")
    assert all(r.content == b"old" for r in burst)  # nobody waited on the origin
    assert all("hit" in r.headers["cache-status"]
               and "detail=stale-while-revalidate" in r.headers["cache-status"] for r in burst)
    assert origin.app.count("/s") == 2  # the fill plus exactly one revalidation
    assert origin.app.requests[-1][2]["if-none-match"] == '"1"'
    assert after.content == b"new" and "hit" in after.headers["cache-status"]


async def test_purge_all_bumps_the_version_without_blocking_and_persists(
        origin: Origin, tmp_path: Path) -> None:
    n, clients = 100, 4
    origin.app.set("/all", headers=CACHEABLE, body=b"a" * 2000)
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        for start in range(0, n, 10):
            await asyncio.gather(*(proxy.client.get(f"/all?i={i}")
                                   for i in range(start, start + 10)))
        await proxy.stoker.store.flush()
        served = [0] * clients
        stop = asyncio.Event()

        async def keep_requesting(me: int) -> None:
            while not stop.is_set():
                response = await proxy.client.get("/all?i=1")
                assert response.status_code == 200
                served[me] += 1

        tasks = [asyncio.create_task(keep_requesting(me)) for me in range(clients)]
        await eventually(lambda: min(served) >= 1, "every client was served before the purge")
        # Hold the background reclaim back: neither the purge's answer nor the request
        # path may wait for it.
        async with proxy.stoker.purger._reclaim_lock:
            purged = await admin.purge(all=True)
            before = list(served)
            await eventually(
                lambda: all(now >= then + 3 for now, then in zip(served, before, strict=True)),
                "every client was served while the reclaim was pending")
            miss = await proxy.client.get("/all?i=2")
            pending = (await proxy.stoker.store.stats())["entries"]
        stop.set()
        await asyncio.gather(*tasks)
        await proxy.stoker.purger.drain()
        stats = await proxy.stoker.store.stats()
    assert purged.json()["purged"] == n and purged.json()["version"] == "2"
    assert "fwd=uri-miss" in miss.headers["cache-status"]
    assert pending >= n  # the old entries were still there: the reclaim had not run
    assert stats["entries"] <= 2  # old entries reclaimed; /all?i=1 and 2 refetched
    async with running_proxy(origin.url, tmp_path / "d") as proxy:
        assert proxy.stoker.pipeline.keying.version == "2"
        again = await proxy.client.get("/all?i=3")
        assert "fwd=uri-miss" in again.headers["cache-status"]


class GatedOrigin:
    """Answers what it held when asked, but only once ``release`` is set (a slow origin
    that the test controls), so a purge can land exactly while a fetch is in flight."""

    def __init__(self, headers: list[tuple[str, str]]) -> None:
        self.headers, self.body = headers, b"old"
        self.arrived, self.release = asyncio.Event(), asyncio.Event()
        self.requests = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        headers, body = self.headers, self.body
        self.arrived.set()
        await self.release.wait()
        out = [(k.encode(), v.encode()) for k, v in headers]
        out.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": out})
        await send({"type": "http.response.body", "body": body})


async def test_a_hard_purge_racing_a_fetch_never_leaves_the_old_body_fresh(
        tmp_path: Path) -> None:
    gated = GatedOrigin([*CACHEABLE, ("cache-tag", "race")])
    async with serving(gated) as origin_url, purging(origin_url, tmp_path / "d") as (
            proxy, admin):
        in_flight = asyncio.create_task(proxy.client.get("/race"))
        await gated.arrived.wait()  # the origin is about to answer the old body
        follower = asyncio.create_task(proxy.client.get("/race"))
        await eventually(lambda: proxy.stoker.pipeline.collapser.followers() == 1,
                         "the follower joined the in-flight fetch")
        purged = await admin.purge(tags=["race"])
        gated.body = b"new"
        gated.release.set()
        old, joined = await in_flight, await follower
        after = await proxy.client.get("/race")
    assert purged.json()["purged"] == 0  # nothing stored yet
    assert old.content == b"old"  # the request that began before the purge
    assert joined.content == b"new"  # not handed the purged body: it fetched on its own
    assert after.content == b"new" and "hit" in after.headers["cache-status"]
    assert gated.requests == 2  # the leader, then the follower (whose copy was stored)


async def test_a_soft_purge_racing_a_fetch_stores_it_stale(tmp_path: Path) -> None:
    gated = GatedOrigin([("cache-control", "max-age=600, stale-while-revalidate=60")])
    async with serving(gated) as origin_url, purging(origin_url, tmp_path / "d") as (
            proxy, admin):
        in_flight = asyncio.create_task(proxy.client.get("/sr"))
        await gated.arrived.wait()
        await admin.purge(urls=[f"{proxy.url}/sr"], soft=True)
        gated.body = b"new"
        gated.release.set()
        await in_flight
        stale = await proxy.client.get("/sr")
        await proxy.stoker.pipeline.drain()
        fresh = await proxy.client.get("/sr")
    assert stale.content == b"old"
    assert "detail=stale-while-revalidate" in stale.headers["cache-status"]
    assert fresh.content == b"new" and "hit" in fresh.headers["cache-status"]
    assert gated.requests == 2


async def test_subscribers_hear_every_purge(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/e", headers=[*CACHEABLE, ("cache-tag", "ev")], body=b"e")
    heard: list[tuple[PurgeScope, list[str], list[str]]] = []

    async def listener(scope: PurgeScope, keys: Sequence[str], urls: Sequence[str]) -> None:
        heard.append((scope, list(keys), list(urls)))

    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        proxy.stoker.events.subscribe(listener)
        await proxy.client.get("/e")
        await admin.purge(tags=["ev"], soft=True)
        await admin.purge(all=True)
    [(tagged, keys, urls), (everything, all_keys, all_urls)] = heard
    assert tagged.tags == ("ev",) and tagged.soft
    assert keys == [f"1|{proxy.url}/e"] and urls == [f"{proxy.url}/e"]
    assert everything.everything and all_keys == all_urls == []


async def test_entry_api_shows_what_the_cache_holds(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/show", headers=[*VARY, ("surrogate-key", "a b")], body=b"12345")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/show?z=1&a=2", headers={"accept-language": "en"})
        shown = await admin.client.get("/api/entry", params={"url": f"{proxy.url}/show?a=2&z=1"})
        host = proxy.url.removeprefix("http://")
        by_path = await admin.client.get("/api/entry", params={"url": "/nothing", "host": host})
        missing = await admin.client.get("/api/entry")
    assert shown.status_code == 200 and shown.headers["cache-control"] == "no-store"
    [key] = shown.json()["keys"]
    assert key["key"] == f"1|{proxy.url}/show?a=2&z=1"
    [variant] = key["variants"]
    assert variant["variant"] == 'accept-language="en"' and variant["tags"] == ["a", "b"]
    assert variant["state"] == "fresh" and variant["size"] == 5
    assert variant["tier"] == ["l1", "l2"] and variant["body"] == "inline"
    assert variant["fresh_until"] > variant["stored_at"]
    assert [k["variants"] for k in by_path.json()["keys"]] == [[], []]  # http and https
    assert missing.status_code == 400 and missing.json()["field"] == "url"


async def test_tag_headers_can_be_kept_for_clients(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/k", headers=[*CACHEABLE, ("surrogate-key", "kept")], body=b"k")
    async with purging(origin.url, tmp_path / "d", strip_tag_headers=False) as (proxy, admin):
        miss = await proxy.client.get("/k")
        hit = await proxy.client.get("/k")
        purged = await admin.purge(tags=["kept"])
    assert miss.headers["surrogate-key"] == hit.headers["surrogate-key"] == "kept"
    assert purged.json()["purged"] == 1
