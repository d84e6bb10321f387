"""Small ASGI helpers shared by Stoker's apps (proxy, demo origin, bench ceiling).

Invariant: :func:`acknowledge_lifespan` completes startup and shutdown without
doing anything, for apps whose resources are owned by the process around them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

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
