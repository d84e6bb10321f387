"""``CacheMiddleware``: the proxy pipeline around any ASGI app.

    app = CacheMiddleware(app, data_dir=".stoker", default_swr="30s")

The wrapped app is the origin: every HTTP request goes through the same
pipeline as ``stoker serve`` (keys, rules, RFC 9111 storage, SWR, collapsing,
Cache-Status).  WebSocket traffic goes straight to the app.

Invariants: the stores open once, on the first request or at lifespan
startup, whichever comes first, and close at lifespan shutdown; the wrapped
app's own lifespan events are passed through untouched.
"""

from __future__ import annotations

import asyncio

from stoker.adapters.asgi_reply import answer
from stoker.app.stoker import Stoker
from stoker.asgi import ASGIApp, Message, Receive, Send
from stoker.clock import Clock
from stoker.config.rules import Rule
from stoker.config.settings import Settings, settings_from
from stoker.origin.asgi import AsgiOrigin


class CacheMiddleware:
    """Caches the responses of ``app`` (see module docstring)."""

    def __init__(self, app: ASGIApp, *, settings: Settings | None = None,
                 rules: tuple[Rule, ...] = (), clock: Clock | None = None,
                 **overrides: object) -> None:
        self.app = app
        self.settings = settings or settings_from(overrides, rules)
        self._clock = clock
        self._stoker: Stoker | None = None
        self._lock = asyncio.Lock()

    async def _ready(self) -> Stoker:
        if self._stoker is None:
            async with self._lock:
                if self._stoker is None:
                    self._stoker = await Stoker.open(self.settings, clock=self._clock,
                                                     origin=AsgiOrigin(self.app))
        return self._stoker

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            stoker = await self._ready()
            await answer(stoker.pipeline, scope, receive, send)  # the app is called with scope
        elif kind == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
        else:
            await self.app(scope, receive, send)

    def _lifespan_send(self, send: Send) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                await self._ready()
            elif message["type"] == "lifespan.shutdown.complete":
                await self.close()
            await send(message)

        return wrapped

    async def close(self) -> None:
        """Flush and close the stores (also called at lifespan shutdown)."""
        if self._stoker is not None:
            await self._stoker.close()
            self._stoker = None
