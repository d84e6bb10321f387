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

Embedded Stokers (:mod:`stoker.embed`, the function cache's default runtime) share theirs
always: the workers of an app (``gunicorn --workers N``) open one ``data_dir`` (the bus
in its ``cache.db``) or one ``database_url`` without telling Stoker, so each opens with
:func:`open_embedded` and joins as a name unique to its process (:func:`embedded_name`).
Serving and embedding join through the same :func:`share_cache`: the relay, followed in
a task of its own until :meth:`Sharing.leave`.  A process alone on the bus reads it
:data:`~stoker.purge.relay.LONE_POLL` times a second (plus its heartbeat).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import Any

from stoker.admin import metrics
from stoker.app.processes import ServingProcess, default_node_id
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


class Sharing:
    """This process among those sharing its cache: its relay on the bus, followed (the
    others' purges put in force here) by a task of its own until :meth:`leave`."""

    def __init__(self, relay: PurgeRelay) -> None:
        self.relay = relay
        self._following = asyncio.create_task(relay.follow(asyncio.Event()),
                                              name=f"stoker-purge-relay {relay.me}")

    async def leave(self) -> None:
        """Stop following and leave the bus (what this process purged but the bus did not
        take yet is relayed first, :meth:`PurgeRelay.close`); before the stores close."""
        self._following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._following
        await self.relay.close()


async def share_cache(stoker: Stoker, name: str) -> Sharing:
    """Join ``stoker`` to those sharing its cache, as ``name`` (see the module docstring):
    its relay on the bus, followed until :meth:`Sharing.leave` (its misses collapse
    through the fetch leases it was opened with, :meth:`Stoker.open`'s ``member``)."""
    return Sharing(await join_bus(stoker, stoker.backends.bus, name,
                                  lambda: metrics.said(metrics.own(stoker))))


def embedded_name(settings: Settings) -> str:
    """An embedded process's name on the bus, unique to it: ``node_id/PID`` (the workers
    of one node share ``node_id``), else ``hostname-PID``."""
    return f"{settings.node_id}/{os.getpid()}" if settings.node_id else default_node_id()


async def open_embedded(settings: Settings, **options: Any) -> tuple[Stoker, Sharing]:
    """Open an embedded process's Stoker (:meth:`Stoker.open` with ``options``) joined to
    the bus of its store as :func:`embedded_name`; raises with nothing left open.  Close
    with :meth:`Sharing.leave`, then :meth:`Stoker.close`."""
    stoker = await Stoker.open(settings, **options)
    try:
        return stoker, await share_cache(stoker, embedded_name(settings))
    except BaseException:
        await stoker.close()
        raise
