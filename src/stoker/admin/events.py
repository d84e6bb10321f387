"""``GET /api/events``: the status as a Server-Sent Events stream, one hub for all.

:class:`StatusHub` runs one loop for the listener: every :data:`CHECK_EVERY` seconds it
gives the history a sample and, while anyone watches, composes the status
(:class:`~stoker.admin.status.StatusSource`, the stores memoized) and pokes itself when
it changed; a write through the admin listener pokes it too (:class:`PokeOnWrite`).
Pokes are debounced (:class:`~stoker.admin.live.Debounce`, :data:`DEBOUNCE`): a burst
gives one event, composed once and handed to every subscriber.

Invariants:
- A subscriber gets the status at once on connecting, then an ``event: status`` per
  debounced burst of changes, and a keep-alive comment (``: keep-alive``) after
  :data:`KEEPALIVE` seconds without one.
- Each subscriber has one :class:`~stoker.admin.live.Latest` slot: the hub never waits
  for a subscriber, and a slow one gets the newest state, skipping those between.
- At most :data:`MAX_SUBSCRIBERS` streams at once; one more is answered 503.
- A stream opened with a session ends once the session does (logout, expiry, revocation).
- The loop survives a compose that fails (logged; the next tick tries again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from stoker.admin.guard import READS
from stoker.admin.live import Debounce, Latest
from stoker.admin.sessions import Session, Sessions
from stoker.admin.status import StatusSource
from stoker.asgi import ASGIApp, Message, Receive, Send

log = logging.getLogger("stoker.admin")

DEBOUNCE: Final = 0.25
KEEPALIVE: Final = 15.0
CHECK_EVERY: Final = 1.0
MAX_SUBSCRIBERS: Final = 64
KEEPALIVE_COMMENT: Final = b": keep-alive\n\n"
VOLATILE: Final = ("now", "gc")
"""Keys that change on every compose without anything having happened."""


def sse(event: str, data: Any) -> bytes:
    """One Server-Sent Event named ``event`` carrying ``data`` as JSON on one ``data:``
    line (the status stream's, and the request log's).  Pure."""
    return (f"event: {event}\ndata: ".encode()
            + json.dumps(data, separators=(",", ":")).encode() + b"\n\n")


def settled(status: dict[str, Any]) -> dict[str, Any]:
    """``status`` without its :data:`VOLATILE` keys: what a change is judged on.  Pure."""
    return {key: value for key, value in status.items() if key not in VOLATILE}


class StatusHub:
    """The one loop behind every event stream of a listener (see the module)."""

    def __init__(self, source: StatusSource, *, debounce: float = DEBOUNCE,
                 keepalive: float = KEEPALIVE, check_every: float = CHECK_EVERY,
                 max_subscribers: int = MAX_SUBSCRIBERS) -> None:
        self.source = source
        self.keepalive = keepalive
        self._check_every = check_every
        self._max = max_subscribers
        self._debounce = Debounce(debounce)
        self._poked = asyncio.Event()
        self._subscribers: set[Latest[bytes]] = set()
        self._last: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self.published = 0
        """Events composed and handed out (one per debounced burst)."""

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @property
    def skipped(self) -> int:
        """States the connected subscribers were too slow to receive, summed."""
        return sum(inbox.skipped for inbox in self._subscribers)

    @property
    def full(self) -> bool:
        """Whether a new subscriber would be refused."""
        return len(self._subscribers) >= self._max

    def poke(self) -> None:
        """Something changed: an event within the debounce."""
        self._debounce = self._debounce.poke(self.source.clock.monotonic())
        self._poked.set()

    def start(self) -> None:
        """Run the loop (again, if it had stopped)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="stoker-status-hub")

    async def run(self) -> None:
        """Run the loop until cancelled (beside the servers, for the charts' history)."""
        self.start()
        assert self._task is not None
        try:
            await self._task
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop the loop."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Latest[bytes] | None]:
        """A slot that receives the events while the block runs (``None`` when full)."""
        if self.full:
            yield None
            return
        inbox: Latest[bytes] = Latest()
        self._subscribers.add(inbox)
        self.start()
        try:
            yield inbox
        finally:
            self._subscribers.discard(inbox)

    async def _run(self) -> None:
        clock = self.source.clock
        self.source.observe()  # the history starts now; changes are judged from the next tick
        next_check = clock.monotonic() + self._check_every
        while True:
            self._poked.clear()
            try:
                if clock.monotonic() >= next_check:
                    next_check = clock.monotonic() + self._check_every
                    await self._tick()
                self._debounce, due = self._debounce.fire(clock.monotonic())
                if due and self._subscribers:
                    await self._publish()
            except Exception:
                log.warning("the dashboard's status could not be composed; trying again",
                            exc_info=True)
            until = min(next_check, self._debounce.due or next_check)
            await self._sleep_or_poke(max(0.0, until - clock.monotonic()))

    async def _tick(self) -> None:
        self.source.observe()
        if self._subscribers and settled(await self.source.compose()) != self._last:
            self.poke()

    async def _publish(self) -> None:
        status = await self.source.compose()
        self._last = settled(status)
        event = sse("status", status)
        self.published += 1
        for inbox in tuple(self._subscribers):
            inbox.put(event)

    async def _sleep_or_poke(self, seconds: float) -> None:
        sleeping = asyncio.ensure_future(self.source.clock.sleep(seconds))
        poked = asyncio.ensure_future(self._poked.wait())
        try:
            await asyncio.wait({sleeping, poked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeping.cancel()
            poked.cancel()


def events_endpoint(hub: StatusHub, sessions: Sessions) -> Any:
    """The ``/api/events`` route handler over ``hub``; a stream opened with a session ends
    once that session does (before its next event or keep-alive)."""

    async def events(request: Request) -> Response:
        if hub.full:
            return JSONResponse({"error": "too many event streams open"}, status_code=503)
        session: Session | None = request.scope.get("state", {}).get("session")

        async def stream() -> AsyncIterator[bytes]:
            async with hub.subscribe() as inbox:
                if inbox is None:
                    return
                yield sse("status", await hub.source.compose())
                while True:
                    event = await inbox.get(hub.keepalive)
                    if session is not None and not sessions.holds(session):
                        return  # logged out or revoked: the page's next try gets a 401
                    yield event if event is not None else KEEPALIVE_COMMENT

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    return events


class PokeOnWrite:
    """ASGI middleware: a write answered below 400 pokes ``hub`` (purges, runs, logins)."""

    def __init__(self, app: ASGIApp, hub: StatusHub) -> None:
        self._app = app
        self._hub = hub

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("method", "GET")).upper() in READS:
            await self._app(scope, receive, send)
            return
        statuses: list[int] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(int(message["status"]))
            await send(message)

        await self._app(scope, receive, watched)
        if statuses and statuses[0] < 400:
            self._hub.poke()
