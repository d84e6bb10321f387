"""An ``OriginClient`` that answers from wrapped ASGI apps (an embedded Stoker's origin).

One Stoker may cache several apps: each origin request goes to the app its request came
through (its :class:`~stoker.origin.context.RequestContext`'s ``app``); a request made for
none (a warm visit, discovery) goes to the first app added (:meth:`AsgiOrigin.add`).
The wrapped app sees the client's original scope (the one its request's
:class:`~stoker.origin.context.RequestContext` carries; :data:`BARE_SCOPE` for a request
made for no client's, or for one read without a scope, by Stoker's own front) with the
method, target and headers the pipeline chose (e.g. a HEAD miss fetched as GET, our own
validators on a revalidation).

Invariants: the app's body reaches the pipeline through a bounded queue, so a
slow consumer applies back-pressure to the app instead of buffering; an app
that raises before starting its response surfaces as :class:`OriginError`
(the pipeline answers 502 or serves stale); ``close`` cancels an app still
running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import unquote

from stoker.asgi import ASGIApp, Message, Scope
from stoker.origin.context import RequestContext
from stoker.origin.port import Body, Headers, OriginError, OriginResponse, framed

_DONE = object()
BARE_SCOPE: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                     "scheme": "http", "client": None, "server": None}
"""The scope of a request made for no client request's (a warm visit's, discovery's), or
for one whose client request came without a scope (Stoker's own front)."""


class AsgiOrigin:
    """Calls the wrapped apps in-process as if they were the origin server."""

    def __init__(self, app: ASGIApp | None = None) -> None:
        self._apps: list[ASGIApp] = [] if app is None else [app]

    def add(self, app: ASGIApp) -> None:
        """Answer the requests that come through ``app`` from it too (the first app added
        answers the requests made for none)."""
        if app not in self._apps:
            self._apps.append(app)

    def _app_for(self, context: RequestContext | None) -> ASGIApp:
        if context is not None and context.app is not None:
            return context.app
        if not self._apps:
            raise OriginError("no app is wrapped yet: wrap one with stoker.asgi(app)")
        return self._apps[0]

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        app = self._app_for(context)
        path, _, query = target.partition("?")
        scope = dict(context.scope) if context is not None and context.scope is not None else (
            dict(BARE_SCOPE))
        scope.update(method=method, path=unquote(path), raw_path=path.encode("latin-1"),
                     query_string=query.encode("latin-1"), headers=framed(headers, body))
        started: asyncio.Future[tuple[int, Headers]] = asyncio.get_running_loop().create_future()
        queue: asyncio.Queue[object] = asyncio.Queue(maxsize=16)
        finished = asyncio.Event()

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.set_result((int(message["status"]), list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    await queue.put(bytes(message["body"]))
                if not message.get("more_body", False):
                    await queue.put(_DONE)

        task = asyncio.create_task(_run(app, scope, _Receiver(body, finished), send, queue))
        task.add_done_callback(lambda done: _fail_start(started, done))
        try:
            status, response_headers = await started
        except OriginError:
            raise
        except Exception as error:
            raise OriginError(f"the wrapped app failed: {error!r}") from error

        async def close() -> None:
            finished.set()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

        return OriginResponse(status, [(k.lower(), v) for k, v in response_headers],
                              _drain(queue), close)

    async def close(self) -> None:
        return None


async def _run(app: ASGIApp, scope: Scope, receive: Callable[[], Awaitable[Message]],
               send: Callable[[Message], Awaitable[None]], queue: asyncio.Queue[object]) -> None:
    try:
        await app(scope, receive, send)
    except Exception as error:
        await queue.put(OriginError(f"the wrapped app failed: {error!r}"))
        raise
    await queue.put(_DONE)


def _fail_start(started: asyncio.Future[tuple[int, Headers]], task: asyncio.Task[None]) -> None:
    if started.done():
        return
    if task.cancelled():
        started.set_exception(OriginError("the wrapped app was cancelled"))
    elif task.exception() is not None:
        started.set_exception(OriginError(f"the wrapped app failed: {task.exception()!r}"))
    else:
        started.set_exception(OriginError("the wrapped app sent no response"))


class _Receiver:
    """The ``receive`` callable handed to the app: the request body, then a disconnect."""

    def __init__(self, body: Body | None, finished: asyncio.Event) -> None:
        self._chunks = body.chunks().__aiter__() if body is not None else None
        self._body_done = False
        self._finished = finished

    async def __call__(self) -> Message:
        if self._chunks is not None:
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                self._chunks = None
            else:
                return {"type": "http.request", "body": chunk, "more_body": True}
        if not self._body_done:
            self._body_done = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._finished.wait()
        return {"type": "http.disconnect"}


async def _drain(queue: asyncio.Queue[object]) -> AsyncIterator[bytes]:
    while True:
        item = await queue.get()
        if item is _DONE:
            return
        if isinstance(item, OriginError):
            raise item
        assert isinstance(item, bytes)
        yield item
