"""The reverse proxy as an ASGI application.

Invariant: only HTTP requests reach the pipeline; a WebSocket handshake is
refused (the proxy does not tunnel WebSockets), lifespan events are
acknowledged (the process, not the server, owns the stores' lifecycle).
"""

from __future__ import annotations

from stoker.asgi import Message, Receive, Send, acknowledge_lifespan
from stoker.proxy.hot_path import HotPath
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
            attempt = await self.hot.try_serve(scope, send)
            if not attempt.served:
                await self.pipeline.answer(scope, receive, send, looked_up=attempt.looked_up)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})
        elif kind == "lifespan":
            await acknowledge_lifespan(receive, send)

