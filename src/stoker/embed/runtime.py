"""What an opened embedded Stoker holds: the request core's Stoker (one store, one
purger, one pipeline whose origin is the wrapped apps), its warmer driven by traffic
(``warm=True``), its status, its membership of the purge bus of its store (the other
worker processes on one ``data_dir`` or ``database_url`` hear of its purges, and it of
theirs: :func:`stoker.app.sharing.open_embedded`), and its admin side once asked for.

Invariants: :meth:`Runtime.open` returns a ready runtime or raises with nothing left
open; :meth:`Runtime.close` closes in the serving order (warm work cancelled and its
stores closed, then the bus left, then the cache flushed and closed) within one
``shutdown_timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stoker.admin.app import AdminSide, admin_side
from stoker.admin.status import StatusSource
from stoker.app.sharing import Sharing, open_embedded
from stoker.app.stoker import Stoker as Core
from stoker.app.traffic_warm import TrafficWarm
from stoker.app.warm_service import WarmService
from stoker.clock import Clock
from stoker.config.settings import Settings
from stoker.origin.asgi import AsgiOrigin


@dataclass
class Runtime:
    """An opened embedded Stoker (see the module)."""

    core: Core
    traffic: TrafficWarm | None
    status: StatusSource
    sharing: Sharing
    _admin: AdminSide | None = field(default=None)

    @classmethod
    async def open(cls, settings: Settings, clock: Clock | None, origin: AsgiOrigin,
                   warm_budget: int | None) -> Runtime:
        """Open the stores (``warm_budget``: warm on traffic, that many jobs a batch;
        ``None``: no warming here)."""
        core, sharing = await open_embedded(settings, clock=clock, origin=origin,
                                            evict_loop=warm_budget is None)
        traffic = None
        try:
            if warm_budget is not None:
                service = await WarmService.open(core)
                traffic = TrafficWarm(service, warm_budget)
                await service.warm_on_start()
        except BaseException:
            if traffic is not None:
                await traffic.close(0.0)
            await sharing.leave()
            await core.close()
            raise
        warm = traffic.service if traffic is not None else None
        return cls(core, traffic, StatusSource(core, warm), sharing)

    @property
    def warm(self) -> WarmService | None:
        """The warmer, with ``warm=True``."""
        return self.traffic.service if self.traffic is not None else None

    def admin(self) -> AdminSide:
        """The admin side (built once, on first use)."""
        if self._admin is None:
            self._admin = admin_side(self.core, self.warm)
        return self._admin

    def after_response(self) -> None:
        """A response was sent: let the traffic warmer start a batch if one is due."""
        if self.traffic is not None:
            self.traffic.after_response()

    async def close(self) -> None:
        """Close everything (see the module invariants)."""
        budget = self.core.begin_shutdown()
        try:
            if self.traffic is not None:
                await self.traffic.close(budget.left())
        finally:
            try:
                await self.sharing.leave()
            finally:
                await self.core.close()
