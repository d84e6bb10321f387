"""A deliberately slow demo website: the origin ``stoker demo`` and the integration tests sit on.

Build it with :func:`make_demo_app`; it is a raw ASGI app (no framework) so its
own overhead never shows up in what the proxy is measured against.

Routes (every one waits ``delay`` seconds first, except ``/health`` and ``/__stats``):

- ``/`` home page: links to the ten collections and the first pages.
- ``/page/{n}`` (1..pages): 5-20 KB of HTML, ``Surrogate-Key: page-{n} collection-{n % 10}``,
  10 minutes in Stoker, then a day stale-while-revalidate, and none in browsers
  (:data:`PAGE_LIFETIME`: ``CDN-Cache-Control: max-age=600,
  stale-while-revalidate=86400``, ``Cache-Control: public, max-age=0``), a strong ETag and
  Last-Modified; honours
  ``If-None-Match`` (and ``If-Modified-Since`` when no ETag is sent) with 304.
- ``/collection/{c}`` (0..9): list page linking every page with ``n % 10 == c``,
  ``Surrogate-Key: collection-{c} list``.
- ``/robots.txt`` naming ``Sitemap: <base>/sitemap.xml``; ``/sitemap.xml`` a sitemap index
  of gzip children ``/sitemaps/{i}.xml.gz`` (i from 1, ``sitemap_chunk`` pages each).
- ``/account`` sets a ``session`` cookie and sends no cache headers; ``/private`` is
  ``Cache-Control: private, max-age=60``.
- ``/slow?ms=N`` answers after N ms (instead of ``delay``); cacheable, ``Surrogate-Key: slow``.
- ``/big?mb=N`` streams N MiB in 64 KiB chunks with Content-Length set, never buffered.
- ``POST /edit/{n}`` bumps page n's version: its body, ETag and Last-Modified change
  (and tells nobody: the site changed behind the cache's back).
- ``POST /page/{n}/edit`` (the "Edit this page" button on every page) bumps the version
  too, then purges the page's own tag (:meth:`DemoOrigin.edit_tags`) through Stoker's
  admin API (``admin_url``, ``admin_token``) and answers ``303`` to
  ``/page/{n}/saved?purge=ok|failed|off``, a no-store page saying what happens next.
  It does not redirect to the page itself: that visit would refetch it before the
  warmer could, hiding the targeted re-warm the demo is there to show.
- ``/health`` answers at once, uncacheable.
- ``GET /__stats`` → ``{"total", "paths", "statuses"}``; ``POST /__stats/reset`` zeroes it.

Every HTML page has a viewport and a one-column style readable on a phone; the cacheable
ones (home, collections, pages) say how Stoker answered them, as the browser can tell
(:data:`ANSWERED`).

Invariants: a page's body is a pure function of ``(n, version)`` (and the origin's fixed
``delay``), so a strong ETag is valid; Last-Modified strictly increases on every edit;
every request except the ``/__stats`` endpoints is counted once, by path (query
excluded), when it arrives; an edit is recorded whether or not its purge succeeds (a
failed purge is logged and shown, never raised).
Absolute URLs (robots.txt, sitemaps) use the request's scheme and Host header.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import random
import secrets
from collections import Counter
from email.utils import formatdate, parsedate_to_datetime
from html import escape as html_escape
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape as xml_escape

import httpx

from stoker.asgi import Receive, Scope, Send, acknowledge_lifespan
from stoker.clock import Clock, SystemClock

Headers = list[tuple[bytes, bytes]]
log = logging.getLogger("stoker.demo")

COLLECTIONS = 10
HOME_PAGE_LINKS = 20
BIG_CHUNK = 64 * 1024
MAX_BIG_MB = 1024
MAX_SLOW_MS = 60_000
PURGE_TIMEOUT = 10.0
# 2024-01-01T00:00:00Z: pages start out "modified" n minutes after this.
BASE_EPOCH = 1_704_067_200

HTML = b"text/html; charset=utf-8"
PUBLIC_60 = b"public, max-age=60"
PAGE_LIFETIME: Headers = [(b"cache-control", b"public, max-age=0"),
                          (b"cdn-cache-control", b"max-age=600, stale-while-revalidate=86400")]
"""HTML's lifetime: 10 minutes in Stoker (a CDN-like cache reads CDN-Cache-Control, RFC
9213), then a day served at once while revalidated in the background, and none in
browsers, which revalidate every visit: once an edit is purged, the visitor's next view
of the page is the new revision, not the browser's copy.  So the demo stays hot: a page
visitors read is refreshed ahead of its expiry (``refresh_ahead``), and one nobody read
for longer is still answered from the cache an hour later."""
FILES_300: Headers = [(b"cache-control", b"public, max-age=300")]
_BIG_BLOCK = bytes(range(256)) * (BIG_CHUNK // 256)

_FILLER_TEXT = (
    "stoker keeps the cache hot while origin servers rest; a purge is followed by a warm "
    "run that visits every page again, most popular first, so no visitor waits. sitemaps "
    "list the pages, robots name the sitemaps, and links tie the collections together. "
    "fresh entries are served from memory, stale ones while one revalidation runs"
)
_WORDS = tuple(_FILLER_TEXT.split())
_ADJECTIVES = ("quiet", "amber", "swift", "hollow", "bright", "patient", "narrow", "golden")
_NOUNS = ("harbour", "furnace", "lantern", "orchard", "signal", "meadow", "archive", "bridge")
_SAVED_NOTES = {
    "ok": "Stoker purged the tag {tags}. Its warmer re-warms just this page at once (a "
          "purge of fewer than rewarm_now_max URLs); open the page and its Cache-Status is "
          "a hit showing revision {version}.",
    "failed": "Telling Stoker to purge {tags} failed (the log says why), so the cached copy "
              "stays until it expires.",
    "off": "No Stoker admin API is configured for this site, so nothing was purged: the "
           "cached copy stays until it expires.",
}


def _http_date(epoch: float) -> bytes:
    return formatdate(epoch, usegmt=True).encode("ascii")


def _etag(body: bytes) -> bytes:
    return b'"' + hashlib.blake2b(body, digest_size=8).hexdigest().encode("ascii") + b'"'


def _page_title(n: int) -> str:
    return f"Page {n}: the {_ADJECTIVES[n % 8]} {_NOUNS[(n // 8) % 8]}"


def _page_size(n: int) -> int:
    """Target body size for page ``n``: spread deterministically over 5-20 KB."""
    return 5 * 1024 + (n * 2_654_435_761) % (15 * 1024)


def _filler(seed: int, size: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        paragraph = "<p>" + " ".join(rng.choices(_WORDS, k=40)) + ".</p>\n"
        parts.append(paragraph)
        length += len(paragraph)
    return "".join(parts)


STYLE = (
    "<style>body{font:1rem/1.5 system-ui,sans-serif;max-width:42rem;margin:0 auto;"
    "padding:1rem;color:#222;overflow-wrap:anywhere}h1{font-size:1.5rem;line-height:1.25}"
    "nav a,li a{display:inline-block;padding:.25rem 0}button{font:inherit;padding:.4rem .8rem}"
    ".answered{background:#f2f5f8;border-left:4px solid #4a7;padding:.5rem .75rem}"
    "#asked{display:block}</style>"
)
"""Readable on a phone and on a desktop: one column, system font, wrapping long words."""
ANSWERED = """<p class="answered"><span id="answered">How Stoker answered this page shows here \
(with JavaScript on).</span> <button type="button" id="ask">Ask Stoker again</button> \
<span id="asked"></span></p>
<script>
(() => {
  const slow = %(delay_ms)d;
  const nav = performance.getEntriesByType("navigation")[0];
  const said = document.getElementById("answered");
  if (nav && nav.responseStart > 0) {
    const ms = Math.round(nav.responseStart - nav.requestStart);
    said.textContent = nav.transferSize === 0 ? "This view came from your browser's own cache."
      : slow === 0 ? `This page arrived in ${ms} ms (the demo origin answers at once, so \
the time cannot tell a hit from a miss: ask Stoker).`
      : ms < slow ? `This page arrived in ${ms} ms, faster than the demo origin's ${slow} \
ms: Stoker answered it from its cache (a hit).`
      : `This page arrived in ${ms} ms; the demo origin takes ${slow} ms: Stoker asked \
the origin (a miss, or a revalidation).`;
  }
  document.getElementById("ask").addEventListener("click", async () => {
    const asked = document.getElementById("asked");
    try {
      const answer = await fetch(location.href, {method: "HEAD"});
      const status = answer.headers.get("cache-status");
      asked.textContent = status ? `Now: Cache-Status: ${status}` : "Now: no Cache-Status \
(not through Stoker?)";
    } catch (error) {
      asked.textContent = `Could not ask: ${error}`;
    }
  });
})();
</script>
"""
"""What a cacheable page says of how it was answered.  The origin cannot know (Stoker
answers hits without it), so the browser tells: the time to the page's first byte
against the origin's ``delay`` (a hit is faster than the origin), and, on request, the
``Cache-Status`` of a ``HEAD`` of the same URL asked now."""


def _html(title: str, body: str, *, delay: float | None = None) -> bytes:
    """A demo page: ``title``, ``body``; with the origin's ``delay`` (seconds), the note on
    how Stoker answered it (:data:`ANSWERED`: for cacheable pages only)."""
    answered = "" if delay is None else ANSWERED % {"delay_ms": round(delay * 1000)}
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html_escape(title)}</title>{STYLE}</head>\n<body>\n"
        f"<h1>{html_escape(title)}</h1>\n{answered}{body}</body></html>\n"
    ).encode()


def _matches_if_none_match(header: bytes, etag: bytes) -> bool:
    """RFC 9110 §13.1.2: weak comparison against a list of entity tags or ``*``."""
    value = header.strip()
    if value == b"*":
        return True
    target = etag.removeprefix(b"W/")
    return any(tag.strip().removeprefix(b"W/") == target for tag in value.split(b","))


def _not_modified_since(header: bytes, last_modified: float) -> bool:
    try:
        since = parsedate_to_datetime(header.decode("latin-1")).timestamp()
    except (TypeError, ValueError, IndexError):
        return False
    return int(last_modified) <= since


class DemoOrigin:
    """The demo site as an ASGI callable, holding page versions and request counts."""

    def __init__(
        self,
        *,
        pages: int = 2000,
        delay: float = 0.05,
        sitemap_chunk: int = 500,
        clock: Clock | None = None,
        admin_url: str | None = None,
        admin_token: str | None = None,
    ) -> None:
        if pages < 0:
            raise ValueError(f"pages must be 0 or more, got {pages}")
        if sitemap_chunk < 1:
            raise ValueError(f"sitemap_chunk must be at least 1, got {sitemap_chunk}")
        if delay < 0:
            raise ValueError(f"delay must be 0 or more seconds, got {delay}")
        self.pages = pages
        self.delay = delay
        self.sitemap_chunk = sitemap_chunk
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.admin_url = admin_url.rstrip("/") if admin_url else None
        self.admin_token = admin_token
        self._versions: dict[int, int] = {}
        self._modified: dict[int, float] = {}
        self.total = 0
        self.paths: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()

    # -- state ---------------------------------------------------------------------------

    def version(self, n: int) -> int:
        return self._versions.get(n, 1)

    def last_modified(self, n: int) -> float:
        return self._modified.get(n, float(BASE_EPOCH + n * 60))

    def edit(self, n: int) -> int:
        """Bump page ``n``'s version; its Last-Modified moves on by at least a second."""
        self._versions[n] = self.version(n) + 1
        self._modified[n] = max(float(int(self.clock.now())), self.last_modified(n) + 1)
        return self._versions[n]

    @staticmethod
    def page_tags(n: int) -> tuple[str, ...]:
        """The tags page ``n`` is sent with (``Surrogate-Key``)."""
        return (f"page-{n}", f"collection-{n % COLLECTIONS}")

    @staticmethod
    def edit_tags(n: int) -> tuple[str, ...]:
        """The tags an edit of page ``n`` purges: only its own.  The collection tag is
        shared with the collection's other pages and its list page, which an edit does
        not change (they show titles, and a title does not depend on the revision)."""
        return (f"page-{n}",)

    async def purge(self, tags: tuple[str, ...]) -> str:
        """Ask Stoker's admin API to purge ``tags``: ``ok``, ``failed`` (logged) or
        ``off`` (no admin API configured)."""
        if self.admin_url is None:
            return "off"
        headers = {"authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}
        try:
            async with httpx.AsyncClient(timeout=PURGE_TIMEOUT) as client:
                response = await client.post(f"{self.admin_url}/api/purge",
                                             json={"tags": list(tags)}, headers=headers)
                response.raise_for_status()
        except httpx.HTTPError as error:
            log.warning("demo origin: purging %s through %s failed: %s",
                        " ".join(tags), self.admin_url, error)
            return "failed"
        return "ok"

    def stats(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "paths": dict(self.paths),
            "statuses": {str(code): count for code, count in sorted(self.statuses.items())},
        }

    def reset_stats(self) -> None:
        self.total = 0
        self.paths.clear()
        self.statuses.clear()

    @property
    def sitemap_count(self) -> int:
        return -(-self.pages // self.sitemap_chunk)

    # -- bodies --------------------------------------------------------------------------

    def page_body(self, n: int) -> bytes:
        version = self.version(n)
        nav = [
            '<a href="/">Home</a>',
            f'<a href="/collection/{n % COLLECTIONS}">Collection {n % COLLECTIONS}</a>',
        ]
        if n > 1:
            nav.append(f'<a href="/page/{n - 1}" rel="prev">Previous</a>')
        if n < self.pages:
            nav.append(f'<a href="/page/{n + 1}" rel="next">Next</a>')
        related = sorted({(n * k) % self.pages + 1 for k in (7, 31, 97)} - {n})
        links = "".join(
            f'<li><a href="/page/{r}">{html_escape(_page_title(r))}</a></li>' for r in related
        )
        edit = (f'<form method="post" action="/page/{n}/edit"><button type="submit">'
                "Edit this page</button> (a new revision; Stoker is told to purge "
                f"{' '.join(self.edit_tags(n))})</form>\n")
        body = (
            f"<nav>{' | '.join(nav)}</nav>\n<p>Revision {version}.</p>\n{edit}"
            f'<ul class="related">{links}</ul>\n'
        )
        return _html(_page_title(n), body + _filler(n * 1_000_003 + version, _page_size(n)),
                     delay=self.delay)

    def saved_body(self, n: int, purge: str) -> bytes:
        """The page an edit redirects to: the new revision and what Stoker does next."""
        note = _SAVED_NOTES.get(purge, _SAVED_NOTES["off"]).format(
            tags=" ".join(self.edit_tags(n)), version=self.version(n))
        return _html(f"Saved page {n}", f"<p>Page {n} is now revision {self.version(n)}.</p>\n"
                     f'<p>{note}</p>\n<p><a href="/page/{n}">Back to page {n}</a></p>\n')

    def home_body(self) -> bytes:
        collections = "".join(
            f'<li><a href="/collection/{c}">Collection {c}</a></li>' for c in range(COLLECTIONS)
        )
        pages = "".join(
            f'<li><a href="/page/{n}">{html_escape(_page_title(n))}</a></li>'
            for n in range(1, min(HOME_PAGE_LINKS, self.pages) + 1)
        )
        return _html("Stoker demo", f"<ul>{collections}</ul>\n<ul>{pages}</ul>\n",
                     delay=self.delay)

    def collection_body(self, c: int) -> bytes:
        first = c if c > 0 else COLLECTIONS
        items = "".join(
            f'<li><a href="/page/{n}">{html_escape(_page_title(n))}</a></li>'
            for n in range(first, self.pages + 1, COLLECTIONS)
        )
        return _html(f"Collection {c}", f'<p><a href="/">Home</a></p>\n<ul>{items}</ul>\n',
                     delay=self.delay)

    def sitemap_index(self, base: str) -> bytes:
        entries = "".join(
            f"<sitemap><loc>{xml_escape(base)}/sitemaps/{i}.xml.gz</loc></sitemap>\n"
            for i in range(1, self.sitemap_count + 1)
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}</sitemapindex>\n"
        ).encode()

    def sitemap_child(self, base: str, i: int) -> bytes:
        """Gzipped urlset for pages ``(i-1)*chunk+1 .. i*chunk`` (mtime 0: byte-stable)."""
        first = (i - 1) * self.sitemap_chunk + 1
        last = min(i * self.sitemap_chunk, self.pages)
        loc = xml_escape(base)
        urls = "".join(
            f"<url><loc>{loc}/page/{n}</loc><lastmod>"
            f"{formatdate(self.last_modified(n), usegmt=True)}</lastmod></url>\n"
            for n in range(first, last + 1)
        )
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{urls}</urlset>\n"
        ).encode()
        return gzip.compress(xml, mtime=0)

    # -- ASGI ----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await acknowledge_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path == "/__stats" or path == "/__stats/reset":
            await self._stats_endpoint(path, method, send)
            return
        self.total += 1
        self.paths[path] += 1
        request = _Request(scope, receive, send, self)
        if path == "/health":
            await request.respond(200, [(b"cache-control", b"no-store")], b"ok\n", b"text/plain")
            return
        if path != "/slow":
            await self.clock.sleep(self.delay)
        await self._route(request, path, method)

    async def _stats_endpoint(self, path: str, method: str, send: Send) -> None:
        if path == "/__stats/reset":
            if method != "POST":
                await _plain(send, 405, b"use POST\n", [(b"allow", b"POST")])
                return
            self.reset_stats()
        body = json.dumps(self.stats(), sort_keys=True).encode()
        await _plain(
            send,
            200,
            body,
            [(b"content-type", b"application/json"), (b"cache-control", b"no-store")],
        )

    async def _route(self, request: _Request, path: str, method: str) -> None:
        parts = path.strip("/").split("/")
        if parts[0] == "edit" and len(parts) == 2:
            n = _int_or_none(parts[1])
            if method != "POST":
                await request.respond(405, [(b"allow", b"POST")], b"use POST\n", b"text/plain")
            elif n is None or not 1 <= n <= self.pages:
                await request.not_found()
            else:
                await request.drain()
                version = self.edit(n)
                body = json.dumps(
                    {"page": n, "version": version, "etag": _etag(self.page_body(n)).decode()}
                ).encode()
                await request.respond(
                    200, [(b"cache-control", b"no-store")], body, b"application/json"
                )
            return
        if parts[0] == "page" and len(parts) == 3:
            await self._page_action(request, parts[1], parts[2], method)
            return
        if method not in ("GET", "HEAD"):
            await request.respond(405, [(b"allow", b"GET, HEAD")], b"use GET\n", b"text/plain")
            return
        if path == "/":
            await request.representation(
                self.home_body(), HTML, BASE_EPOCH, PAGE_LIFETIME, b"home list"
            )
        elif parts[0] == "page" and len(parts) == 2:
            n = _int_or_none(parts[1])
            if n is None or not 1 <= n <= self.pages:
                await request.not_found()
                return
            key = " ".join(self.page_tags(n)).encode()
            await request.representation(
                self.page_body(n), HTML, self.last_modified(n), PAGE_LIFETIME, key
            )
        elif parts[0] == "collection" and len(parts) == 2:
            c = _int_or_none(parts[1])
            if c is None or not 0 <= c < COLLECTIONS:
                await request.not_found()
                return
            await request.representation(
                self.collection_body(c),
                HTML,
                BASE_EPOCH,
                PAGE_LIFETIME,
                f"collection-{c} list".encode(),
            )
        elif path == "/robots.txt":
            body = (
                "User-agent: *\nDisallow: /account\nDisallow: /private\nDisallow: /edit/\n"
                f"Disallow: /__stats\n\nSitemap: {request.base}/sitemap.xml\n"
            ).encode()
            await request.representation(
                body, b"text/plain; charset=utf-8", BASE_EPOCH, FILES_300, b"robots"
            )
        elif path == "/sitemap.xml":
            await request.representation(
                self.sitemap_index(request.base),
                b"application/xml",
                BASE_EPOCH,
                FILES_300,
                b"sitemap",
            )
        elif parts[0] == "sitemaps" and len(parts) == 2 and parts[1].endswith(".xml.gz"):
            i = _int_or_none(parts[1].removesuffix(".xml.gz"))
            if i is None or not 1 <= i <= self.sitemap_count:
                await request.not_found()
                return
            first = (i - 1) * self.sitemap_chunk + 1
            last = min(i * self.sitemap_chunk, self.pages)
            modified = max(self.last_modified(n) for n in range(first, last + 1))
            await request.representation(
                self.sitemap_child(request.base, i),
                b"application/gzip",
                modified,
                FILES_300,
                b"sitemap",
            )
        elif path == "/account":
            cookie = f"session={secrets.token_hex(16)}; Path=/; HttpOnly; SameSite=Lax"
            await request.respond(
                200,
                [(b"set-cookie", cookie.encode())],
                _html("Your account", "<p>Signed in.</p>\n"),
                HTML,
            )
        elif path == "/private":
            await request.respond(
                200,
                [(b"cache-control", b"private, max-age=60")],
                _html("Private", "<p>Only for you.</p>\n"),
                HTML,
            )
        elif path == "/slow":
            ms = min(max(request.query_int("ms", 1000), 0), MAX_SLOW_MS)
            await self.clock.sleep(ms / 1000)
            await request.respond(
                200,
                [*PAGE_LIFETIME, (b"surrogate-key", b"slow")],
                _html("Slow", f"<p>Took {ms} ms.</p>\n"),
                HTML,
            )
        elif path == "/big":
            mb = min(max(request.query_int("mb", 1), 0), MAX_BIG_MB)
            await request.stream_big(mb)
        else:
            await request.not_found()


    async def _page_action(self, request: _Request, page: str, action: str,
                           method: str) -> None:
        """``POST /page/{n}/edit`` (edit, purge, 303) and ``GET /page/{n}/saved``."""
        n = _int_or_none(page)
        allowed = {"edit": ("POST",), "saved": ("GET", "HEAD")}.get(action)
        if allowed is None or n is None or not 1 <= n <= self.pages:
            await request.not_found()
        elif method not in allowed:
            allow = ", ".join(allowed).encode()
            await request.respond(405, [(b"allow", allow)], b"use " + allow + b"\n",
                                  b"text/plain")
        elif action == "saved":
            await request.respond(200, [(b"cache-control", b"no-store")],
                                  self.saved_body(n, request.query("purge")), HTML)
        else:
            await request.drain()
            self.edit(n)
            outcome = await self.purge(self.edit_tags(n))
            location = f"/page/{n}/saved?purge={outcome}".encode()
            await request.respond(303, [(b"location", location), (b"cache-control", b"no-store")],
                                  b"", b"text/plain")


