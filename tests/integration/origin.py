"""A scriptable origin for integration tests: each path answers what the test says."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

Message = MutableMapping[str, Any]


@dataclass
class Reply:
    """What the origin answers for one path."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b"hello"
    delay: float = 0.0
    not_modified_etag: str | None = None  # answer 304 to If-None-Match with this ETag


class ScriptedOrigin:
    """ASGI app whose replies are set per path; counts requests per path and method."""

    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {}
        self.hits: Counter[str] = Counter()
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    def set(self, path: str, **reply: Any) -> Reply:
        self.replies[path] = Reply(**reply)
        return self.replies[path]

    def count(self, path: str) -> int:
        return self.hits[path]

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"]
                                else "")
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.hits[scope["path"]] += 1
        self.requests.append((scope["method"], path, headers))
        while True:
            message = await receive()
            if not message.get("more_body"):
                break
        reply = self.replies.get(scope["path"], Reply(status=404, body=b"no such page"))
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.not_modified_etag and headers.get("if-none-match") == reply.not_modified_etag:
            out = [(k.encode(), v.encode()) for k, v in reply.headers]
            await send({"type": "http.response.start", "status": 304, "headers": out})
            await send({"type": "http.response.body", "body": b""})
            return
        out = [(k.encode(), v.encode()) for k, v in reply.headers]
        out.append((b"content-length", str(len(reply.body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": out})
        await send({"type": "http.response.body", "body": reply.body})
