"""The raw ASGI ceiling: the 20 KB page from pre-built messages, no routing, no logic.

Served by granian (and optionally uvicorn) on the same pinned core as the proxies, this
is the most any ASGI app can do on this server; Stoker's fresh hit should come close.
Run from the repository root:  granian --interface asgi bench.hit_path.raw_app:app
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from stoker.asgi import acknowledge_lifespan

from .page import CACHE_CONTROL, CONTENT_TYPE, PAGE

Message = MutableMapping[str, Any]

_START: dict[str, Any] = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"content-type", CONTENT_TYPE),
        (b"content-length", str(len(PAGE)).encode()),
        (b"cache-control", CACHE_CONTROL),
    ],
}
_BODY: dict[str, Any] = {"type": "http.response.body", "body": PAGE}


async def app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    if scope["type"] == "http":
        await send(_START)
        await send(_BODY)
    elif scope["type"] == "lifespan":
        await acknowledge_lifespan(receive, send)
