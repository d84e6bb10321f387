"""Assembly: turn :class:`Settings` into a running pipeline with its stores.

The composition root: :meth:`Stoker.open` opens every backend port once
(:func:`stoker.backends.open`, which alone chooses SQLite, PostgreSQL or Redis) and hands
the ports to the constructors; the warmer (:mod:`stoker.app.warm_service`) and the
sharing of the cache (:mod:`stoker.app.sharing`) take theirs from :attr:`Stoker.backends`.
Every collaborator goes to its constructor, none is assigned after: one
:class:`~stoker.proxy.keying.Keying` (the cache version and key function) to the pipeline
and the purger, so neither needs the other built first; the purger reads the
``rewarm_also`` URLs from the settings in force, and finds its relay in the
:class:`~stoker.purge.bus.RelaySlot` it was given, which serving fills once it has joined
the bus (:func:`stoker.app.sharing.join_bus`).

Invariants: :meth:`Stoker.open` either returns a ready instance or raises
(with nothing left open).  A shutdown has ONE budget of ``shutdown_timeout``
seconds on the injected clock, started by :meth:`Stoker.begin_shutdown` (when
the servers are told to stop: the flush of the queued L2 writes, what clients
were already answered with, starts then, while the servers finish their
requests within the same budget) or else by :meth:`Stoker.close`.  ``close``
awaits that flush, then drains background revalidations, compressions and
reclaims, flushes what they wrote, and closes the cache store, every backend port
(:meth:`stoker.backends.Backends.close`: the audit log's backlog written) and the
origin; a step still running when the budget is spent is cancelled and logged with
what it abandoned, so ``close`` returns (an abandoned reclaim resumes
at the next start; abandoned L2 writes are lost from L2 only).  Only an L2
statement stuck inside SQLite itself can delay closing the store beyond that.
The pipeline
starts at the persisted cache version (:mod:`stoker.cache.version_file`: with
``database_url`` its record in PostgreSQL, which every node reads, whatever became of
the Redis tier) and, with ``database_url``, keeps to the record
(:mod:`stoker.cache.version_watch`); an unfinished reclaim resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from stoker import backends
from stoker.admin.audit import RefusalAudit
from stoker.backends import Backends
from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.cache.budget import MemoryBudget, share_memory
from stoker.cache.l2_queue import QueuePolicy
from stoker.cache.memory import MemoryStore
from stoker.cache.store import CacheStore
from stoker.cache.tiered import TieredStore
from stoker.cache.version_watch import VersionWatch
from stoker.clock import Clock, SystemClock
from stoker.config.reload import Reload, plan
from stoker.config.settings import (
    Settings,
    SettingsError,
    make_data_dir_private,
    read_error_page,
    require_data_dir,
    require_origin,
)
from stoker.http.decoding import DecodeBound
from stoker.http.forwarded import TrustedProxies
from stoker.http.policy import StaleDefaults
from stoker.origin.health import OriginHealth
from stoker.origin.http import HttpOrigin
from stoker.origin.limited import LimitedOrigin
from stoker.origin.monitored import MonitoredOrigin
from stoker.origin.port import OriginClient
from stoker.origin.slots import OriginLimiter
from stoker.origin.timing import OriginTiming
from stoker.proxy.fetch import FetchConfig, Fetcher
from stoker.proxy.keying import Keying
from stoker.proxy.pipeline import Pipeline, PipelineConfig
from stoker.proxy.shared_flights import SharedFlights
from stoker.purge.audit import AuditTrail
from stoker.purge.bus import RelaySlot
from stoker.purge.events import PurgeEvents
from stoker.purge.list import PurgeList
from stoker.purge.method import PurgeMethod, parse_networks
from stoker.purge.purger import Purger
from stoker.purge.scope import also_urls
from stoker.server.heap import set_aside_young

log = logging.getLogger("stoker")
EVICT_EVERY = 60.0


def fetch_config(settings: Settings) -> FetchConfig:
    """The per-fetch settings derived from :class:`Settings` (with ``l2_url``, nothing
    larger than ``l2_max_object_bytes`` is stored and no body goes to a file: a node's
    files are not the others')."""
    tag_headers = tuple(name.lower().encode("latin-1") for name in settings.tag_headers)
    largest = min(settings.max_object_bytes, settings.l2_max_object_bytes) if (
        settings.l2_url) else settings.max_object_bytes
    return FetchConfig(
        cache_name=settings.cache_name,
        via=f"1.1 {settings.cache_name}".encode("latin-1"),
        origin_host=settings.origin_host,
        defaults=StaleDefaults(swr=settings.default_swr, sie=settings.default_sie,
                               keep=settings.keep),
        body_file_threshold=largest if settings.l2_url else settings.body_file_threshold,
        max_object_bytes=largest,
        decoding=DecodeBound(settings.max_decoded_body, settings.max_expansion_ratio),
        tag_headers=tag_headers,
        hidden_headers=frozenset(tag_headers) if settings.strip_tag_headers else frozenset(),
        max_variants=settings.max_variants,
        stopgap_header=settings.stopgap_header.lower().encode("latin-1"),
        keep_stale=settings.keep_stale,
        compress=settings.compress,
    )


def pipeline_config(settings: Settings, memory: MemoryBudget) -> PipelineConfig:
    """The pipeline's settings derived from :class:`Settings` (``memory``: its share of
    ``l1_max_bytes``); ``error_page`` is read here (a :class:`SettingsError` naming it
    when it cannot be)."""
    return PipelineConfig(rules=settings.rules, collapse_timeout=settings.collapse_timeout,
                          honor_client_no_cache=settings.honor_client_no_cache,
                          default_host=settings.listen.rpartition(":")[0],
                          trusted=TrustedProxies(settings.trusted_proxies), memory=memory,
                          kept_overrides=frozenset(
                              name.encode() for name in settings.keep_override_headers),
                          client_body_timeout=settings.client_body_timeout,
                          client_max_body_size=settings.client_max_body_size,
                          refresh_ahead=settings.refresh_ahead,
                          refresh_window=settings.refresh_window,
                          error_page=read_error_page(settings),
                          log_redact_query=settings.log_redact_query)


def rewarm_also(settings: Settings) -> tuple[str, ...]:
    """The URLs every purge but one of everything purges too, under ``settings``."""
    return also_urls(settings.rewarm_also, settings.site_hosts)


def shares_tier(settings: Settings) -> bool:
    """Whether the processes sharing the cache share its persistent tier too: those of
    ``--processes N`` (``cache.db``), and the nodes of a Redis tier (``l2_url``)."""
    return bool(settings.l2_url) or settings.processes > 1


@dataclass
class Stoker:
    """Everything one Stoker process holds."""

    settings: Settings
    clock: Clock
    pipeline: Pipeline
    store: TieredStore
    l2: CacheStore
    origin: OriginClient
    purger: Purger
    audit: AuditTrail
    version_watch: VersionWatch
    """Keeps this process on the cache version's record (``/readyz`` asks it too)."""
    backends: Backends
    """Every port this process opened (:func:`stoker.backends.open`: the cache tier, the
    version store and the audit log above among them, the warmer's stores, the purge bus,
    the fetch leases and the notifier); closed with this object."""
    refusals: RefusalAudit
    """Refused calls, recorded at a bounded rate per client: the admin listener's and the
    ``PURGE`` method's (one policy, one set of windows)."""
    relays: RelaySlot
    """Where the purger finds this process's relay: empty until serving joins the bus
    (:func:`stoker.app.sharing.join_bus` holds the relay it opens in it)."""
    origin_timing: OriginTiming = field(default_factory=OriginTiming)
    """The origin's answer times and failures (for ``/metrics``)."""
    shared_flights: SharedFlights | None = None
    """The fetch leases this process's misses collapse through with the other members
    sharing its persistent tier (``None``: none shares it); closed with this object."""
    _maintenance: asyncio.Task[None] | None = field(default=None)
    _watching: asyncio.Task[None] | None = field(default=None)
    _shutdown: ShutdownBudget | None = field(default=None)
    _first_flush: asyncio.Future[None] | None = field(default=None)

    @property
    def events(self) -> PurgeEvents:
        """Subscribe here to hear of every purge (``events.subscribe(callback)``)."""
        return self.purger.events

    @classmethod
    async def open(cls, settings: Settings, *, clock: Clock | None = None,
                   origin: OriginClient | None = None, evict_loop: bool = True,
                   member: str | None = None) -> Stoker:
        """Open the stores under ``settings.data_dir`` and build the pipeline.

        With ``evict_loop`` L2 eviction and the audit log's prune run every
        :data:`EVICT_EVERY` seconds in a task of its own; without, the caller runs
        :meth:`evict_once` and :meth:`prune_audit` (the warmer's ticker does, as its
        ``l2_reclaim`` and ``audit_prune`` deadlines).  ``member``: this process's name
        among those sharing the cache (``None``: it shares it with none); where they share
        the persistent tier too (:func:`shares_tier`) misses collapse across them."""
        clock = clock or SystemClock()
        origin_url = require_origin(settings) if origin is None else None
        require_data_dir(settings)
        make_data_dir_private(settings)
        bodies = BodyStore(settings.data_dir / "bodies")
        await bodies.sweep_temp()
        try:
            opened = await backends.open(settings, clock, bodies)
        except ValueError as error:  # an unreadable cache version
            raise SettingsError(str(error)) from None
        l2, audit, versions = opened.l2, opened.audit, opened.versions
        try:
            state = await versions.load()
        except BaseException as error:
            await opened.close()
            if isinstance(error, ValueError):  # an unreadable cache version
                raise SettingsError(str(error)) from None
            raise
        memory = share_memory(settings.l1_max_bytes, settings.l2_queue_max_bytes)
        purges = PurgeList(clock)
        store = TieredStore(MemoryStore(memory.l1_bytes, clock, purges), l2, clock,
                            queue=QueuePolicy(max_queue_bytes=memory.queue_bytes,
                                              write_timeout=settings.l2_write_timeout),
                            after_soft_step=set_aside_young)
        if origin is None:
            assert origin_url is not None
            origin = HttpOrigin(origin_url, timeout=settings.origin_timeout)
        health = OriginHealth(clock)
        timing = OriginTiming()
        origin = LimitedOrigin(MonitoredOrigin(origin, health, clock, timing),
                               OriginLimiter(settings.origin_max_concurrency,
                                             per_client=settings.origin_max_per_client))
        keying = Keying(settings.rules, state.version)
        relays = RelaySlot()  # filled by serving, if the process shares its cache
        purger = Purger(store, purges, PurgeEvents(), clock, versions, keying,
                        also=lambda: rewarm_also(stoker.settings), relays=relays)  # as reloaded
        refusals = RefusalAudit(audit, clock)
        purge_method = PurgeMethod(purger, parse_networks(settings.purge_allow), audit,
                                   refusals, settings.site_hosts,
                                   lambda: stoker.settings.purge_mode)  # as reloaded
        flights = SharedFlights(opened.leases, store, clock, member, settings.collapse_timeout,
                                settings.node_timeout) if (
            member is not None and shares_tier(settings)) else None
        pipeline = Pipeline(
            pipeline_config(settings, memory),
            Fetcher(fetch_config(settings), origin, store, bodies, clock, purges),
            store, bodies, origin, clock, keying, health=health,
            invalidator=purger, purge_method=purge_method, shared_flights=flights)
        watch = VersionWatch(versions, lambda: keying.version, purger.adopt_version, clock)
        stoker = cls(settings, clock, pipeline, store, l2, origin, purger, audit, watch, opened,
                     refusals, relays, timing, flights)
        purger.resume_reclaim(state)
        if evict_loop:
            stoker._maintenance = asyncio.create_task(stoker._maintain_forever())
        if opened.pool is not None:  # the record other nodes bump
            stoker._watching = asyncio.create_task(stoker.version_watch.run())
        return stoker

    async def evict_once(self) -> int:
        """Write queued L2 writes, then drop expired and excess L2 entries; how many."""
        await self.store.flush()
        if not isinstance(self.l2, SqliteCacheStore):
            return 0  # Redis expires its entries itself, and evicts by its maxmemory policy
        evicted = await self.l2.evict(self.clock.now())
        if evicted:
            log.info("evicted %d expired or excess L2 entries", evicted)
        return evicted

    async def prune_audit(self) -> int:
        """Write the summaries of ended refusal windows, then delete the audit records older
        than ``audit_max_age`` and all but the newest ``audit_max_rows``; how many."""
        await self.refusals.flush()
        settings = self.settings
        pruned = await self.audit.prune(self.clock.now() - settings.audit_max_age,
                                        settings.audit_max_rows)
        if pruned:
            log.info("pruned %d audit records (older than audit_max_age = %g s or beyond "
                     "audit_max_rows = %d)", pruned, settings.audit_max_age,
                     settings.audit_max_rows)
        return pruned

    async def _maintain_forever(self) -> None:
        while True:
            await self.clock.sleep(EVICT_EVERY)
            for chore, what in ((self.evict_once, "L2 eviction"),
                                (self.prune_audit, "the audit log's prune")):
                try:
                    await chore()
                except Exception:
                    log.exception("%s failed; will retry", what)

    def reload(self, wanted: Settings) -> Reload:
        """Take what of ``wanted`` a running process can (:mod:`stoker.config.reload`):
        the request core answers every request from now on under the new rules,
        lifetimes and storage settings; the cache, the connections and what needs a
        restart stay as they are; the ``error_page`` file is read again (its new content
        taken even when its path is unchanged).  Returns the plan, for the log."""
        change = plan(self.settings, wanted)
        config = pipeline_config(change.settings, self.pipeline.config.memory)
        if change.applied or config.error_page != self.pipeline.config.error_page:
            self.pipeline.reconfigure(config, fetch_config(change.settings))
            self.settings = change.settings
        return change

    def begin_shutdown(self) -> ShutdownBudget:
        """The shutdown's budget, started now if it was not (see the module invariants);
        the queued L2 writes begin to be flushed at once."""
        if self._shutdown is None:
            self._shutdown = ShutdownBudget(self.clock, self.settings.shutdown_timeout)
            self._first_flush = asyncio.ensure_future(self.store.flush())
        return self._shutdown

    async def close(self) -> None:
        """Flush, drain and close everything within ``shutdown_timeout`` (see module invariants)."""
        budget = self.begin_shutdown()
        assert self._first_flush is not None
        for task in (self._maintenance, self._watching):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await budget.run("flushing queued L2 writes", self._first_flush, self._unwritten)
        await budget.run("draining requests, background revalidations and compressions",
                         self.pipeline.drain(),
                         lambda: f"{self.pipeline.pending()} requests, background "
                                 "revalidations and compressions")
        await budget.run("draining reclaims", self.purger.drain(),
                         lambda: f"{self.purger.pending()} reclaims (resumed at the next start)")
        await budget.run("flushing the L2 writes of drained work", self.store.flush(),
                         self._unwritten)
        await self.store.close(flush=False)  # logs what stayed unwritten
        if self.shared_flights is not None:  # no miss left to hold a lease
            await self.shared_flights.close()
        await self.backends.close()  # the audit log's backlog written, every port closed
        await self.origin.close()

    def _unwritten(self) -> str:
        return (f"{self.store.pending()} queued L2 operations "
                f"({self.store.pending_bytes()} bytes of cache writes)")


class ShutdownBudget:
    """One deadline, ``seconds`` from now on ``clock``, shared by the steps of a shutdown."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._end = clock.monotonic() + seconds

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(0.0, self._end - self._clock.monotonic())

    async def run(self, step: str, work: Awaitable[None],
                  left: Callable[[], str] | None = None) -> None:
        """Await ``work`` until it ends or the budget is spent.

        When the budget runs out ``work`` is cancelled and logged with ``left()``
        (what it abandons); a failure of ``work`` is logged, not raised.
        """
        task = asyncio.ensure_future(work)
        timer = asyncio.ensure_future(self._clock.sleep(self._end - self._clock.monotonic()))
        await asyncio.wait([task, timer], return_when=asyncio.FIRST_COMPLETED)
        timer.cancel()
        if not task.done():
            abandoned = f"; abandoned {left()}" if left is not None else ""
            task.cancel()
            await asyncio.wait([task])
            log.warning("shutdown: shutdown_timeout (%g s) ran out while %s%s",
                        self._seconds, step, abandoned)
        elif not task.cancelled() and task.exception() is not None:
            log.error("shutdown: %s failed: %s", step, task.exception())
