"""Every origin request watched: :class:`MonitoredOrigin` reports each to the origin's
:class:`~stoker.origin.health.OriginHealth` (and turns a request away at once, with
:class:`~stoker.origin.port.OriginDown`, while the origin is down and no probe is due)
and its time and body bytes to an :class:`~stoker.origin.timing.OriginTiming`."""

from __future__ import annotations

from collections.abc import AsyncIterator

from stoker.clock import Clock
from stoker.origin.context import RequestContext
from stoker.origin.health import OriginHealth
from stoker.origin.port import (
    Body,
    Headers,
    OriginClient,
    OriginDown,
    OriginError,
    OriginResponse,
)
from stoker.origin.timing import OriginTiming


class MonitoredOrigin:
    """An :class:`OriginClient` that reports every request to an :class:`OriginHealth`
    and its time and the body bytes read of it to an
    :class:`~stoker.origin.timing.OriginTiming`."""

    def __init__(self, origin: OriginClient, health: OriginHealth, clock: Clock,
                 timing: OriginTiming | None = None) -> None:
        self._origin = origin
        self.health = health
        self.timing = timing if timing is not None else OriginTiming()
        self._clock = clock

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        if not self.health.may_ask():
            raise OriginDown(self.health.retry_after())
        request_id = self.health.begin()
        started = self._clock.monotonic()
        try:
            response = await self._origin.fetch(method, target, headers, body, context)
        except OriginError:
            self.health.report(request_id, ok=False)
            self.timing.failed()
            raise
        except BaseException:
            self.health.abandon(request_id)
            raise
        finally:
            if context is not None:
                context.origin_waits.append(self._clock.monotonic() - started)
        self.health.report(request_id, ok=True)  # it answered: it is up
        self.health.answered(response.status)
        self.timing.answered(self._clock.monotonic() - started)
        response.chunks = self._counted(response.chunks)
        return response

    async def _counted(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        async for chunk in chunks:
            self.timing.body_bytes += len(chunk)
            yield chunk

    async def close(self) -> None:
        await self._origin.close()
