"""The slow origin of the miss-path and memory benchmarks (an ASGI app served by granian).

Every page waits ``BENCH_ORIGIN_LATENCY_MS`` (default 20) on the event loop, then
answers 200 with ``Cache-Control: public, max-age=3600``: ``/big/…`` is a 2 MiB body
sent in 256 KiB chunks, any other path the 20 KB hit-path page.  A ``tag=NAME`` query
parameter (repeatable) adds ``Cache-Tag: NAME`` (the soak benchmark's tag purges); an
``ms=N`` query parameter makes that page wait N ms instead (the hostile benchmark's slow
URLs, ``/slow/<i>?ms=10000``).  ``GET /__hits``
answers the number of pages served so far (itself not counted), so a benchmark can
prove that every cold request reached the origin.  Run from the repository root, one
worker, so the counter covers every request:

    granian --interface asgi --workers 1 bench.origin_app:app
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from stoker.asgi import acknowledge_lifespan

from .hit_path.page import CACHE_CONTROL, CONTENT_TYPE, PAGE, build_page

Message = MutableMapping[str, Any]

BIG_PREFIX = "/big/"
BIG = build_page(2 * 1024 * 1024)
CHUNK = 256 * 1024
LATENCY = float(os.environ.get("BENCH_ORIGIN_LATENCY_MS", "20")) / 1000
_served = 0


def _start(
    size: int, content_type: bytes, cache_control: bytes, tags: list[bytes] | None = None
) -> dict[str, Any]:
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(size).encode()),
        (b"cache-control", cache_control),
    ]
    if tags:
        headers.append((b"cache-tag", b" ".join(tags)))
    return {"type": "http.response.start", "status": 200, "headers": headers}


def _params(query: bytes, wanted: bytes) -> list[bytes]:
    """The values of the query's ``wanted`` parameters."""
    pairs = (item.partition(b"=") for item in query.split(b"&"))
    return [value for name, _, value in pairs if name == wanted and value]


def _latency(query: bytes) -> float:
    """Seconds the page waits: its ``ms`` parameter's, else ``LATENCY``."""
    ms = _params(query, b"ms")
    return float(ms[0]) / 1000 if ms and ms[0].isdigit() else LATENCY


async def _page(path: str, query: bytes, send: Callable[[Message], Awaitable[None]]) -> None:
    global _served
    _served += 1
    await asyncio.sleep(_latency(query))
    body = BIG if path.startswith(BIG_PREFIX) else PAGE
    await send(_start(len(body), CONTENT_TYPE, CACHE_CONTROL, _params(query, b"tag")))
    for offset in range(0, len(body), CHUNK):
        end = offset + CHUNK
        await send({"type": "http.response.body", "body": body[offset:end],
                    "more_body": end < len(body)})  # fmt: skip


async def app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        await acknowledge_lifespan(receive, send)
    elif scope["path"] == "/__hits":
        count = str(_served).encode()
        await send(_start(len(count), b"text/plain", b"no-store"))
        await send({"type": "http.response.body", "body": count})
    else:
        await _page(scope["path"], scope["query_string"], send)
