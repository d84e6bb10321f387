"""The origin behind the shared concurrency limit: visitors first, warm visits after.

Invariants: every origin request holds one :class:`OriginLimiter` slot from
before it is sent until its response is closed (headers and body read, or
given up), so the origin never has more than ``origin_max_concurrency``
requests of this process in flight; a failed request gives its slot back at
once.  A request made for a warm visit (its
:class:`~stoker.origin.context.RequestContext` has a ``warm_allowance``) takes a warm slot
under that allowance; every other request is a visitor's and takes a visitor slot
claimed for its client (the context's ``client``, :func:`~stoker.origin.fair_share.client_key`)
and its URL (Host and target), so one client's slow URLs cannot take every slot.
A warm visit's request also carries the context's ``origin_headers`` (the warm
credentials, :mod:`stoker.warm.credentials`); a visitor's context has none.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from stoker.http.headers import get_header
from stoker.origin.context import RequestContext
from stoker.origin.fair_share import Claim, client_key
from stoker.origin.port import Body, Headers, OriginClient, OriginResponse
from stoker.origin.slots import OriginLimiter
from stoker.warm.credentials import with_origin_headers


def claim_of(target: str, headers: Headers, context: RequestContext | None) -> Claim:
    """The slot claim of a visitor's origin request: its client, its Host and target."""
    host = get_header(headers, b"host") or b""
    return Claim(client_key(context.client if context is not None else None),
                 f"{host.decode('latin-1')}{target}")


class LimitedOrigin:
    """An :class:`OriginClient` that takes a limiter slot per request."""

    def __init__(self, origin: OriginClient, limiter: OriginLimiter) -> None:
        self._origin = origin
        self.limiter = limiter

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        slot = AsyncExitStack()
        allowance = context.warm_allowance if context is not None else None
        await slot.enter_async_context(
            self.limiter.visitor(claim_of(target, headers, context)) if allowance is None
            else self.limiter.warm(allowance))
        if context is not None and context.origin_headers:
            headers = with_origin_headers(headers, context.origin_headers)
        try:
            response = await self._origin.fetch(method, target, headers, body, context)
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
