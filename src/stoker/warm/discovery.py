"""Discovery: the URLs a warm run visits, read from the sites themselves.

Sources, for each ``site_url`` in order: the home page (the ``site_url`` itself);
robots.txt's ``Sitemap:`` lines, else ``/sitemap.xml``; the sitemap indexes they name
(nested up to :data:`MAX_DEPTH` files deep) and the sitemaps those list, gzip or plain;
each ``<url>``'s ``xhtml:link`` alternates; the home page's own page links (see
:mod:`stoker.warm.links`).  Everything goes through a :class:`FetchPort`.

Invariants:
- Every :class:`Fetched` the port returns is closed exactly once, on every path.
- Each file (the request and its whole body) is read within ``config.timeout``; past
  it discovery fails: a trickling server cannot stretch a run.
- robots.txt and the home page are read up to ``config.max_page_bytes`` (the rest is
  ignored); sitemaps obey the per-file caps of :mod:`stoker.warm.sitemap`; at most
  ``config.max_sitemaps`` sitemap files are read per discovery, and an index keeps at
  most that many children (the rest are counted as ``sitemap_limit``).
- Sitemaps are read one at a time: an index is read to its end and closed before its
  children are fetched, depth first, in document order.  A sitemap listed by itself or
  by one of its descendants, or nesting deeper than :data:`MAX_DEPTH`, fails discovery;
  one reached twice by different paths is read once.
- ``Discovery.urls`` are normalised (:func:`stoker.warm.urls.normalise`), distinct, on
  one of the site origins (alias hosts moved onto the site whose sitemap or home page
  named them; links to other hosts counted as ``other_host``; home-page links that are no
  page counted by :func:`stoker.warm.links.skip_reason`),
  at most ``config.max_urls``, in the order of :class:`stoker.warm.urls.Collector`: the
  home pages first, then most hits in ``popularity``, then newest ``lastmod``, then
  discovery order (home page, sitemaps, alternates with their URL, home-page links).
- Failure is a :class:`DiscoveryError` naming the URL and the reason; an error of the
  port (transport, protocol) is wrapped in one, and so is a ``5xx`` answer (the origin
  is down: what it would list is unknown); those the origin caused (no answer, too
  slow, a ``5xx``, a read cut short) say so (``DiscoveryError.origin``).  Other
  non-200 answers are not errors: a missing home page gives no links, a missing
  robots.txt falls back to ``/sitemap.xml``, a missing or HTML ``/sitemap.xml`` means
  no sitemap, and a listed sitemap that is missing is counted in ``skipped``.
- A sitemap is parsed in :meth:`~stoker.warm.sitemap.SitemapReader.steps`, ``pace``
  awaited after each (:class:`~stoker.cache.steps.Pacer`: a yield to the event loop once
  a step's time budget is used): a 10,000-URL sitemap (a third of a second's work) never
  holds up the hits served beside it.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from itertools import islice
from types import MappingProxyType
from typing import Protocol

from .links import MAX_LINKS, extract_links
from .sitemap import DiscoveryError, Entry, Inflater, SitemapReader, parse_robots
from .urls import Candidate, Collector, SiteOrigins, add_hits, join_url, normalise, origin_of

__all__ = [
    "Discovery",
    "DiscoveryConfig",
    "DiscoveryError",
    "FetchPort",
    "Fetched",
    "discover",
]

MAX_DEPTH = 3
"""Sitemap files nested at most this deep (robots.txt's sitemap is depth 1)."""
MAX_PAGE_BYTES = 5 * 1024 * 1024
"""Bytes read of robots.txt and of each home page by default."""

SKIP_OTHER_HOST = "other_host"
"""URLs on a host that is neither a site nor an alias."""
SKIP_INVALID = "invalid_url"
"""URLs (or sitemap URLs) that do not normalise (credentials, a bad port or host)."""
SKIP_OVER_CAP = "over_cap"
"""Sightings dropped by ``max_urls`` (a URL seen in several files may count again)."""
SKIP_SITEMAP_OTHER_HOST = "sitemap_other_host"
"""Sitemap files on a host that is neither a site nor an alias (not fetched)."""
SKIP_SITEMAP_UNAVAILABLE = "sitemap_unavailable"
"""Listed sitemap files that answered other than 200, or with an HTML page."""
SKIP_SITEMAP_LIMIT = "sitemap_limit"
"""Sitemap files not read because ``max_sitemaps`` were read already."""

_NO_HITS: Mapping[str, int] = MappingProxyType({})
_CHARSET = re.compile(r"charset=[\"']?([A-Za-z0-9._:-]+)", re.IGNORECASE)


@dataclass(frozen=True)
class Fetched:
    """An answer whose body has not been read yet.

    ``headers`` are the response's fields as sent (names in any case); ``chunks`` is the
    body as sent (a ``Content-Encoding`` of gzip or deflate is decoded by discovery);
    ``close`` releases the response and is awaited exactly once, read or not.
    """

    status: int
    headers: list[tuple[bytes, bytes]]
    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]


