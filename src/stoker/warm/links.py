"""Page links on a home page: the menus and section pages that sitemaps often leave out.

Invariants:
- :func:`extract_links` returns at most ``max_links`` distinct normalised URLs, in the
  order of their first ``<a href>``/``<area href>`` (resolved against ``<base href>`` if
  the page has one before them), each as ``place`` puts it on the site (by default:
  those on the origin of ``base``, as they are); it never raises.
- :func:`skip_reason` is the one filter: a link is skipped as a ``feed`` (a last path
  segment in :data:`FEED_SEGMENTS` or a feed extension), a ``file`` (an extension that
  is not in :data:`PAGE_EXTENSIONS`), ``admin`` (a first segment in
  :data:`ADMIN_SEGMENTS` or starting with ``_``), or ``query`` (a query string, unless
  allowed).
- With a ``skipped`` counter, :func:`extract_links` counts each distinct link it leaves
  out under its :func:`skip_reason`, and the anchors it did not read once ``max_links``
  were kept as :data:`SKIP_LINK_LIMIT`; links that are no http(s) URL (``mailto:``,
  ``javascript:``) are not pages and are not counted; ``place`` counts its own.
- Pure: no I/O, no clock (``skipped`` is the caller's tally, only added to).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import partial
from html.parser import HTMLParser
from urllib.parse import urlsplit

from .urls import join_url, normalise, origin_of

MAX_LINKS = 500
"""Most links taken from one home page."""

FEED_SEGMENTS = frozenset({"feed", "feeds", "rss", "rss2", "atom", "rdf"})
PAGE_EXTENSIONS = frozenset({"html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cfm"})
ADMIN_SEGMENTS = frozenset({
    "wp-admin", "wp-login.php", "wp-json", "wp-cron.php", "xmlrpc.php", "admin",
    "administrator", "django-admin", "user", "users", "login", "logout", "signin", "signup",
    "register", "account", "accounts", "my-account", "cart", "checkout", "basket", "cgi-bin",
    "nova", "horizon",
})
SKIP_LINK_LIMIT = "link_limit"
"""Home-page anchors not read because ``max_links`` links were kept already."""
_EXTENSION = re.compile(r"\.([A-Za-z0-9]{1,8})$")
_FEED_EXTENSIONS = frozenset({"rss", "atom", "rdf"})


def skip_reason(url: str, *, allow_query: bool = False) -> str | None:
    """Why a (normalised) home-page link is not warmed, or None to warm it."""
    parts = urlsplit(url)
    segments = [segment for segment in parts.path.split("/") if segment]
    last = segments[-1].lower() if segments else ""
    extension = _EXTENSION.search(last)
    if last in FEED_SEGMENTS or (extension and extension[1].lower() in _FEED_EXTENSIONS):
        return "feed"
    if segments and (segments[0].lower() in ADMIN_SEGMENTS or segments[0].startswith("_")):
        return "admin"
    if extension and extension[1].lower() not in PAGE_EXTENSIONS:
        return "file"
    if parts.query and not allow_query:
        return "query"
    return None


class _Anchors(HTMLParser):
    """Collects ``href`` values of anchors and areas, and the first ``<base href>``."""

    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.hrefs: list[tuple[str, str]] = []  # (base in force, href)
        self._based = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if href is None:
            return
        if tag == "base" and not self._based:
            self._based = True
            self.base = join_url(self.base, href) or self.base
        elif tag in ("a", "area"):
            self.hrefs.append((self.base, href))

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        # The stdlib raises AssertionError on an unknown "<![keyword"; links never sit in
        # marked sections, so each is skipped up to its first ">".
        end = self.rawdata.find(">", i + 3)
        return -1 if end < 0 else end + 1


def _on_origin(origin: str, url: str) -> str | None:
    return url if origin_of(url) == origin else None


def extract_links(html: str, base: str, *, allow_query: bool = False,
                  max_links: int = MAX_LINKS,
                  place: Callable[[str], str | None] | None = None,
                  skipped: Counter[str] | None = None) -> list[str]:
    """The site's page links of ``html`` (a page at ``base``), each placed on the site by
    ``place`` (a normalised link → its URL on the site, or None when it is another
    site's); those left out counted by reason in ``skipped``; see module invariants."""
    anchors = _Anchors(base)
    anchors.feed(html)
    anchors.close()
    if place is None:
        origin = origin_of(normalise(base) or base)
        place = partial(_on_origin, origin)
    tally: Counter[str] = Counter() if skipped is None else skipped
    found: dict[str, None] = {}
    left_out: set[str] = set()
    for read, (page_base, href) in enumerate(anchors.hrefs, 1):
        joined = join_url(page_base, href)
        url = normalise(joined) if joined else None
        if url is None:
            continue
        reason = skip_reason(url, allow_query=allow_query)
        if reason is not None:
            if url not in left_out:
                left_out.add(url)
                tally[reason] += 1
            continue
        placed = place(url)
        if placed is None:
            continue
        found.setdefault(placed)
        if len(found) >= max_links:
            if read < len(anchors.hrefs):
                tally[SKIP_LINK_LIMIT] += len(anchors.hrefs) - read
            break
    return list(found)
