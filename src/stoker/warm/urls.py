"""URLs the warmer visits: normalising, same-origin placement with aliases, and ordering.

Invariants:
- :func:`normalise` returns None or an absolute ``http``/``https`` URL with the scheme
  and host lower-cased, the default port dropped, an empty path written ``/``, dot
  segments removed, characters a request target cannot hold percent-encoded (existing
  escapes kept byte for byte, as the cache key keeps them), the query's members in the
  cache key's canonical order, and no fragment.  It is idempotent:
  ``normalise(normalise(u)) == normalise(u)``.  URLs with credentials, an invalid port
  or host, or more than :data:`MAX_URL_CHARS` characters give None.
- :meth:`SiteOrigins.place` keeps a URL only on one of the configured site origins; a
  URL naming an alias host is moved onto the site being discovered (path and query
  kept); anything else gives None (the caller counts it as another host).
- :class:`Collector` holds at most ``2 * max_urls`` candidates whatever it is fed, and
  :meth:`Collector.result` lists at most ``max_urls`` distinct URLs: the home pages
  first (in the order added), then most hits, then newest ``lastmod`` (none is oldest),
  then the order they were first added.  A URL seen again keeps its first position and
  the newest ``lastmod`` of its sightings, and is a home page if any sighting was.
- Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from stoker.http.keys import canonical_query, normalise_host
from stoker.http.site_hosts import Aliases

MAX_URL_CHARS = 2048
"""Longest URL kept (sitemaps.org's limit for ``<loc>``)."""

# Characters allowed as they are in a path or query (RFC 3986 pchar, "/" and "?", plus
# "%" so that existing escapes are kept untouched); everything else is escaped.
_SAFE_PATH = "/%:@!$&'()*+,;=-._~"
_SAFE_QUERY = _SAFE_PATH + "?"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9._~!$&'()*+,;=%-]+)(:[0-9]*)?$")


def normalise(url: str) -> str | None:
    """The canonical form of an absolute http(s) URL, or None.  See module invariants."""
    url = url.strip()
    if len(url) > MAX_URL_CHARS or _CONTROL.search(url):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on an invalid port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or "@" in parts.netloc:
        return None
    host = _ascii_host(parts.netloc)
    if not host or not _HOST.match(host) or host.startswith(":"):
        return None
    path = quote(_remove_dot_segments(parts.path), safe=_SAFE_PATH) or "/"
    query = canonical_query(quote(parts.query, safe=_SAFE_QUERY))
    out = urlunsplit((scheme, normalise_host(scheme, host), path, query, ""))
    return out if len(out) <= MAX_URL_CHARS else None


def _ascii_host(netloc: str) -> str | None:
    try:
        return netloc.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 on a path: "." and ".." segments resolved."""
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        elif segment == ".":
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/".join(out) if out != [""] else "/"


def join_url(base: str, reference: str) -> str | None:
    """``reference`` resolved against ``base`` (not normalised), or None if it cannot be."""
    try:
        return urljoin(base, reference.strip())
    except ValueError:
        return None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a normalised URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class SiteOrigins:
    """The origins of the configured sites and the hosts that are aliases of them."""

    def __init__(self, site_urls: Iterable[str], aliases: Iterable[str] = ()) -> None:
        self.origins = frozenset(origin_of(url) for url in site_urls)
        self._aliases = Aliases(aliases)

    def place(self, url: str, site_origin: str) -> str | None:
        """``url`` (normalised) on a site origin, an alias moved onto ``site_origin``, or None."""
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" in self.origins:
            return url
        if self._aliases.match(parts.scheme, parts.netloc):
            site = urlsplit(site_origin)
            return urlunsplit((site.scheme, site.netloc, parts.path, parts.query, ""))
        return None


@dataclass(frozen=True)
class Candidate:
    """A URL found by discovery: its ``lastmod`` (epoch seconds) if the sitemap gave one."""

    url: str
    lastmod: float | None = None
    home: bool = False


class Collector:
    """The best ``max_urls`` candidates in warm order, in bounded memory (module invariants)."""

    def __init__(self, max_urls: int, hits: Mapping[str, int]) -> None:
        """``hits`` maps normalised URLs to their hit counts (:func:`add_hits`)."""
        self.max_urls = max_urls
        self.dropped = 0
        self._hits = hits
        self._kept: dict[str, tuple[bool, float, int]] = {}  # url -> (home, lastmod, seq)
        self._seq = 0

    def add(self, candidate: Candidate) -> None:
        """Record a sighting of a (normalised) URL."""
        lastmod = -float("inf") if candidate.lastmod is None else candidate.lastmod
        known = self._kept.get(candidate.url)
        if known is not None:
            self._kept[candidate.url] = (known[0] or candidate.home, max(known[1], lastmod),
                                         known[2])
            return
        self._seq += 1
        self._kept[candidate.url] = (candidate.home, lastmod, self._seq)
        if len(self._kept) >= 2 * self.max_urls:
            self._prune()

    def result(self) -> list[str]:
        """The kept URLs in warm order, at most ``max_urls``."""
        self._prune()
        return list(self._kept)

    def _rank(self, item: tuple[str, tuple[bool, float, int]]) -> tuple[int, float, float, int]:
        url, (home, lastmod, seq) = item
        if home:
            return (0, seq, 0.0, 0)
        return (1, -self._hits.get(url, 0), -lastmod, seq)

    def _prune(self) -> None:
        ranked = sorted(self._kept.items(), key=self._rank)
        self.dropped += max(0, len(ranked) - self.max_urls)
        self._kept = dict(ranked[: self.max_urls])


def add_hits(hits: dict[str, int], counted: Iterable[tuple[str, int]]) -> None:
    """Count each ``(url, hits)`` of ``counted`` in ``hits`` under the URL's normalised
    form (the most of its spellings); a URL that does not normalise is left out."""
    for url, count in counted:
        key = normalise(url)
        if key is not None:
            hits[key] = max(hits.get(key, 0), count)


def order_urls(candidates: Iterable[Candidate], popularity: Mapping[str, int],
               max_urls: int) -> tuple[list[str], int]:
    """The candidates in warm order, capped, and how many sightings the cap dropped."""
    hits: dict[str, int] = {}
    add_hits(hits, popularity.items())
    collector = Collector(max_urls, hits)
    for candidate in candidates:
        collector.add(candidate)
    return collector.result(), collector.dropped
