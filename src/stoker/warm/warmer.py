"""The warmer's I/O: runs started by triggers, collected and visited through the job queue.

A run (:mod:`stoker.warm.run`, stored by a :class:`RunStore`) is driven by
jobs on the ``warm`` queue: one ``collect`` job per full run (discovery), then
one ``visit`` job per URL, most visited first.  Workers (``stoker serve`` or
``stoker worker``) run :meth:`Warmer.handle`; visits go through the cache
pipeline in process (:class:`~stoker.warm.visits.Visitor`), throttled by the
adaptive :mod:`~stoker.warm.throttle` and the origin's shared limit.

Invariants:
- A manual full run asked without ``replace`` while a manual full run is going is
  refused (:class:`WarmBusy`); while an automatic one is going it joins that run.
- A visit job carries ``(run, url, visit)``; its result is recorded once
  (the store ignores a stale or repeated visit number), so a job delivered
  again after a lost lease never counts twice.  Jobs of a run that is no
  longer active (superseded, cancelled) do nothing.
- A URL's result is its worst variant's (:data:`WORST_FIRST`), with that visit's
  detail: a page served from cache (``fresh``) counts ``warmed`` (it is stored), a
  page the cache does not store counts ``not_stored`` with its reason, never
  ``warmed``.
- A collect job whose run another worker is collecting is retried later (so a
  collect whose worker died is taken over once its claim is stale), never dropped.
- A visit that fails at the origin (no answer, 5xx, Stoker's 503 while the origin's
  breaker is open) raises while the
  job has attempts left, so the queue retries it with backoff and its circuit
  breaker stops the warming while the origin is down; the last attempt
  records ``failed``.  A stale copy served because the origin failed records
  ``failed`` at once (visitors are answered; its status is the copy's, not the
  origin's, so it neither counts as the origin down nor teaches the throttle).
- Purged URLs wait in :class:`~stoker.warm.pending.PendingUrls` behind the
  ``rewarm`` deadline (debounced: ``rewarm_delay`` after the last purge, at
  most ``rewarm_max_wait`` after the first), except that a purge of fewer than
  ``rewarm_now_max`` URLs arms it due at once (mode ``earliest``, delay 0:
  :func:`rewarm_at_once`), taking whatever waits along; when it fires they become one
  targeted run, most visited first.  They get there through a
  :class:`~stoker.warm.rewarms.RewarmRecorder`, behind the purge call, which
  does not wait for them.  A purge of everything starts a full run.
- Outages (:mod:`~stoker.warm.recovery`): a run whose discovery failed because of the
  origin (:attr:`~stoker.warm.discovery.DiscoveryError.origin`) stays collecting
  and its collect is queued again ``outage_retry`` later, doubling up to
  ``outage_retry_max``, until it succeeds or a newer full run supersedes it.  The URLs
  whose last visit failed because the origin was down are visited again as one
  ``recovery`` run behind the ``recover`` deadline, armed at once when the origin's
  breaker closes (:meth:`Warmer.on_origin_back`) and ``outage_retry`` after a run that
  ended with failures; the deadline's one claim makes it one run however many processes
  arm it, and it waits (backoff) while a visit of the first URL still fails.
- When a run ends, the ``refresh`` deadline is armed ``refresh_interval``
  after its end (a failed run: after its start); ``0`` turns it off.
- Each step that writes to several stores is one unit of work
  (:meth:`~stoker.warm.stores.WarmStorage.transaction`), so a failure or a crash
  inside it writes nothing: a re-warm takes the pending URLs, creates the run and
  enqueues its jobs together (no purged URL is lost); starting a run creates it and
  enqueues its jobs together, as do a collect's total and its visit jobs, and a
  visit's record and its revisit (no active run is left without its jobs).
- Warm visits carry only the configured variant headers and the warmer's
  User-Agent — never a visitor's cookies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from stoker.clock import Clock
from stoker.jobs.model import Job, NewJob
from stoker.purge.scope import PurgeScope
from stoker.schedule.store import ArmMode, Deadline
from stoker.schedule.ticker import RetryIn
from stoker.text import plural
from stoker.warm.discovery import Discovery, DiscoveryError
from stoker.warm.recovery import RECENT, backoff, down_status, to_retry
from stoker.warm.rewarms import RewarmRecorder
from stoker.warm.run import Reason, Result, Run, Visit
from stoker.warm.run_store import Created, RunStore, most_first, not_stored_text, skipped_text
from stoker.warm.stores import WarmStorage, WarmUnit
from stoker.warm.throttle import ThrottleState, allowed, on_result
from stoker.warm.verdict import warning
from stoker.warm.visits import NOT_STORED, STALE_SERVED, Visitor, VisitResult

log = logging.getLogger("stoker.warm")

QUEUE: Final = "warm"
RUN_FIELD: Final = "run"
"""The field of a warm job's payload naming its run (a requeue by run matches it)."""
REWARM: Final = "rewarm"
REFRESH: Final = "refresh"
RECOVER: Final = "recover"
ENQUEUE_CHUNK: Final = 500
"""Visit jobs queued per call (each call a step of its own)."""
_RESULTS: Final[dict[str, Result]] = {
    "warmed": "warmed", "fresh": "warmed", "not_modified": "not_modified",
    "not_stored": "not_stored", "stopgap": "stopgap", "failed": "failed",
}
WORST_FIRST: Final[tuple[Result, ...]] = (
    "failed", "stopgap", "not_stored", "warmed", "not_modified")
