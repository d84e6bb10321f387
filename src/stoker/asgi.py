"""Small ASGI helpers shared by Stoker's apps (proxy, demo origin, bench ceiling), the
scope Stoker's HTTP/1.1 front builds for an app, and how it splits a request target.

Invariant: :func:`acknowledge_lifespan` completes startup and shutdown without
doing anything, for apps whose resources are owned by the process around them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote, urlsplit

Message = MutableMapping[str, Any]
Scope = Message
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def acknowledge_lifespan(receive: Receive, send: Send) -> None:
    """Answer lifespan startup and shutdown until shutdown arrives."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


ASGI_VERSIONS = {"version": "3.0", "spec_version": "2.3"}


def http_scope(method: bytes, target: bytes, http_version: str,
               headers: list[tuple[bytes, bytes]], *, scheme: str,
               client: tuple[str, int] | None, server: tuple[str, int] | None) -> Scope:
    """The ASGI ``http`` scope of an HTTP/1.x request whose request line gave ``method``,
    ``target`` and ``http_version`` (``headers`` as received, names lower-cased).

    ``raw_path`` is the target as sent less its query (and any fragment): for an
    absolute-form target (RFC 9112 §3.2.2) it keeps the scheme and authority, as granian
    does, so the proxy can read them; ``path`` is the percent-decoded path."""
    raw_path, query = target_parts(target)
    path = raw_path.decode("latin-1")
    if "%" in path:
        path = unquote(path)
    if not raw_path.startswith(b"/"):  # absolute-form (or "*"): the path is what follows
        path = unquote(urlsplit(raw_path.decode("latin-1")).path or "/")
    return {"type": "http", "asgi": ASGI_VERSIONS, "http_version": http_version,
            "server": server, "client": client, "scheme": scheme,
            "method": method.decode("ascii"), "root_path": "", "path": path,
            "raw_path": raw_path, "query_string": query, "headers": headers}


def target_parts(target: bytes) -> tuple[bytes, bytes]:
    """The path (or absolute-form target) and the query of an HTTP/1.x request target as
    sent, its fragment dropped: a scope's ``raw_path`` and ``query_string``."""
    raw_path, _, query = target.partition(b"#")[0].partition(b"?")
    return raw_path, query
