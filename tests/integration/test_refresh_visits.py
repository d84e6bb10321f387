"""What refresh ahead learns from visitors and what its visits do, on every server
configuration: a visitor's hits (the fast paths' too) and stored misses are tracked with
the headers their variant needs; a refresh visit revalidates a fresh entry with its
validators (a plain warm visit leaves it), and moves its refresh time on."""

from __future__ import annotations

import asyncio

from tests.integration.conftest import Origin, Proxy

from stoker.adapters.visit import PipelineVisitor
from stoker.cache.reads import Read

PAGE = [("cache-control", "max-age=600"), ("etag", '"1"')]


def tracked(proxy: Proxy, path: str, variant: str = "") -> Read:
    reads = proxy.stoker.pipeline.reads
    assert reads is not None
    url = f"{proxy.url}{path}"
    found = reads.get(url if not variant else f"{url}\n{variant}")
    assert found is not None, f"{url} not tracked"
    return found


def visitor(proxy: Proxy) -> PipelineVisitor:
    return PipelineVisitor(proxy.stoker.pipeline, proxy.stoker.clock,
                           stopgap_header=b"x-stoker-stopgap")


async def test_a_visitors_reads_are_tracked_hits_and_stored_misses_alike(
        proxy: Proxy, origin: Origin) -> None:
    origin.app.set("/a", headers=PAGE, body=b"a")
    for _ in range(4):  # a stored miss, then hits (the fast path's among them)
        assert (await proxy.client.get("/a")).status_code == 200
    read = tracked(proxy, "/a")
    assert (read.count, read.headers) == (4, ())
    await visitor(proxy).visit(f"{proxy.url}/a", (), allowance=1)  # a warm visit: not a read
    assert tracked(proxy, "/a").count == 4


async def test_a_variants_read_keeps_the_headers_that_select_it(
        proxy: Proxy, origin: Origin) -> None:
    origin.app.set("/v", headers=[*PAGE, ("vary", "accept-language")], body=b"v")
    await proxy.client.get("/v", headers={"accept-language": "fr"})
    await proxy.client.get("/v", headers={"accept-language": "fr"})
    entries = await proxy.stoker.store.get(proxy.stoker.pipeline.keying.key_for_url(
        f"{proxy.url}/v"))
    read = tracked(proxy, "/v", entries[0].variant)
    assert read.count == 2
    assert read.headers == ((b"accept-language", b"fr"),)


async def test_a_refresh_visit_revalidates_a_fresh_entry_a_warm_visit_leaves(
        proxy: Proxy, origin: Origin) -> None:
    origin.app.set("/a", headers=PAGE, body=b"a", not_modified_etag='"1"')
    await proxy.client.get("/a")
    before = tracked(proxy, "/a").fresh_until
    visits = visitor(proxy)
    plain = await visits.visit(f"{proxy.url}/a", (), allowance=1)
    assert (plain.outcome, origin.app.count("/a")) == ("fresh", 1)
    await asyncio.sleep(1.1)  # the origin's Date has a whole second's resolution
    refreshed = await visits.visit(f"{proxy.url}/a", (), allowance=1, refresh=True)
    assert refreshed.outcome == "not_modified"
    assert origin.app.count("/a") == 2
    assert origin.app.requests[-1][2].get("if-none-match") == '"1"'
    read = tracked(proxy, "/a")
    assert read.fresh_until > before and read.count == 1


async def test_a_refresh_visit_of_a_changed_page_stores_the_new_one(
        proxy: Proxy, origin: Origin) -> None:
    origin.app.set("/a", headers=PAGE, body=b"old")
    await proxy.client.get("/a")
    origin.app.set("/a", headers=[("cache-control", "max-age=600"), ("etag", '"2"')],
                   body=b"new")
    result = await visitor(proxy).visit(f"{proxy.url}/a", (), allowance=1, refresh=True)
    assert result.outcome == "warmed"
    answer = await proxy.client.get("/a")
    assert answer.content == b"new" and "hit" in answer.headers["cache-status"]
