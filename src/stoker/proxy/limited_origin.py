"""The origin behind the shared concurrency limit: visitors first, warm visits after.

Invariants: every origin request holds one :class:`OriginLimiter` slot from
before it is sent until its response is closed (headers and body read, or
given up), so the origin never has more than ``origin_max_concurrency``
requests of this process in flight; a failed request gives its slot back at
once.  A request made inside :func:`warm_visits` (the warmer's in-process
visits) takes a warm slot under that allowance; every other request is a
visitor's and takes a visitor slot.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar

from stoker.proxy.origin import Body, Headers, OriginClient, OriginResponse
from stoker.proxy.origin_limit import OriginLimiter

_warm_allowance: ContextVar[int | None] = ContextVar("stoker_warm_allowance", default=None)


@contextmanager
def warm_visits(allowance: int) -> Iterator[None]:
    """Origin requests made in this block are warm visits, at most ``allowance`` at once."""
    token = _warm_allowance.set(max(1, allowance))
    try:
        yield
    finally:
        _warm_allowance.reset(token)


class LimitedOrigin:
    """An :class:`OriginClient` that takes a limiter slot per request."""

    def __init__(self, origin: OriginClient, limiter: OriginLimiter) -> None:
        self._origin = origin
        self.limiter = limiter

    async def fetch(self, method: str, target: str, headers: Headers,
                    body: Body | None) -> OriginResponse:
        slot = AsyncExitStack()
        allowance = _warm_allowance.get()
        await slot.enter_async_context(
            self.limiter.visitor() if allowance is None else self.limiter.warm(allowance))
        try:
            response = await self._origin.fetch(method, target, headers, body)
        except BaseException:
            await slot.aclose()
            raise
        inner_close = response.close

        async def close() -> None:
            try:
                await inner_close()
            finally:
                await slot.aclose()

        response.close = close
        return response

    async def close(self) -> None:
        await self._origin.close()
