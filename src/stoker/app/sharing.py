"""What a serving process sharing its cache with others (``processes > 1``) adds to a
lone one: the purge relay (:mod:`stoker.app.purge_relay`) and the fetch leases through
which misses collapse across processes (:mod:`stoker.proxy.shared_flights`), both in
the file the processes share (``data_dir/cache.db``)."""

from __future__ import annotations

from dataclasses import dataclass

from stoker.app.purge_relay import PurgeRelay, open_relay
from stoker.app.stoker import Stoker
from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases
from stoker.proxy.shared_flights import SharedFlights


@dataclass
class Sharing:
    """This process's part in the shared cache."""

    relay: PurgeRelay
    flights: SharedFlights

    async def close(self) -> None:
        """Leave the bus, close the leases."""
        try:
            await self.relay.close()
        finally:
            await self.flights.close()


async def share_cache(stoker: Stoker, name: str) -> Sharing:
    """Join ``stoker`` to the processes sharing its ``data_dir``, as ``name``."""
    relay = await open_relay(stoker, name)
    try:
        leases = await SqliteFetchLeases.open(stoker.settings.cache_path)
    except BaseException:
        await relay.close()
        raise
    flights = SharedFlights(leases, stoker.store, stoker.clock, name,
                            stoker.settings.collapse_timeout)
    stoker.pipeline.shared_flights = flights
    return Sharing(relay, flights)