"""The results a URL's variants may give, worst first; the worst is the URL's.
``failed``: some visitors may get the error.  ``stopgap`` before ``not_stored``: a
placeholder is revisited, and the revisit may store every variant, while a page not
stored stays so (revisiting cannot help) — and its visitors miss the cache, so it is
worse than ``warmed``.  ``not_modified`` last: the stored copy was current."""

Arm = Callable[[str, ArmMode, float, "float | None"], Awaitable[Deadline]]
Collect = Callable[[Mapping[str, int]], Awaitable[Discovery]]
Headers = tuple[tuple[bytes, bytes], ...]


class WarmBusy(Exception):
    """A full run is going and the caller did not ask to replace it."""

    def __init__(self, run: Run) -> None:
        super().__init__(f"warm run {run.id} ({run.reason}) is still going: replace it "
                         "with stoker warm --replace (or \"replace\": true in the API)")
        self.run = run


class OriginDown(Exception):
    """The origin did not answer a warm visit; the job is retried later."""


class CollectHeld(Exception):
    """Another worker holds a run's collect; the job is retried, and taken over once that
    claim is stale (``COLLECT_STALL``)."""


@dataclass(frozen=True)
class WarmConfig:
    """The warmer's settings."""

    variants: tuple[Headers, ...]
    rewarm_delay: float = 60.0
    rewarm_max_wait: float = 300.0
    rewarm_now_max: int = 10
    refresh_interval: float = 86_400.0
    warm_max_concurrency: int = 8
    popular_limit: int = 50_000
    outage_retry: float = 30.0
    outage_retry_max: float = 1800.0


