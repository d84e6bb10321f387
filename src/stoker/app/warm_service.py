"""Assembly of the warmer for one running :class:`~stoker.app.stoker.Stoker`.

:meth:`WarmService.open` takes the warm stores the process opened
(:attr:`Stoker.backends`: SQLite by default, PostgreSQL with ``database_url``), builds the
:class:`~stoker.warm.warmer.Warmer` with in-process visits through the
pipeline, subscribes it to purge events and registers the deadlines it owns
on one :class:`~stoker.schedule.ticker.Ticker`.

Invariants:
- :meth:`WarmService.run` first starts a full warm run as ``warm_on_start`` says
  (:func:`warms_on_start`; never replacing an active run), then runs the ticker
  (every process), with ``refresh_ahead`` > 0 the refresher of the entries this
  process's visitors read (:mod:`stoker.warm.refresh`), and, when ``warm_workers`` > 0,
  a worker on the ``warm`` queue, until ``stop``.
- Deadlines: ``rewarm`` (purge debounce), ``refresh`` (daily run), ``recover`` (the
  URLs that failed while the origin was down; armed when the origin's breaker closes),
  ``stats_flush`` (hit statistics, every :data:`STATS_EVERY`), ``job_reap``
  (finished jobs older than :data:`KEEP_JOBS`, hit counts of URLs not visited for
  :data:`KEEP_HITS`), ``l2_reclaim`` (L2 eviction) and ``audit_prune`` (the audit log's
  retention bound, :meth:`~stoker.app.stoker.Stoker.prune_audit`), each every
  ``EVICT_EVERY`` (the :class:`Stoker` is opened without its own loop); each re-arms
  itself.
- A flush of the hit statistics that the store does not take puts the counts back
  (the next flush, the deadline's retry, has them): a database outage loses none.  A
  flush also adds the visits per origin (:mod:`stoker.warm.origins`) and logs a warning
  when the verdict on warmed and visited origins changes (once per change, per process).
- A full run's collect flushes this process's hit counts, then visits each discovered
  page on every origin visitors use (:func:`~stoker.warm.origins.warm_origins`), not
  only on ``site_url``.
- :meth:`WarmService.close` unsubscribes, records the purged URLs still in
  memory, flushes the hit statistics (nothing counted is lost on a graceful
  shutdown) and closes the stores.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from stoker.adapters.visit import OriginFetch, PipelineVisitor
from stoker.app.stoker import EVICT_EVERY, Stoker
from stoker.backends.warm_stores import WarmStores
from stoker.cache.steps import Pacer
from stoker.config.settings import Settings
from stoker.jobs.worker import Worker, WorkerConfig, default_owner
from stoker.resilience.breaker import BreakerState
from stoker.schedule.store import Deadline
from stoker.schedule.ticker import Ticker
from stoker.version import VERSION
from stoker.warm.credentials import CredentialBook
from stoker.warm.discovery import Discovery, DiscoveryConfig, discover
from stoker.warm.origins import folded, spread, tally, verdict, warm_origins
from stoker.warm.refresh import Refresher
from stoker.warm.run import Run
from stoker.warm.warmer import (
    QUEUE,
    RECOVER,
    REFRESH,
    REWARM,
    WarmBusy,
    WarmConfig,
    Warmer,
)

log = logging.getLogger("stoker.warm")

STATS_FLUSH: Final = "stats_flush"
JOB_REAP: Final = "job_reap"
L2_RECLAIM: Final = "l2_reclaim"
AUDIT_PRUNE: Final = "audit_prune"
STATS_EVERY: Final = 60.0
REAP_EVERY: Final = 3600.0
KEEP_JOBS: Final = 7 * 86_400.0
KEEP_HITS: Final = 30 * 86_400.0
RETRY: Final = 30.0
RECORD_TIMEOUT: Final = 5.0
"""Seconds a shutdown waits for purged URLs still in memory to reach the pending store."""


def warms_on_start(mode: str, cached: int) -> bool:
    """Whether a process starting with ``cached`` entries in its cache starts a full warm
    run under ``warm_on_start = mode`` (``empty``: only when nothing is cached).  Pure."""
    return mode == "always" or (mode == "empty" and cached == 0)


async def flush_hits(stoker: Stoker, stores: WarmStores) -> int:
    """Write ``stoker``'s hit counts gathered since the last flush, and the visits per
    origin they hold (:func:`~stoker.warm.origins.tally`); return how many URLs.  Counts
    the store does not take go back to the counter, and the error is raised."""
    hits = stoker.pipeline.hits
    counts = hits.drain()
    if counts:
        now = stoker.clock.now()
        try:
            await stores.hits.add_origins(tally(counts, stoker.settings.site_hosts.known), now)
            await stores.hits.add(counts, now)
        except BaseException:
            hits.restore(counts)
            raise
    return len(counts)


async def visited_origins(stoker: Stoker, stores: WarmStores) -> tuple[str, ...]:
    """The origins a full run visits each page on, once ``stoker``'s hit counts are
    flushed (so this process's visits until now count; a flush that fails is logged)."""
    try:
        await flush_hits(stoker, stores)
    except Exception:
        log.warning("could not flush the hit statistics before a warm run", exc_info=True)
    return warm_origins(stoker.settings.site_urls, await stores.hits.origins(),
                        stoker.clock.now())


@dataclass
class WarmService:
    """The warmer, its stores, its worker and the ticker of one process."""

    stoker: Stoker
    stores: WarmStores
    warmer: Warmer
    ticker: Ticker
    credentials: CredentialBook
    refresher: Refresher | None = None
    """Refresh ahead (None: ``refresh_ahead = 0``)."""
    _unsubscribe: Callable[[], None] | None = None
    _origin_keys: tuple[str, ...] = ()
    _arming: set[asyncio.Task[None]] = field(default_factory=set)

    @classmethod
    async def open(cls, stoker: Stoker) -> WarmService:
        """Wire the warmer on the process's warm stores (see the module invariants)."""
        settings, clock = stoker.settings, stoker.clock
        stores = stoker.backends.warm
        owner = default_owner()
        user_agent = f"stoker-warmer/{VERSION}".encode()
        variants = tuple(
            tuple((name.encode("latin-1"), value.encode("latin-1")) for name, value in variant)
            for variant in settings.warm_variants)
        variants = tuple(
            variant if any(name == b"user-agent" for name, _ in variant)
            else ((b"user-agent", user_agent), *variant) for variant in variants)
        credentials = CredentialBook(stores.credentials, settings.warm_credentials, clock)
        fetch = OriginFetch(stoker.origin, origin_host=settings.origin_host,
                            user_agent=user_agent, credentials=credentials)
        discovery = DiscoveryConfig(site_urls=settings.site_urls,
                                    aliases=settings.aliases,
                                    max_urls=settings.warm_max_urls,
                                    timeout=settings.origin_timeout)

        async def collect(popular: Mapping[str, int]) -> Discovery:
            origins = await visited_origins(stoker, stores)
            found = await discover(fetch, discovery,
                                   folded(popular, settings.site_urls, origins),
                                   pace=Pacer(clock.monotonic))
            return replace(found, urls=spread(found.urls, settings.site_urls, origins))

        ticker = Ticker(stores.deadlines, clock, owner)
        warmer = Warmer(
            config=WarmConfig(variants=variants, rewarm_delay=settings.rewarm_delay,
                              rewarm_max_wait=settings.rewarm_max_wait,
                              rewarm_now_max=settings.rewarm_now_max,
                              refresh_interval=settings.refresh_interval,
                              warm_max_concurrency=settings.warm_max_concurrency,
                              popular_limit=settings.warm_max_urls,
                              outage_retry=settings.outage_retry,
                              outage_retry_max=settings.outage_retry_max),
            stores=stores,
            visitor=PipelineVisitor(stoker.pipeline, clock,
                                    stopgap_header=settings.stopgap_header.lower().encode(),
                                    credentials=credentials),
            clock=clock, owner=owner, collect=collect, arm=ticker.arm)
        reads = stoker.pipeline.reads
        refresher = Refresher(reads, warmer.refresh, clock, user_agent=user_agent,
                              filling=warmer.filling) if reads is not None else None
        service = cls(stoker, stores, warmer, ticker, credentials, refresher)
        service._register()
        service._unsubscribe = stoker.events.subscribe(warmer.on_purge)
        stoker.pipeline.health.on_back.append(service._origin_back)
        await service._arm_own()
        return service

    def reload(self, settings: Settings) -> None:
        """Take the re-warm delays of reloaded ``settings`` (the next purge is debounced by
        them, or re-warmed at once by ``rewarm_now_max``; what else the warmer reads needs a
        restart)."""
        self.warmer.config = replace(self.warmer.config, rewarm_delay=settings.rewarm_delay,
                                     rewarm_max_wait=settings.rewarm_max_wait,
                                     rewarm_now_max=settings.rewarm_now_max)

    def _register(self) -> None:
        self.ticker.register(REWARM, self.warmer.on_rewarm_due, RETRY)
        self.ticker.register(REFRESH, self.warmer.on_refresh_due, RETRY)
        self.ticker.register(RECOVER, self.warmer.on_recover_due, RETRY)
        self.ticker.register(STATS_FLUSH, self._flush_due, RETRY)
        self.ticker.register(JOB_REAP, self._reap_due, RETRY)
        self.ticker.register(L2_RECLAIM, self._reclaim_due, RETRY)
        self.ticker.register(AUDIT_PRUNE, self._prune_due, RETRY)

    async def _arm_own(self) -> None:
        await self.ticker.arm(STATS_FLUSH, "earliest", STATS_EVERY)
        await self.ticker.arm(JOB_REAP, "earliest", REAP_EVERY)
        await self.ticker.arm(L2_RECLAIM, "earliest", EVICT_EVERY)
        await self.ticker.arm(AUDIT_PRUNE, "earliest", EVICT_EVERY)
        if self.stoker.settings.refresh_interval > 0:
            await self.ticker.arm(REFRESH, "earliest", self.stoker.settings.refresh_interval)

    def _origin_back(self) -> None:
        """The origin's breaker closed (called in the request that closed it): arm the
        ``recover`` deadline in the background."""
        task = asyncio.get_running_loop().create_task(self._arm_recover())
        self._arming.add(task)
        task.add_done_callback(self._arming.discard)

    async def _arm_recover(self) -> None:
        try:
            await self.warmer.on_origin_back()
        except Exception:  # the store is down too: the next run's failures arm it
            log.exception("could not arm the recover deadline after the origin came back")

    async def flush_stats(self) -> int:
        """Write the hit counts gathered since the last flush, and the visits per origin
        they hold (:func:`~stoker.warm.origins.tally`); return how many URLs.  Counts the
        store does not take go back to the counter, and the error is raised."""
        flushed = await flush_hits(self.stoker, self.stores)
        if flushed:
            await self._judge_origins()
        return flushed

    async def _judge_origins(self) -> None:
        """Log :func:`~stoker.warm.origins.verdict`'s findings when they change (a table
        that cannot be read is judged at the next flush)."""
        try:
            seen = await self.stores.hits.origins()
        except Exception:
            log.warning("could not read the origins visitors arrive on", exc_info=True)
            return
        found = verdict(self.stoker.settings.site_urls, seen, self.stoker.clock.now())
        keys = tuple(finding.key for finding in found)
        if keys != self._origin_keys:
            for finding in found:
                log.warning("warmed entries and visitors' entries differ: %s", finding.text)
            if self._origin_keys and not found:
                log.info("warm runs fill the origins visitors arrive on")
            self._origin_keys = keys

    async def _flush_due(self, _: Deadline) -> None:
        await self.flush_stats()
        await self.ticker.arm(STATS_FLUSH, "earliest", STATS_EVERY)

    async def _reap_due(self, _: Deadline) -> None:
        now = self.stoker.clock.now()
        reaped = await self.stores.queue.reap(now - KEEP_JOBS)
        pruned = await self.stores.hits.prune(now - KEEP_HITS)
        if reaped or pruned:
            log.info("reaped %d finished jobs and %d unvisited URLs' hit counts", reaped, pruned)
        await self.ticker.arm(JOB_REAP, "earliest", REAP_EVERY)

    async def _reclaim_due(self, _: Deadline) -> None:
        await self.stoker.evict_once()
        await self.ticker.arm(L2_RECLAIM, "earliest", EVICT_EVERY)

    async def _prune_due(self, _: Deadline) -> None:
        await self.stoker.prune_audit()
        await self.ticker.arm(AUDIT_PRUNE, "earliest", EVICT_EVERY)

    async def warm_on_start(self) -> Run | None:
        """Start the full run ``warm_on_start`` asks for, unless one is active; the run
        started, or None."""
        mode = self.stoker.settings.warm_on_start
        if mode == "never" or not warms_on_start(mode, await self.stoker.store.count()):
            return None
        try:
            created = await self.warmer.start("deploy", None, replace=False)
        except WarmBusy as busy:
            log.info("warm_on_start: warm run %d is already running", busy.run.id)
            return None
        log.info("warm_on_start = %s: warm run %d started", mode, created.run.id)
        return created.run

    async def run(self, stop: asyncio.Event, *, warm_on_start: bool = True) -> None:
        """Start the ``warm_on_start`` run (unless told not to: another process of this
        Stoker does), then run the ticker and (with ``warm_workers`` > 0) a warm worker
        until ``stop``."""
        settings = self.stoker.settings
        try:
            if warm_on_start:
                await self.warm_on_start()
        except Exception:  # the origin or the stores are not ready: serving goes on
            log.exception("could not start the warm_on_start run")
        tasks = [self.ticker.run(stop)]
        if self.refresher is not None:
            tasks.append(self.refresher.run(stop))
        if settings.warm_jobs > 0:
            tasks.append(self.worker(settings.warm_jobs).run(stop))
        await asyncio.gather(*tasks)

    def worker(self, concurrency: int) -> Worker:
        """A worker of the ``warm`` queue running ``concurrency`` warm jobs at once (its
        loop, :meth:`Worker.run`, or batches, :meth:`Worker.run_batch`)."""
        settings = self.stoker.settings
        return Worker(self.stores.queue, self.warmer.handle, self.stoker.clock,
                      WorkerConfig(queue=QUEUE, concurrency=concurrency,
                                   job_timeout=settings.origin_timeout
                                   * (len(settings.warm_variants) + 1) + 30,
                                   shutdown_grace=settings.shutdown_timeout,
                                   breaker=BreakerState(cooldown=settings.outage_retry)),
                      owner=self.warmer.owner)

    async def close(self, timeout: float = RECORD_TIMEOUT) -> None:
        """Stop listening to purges and to the origin's return, record the purged URLs
        still in memory (for at most ``timeout`` seconds, :data:`RECORD_TIMEOUT` at most),
        flush hit statistics, close the stores."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._origin_back in self.stoker.pipeline.health.on_back:
            self.stoker.pipeline.health.on_back.remove(self._origin_back)
        for task in list(self._arming):  # the next run's failures arm it again
            task.cancel()
        await self.warmer.rewarms.close(min(timeout, RECORD_TIMEOUT))
        try:
            await self.flush_stats()
        except Exception:
            log.exception("could not flush the hit statistics at shutdown")
        await self.stores.aclose()
