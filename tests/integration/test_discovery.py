"""Discovery against a real origin over HTTP: sources, order, aliases, hostile sitemaps.

The fetch port is a real adapter (httpx streaming, body as sent); every test checks that
discovery closed every answer it opened.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from tests.conftest import free_port, serving
from tests.integration.origin import Message, ScriptedOrigin

from stoker.warm.discovery import (
    HITS_STEP,
    SKIP_OTHER_HOST,
    SKIP_OVER_CAP,
    SKIP_SITEMAP_LIMIT,
    SKIP_SITEMAP_OTHER_HOST,
    SKIP_SITEMAP_UNAVAILABLE,
    Discovery,
    DiscoveryConfig,
    DiscoveryError,
    Fetched,
    discover,
)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
XHTML = 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
XML = [("content-type", "application/xml")]
HTML = [("content-type", "text/html; charset=utf-8")]


class HttpxFetch:
    """A FetchPort over httpx that streams the body as sent and counts open answers."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.opened = 0
        self.closed = 0
        self.urls: list[str] = []

    async def fetch(self, url: str) -> Fetched:
        self.urls.append(url)
        request = self.client.build_request("GET", url, headers={"accept-encoding": "gzip"})
        response = await self.client.send(request, stream=True)
        self.opened += 1

        async def close() -> None:
            self.closed += 1
            await response.aclose()

        return Fetched(response.status_code, list(response.headers.raw),
                       response.aiter_raw(), close)


Chunks = Callable[[], Iterator[bytes]]


@dataclass
class Stream:
    """A path answered by a generated body, one chunk every ``pause`` seconds."""

    chunks: Chunks
    headers: list[tuple[str, str]] = field(default_factory=lambda: list(XML))
    pause: float = 0.0


class Site:
    """ScriptedOrigin plus streamed paths (big or slow bodies, sent until the client goes)."""

    def __init__(self) -> None:
        self.scripted = ScriptedOrigin()
        self.streams: dict[str, Stream] = {}

    def page(self, path: str, body: str | bytes, headers: list[tuple[str, str]] = XML,
             status: int = 200) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.scripted.set(path, status=status, body=data, headers=headers)

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        stream = self.streams.get(scope.get("path", ""))
        if scope["type"] != "http" or stream is None:
            await self.scripted(scope, receive, send)
            return
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        headers = [(k.encode(), v.encode()) for k, v in stream.headers]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in stream.chunks():
            if gone.is_set():
                break
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(stream.pause)  # lets the disconnect watcher run
        else:
            await send({"type": "http.response.body", "body": b""})
        watcher.cancel()


@dataclass
class Running:
    site: Site
    url: str
    fetch: HttpxFetch

    async def discover(self, *, popularity: dict[str, int] | None = None,
                       **config: object) -> Discovery:
        settings = {"site_urls": (self.url,), **config}
        try:
            return await discover(self.fetch, DiscoveryConfig(**settings),  # type: ignore[arg-type]
                                  popularity or {})
        finally:
            assert self.fetch.opened == self.fetch.closed

    async def fails(self, match: str, **config: Any) -> DiscoveryError:
        with pytest.raises(DiscoveryError, match=match) as caught:
            await self.discover(**config)
        return caught.value


@asynccontextmanager
async def running(site: Site) -> AsyncIterator[Running]:
    async with serving(site) as url, httpx.AsyncClient(timeout=30) as client:
        yield Running(site, url, HttpxFetch(client))


@pytest.fixture
async def run() -> AsyncIterator[Running]:
    async with running(Site()) as started:
        yield started


def urlset(*entries: str) -> str:
    return f'<?xml version="1.0"?><urlset {NS} {XHTML}>{"".join(entries)}</urlset>'


def url(loc: str, lastmod: str = "", extra: str = "") -> str:
    modified = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    return f"<url><loc>{loc}</loc>{modified}{extra}</url>"


def index(*locs: str) -> str:
    sitemaps = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{sitemaps}</sitemapindex>'