@dataclass
class Warmer:
    """Starts runs and does their jobs (see the module invariants)."""

    config: WarmConfig
    stores: WarmStorage
    visitor: Visitor
    clock: Clock
    owner: str
    collect: Collect
    arm: Arm
    throttle: ThrottleState = field(init=False)
    rewarms: RewarmRecorder = field(init=False)
    """Purged URLs on their way to ``pending`` (settle or close it before ``pending``)."""
    _changed: asyncio.Condition = field(init=False, default_factory=asyncio.Condition)
    _in_flight: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.throttle = ThrottleState(max_concurrency=self.config.warm_max_concurrency)
        self.rewarms = RewarmRecorder(self.stores.pending, self._arm_rewarm)

    # -- triggers -------------------------------------------------------------

    async def start(self, reason: Reason, urls: Sequence[str] | None = None, *,
                    replace: bool = True) -> Created:
        """Start (or merge into the active) run; :class:`WarmBusy` when refused.  A manual
        full run asked while an automatic one (``warm_on_start``, the daily refresh, a
        deploy) is going joins it (outcome ``joined``): that run does the same work.
        The run and its jobs are one unit of work."""
        async with self.stores.transaction() as tx:
            return await self._start(tx, reason, urls, replace=replace)

    async def cancel(self, run_id: int) -> Run | None:
        """End active run ``run_id`` as ``cancelled`` (its queued visits then do nothing);
        None when there is no such run or it had ended."""
        cancelled = await self.stores.runs.cancel(run_id, self.clock.now())
        if cancelled is not None:
            log.info("warm run %d cancelled: %d of %d URLs settled", run_id,
                     cancelled.counts.settled, cancelled.counts.total)
        return cancelled

    async def _start(self, tx: WarmUnit, reason: Reason, urls: Sequence[str] | None, *,
                     replace: bool) -> Created:
        """:meth:`start` inside the unit of work ``tx``."""
        if urls is not None:
            urls = await _by_popularity(tx, urls)
        created = await tx.runs.create(reason, urls, self.clock.now(), replace=replace)
        if created.outcome == "busy" and reason == "manual" and created.run.reason != "manual":
            log.info("a manual warm run joins warm run %d (%s), which is going",
                     created.run.id, created.run.reason)
            return created._replace(outcome="joined")
        if created.outcome == "busy":
            raise WarmBusy(created.run)
        if created.cancelled is not None:
            log.info("warm run %d superseded by run %d", created.cancelled.id, created.run.id)
        if created.run.phase == "collect" and created.outcome != "merged":
            await tx.queue.enqueue([self._collect_job(created.run.id, 1)])
        await self._enqueue_visits(tx, created.run.id, created.visits)
        log.info("warm run %d (%s, %s): %s, %d URLs queued", created.run.id, reason,
                 created.run.scope, created.outcome, len(created.visits))
        return created

    async def on_purge(self, scope: PurgeScope, keys: Sequence[str],
                       urls: Sequence[str]) -> None:
        """Purge events: everything → a full run; URLs → debounced targeted re-warm,
        recorded in the background (the purge call does not wait for them).  Only web
        pages are re-warmed: a tag purge's cached function results (``fn:…``,
        :mod:`stoker.functions`) are called again when next asked for."""
        if scope.everything:
            await self.start("deploy" if scope.soft else "purge", None)
            return
        self.rewarms.add([url for url in urls if url.startswith(("http://", "https://"))],
                         self.clock.now())

    async def _arm_rewarm(self, count: int) -> Deadline:
        """After ``count`` purged URLs were recorded: arm the ``rewarm`` deadline due now
        (:func:`rewarm_at_once`), else push it back (debounced)."""
        if rewarm_at_once(count, self.config.rewarm_now_max):
            return await self.arm(REWARM, "earliest", 0.0, None)
        return await self.arm(REWARM, "debounced", self.config.rewarm_delay,
                              self.config.rewarm_max_wait)

    async def on_rewarm_due(self, _: Deadline) -> None:
        """The ``rewarm`` deadline: one targeted run of every URL purged meanwhile (taking
        them, the run and its jobs are one unit of work)."""
        async with self.stores.transaction() as tx:
            urls = await tx.pending.take()
            if urls:
                await self._start(tx, "purge", urls, replace=True)

    async def on_refresh_due(self, _: Deadline) -> None:
        """The ``refresh`` deadline: a full run, unless one is going (then try later)."""
        try:
            await self.start("daily", None, replace=False)
        except WarmBusy:
            await self._arm_refresh(self.config.rewarm_max_wait)

    async def _arm_refresh(self, delay: float) -> None:
        if self.config.refresh_interval > 0:
            await self.arm(REFRESH, "replace", delay, None)

    def backoff(self, tries: int) -> float:
        """Seconds before the next try after ``tries`` failed ones (the outage settings)."""
        return backoff(tries, self.config.outage_retry, self.config.outage_retry_max)

    async def on_origin_back(self) -> None:
        """The origin's breaker closed: look for the URLs that failed while it was down
        at once (the ``recover`` deadline: of several processes noticing, one runs it)."""
        await self.arm(RECOVER, "earliest", 0.0, None)

    async def on_recover_due(self, row: Deadline) -> None:
        """The ``recover`` deadline: the URLs whose last visit in a recent run failed because
        the origin was down become one targeted ``recovery`` run, most visited first, once
        a visit of the first of them answers; while it does not, try again later (backoff
        by the deadline's attempts)."""
        urls = to_retry(await self.stores.runs.last_failures(self.clock.now() - RECENT))
        if not urls:
            return
        ordered = await _by_popularity(self.stores, urls)
        probe = await self._throttled(ordered[0], self.config.variants[0])
        if probe.outcome == "failed" and down_status(probe.status):
            raise RetryIn(self.backoff(max(1, row.attempts)),
                          f"{plural(len(ordered), 'URL')} waiting for the origin: "
                          f"{ordered[0]} answered {probe.status}")
        await self.start("recovery", ordered, replace=True)

    async def _ended(self, run: Run) -> None:
        """A run finished: arm the daily refresh after it; with URLs failed, the check of
        the ``recover`` deadline ``outage_retry`` later (a 5xx outage opens no breaker)."""
        if run.counts.failed:
            await self.arm(RECOVER, "earliest", self.config.outage_retry, None)
        if run.phase == "failed":
            start_delay = run.started_at + self.config.refresh_interval - self.clock.now()
            await self._arm_refresh(max(0.0, start_delay))
        elif run.phase == "done":
            await self._arm_refresh(self.config.refresh_interval)
        reasons = await self.stores.runs.not_stored_reasons(run.id) if run.counts.not_stored else {}
        log.info("warm run %d %s: %s", run.id, run.phase, summary(run, reasons))
        said = await judged(self.stores.runs, run)
        if said is not None and run.phase == "done":
            log.warning("warm run %d: %s", run.id, said)

    # -- jobs -------------------------------------------------------------------

    async def handle(self, job: Job) -> None:
        """The ``warm`` queue's handler (a :class:`~stoker.jobs.worker.Worker` calls it)."""
        payload = job.payload
        if payload.get("kind") == "collect":
            await self._collect(int(payload["run"]), int(payload.get("try", 1)))
        elif payload.get("kind") == "visit":
            await self._visit(job, int(payload["run"]), str(payload["url"]),
                              int(payload["visit"]))
        else:
            log.warning("dropping warm job %d of unknown kind %r", job.id, payload.get("kind"))

    async def _collect(self, run_id: int, tries: int) -> None:
        if not await self.stores.runs.claim_collect(run_id, self.owner, self.clock.now()):
            run = await self.stores.runs.get(run_id)
            if run is not None and run.phase == "collect":  # held by a live worker: later
                raise CollectHeld(f"the collect of warm run {run_id} is held by "
                                  f"{run.collect_owner}; trying again later")
            return
        try:
            popular = dict(await self.stores.hits.top(self.config.popular_limit))
            discovery = await self.collect(popular)
        except DiscoveryError as error:
            if error.origin:
                await self._collect_later(run_id, tries, error)
                return
            log.warning("warm run %d failed: %s", run_id, error)
            run = await self.stores.runs.finish(run_id, "failed", self.clock.now(),
                                                str(error))
            if run is not None:
                await self._ended(run)
            return
        async with self.stores.transaction() as tx:
            collected = await tx.runs.set_total(run_id, self.owner, discovery.urls,
                                                self.clock.now(), skipped=discovery.skipped)
            if collected is None:
                return  # superseded or taken over meanwhile
            await self._enqueue_visits(tx, run_id, collected.visits)
        log.info("warm run %d: %d URLs collected, %s", run_id, len(discovery.urls),
                 skipped_text(collected.run.counts.skipped, most_first(discovery.skipped)))
        if not collected.run.active:
            await self._ended(collected.run)

    async def _collect_later(self, run_id: int, tries: int, error: DiscoveryError) -> None:
        """Discovery failed: the run waits collecting, its error saying when it is tried
        again (:meth:`backoff`), and that collect job is queued (one unit of work)."""
        delay = self.backoff(tries)
        why = f"discovery failed (try {tries}): {error}; trying again in {delay:g} s"
        log.warning("warm run %d: %s", run_id, why)
        async with self.stores.transaction() as tx:
            if await tx.runs.collect_failed(run_id, self.owner, why) is None:
                return  # superseded or taken over meanwhile
            await tx.queue.enqueue([self._collect_job(run_id, tries + 1,
                                                      run_at=self.clock.now() + delay)])

    def _collect_job(self, run_id: int, tries: int, *, run_at: float | None = None) -> NewJob:
        return NewJob(QUEUE, {"kind": "collect", RUN_FIELD: run_id, "try": tries},
                      dedupe_key=f"warm-collect:{run_id}:{tries}", priority=-1, run_at=run_at)

    async def _visit(self, job: Job, run_id: int, url: str, visit: int) -> None:
        run = await self.stores.runs.get(run_id)
        if run is None or not run.active:
            return
        results = [await self._throttled(url, headers) for headers in self.config.variants]
        if _origin_down(results) and job.attempts < job.max_attempts:
            raise OriginDown(f"origin did not answer the warm visit of {url}")
        result, detail = worst(results)
        async with self.stores.transaction() as tx:
            recorded = await tx.runs.record(run_id, url, visit, result, self.clock.now(),
                                            detail=detail)
            if recorded.revisit is not None:
                await tx.queue.enqueue([self._visit_job(run_id, recorded.revisit, 0,
                                                        run_at=recorded.revisit_at)])
        if recorded.counted and not recorded.run.active:
            await self._ended(recorded.run)

    async def filling(self) -> bool:
        """Whether a warm run is going (refresh ahead lets it go first)."""
        return await self.stores.runs.active() is not None

    async def refresh(self, url: str, headers: Headers) -> VisitResult:
        """Revalidate the entry of ``url`` selected by ``headers`` now, even while fresh
        (refresh ahead), within the adaptive throttle."""
        return await self._throttled(url, headers, refresh=True)

    async def _throttled(self, url: str, headers: Headers, *,
                         refresh: bool = False) -> VisitResult:
        """One visit within the adaptive throttle (waits out Retry-After)."""
        while True:
            now = self.clock.now()
            limit = allowed(self.throttle, now)
            if limit == 0:
                await self.clock.sleep(max(0.01, (self.throttle.wait_until or now) - now))
            elif self._in_flight < limit:
                break
            else:
                async with self._changed:  # no await before wait(): no wake-up is lost
                    await self._changed.wait()
        self._in_flight += 1
        try:
            result = await self.visitor.visit(url, headers, allowance=limit, refresh=refresh)
        finally:
            self._in_flight -= 1
            async with self._changed:
                self._changed.notify_all()
        if _teaches_throttle(result):
            self.throttle = on_result(self.throttle, result.latency, result.status,
                                      result.retry_after, self.clock.now())
        return result

    async def _enqueue_visits(self, tx: WarmUnit, run_id: int, visits: Sequence[Visit]) -> None:
        """Queue a visit job per visit, ranked in order, :data:`ENQUEUE_CHUNK` at a time (a
        10,000-URL run is made in steps, not in one event-loop step of 50 ms)."""
        for start in range(0, len(visits), ENQUEUE_CHUNK):
            await tx.queue.enqueue([
                self._visit_job(run_id, visit, rank)
                for rank, visit in enumerate(visits[start:start + ENQUEUE_CHUNK], start)])

    def _visit_job(self, run_id: int, visit: Visit, rank: int, *,
                   run_at: float | None = None) -> NewJob:
        payload: dict[str, Any] = {"kind": "visit", RUN_FIELD: run_id, "url": visit.url,
                                   "visit": visit.visit}
        return NewJob(QUEUE, payload, dedupe_key=f"warm:{run_id}:{visit.visit}:{visit.url}",
                      priority=rank, run_at=run_at)


