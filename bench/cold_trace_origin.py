"""The cold-trace benchmark's origin: a CMS-like site rendered 8 pages at a time.

An ASGI app (served by granian, one worker, so one process holds every count).  Its
site is :class:`bench.cold_trace_plan.Site` of ``COLD_TRACE_PAGES`` pages
(``COLD_TRACE_PER_LIST`` items a list) at ``COLD_TRACE_SITE`` (the URL visitors use).

- Every page render takes ``COLD_TRACE_RENDER_MS`` (50) ms and at most
  ``COLD_TRACE_CAPACITY`` (8) render at once; more requests wait in line.  A page
  answers ``Cache-Control: public, max-age=COLD_TRACE_TTL``, an ``ETag`` naming its
  version and the deploy (``"v3-d1"``, ``-gz`` for the gzip form), ``Last-Modified``,
  ``xkey: page-… list-… all`` (Varnish's xkey purges) and ``Vary: Accept-Encoding``;
  the body is gzipped for clients that accept gzip.  A conditional request costs a
  render too (the app renders, then compares, as Django's ConditionalGetMiddleware)
  and answers 304 when its ``If-None-Match`` names the current version.
- The home page links to every list page, a list page to its items.
- ``POST /_edit?item=I`` changes item I's body and its list page's (the list shows the
  item's title); ``POST /_deploy`` changes every page (a new asset hash).
- ``/sitemap.xml`` lists every page and ``/robots.txt`` names it; neither renders.
- ``GET /_log``: every page request as ``[request id, path, arrived, answered,
  status]``, the times from ``time.monotonic()`` (one clock for every process of the
  machine); the request id is the visitor's ``X-Bench-Req`` header ("" without one).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from email.utils import formatdate
from typing import Any

from bench.cold_trace_plan import Site

from stoker.asgi import acknowledge_lifespan

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]

SITE = Site(int(os.environ.get("COLD_TRACE_PAGES", "10000")),
            int(os.environ.get("COLD_TRACE_PER_LIST", "50")))  # fmt: skip
BASE = os.environ.get("COLD_TRACE_SITE", "http://127.0.0.1").rstrip("/")
RENDER = float(os.environ.get("COLD_TRACE_RENDER_MS", "50")) / 1000
TTL = int(os.environ.get("COLD_TRACE_TTL", "300"))
SLOTS = asyncio.Semaphore(int(os.environ.get("COLD_TRACE_CAPACITY", "8")))
FILLER = "<p>" + "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 100 + "</p>"

versions: dict[str, int] = {}
changed: dict[str, float] = {}
deploy = 0
deployed = time.time()
log: list[tuple[str, str, float, float, int]] = []


def version(path: str) -> int:
    return versions.get(path, 1)


def last_modified(path: str) -> str:
    return formatdate(max(changed.get(path, 0.0), deployed), usegmt=True)


def render(path: str) -> bytes | None:
    """The page's HTML, None for a path the site does not have."""
    if path == "/":
        links = [f"/list/{j}" for j in range(SITE.lists)]
    elif path.startswith("/list/") and path[6:].isdigit() and int(path[6:]) < SITE.lists:
        links = [f"/item/{i}" for i in SITE.items_of(int(path[6:]))]
    elif path.startswith("/item/") and path[6:].isdigit() and int(path[6:]) < SITE.items:
        links = [f"/list/{SITE.list_of(int(path[6:]))}"]
    else:
        return None
    anchors = "".join(f'<a href="{link}">{link} v{version(link)}</a>\n' for link in links)
    return (f"<!doctype html><html><head><title>{path} v{version(path)}</title>"
            f'<link rel="stylesheet" href="/static/site.{deploy}.css"></head><body>'
            f"<h1>{path} version {version(path)}</h1>{anchors}{FILLER}</body></html>"
            ).encode()  # fmt: skip


def etag(path: str, gzipped: bool) -> bytes:
    return f'"v{version(path)}-d{deploy}{"-gz" if gzipped else ""}"'.encode()


def tags(path: str) -> bytes:
    page = path.strip("/").replace("/", "-") or "home"
    own = f" list-{SITE.list_of(int(path[6:]))}" if path.startswith("/item/") else ""
    return f"page-{page}{own} all".encode()


def header(scope: Message, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return ""


async def reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def page(scope: Message, send: Send) -> None:
    path, arrived = scope["path"], time.monotonic()
    async with SLOTS:
        await asyncio.sleep(RENDER)
        html = render(path)
    if html is None:
        await reply(send, 404, b"not found", [(b"content-type", b"text/plain")])
        return
    gzipped = "gzip" in header(scope, b"accept-encoding")
    tag = etag(path, gzipped)
    headers = [(b"content-type", b"text/html; charset=utf-8"),
               (b"cache-control", f"public, max-age={TTL}".encode()), (b"etag", tag),
               (b"last-modified", last_modified(path).encode()),
               (b"vary", b"Accept-Encoding"), (b"xkey", tags(path))]  # fmt: skip
    if tag.decode() in header(scope, b"if-none-match"):
        status, body = 304, b""
    else:
        status, body = 200, gzip.compress(html, 1) if gzipped else html
        if gzipped:
            headers.append((b"content-encoding", b"gzip"))
    log.append((header(scope, b"x-bench-req"), path, arrived, time.monotonic(), status))
    await reply(send, status, body, headers)


def sitemap(path: str) -> bytes:
    if path == "/robots.txt":
        return f"User-agent: *\nSitemap: {BASE}/sitemap.xml\n".encode()
    urls = "".join(f"<url><loc>{BASE}{p}</loc></url>" for p in SITE.paths())
    return ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns='
            f'"http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>').encode()


def edit(query: bytes) -> bytes:
    item = int(query.decode().partition("item=")[2])
    now = time.time()
    for path in (f"/item/{item}", f"/list/{SITE.list_of(item)}"):
        versions[path] = version(path) + 1
        changed[path] = now
    return json.dumps({"version": version(f"/item/{item}")}).encode()


async def app(scope: Message, receive: Receive, send: Send) -> None:
    global deploy, deployed
    if scope["type"] == "lifespan":
        await acknowledge_lifespan(receive, send)
        return
    path, text = scope["path"], [(b"content-type", b"text/plain")]
    if path in ("/robots.txt", "/sitemap.xml"):
        await reply(send, 200, sitemap(path), [(b"content-type", b"application/xml")])
    elif path == "/_edit":
        await reply(send, 200, edit(scope["query_string"]), text)
    elif path == "/_deploy":
        deploy, deployed = deploy + 1, time.time()
        await reply(send, 200, str(deploy).encode(), text)
    elif path == "/_log":
        await reply(send, 200, json.dumps(log).encode(), text)
    else:
        await page(scope, send)