async def test_whole_site_sources_order_aliases_and_counts(run: Running) -> None:
    base = run.url
    run.site.page("/", '<a href="/menu">Menu</a><a href="/feed/">RSS</a>'
                       '<a href="/posts/new">New</a><a href="https://elsewhere.example/">x</a>',
                  HTML)
    run.site.page("/robots.txt", "User-agent: *\nSitemap: /index.xml\n"
                                 "Sitemap: https://cdn.example/foreign.xml\n", [])
    run.site.page("/index.xml", index(f"{base}/posts.xml.gz", "http://cms.internal:8000/pages.xml",
                                      f"{base}/missing.xml"))
    run.site.page("/posts.xml.gz", gzip.compress(urlset(
        url(f"{base}/posts/old", "2023-01-01"),
        url(f"{base}/posts/new", "2024-06-01",
            f'<xhtml:link rel="alternate" hreflang="de" href="{base}/de/posts/new"/>'),
        url("https://elsewhere.example/x"),
    ).encode()), [("content-type", "application/gzip")])
    run.site.page("/pages.xml", gzip.compress(urlset(
        url("http://cms.internal:8000/about"),
        url(f"{base}/"),
        url(f"{base}/contact?lang=en"),
    ).encode()), [*XML, ("content-encoding", "gzip")])

    found = await run.discover(aliases=("cms.internal:8000",),
                               popularity={f"{base}/contact?lang=en": 3})

    assert [u.removeprefix(base) for u in found.urls] == [
        "/", "/contact?lang=en", "/posts/new", "/de/posts/new", "/posts/old", "/about", "/menu"]
    assert found.sitemaps == [f"{base}/index.xml", f"{base}/posts.xml.gz", f"{base}/pages.xml"]
    assert found.skipped == {SKIP_SITEMAP_OTHER_HOST: 1, SKIP_OTHER_HOST: 2,  # + a home link
                             SKIP_SITEMAP_UNAVAILABLE: 1, "feed": 1}
    # home page first, robots.txt next; the foreign sitemap and the alias were never fetched
    assert run.fetch.urls[:2] == [f"{base}/", f"{base}/robots.txt"]
    assert not any("cdn.example" in u or "cms.internal" in u for u in run.fetch.urls)


async def test_hit_counts_are_normalised_in_paced_steps(run: Running) -> None:
    # the hit table holds up to warm_max_urls URLs: normalising them all in one event-loop
    # step stalled every request for 80 ms per 10,000 (a deploy's re-warm run)
    base = run.url
    run.site.page("/", '<a href="/a">A</a><a href="/b">B</a>', HTML)
    popularity = {f"{base}/x{n}": 1 for n in range(5 * HITS_STEP)}
    popularity[f"{base.upper()}/b#top"] = 9  # another spelling of /b, counted as /b
    fetches_at_pace: list[int] = []

    async def pace() -> None:
        fetches_at_pace.append(len(run.fetch.urls))

    found = await discover(run.fetch, DiscoveryConfig(site_urls=(run.url,)), popularity,
                           pace=pace)

    assert fetches_at_pace[:5] == [0] * 5  # five steps before the home page is read
    assert [u.removeprefix(base) for u in found.urls] == ["/", "/b", "/a"]


async def test_home_links_naming_an_alias_are_the_sites(run: Running) -> None:
    # WordPress writes every link with its own configured address (siteurl)
    run.site.page("/", '<a href="http://cms.internal:8000/about/">About</a>'
                       '<a href="http://cms.internal:8000/blog/?p=1">Post</a>'
                       '<a href="http://cms.internal:8000/wp-admin/">Admin</a>'
                       '<a href="https://twitter.example/site">Us</a>', HTML)
    found = await run.discover(aliases=("cms.internal:8000",), allow_query=True)
    assert found.urls == [f"{run.url}/", f"{run.url}/about/", f"{run.url}/blog/?p=1"]
    assert found.skipped == {"admin": 1, SKIP_OTHER_HOST: 1}  # no page; Twitter is not us


async def test_without_robots_the_sitemap_xml_is_read(run: Running) -> None:
    run.site.page("/", "no links", HTML)
    run.site.page("/sitemap.xml", urlset(url(f"{run.url}/a")))
    found = await run.discover()
    assert found.urls == [f"{run.url}/", f"{run.url}/a"]
    assert found.sitemaps == [f"{run.url}/sitemap.xml"] and found.skipped == {}


