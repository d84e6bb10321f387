"""What a serving process sharing its cache with others adds to a lone one: the purge
relay (:mod:`stoker.purge.relay`) and, where the persistent tier is shared, the fetch
leases through which misses collapse across processes (:mod:`stoker.proxy.shared_flights`).

Who shares: the processes of ``--processes N`` (through the file they share,
``data_dir/cache.db``), and with ``database_url`` every node using that database (the bus
in PostgreSQL, so a purge on one node reaches every node).  Leases exist where the
persistent tier is shared: between the processes of one machine (``cache.db``), and
between the nodes sharing a Redis tier (``l2_url``: in PostgreSQL).  The members poke
each other through the notifier the ``notifier`` setting names (:func:`notifier_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from stoker.admin import metrics
from stoker.app.processes import ServingProcess
from stoker.app.stoker import Stoker
from stoker.backends.postgres import notifier as postgres_notifier
from stoker.backends.postgres.connection import create_pool
from stoker.backends.postgres.fetch_leases import PostgresFetchLeases
from stoker.backends.postgres.purge_bus import PostgresPurgeBus
from stoker.backends.redis import notifier as redis_notifier
from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases
from stoker.backends.sqlite.purge_bus import SqlitePurgeBus
from stoker.cache.fetch_leases import FetchLeases
from stoker.cache.notifier import LocalNotifier, Notifier
from stoker.clock import Clock
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


async def open_bus_and_leases(settings: Settings) -> tuple[PurgeBus, FetchLeases, Any]:
    """The bus and the leases ``settings`` point at, opened (so migrated) on their own
    (``stoker migrate``, ``stoker check``): PostgreSQL with ``database_url`` (on a pool
    returned to be closed after them), else ``cache.db``."""
    if not settings.database_url:
        return (await SqlitePurgeBus.open(settings.cache_path),
                await SqliteFetchLeases.open(settings.cache_path), None)
    pool = await create_pool(settings.database_url, min_size=1, max_size=1)
    try:
        return await PostgresPurgeBus.open(pool), await PostgresFetchLeases.open(pool), pool
    except BaseException:
        await pool.close()
        raise


def notifier_kind(settings: Settings) -> Literal["local", "postgres", "redis"]:
    """Which notifier ``settings`` ask for (``auto``: Redis with ``l2_url``, else PostgreSQL
    with ``database_url``, else this process alone; ``poll``: this process alone).  Pure."""
    if settings.notifier == "redis" or (settings.notifier == "auto" and settings.l2_url):
        return "redis"
    if settings.notifier == "postgres" or (settings.notifier == "auto" and
                                           settings.database_url):
        return "postgres"
    return "local"


async def open_notifier(stoker: Stoker) -> Notifier:
    """The notifier :func:`notifier_kind` names for ``stoker``, subscribed."""
    return await notifier_for(stoker.settings, stoker.clock, stoker.pool)


async def notifier_for(settings: Settings, clock: Clock, pool: Any) -> Notifier:
    """The notifier :func:`notifier_kind` names for ``settings``, subscribed (``pool``: the
    asyncpg pool on ``database_url``, which a PostgreSQL notifier pokes through)."""
    kind = notifier_kind(settings)
    if kind == "redis":
        assert settings.l2_url is not None  # the settings' check
        return await redis_notifier.open_notifier(settings.l2_url, clock)
    if kind == "postgres":
        assert settings.database_url is not None and pool is not None
        return await postgres_notifier.open_notifier(settings.database_url, pool, clock)
    return LocalNotifier(clock)


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
    settings = stoker.settings
    bus: PurgeBus = await PostgresPurgeBus.open(stoker.pool) if stoker.pool is not None else (
        await SqlitePurgeBus.open(settings.cache_path))
    try:
        notifier = await open_notifier(stoker)
    except BaseException:
        await bus.close()
        raise
    relay = await join_bus(stoker, bus, name, notifier)
    relay.figures = lambda: metrics.said(metrics.own(stoker))
    if not settings.l2_url and settings.processes == 1:
        return Sharing(relay, None)  # nobody shares this node's persistent tier
    try:
        leases: FetchLeases = await PostgresFetchLeases.open(stoker.pool) if (
            settings.l2_url) else await SqliteFetchLeases.open(settings.cache_path)
    except BaseException:
        await relay.close()
        raise
    flights = SharedFlights(leases, stoker.store, stoker.clock, name, settings.collapse_timeout,
                            settings.node_timeout)
    stoker.pipeline.shared_flights = flights
    return Sharing(relay, flights)
