"""What a serving process sharing its cache with others adds to a lone one: the purge
relay (:mod:`stoker.purge.relay`); and, where the persistent tier is shared, the fetch
leases through which misses collapse across processes (:mod:`stoker.proxy.shared_flights`,
built with the pipeline when :meth:`Stoker.open` is given the process's ``member`` name).

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

from collections.abc import Callable

from stoker.admin import metrics
from stoker.app.processes import ServingProcess
from stoker.app.stoker import Stoker
from stoker.config.settings import Settings
from stoker.purge.bus import PurgeBus
from stoker.purge.relay import PurgeRelay, open_relay


def shares_cache(settings: Settings, process: ServingProcess | None) -> bool:
    """Whether a serving process with ``settings`` shares its cache with others."""
    return process is not None or bool(settings.database_url)


async def join_bus(stoker: Stoker, bus: PurgeBus, name: str,
                   figures: Callable[[], str] | None = None) -> PurgeRelay:
    """``stoker``'s purger on ``bus`` as ``name`` (:func:`~stoker.purge.relay.open_relay`,
    with the process's memory tier, clock, timeouts and notifier; ``figures``: what it
    tells the others of itself), held in :attr:`Stoker.relays`: its purges are relayed
    through it from now on.  The bus stays its opener's to close; the relay is the
    caller's."""
    settings = stoker.settings
    relay = await open_relay(bus, name, stoker.purger, stoker.store.l1, stoker.clock,
                             ack_timeout=settings.purge_ack_timeout,
                             node_timeout=settings.node_timeout,
                             notifier=stoker.backends.notifier, figures=figures)
    stoker.relays.hold(relay)
    return relay


async def share_cache(stoker: Stoker, name: str) -> PurgeRelay:
    """Join ``stoker`` to those sharing its cache, as ``name`` (see the module docstring):
    its relay on the bus (its misses collapse through the fetch leases it was opened
    with, :meth:`Stoker.open`'s ``member``)."""
    return await join_bus(stoker, stoker.backends.bus, name,
                          lambda: metrics.said(metrics.own(stoker)))