class FetchPort(Protocol):
    """GETs an absolute URL as a visitor of the site would (its scheme and Host).

    The request should accept ``gzip`` or ``identity`` only; redirects need not be
    followed (a 3xx is just a non-200 answer).  ``fetch`` returns once the status and
    headers are in; it may raise on a transport failure (discovery wraps the error).
    """

    async def fetch(self, url: str) -> Fetched:
        """Send the request; the answer with its body still unread."""
        ...


@dataclass(frozen=True)
class DiscoveryConfig:
    """What to discover and the bounds.

    ``site_urls``, ``aliases``, ``max_urls`` and ``timeout`` come from the settings
    ``site_url``, ``site_aliases`` with ``origin_host``, ``warm_max_urls`` and
    ``origin_timeout``; the other bounds have defaults a site owner should not need to
    change.
    """

    site_urls: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    max_urls: int = 50_000
    timeout: float = 30.0
    allow_query: bool = False
    max_sitemaps: int = 1_000
    max_home_links: int = MAX_LINKS
    max_page_bytes: int = MAX_PAGE_BYTES

    def __post_init__(self) -> None:
        if not self.site_urls:
            raise ValueError("site_url: at least one site URL is needed")
        for url in self.site_urls:
            if normalise(url) is None:
                raise ValueError(f"site_url: {url!r} is not an absolute http(s) URL")
        if self.max_urls < 1:
            raise ValueError(f"warm_max_urls must be at least 1, not {self.max_urls}")
        if self.timeout <= 0:
            raise ValueError(f"origin_timeout must be positive, not {self.timeout}")
        for name in ("max_sitemaps", "max_home_links", "max_page_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)}")


@dataclass
class Discovery:
    """The URLs to warm in order, what was skipped (reason → count: the ``SKIP_*`` here
    and the home-page link reasons of :mod:`stoker.warm.links`: ``feed``, ``admin``,
    ``file``, ``query``, ``link_limit``), the sitemaps read."""

    urls: list[str]
    skipped: dict[str, int] = field(default_factory=dict)
    sitemaps: list[str] = field(default_factory=list)


Pace = Callable[[], Awaitable[None]]
"""Awaited between steps of discovery's work (:class:`~stoker.cache.steps.Pacer`)."""


async def _yield() -> None:
    await asyncio.sleep(0)


HITS_STEP = 200
"""Hit counts normalised between two paces (about 1.5 ms of work)."""


async def _normalised_hits(popularity: Mapping[str, int], pace: Pace) -> dict[str, int]:
    """``popularity`` by normalised URL (:func:`~stoker.warm.urls.add_hits`), made in
    paced steps: the hit table holds up to ``warm_max_urls`` URLs, 80 ms of work per
    10,000 in one step."""
    hits: dict[str, int] = {}
    counted = iter(popularity.items())
    while step := list(islice(counted, HITS_STEP)):
        add_hits(hits, step)
        await pace()
    return hits


