"""The ASGI side of an embedded Stoker: :class:`StokerMiddleware` around one app, and
:class:`CacheMiddleware`, the one-line form that owns its Stoker.

Every HTTP request goes through the request core (keys, rules, RFC 9111 storage, SWR,
collapsing, Cache-Status) with the wrapped app as its origin: the app is called with the
client's scope, through this request's context (so one Stoker serves several apps, each
asked for its own requests).  WebSocket traffic goes straight to the app; with
``admin="/path"``, so do requests under that path, to the admin side instead (never
through the cache, so its session cookie and token reach it).

Invariants: the Stoker opens once, at lifespan startup or at the first request,
whichever comes first; a middleware that opened it closes it at lifespan shutdown (one
opened by the app, ``async with stoker``, is the app's to close); the wrapped app's own
lifespan events pass through untouched; after each response the traffic warmer may
start a batch in the background (never before the response is sent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stoker.adapters.asgi_reply import answer
from stoker.asgi import ASGIApp, Message, Receive, Send
from stoker.clock import Clock
from stoker.config.settings import Settings
from stoker.origin.context import RequestContext

if TYPE_CHECKING:
    from stoker.embed.stoker import Stoker


def admin_path(value: str | None) -> str | None:
    """``admin=`` checked: ``None``, or a path like ``/stoker`` (no trailing slash).  Pure."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/") or value.rstrip("/") == "":
        raise ValueError(f"admin must be a path like \"/stoker\" (not the root), got {value!r}")
    return value.rstrip("/")


def under(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or below it.  Pure."""
    return path == prefix or path.startswith(prefix + "/")


class StokerMiddleware:
    """Caches ``app``'s responses through ``stoker`` (see the module)."""

    def __init__(self, app: ASGIApp, *, stoker: Stoker, admin: str | None = None) -> None:
        self.app = app
        self.stoker = stoker
        self._admin = admin_path(admin)
        self._admin_app = stoker.admin_app() if self._admin is not None else None
        self._opened_here = False
        stoker.origin.add(app)

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if self._admin_app is not None and under(scope["path"], self._admin or ""):
                root = scope.get("root_path", "") + (self._admin or "")
                await self._admin_app({**scope, "root_path": root}, receive, send)
                return
            runtime = await self._open()
            await answer(runtime.core.pipeline, scope, receive, send,
                         context=RequestContext(scope=scope, app=self.app))
            runtime.after_response()
        elif kind == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
        else:
            await self.app(scope, receive, send)

    async def _open(self) -> Runtime:
        opened, runtime = await self.stoker.opening()
        self._opened_here = self._opened_here or opened
        return runtime

    def _lifespan_send(self, send: Send) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                await self._open()
            elif message["type"] == "lifespan.shutdown.complete" and self._opened_here:
                self._opened_here = False
                await self.stoker.close()
            await send(message)

        return wrapped


class CacheMiddleware(StokerMiddleware):
    """``app = CacheMiddleware(app, data_dir=".stoker", rules=[...])``: a Stoker of its own
    (the keyword arguments are its settings) around one app; :meth:`close` closes it."""

    def __init__(self, app: ASGIApp, *, settings: Settings | None = None, rules: object = (),
                 clock: Clock | None = None, admin: str | None = None,
                 **overrides: object) -> None:
        from stoker.embed.stoker import Stoker

        options: dict[str, Any] = dict(overrides)  # settings, and warm= / warm_budget=
        super().__init__(app, stoker=Stoker(settings, rules=rules, clock=clock, **options),
                         admin=admin)
        self.settings = self.stoker.settings

    async def close(self) -> None:
        """Flush and close the stores (also done at lifespan shutdown)."""
        await self.stoker.close()


if TYPE_CHECKING:
    from stoker.embed.runtime import Runtime