def rewarm_at_once(count: int, most: int) -> bool:
    """Whether a purge that made ``count`` URLs cold is re-warmed at once rather than
    debounced: fewer than ``rewarm_now_max`` (``most``; 0 never).  Pure."""
    return count < most


async def _by_popularity(stores: WarmUnit, urls: Sequence[str]) -> list[str]:
    """``urls`` without repeats, most visited first (ties: in their order)."""
    unique = list(dict.fromkeys(urls))
    visits = await stores.hits.popularity(unique)
    order = {url: index for index, url in enumerate(unique)}
    return sorted(unique, key=lambda url: (-visits.get(url, 0), order[url]))


def worst(results: Sequence[VisitResult]) -> tuple[Result, str | None]:
    """The result of a URL from its variants' visits (:data:`WORST_FIRST`; ``warmed``
    with none) and the detail of the first visit that gave it (a page not stored
    always has a reason: :data:`~stoker.warm.visits.NOT_STORED` when it gave none)."""
    if not results:
        return "warmed", None
    first = min(results, key=lambda r: WORST_FIRST.index(_RESULTS[r.outcome]))
    result = _RESULTS[first.outcome]
    return result, first.detail or (NOT_STORED if result == "not_stored" else None)


def _origin_down(results: Sequence[VisitResult]) -> bool:
    """The origin failed to answer a variant (worth a retry)."""
    return any(r.outcome == "failed" and down_status(r.status) for r in results)


def _teaches_throttle(result: VisitResult) -> bool:
    """Whether a visit's latency and status are the origin's answer to learn from: not a
    copy from cache (``fresh``, or a stale one standing in for a failing origin) nor a
    page passed through unstored."""
    return result.outcome not in ("fresh", "not_stored") and result.detail != STALE_SERVED


async def judged(runs: RunStore, run: Run) -> str | None:
    """The :func:`~stoker.warm.verdict.warning` on ``run``, with its stored reasons."""
    if run.phase != "done":
        return warning(run)
    return warning(run, await runs.skipped_reasons(run.id),
                   await runs.not_stored_reasons(run.id))


def summary(run: Run, reasons: Mapping[str, int]) -> str:
    """One line for a run that ended, with its ``reasons`` for pages not stored."""
    counts = run.counts
    return (f"{plural(counts.total, 'URL')}, {counts.warmed} warmed, "
            f"{counts.not_modified} not modified, "
            f"{not_stored_text(counts.not_stored, reasons)}, {counts.failed} failed, "
            f"{counts.rewarmed} rewarmed, {counts.gave_up} gave up"
            + (f"; {run.error}" if run.error else ""))