@pytest.mark.parametrize("answer", [(404, "not found"), (200, "<html>a page</html>")])
async def test_no_sitemap_at_all_gives_home_and_its_links(run: Running,
                                                          answer: tuple[int, str]) -> None:
    run.site.page("/", '<a href="/x">x</a>', HTML)
    run.site.page("/sitemap.xml", answer[1], HTML, status=answer[0])
    found = await run.discover()
    assert found == Discovery([f"{run.url}/", f"{run.url}/x"], {}, [])


async def test_several_sites_each_read_their_own_sources() -> None:
    first, second = Site(), Site()
    async with running(first) as one, running(second) as two:
        first.page("/sitemap.xml", urlset(url(f"{one.url}/a"), url(f"{two.url}/shared")))
        second.page("/sitemap.xml", urlset(url(f"{two.url}/b"), url("http://cms:1/c")))
        found = await discover(one.fetch, DiscoveryConfig((one.url, two.url), ("cms:1",)))
    assert found.urls == [f"{one.url}/", f"{two.url}/", f"{one.url}/a", f"{two.url}/shared",
                          f"{two.url}/b", f"{two.url}/c"]
    assert one.fetch.opened == one.fetch.closed


async def test_caps_on_urls_and_sitemaps(run: Running) -> None:
    run.site.page("/sitemap.xml", index(*(f"/s{i}.xml" for i in range(5))))
    for i in range(5):
        run.site.page(f"/s{i}.xml", urlset(*(url(f"{run.url}/{i}/{j}") for j in range(10))))
    found = await run.discover(max_urls=4, max_sitemaps=3)
    assert found.urls == [f"{run.url}/", f"{run.url}/0/0", f"{run.url}/0/1", f"{run.url}/0/2"]
    # the index keeps 3 children (2 counted), then 1 of those is past the file budget
    assert found.skipped == {SKIP_SITEMAP_LIMIT: 3, SKIP_OVER_CAP: 17}
    assert found.sitemaps == [f"{run.url}/sitemap.xml", f"{run.url}/s0.xml", f"{run.url}/s1.xml"]


async def test_home_page_and_robots_are_read_up_to_the_page_cap(run: Running) -> None:
    run.site.streams["/"] = Stream(lambda: iter([b'<a href="/early">e</a>', b"x" * 10_000,
                                                 b'<a href="/late">l</a>'] * 1000), HTML)
    found = await run.discover(max_page_bytes=5_000)
    assert found.urls == [f"{run.url}/", f"{run.url}/early"]


async def test_origin_down_fails_naming_the_url() -> None:
    async with httpx.AsyncClient() as client:
        fetch = HttpxFetch(client)
        site_url = f"http://127.0.0.1:{free_port()}"
        with pytest.raises(DiscoveryError, match="fetch failed") as caught:
            await discover(fetch, DiscoveryConfig((site_url,)))
    assert caught.value.url == f"{site_url}/"


async def test_unsupported_content_encoding_fails(run: Running) -> None:
    run.site.page("/sitemap.xml", b"\x00", [("content-encoding", "br")])
    await run.fails("unsupported Content-Encoding 'br'")


BILLION_LAUGHS = """<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">
<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<urlset><url><loc>http://x/&lol4;</loc></url></urlset>"""
XXE = """<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>http://x/&xxe;</loc></url></urlset>"""


@pytest.mark.parametrize("body", [BILLION_LAUGHS, XXE])
async def test_entity_tricks_fail_the_run(run: Running, body: str) -> None:
    run.site.page("/sitemap.xml", body)
    error = await run.fails("DOCTYPE is refused")
    assert error.url == f"{run.url}/sitemap.xml"
    assert "root:" not in str(error)


