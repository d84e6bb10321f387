"""What a serving process sharing its cache with others adds to a lone one: the purge
relay (:mod:`stoker.purge.relay`) and, where the persistent tier is shared, the fetch
leases through which misses collapse across processes (:mod:`stoker.proxy.shared_flights`).

Who shares: the processes of ``--processes N`` (through the file they share,
``data_dir/cache.db``), and with ``database_url`` every node using that database (the bus
in PostgreSQL, so a purge on one node reaches every node).  Leases exist where the
persistent tier is shared: between the processes of one machine (``cache.db``), and
between the nodes sharing a Redis tier (``l2_url``: in PostgreSQL).  The members poke
each other through the notifier the ``notifier`` setting names.  The bus, the leases and
the notifier are the ones :func:`stoker.backends.open` opened for the process
(:attr:`Stoker.backends`, :mod:`stoker.backends.choice` choosing them).
"""

from __future__ import annotations

from dataclasses import dataclass

from stoker.admin import metrics
from stoker.app.processes import ServingProcess
from stoker.app.stoker import Stoker
from stoker.cache.notifier import Notifier
from stoker.config.settings import Settings
from stoker.proxy.shared_flights import SharedFlights
from stoker.purge.bus import PurgeBus
from stoker.purge.relay import PurgeRelay, open_relay


@dataclass
class Sharing:
    """This process's part in the shared cache."""

    relay: PurgeRelay
    flights: SharedFlights | None

    async def close(self) -> None:
        """Leave the bus, close the leases."""
        try:
            await self.relay.close()
        finally:
            if self.flights is not None:
                await self.flights.close()


def shares_cache(settings: Settings, process: ServingProcess | None) -> bool:
    """Whether a serving process with ``settings`` shares its cache with others."""
    return process is not None or bool(settings.database_url)


async def join_bus(stoker: Stoker, bus: PurgeBus, name: str,
                   notifier: Notifier | None = None) -> PurgeRelay:
    """``stoker``'s purger on ``bus`` as ``name`` (:func:`~stoker.purge.relay.open_relay`,
    with the process's memory tier, clock and timeouts)."""
    settings = stoker.settings
    return await open_relay(bus, name, stoker.purger, stoker.store.l1, stoker.clock,
                            ack_timeout=settings.purge_ack_timeout,
                            node_timeout=settings.node_timeout, notifier=notifier)


async def share_cache(stoker: Stoker, name: str) -> Sharing:
    """Join ``stoker`` to those sharing its cache, as ``name`` (see the module docstring)."""
    settings, ports = stoker.settings, stoker.backends
    relay = await join_bus(stoker, ports.bus, name, ports.notifier)
    relay.figures = lambda: metrics.said(metrics.own(stoker))
    if not settings.l2_url and settings.processes == 1:
        return Sharing(relay, None)  # nobody shares this node's persistent tier
    flights = SharedFlights(ports.leases, stoker.store, stoker.clock, name,
                            settings.collapse_timeout, settings.node_timeout)
    stoker.pipeline.shared_flights = flights
    return Sharing(relay, flights)