class _Request:
    """One HTTP exchange: the helpers that turn a decision into ASGI messages."""

    __slots__ = ("app", "head", "headers", "receive", "scope", "send")

    def __init__(self, scope: Scope, receive: Receive, send: Send, app: DemoOrigin) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.app = app
        self.head = scope["method"] == "HEAD"
        self.headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", ()):
            self.headers[bytes(name).lower()] = bytes(value)

    @property
    def base(self) -> str:
        scheme = self.scope.get("scheme", "http")
        host = self.headers.get(b"host", b"").decode("latin-1")
        if not host:
            server = self.scope.get("server") or ("127.0.0.1", 80)
            host = f"{server[0]}:{server[1]}"
        return f"{scheme}://{host}"

    def query(self, name: str) -> str:
        """The first value of query parameter ``name`` (``""`` when absent)."""
        values = parse_qs(bytes(self.scope.get("query_string", b"")).decode("latin-1"))
        return values.get(name, [""])[0]

    def query_int(self, name: str, default: int) -> int:
        found = _int_or_none(self.query(name))
        return default if found is None else found

    async def drain(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return

    async def respond(
        self, status: int, headers: Headers, body: bytes, content_type: bytes
    ) -> None:
        self.app.statuses[status] += 1
        all_headers = [
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ]
        await self.send({"type": "http.response.start", "status": status, "headers": all_headers})
        await self.send({"type": "http.response.body", "body": b"" if self.head else body})

    async def not_found(self) -> None:
        await self.respond(
            404, [(b"cache-control", b"public, max-age=10")], b"not found\n", b"text/plain"
        )

    async def representation(
        self,
        body: bytes,
        content_type: bytes,
        last_modified: float,
        lifetime: Headers,
        surrogate_key: bytes,
    ) -> None:
        """A cacheable 200 (``lifetime`` its freshness fields), or a 304 when the
        request's validators match (RFC 9110 §13.2.2)."""
        etag = _etag(body)
        headers: Headers = [
            *lifetime,
            (b"etag", etag),
            (b"last-modified", _http_date(last_modified)),
            (b"surrogate-key", surrogate_key),
        ]
        if_none_match = self.headers.get(b"if-none-match")
        if_modified_since = self.headers.get(b"if-modified-since")
        if if_none_match is not None:
            not_modified = _matches_if_none_match(if_none_match, etag)
        elif if_modified_since is not None:
            not_modified = _not_modified_since(if_modified_since, last_modified)
        else:
            not_modified = False
        if not_modified:
            self.app.statuses[304] += 1
            await self.send({"type": "http.response.start", "status": 304, "headers": headers})
            await self.send({"type": "http.response.body", "body": b""})
            return
        await self.respond(200, headers, body, content_type)

    async def stream_big(self, mb: int) -> None:
        """``mb`` MiB in 64 KiB chunks: one chunk in memory however large the body."""
        self.app.statuses[200] += 1
        total = mb * 1024 * 1024
        headers: Headers = [
            (b"content-type", b"application/octet-stream"),
            (b"content-length", str(total).encode()),
            (b"cache-control", PUBLIC_60),
            (b"surrogate-key", b"big"),
            (b"etag", f'"big-{mb}"'.encode()),
        ]
        await self.send({"type": "http.response.start", "status": 200, "headers": headers})
        if self.head or total == 0:
            await self.send({"type": "http.response.body", "body": b""})
            return
        chunks = total // BIG_CHUNK
        for index in range(chunks):
            await self.send(
                {"type": "http.response.body", "body": _BIG_BLOCK, "more_body": index < chunks - 1}
            )


async def _plain(send: Send, status: int, body: bytes, headers: Headers) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _int_or_none(text: str) -> int | None:
    if not text or not (text.isascii() and text.lstrip("-").isdigit()) or len(text) > 9:
        return None
    return int(text)


def make_demo_app(
    *,
    pages: int = 2000,
    delay: float = 0.05,
    sitemap_chunk: int = 500,
    clock: Clock | None = None,
    admin_url: str | None = None,
    admin_token: str | None = None,
) -> DemoOrigin:
    """Build the demo site (an ASGI app); see the module docstring for its routes.
    ``admin_url`` (and ``admin_token``) name the Stoker admin API an edit purges through."""
    return DemoOrigin(pages=pages, delay=delay, sitemap_chunk=sitemap_chunk, clock=clock,
                      admin_url=admin_url, admin_token=admin_token)