def spaces_bomb() -> Iterator[bytes]:
    """A valid sitemap start, then 80 MB of spaces: gzip of about 80 KB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    yield packer.compress(b"<urlset>")
    for _ in range(80):
        yield packer.compress(b" " * 1024 * 1024)
    yield packer.flush()


def zeros_bomb() -> Iterator[bytes]:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    for _ in range(80):
        yield packer.compress(bytes(1024 * 1024))
    yield packer.flush()


def million_urls(base: str) -> Chunks:
    def chunks() -> Iterator[bytes]:
        yield f"<urlset {NS}>".encode()
        for block in range(1000):
            yield "".join(f"<url><loc>{base}/p{block}-{i}</loc></url>"
                          for i in range(1000)).encode()
        yield b"</urlset>"

    return chunks


def peak_during(coro: Awaitable[None]) -> Awaitable[int]:
    async def measured() -> int:
        tracemalloc.start()
        try:
            await coro
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    return measured()


@pytest.mark.parametrize(
    ("stream", "match"),
    [
        (Stream(spaces_bomb, [("content-type", "application/gzip")]), "bytes uncompressed"),
        (Stream(spaces_bomb, [*XML, ("content-encoding", "gzip")]), "bytes uncompressed"),
        (Stream(zeros_bomb, [("content-type", "application/gzip")]), "not well-formed"),
    ],
)
async def test_bombs_fail_in_bounded_memory(run: Running, stream: Stream, match: str) -> None:
    run.site.streams["/sitemap.xml"] = stream

    async def fails() -> None:
        await run.fails(match)

    assert await peak_during(fails()) < 100 * 1024 * 1024


async def test_a_million_urls_fail_in_bounded_memory(run: Running) -> None:
    run.site.streams["/sitemap.xml"] = Stream(million_urls(run.url))

    async def fails() -> None:
        await run.fails("more than 50,000 entries in one file")

    assert await peak_during(fails()) < 100 * 1024 * 1024


async def test_cyclic_indexes_fail(run: Running) -> None:
    run.site.page("/sitemap.xml", index("/a.xml"))
    run.site.page("/a.xml", index("/b.xml"))
    run.site.page("/b.xml", index(f"{run.url}/a.xml"))
    error = await run.fails("sitemap index cycle")
    assert str(error).endswith(f"{run.url}/sitemap.xml -> {run.url}/a.xml -> {run.url}/b.xml "
                               f"-> {run.url}/a.xml")


async def test_a_sitemap_listed_twice_is_read_once(run: Running) -> None:
    run.site.page("/sitemap.xml", index("/a.xml", "/b.xml"))
    run.site.page("/a.xml", index("/c.xml"))
    run.site.page("/b.xml", index("/c.xml"))
    run.site.page("/c.xml", urlset(url("/x")))
    found = await run.discover()
    assert found.urls == [f"{run.url}/", f"{run.url}/x"]
    assert run.site.scripted.count("/c.xml") == 1


async def test_indexes_nested_deeper_than_three_fail(run: Running) -> None:
    run.site.page("/sitemap.xml", index("/1.xml"))
    run.site.page("/1.xml", index("/2.xml"))
    run.site.page("/2.xml", index("/3.xml"))
    run.site.page("/3.xml", urlset(url("/x")))
    await run.fails("nested more than 3 deep")


async def test_three_deep_is_fine(run: Running) -> None:
    run.site.page("/sitemap.xml", index("/1.xml"))
    run.site.page("/1.xml", index("/2.xml"))
    run.site.page("/2.xml", urlset(url("/x")))
    assert (await run.discover()).urls == [f"{run.url}/", f"{run.url}/x"]


async def test_a_trickling_sitemap_fails_at_the_whole_file_deadline(run: Running) -> None:
    def trickle() -> Iterator[bytes]:
        yield f"<urlset {NS}>".encode()
        while True:
            yield b" "

    run.site.streams["/sitemap.xml"] = Stream(trickle, pause=0.01)
    error = await run.fails(r"not read within origin_timeout \(0.5 s\)", timeout=0.5)
    assert error.url == f"{run.url}/sitemap.xml"


@pytest.mark.parametrize(
    ("config", "setting"),
    [({"site_urls": ()}, "site_url"), ({"site_urls": ("ftp://x",)}, "site_url"),
     ({"max_urls": 0}, "warm_max_urls"), ({"timeout": 0}, "origin_timeout"),
     ({"max_page_bytes": -1}, "max_page_bytes")],
)
def test_config_errors_name_the_setting(config: dict[str, object], setting: str) -> None:
    with pytest.raises(ValueError, match=setting):
        DiscoveryConfig(**{"site_urls": ("http://x",), **config})  # type: ignore[arg-type]