async def discover(fetch: FetchPort, config: DiscoveryConfig,
                   popularity: Mapping[str, int] = _NO_HITS, *,
                   pace: Pace = _yield) -> Discovery:
    """The URLs of ``config.site_urls`` to warm; see module invariants.

    ``popularity`` maps URLs (normalised here) to their hit counts; ``pace`` is awaited
    between steps of work (by default a yield after each).
    """
    discoverer = _Discoverer(fetch, config, await _normalised_hits(popularity, pace), pace)
    for site_url in config.site_urls:
        home = normalise(site_url)
        assert home is not None  # DiscoveryConfig checked it
        await discoverer.site(home)
    return discoverer.result()


class _Discoverer:
    """The state of one discovery: candidates, counts and the sitemaps read."""

    def __init__(self, fetch: FetchPort, config: DiscoveryConfig,
                 hits: Mapping[str, int], pace: Pace) -> None:
        self.fetch = fetch
        self.config = config
        self.pace = pace
        self.origins = SiteOrigins((normalise(url) or url for url in config.site_urls),
                                   config.aliases)
        self.collector = Collector(config.max_urls, hits)
        self.skipped: Counter[str] = Counter()
        self.sitemaps: list[str] = []
        self.fetched_sitemaps: set[str] = set()

    def result(self) -> Discovery:
        urls = self.collector.result()
        if self.collector.dropped:
            self.skipped[SKIP_OVER_CAP] += self.collector.dropped
        return Discovery(urls, dict(self.skipped), self.sitemaps)

    async def site(self, home: str) -> None:
        origin = origin_of(home)
        self.collector.add(Candidate(home, home=True))
        links = await self._home_links(home)
        for sitemap, listed in await self._root_sitemaps(origin):
            await self._sitemap(sitemap, origin, (), listed=listed)
        for link in links:
            self.collector.add(Candidate(link))

    async def _home_links(self, home: str) -> list[str]:
        status, content_type, body = await self._read_page(home)
        if status != 200 or "html" not in (content_type or "text/html"):
            return []
        origin = origin_of(home)
        return extract_links(_text(body, content_type), home,
                             allow_query=self.config.allow_query,
                             max_links=self.config.max_home_links,
                             place=lambda url: self._place(url, origin, SKIP_OTHER_HOST),
                             skipped=self.skipped)

    async def _root_sitemaps(self, origin: str) -> list[tuple[str, bool]]:
        """The sitemaps robots.txt lists (listed=True), else ``/sitemap.xml`` (False)."""
        robots = f"{origin}/robots.txt"
        status, content_type, body = await self._read_page(robots)
        listed = parse_robots(_text(body, content_type)) if status == 200 else []
        resolved = [url for url in (join_url(robots, value) for value in listed) if url]
        if resolved:
            return [(url, True) for url in resolved]
        return [(f"{origin}/sitemap.xml", False)]

    async def _sitemap(self, raw: str, origin: str, path: tuple[str, ...], *,
                       listed: bool) -> None:
        url = self._place(raw, origin, SKIP_SITEMAP_OTHER_HOST)
        if url is None:
            return
        if url in path:
            raise DiscoveryError(url, "sitemap index cycle: " + " -> ".join((*path, url)))
        if len(path) >= MAX_DEPTH:
            raise DiscoveryError(url, f"sitemap indexes nested more than {MAX_DEPTH} deep: "
                                 + " -> ".join((*path, url)))
        if url in self.fetched_sitemaps:
            return
        if len(self.fetched_sitemaps) >= self.config.max_sitemaps:
            self.skipped[SKIP_SITEMAP_LIMIT] += 1
            return
        self.fetched_sitemaps.add(url)
        for child in await self._read_sitemap(url, origin, listed=listed):
            await self._sitemap(child, origin, (*path, url), listed=True)

    async def _read_sitemap(self, url: str, origin: str, *, listed: bool) -> list[str]:
        """Read one sitemap file: its URLs go to the collector; an index's children return."""
        children: list[str] = []
        async with self._open(url) as fetched:
            if fetched.status != 200 or _content_type(fetched).startswith("text/html"):
                if listed:
                    self.skipped[SKIP_SITEMAP_UNAVAILABLE] += 1
                return children
            self.sitemaps.append(url)
            reader = SitemapReader(url)
            async with aclosing(_body(url, fetched)) as pieces:
                async for piece in pieces:
                    for entries in reader.steps(piece):
                        self._take(entries, reader, origin, children)
                        await self.pace()  # a whole sitemap is many steps' work
            self._take(reader.close(), reader, origin, children)
        return children

    def _take(self, entries: list[Entry], reader: SitemapReader, origin: str,
              children: list[str]) -> None:
        if reader.kind == "sitemapindex":
            room = max(0, self.config.max_sitemaps - len(children))
            children.extend(entry.loc for entry in entries[:room])
            if len(entries) > room:
                self.skipped[SKIP_SITEMAP_LIMIT] += len(entries) - room
            return
        for entry in entries:
            for raw in (entry.loc, *entry.alternates):
                url = self._place(raw, origin, SKIP_OTHER_HOST)
                if url is not None:
                    self.collector.add(Candidate(url, entry.lastmod))

    def _place(self, raw: str, origin: str, other_host: str) -> str | None:
        url = normalise(raw)
        if url is None:
            self.skipped[SKIP_INVALID] += 1
            return None
        placed = self.origins.place(url, origin)
        if placed is None:
            self.skipped[other_host] += 1
        return placed

    async def _read_page(self, url: str) -> tuple[int, str, bytes]:
        """Status, Content-Type and at most ``max_page_bytes`` of the (decoded) body."""
        cap = self.config.max_page_bytes
        body = bytearray()
        async with self._open(url) as fetched:
            if fetched.status == 200:
                async with aclosing(_body(url, fetched)) as pieces:
                    async for piece in pieces:
                        body += piece[: cap - len(body)]
                        if len(body) >= cap:
                            break
            return fetched.status, _content_type(fetched), bytes(body)

    @asynccontextmanager
    async def _open(self, url: str) -> AsyncIterator[Fetched]:
        """The answer for ``url``, closed on exit; the whole block within the timeout."""
        try:
            async with asyncio.timeout(self.config.timeout):
                try:
                    fetched = await self.fetch.fetch(url)
                except Exception as exc:
                    raise DiscoveryError(url, f"fetch failed: {exc!r}", origin=True) from exc
                if fetched.status >= 500:
                    await fetched.close()
                    raise DiscoveryError(url, f"the origin answered {fetched.status}",
                                         origin=True)
                try:
                    yield fetched
                finally:
                    await fetched.close()
        except TimeoutError:
            raise DiscoveryError(url, "not read within origin_timeout "
                                 f"({self.config.timeout:g} s)", origin=True) from None


