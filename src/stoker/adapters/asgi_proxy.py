"""The reverse proxy as an ASGI application.

Invariant: only HTTP requests reach the pipeline (the fresh-hit fast path first, then the
core through :func:`~stoker.adapters.asgi_reply.answer`, told what the fast path read from
L2); a WebSocket handshake is
refused (the proxy does not tunnel WebSockets), lifespan events are acknowledged (the
process, not the server, owns the stores' lifecycle).
"""

from __future__ import annotations

from stoker.adapters.asgi_reply import answer
from stoker.adapters.hot_path import HotPath
from stoker.asgi import Message, Receive, Send, acknowledge_lifespan
from stoker.cache.outcome import Outcome
from stoker.origin.context import RequestContext
from stoker.proxy.hit import FAST_HIT
from stoker.proxy.pipeline import Pipeline


class ProxyApp:
    """ASGI entry point of ``stoker serve``."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.hot = HotPath(pipeline)
        """The fresh-hit fast path (an HTTP/1.1 front may answer its hits itself)."""

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.respond(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})
        elif kind == "lifespan":
            await acknowledge_lifespan(receive, send)

    async def respond(self, scope: Message, receive: Receive, send: Send,
                      context: RequestContext | None = None) -> Outcome:
        """Answer one HTTP request (``context``: its request context, else a visitor's);
        what the cache did (:data:`FAST_HIT` for the fast path's hits)."""
        attempt = await self.hot.try_serve(scope, send)
        if attempt.served:
            return FAST_HIT
        reply = await answer(self.pipeline, scope, receive, send, looked_up=attempt.looked_up,
                             context=context)
        return reply.outcome