async def _body(url: str, fetched: Fetched) -> AsyncGenerator[bytes, None]:
    """The body's pieces with its Content-Encoding removed; port errors wrapped."""
    inflater = _decoder(url, fetched.headers)
    chunks = aiter(fetched.chunks)
    while True:
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            break
        except Exception as exc:
            raise DiscoveryError(url, f"reading failed: {exc!r}", origin=True) from exc
        for piece in inflater.feed(chunk) if inflater else (chunk,):
            yield piece
    if inflater:
        for piece in inflater.finish():
            yield piece


def _decoder(url: str, headers: list[tuple[bytes, bytes]]) -> Inflater | None:
    coding = _header(headers, b"content-encoding").strip().lower()
    if coding in ("", "identity"):
        return None
    if coding in ("gzip", "x-gzip", "deflate"):
        return Inflater(url, gzip=coding != "deflate")
    raise DiscoveryError(url, f"unsupported Content-Encoding {coding!r} "
                         "(the fetch should accept gzip or identity)")


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str:
    return next((value.decode("latin-1") for key, value in headers if key.lower() == name), "")


def _content_type(fetched: Fetched) -> str:
    return _header(fetched.headers, b"content-type").strip().lower()


def _text(body: bytes, content_type: str) -> str:
    charset = _CHARSET.search(content_type)
    try:
        return body.decode(charset[1] if charset else "utf-8", "replace")
    except LookupError:
        return body.decode("utf-8", "replace")
