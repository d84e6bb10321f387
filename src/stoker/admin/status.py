"""The one compose function behind ``GET /api/status`` and ``GET /api/events``.

:class:`StatusSource` gives the status of the running Stoker as one JSON object: what the
process keeps in memory (requests by outcome, origin timing, the breaker, L1, the last
hour per minute), read fresh on every call, and what the stores must be asked (L2's
figures, the warm run, the job queue's counts and the deadlines, the processes sharing
the cache), memoized for
:data:`MEMO` seconds, so however many dashboards watch, the stores are asked at most once
a second.

Invariants:
- Concurrent calls while the stores are being read share that one read.
- A store figure that cannot be read is left out (its name listed under
  ``unavailable``, logged), never faked, and the rest is still given.
- Outcomes are kept apart by kind and reason (a bypass never folds into a miss); the
  shares "by cache" and "by origin" count visitors only, warm visits apart.
- The keys ``/api/status`` had before the dashboard keep their meaning (``stoker status``
  and scripts read them).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from stoker.admin.history import History, Sample, quantile
from stoker.admin.hit_ratio import answered, hit_ratio, uncacheable_reasons
from stoker.admin.jobs_api import counts_json
from stoker.admin.metrics import Figures, member_summary, or_none, own, shares
from stoker.admin.warm_api import origins_json, run_json
from stoker.admin.why import cookie_bypass_report
from stoker.clock import Clock
from stoker.purge.bus import Member
from stoker.schedule.store import Deadline
from stoker.server.heap import heap_status
from stoker.warm.run import Run
from stoker.warm.run_store import RunStore
from stoker.warm.verdict import warning
from stoker.warm.warmer import RECOVER, REFRESH, REWARM

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker, RunningWarmer

LAST_RUN_AMONG: Final = 20
"""The newest warm runs looked at for the last one that ended."""
MEMO: Final = 1.0
"""Seconds the stores' figures are reused for."""
COLD_SHOWN: Final = 5
"""The pending re-warm URLs the overview names (the rest are counted)."""
WARM_DEADLINES: Final = frozenset({REWARM, REFRESH, RECOVER})
"""The deadlines that start a warm run (the re-warm of purges, the daily refresh, the
outage recovery)."""


def members_json(members: Sequence[Member], now: float,
                 node_timeout: float) -> list[dict[str, Any]]:
    """The processes sharing the cache as ``/api/status`` lists them: name, purge-bus
    position (``confirmed``), last heartbeat, liveness, what its heartbeat said of it
    (:func:`~stoker.admin.metrics.member_summary`) and of its own traffic
    (:func:`node_figures`).  Pure."""
    return [{"name": member.name, "confirmed": member.confirmed, "seen_at": member.seen_at,
             "live": now - member.seen_at <= node_timeout,
             **member_summary(member.figures),
             **({"figures": said_figures(member.figures)} if member.figures else {})}
            for member in members]


def said_figures(said: str) -> dict[str, Any] | None:
    """A member's own figures (:func:`stoker.admin.metrics.said`) as the overview shows
    them (:func:`node_figures`); ``None`` when what it said cannot be read.  Pure."""
    try:
        data = json.loads(said)
        outcomes = {(kind, reason, warm): count for kind, reason, warm, count in data["outcomes"]}
        return node_figures(outcomes, bool(data["origin_up"]), data["timing"]["counts"],
                            int(data["timing"]["failures"]), int(data.get("cache_bytes", 0)))
    except (ValueError, TypeError, KeyError):
        return None


def node_figures(outcomes: Mapping[tuple[str, str, bool], int], origin_up: bool,
                 timing: Sequence[int], failures: int, cache_bytes: int) -> dict[str, Any]:
    """One node's line of the overview: its shares, bytes from cache, origin state and
    latency.  Pure."""
    split = shares(outcomes)
    return {**split, "hit_ratio": hit_ratio(split), "cache_bytes": cache_bytes,
            "origin_up": origin_up,
            "origin_failures": failures,
            "origin_p50": quantile(timing, 0.5), "origin_p99": quantile(timing, 0.99)}


def fractions(served_by: Mapping[str, int]) -> dict[str, float]:
    """The shares of the visitors' requests answered (:func:`~stoker.admin.hit_ratio.answered`)
    that the cache (the hit ratio), the origin and an origin failure answered; 0 before
    any.  Pure."""
    total = answered(served_by)
    return {where: round(served_by[where] / total, 4) if total else 0.0
            for where in ("cache", "origin", "origin_failure")}


def outcome_rows(outcomes: Mapping[tuple[str, str, bool], int]) -> list[dict[str, Any]]:
    """Every ``(kind, reason, source)`` with its count, most frequent first.  Pure."""
    rows = [{"kind": kind, "reason": reason, "source": "warmer" if warm else "visitor",
             "count": count} for (kind, reason, warm), count in outcomes.items() if count]
    return sorted(rows, key=lambda row: (-row["count"], row["kind"], row["reason"]))


def sample_of(figures: Figures, now: float) -> Sample:
    """The cumulative counters the history keeps, from ``figures``.  Pure."""
    split = shares(figures.outcomes)
    return Sample(at=now, requests=answered(split), cache=split["cache"],
                  errors=figures.timing.failures,
                  served=figures.cache_bytes, timing=tuple(figures.timing.counts))


async def ended_json(runs: RunStore, run: Run) -> dict[str, Any]:
    """A run that ended, with why discovery skipped URLs and its warning (or null)."""
    skipped = await runs.skipped_reasons(run.id)
    return {**run_json(run), "skipped_reasons": skipped,
            "warning": warning(run, skipped, await runs.not_stored_reasons(run.id))}


def cold_json(pending: int, oldest: Sequence[str],
              deadlines: Sequence[Deadline]) -> dict[str, Any]:
    """What is cold now, as the overview shows it: the purged URLs waiting for their
    re-warm (``pending``, the ``oldest`` few), and the next warm due (``next_warm``: the
    armed warm deadline due first, by name, or ``None``).  Pure."""
    armed = [d for d in deadlines if d.name in WARM_DEADLINES and d.due_at is not None]
    first = min(armed, key=lambda d: d.due_at or 0.0, default=None)
    return {"pending": pending, "urls": list(oldest),
            "next_warm": None if first is None else {"name": first.name,
                                                     "due_at": first.due_at}}


def expired_json(count: int, urls: Sequence[str]) -> dict[str, Any]:
    """What else is cold now: the entries visitors read within ``refresh_window`` that
    went stale without a refresh (``count``, the most requested ``urls``).  Pure."""
    return {"count": count, "urls": list(urls)}


async def warm_status(warm: RunningWarmer) -> dict[str, Any]:
    """The active warm run (with why discovery skipped URLs), the last run that ended (with
    its warning), the origins visitors arrive on against those runs fill, the job queue's
    counts (so a page of jobs is refreshed when they change) and every deadline's next due
    time and last error."""
    runs = warm.stores.runs
    active = await runs.active()
    last = next((run for run in await runs.recent(LAST_RUN_AMONG)
                 if run.phase in ("done", "failed")), None)
    deadlines = await warm.ticker.status()
    pending = await warm.stores.pending.count()
    return {"active": {**run_json(active), "skipped_reasons": await runs.skipped_reasons(active.id)}
            if active else None,
            "last": await ended_json(runs, last) if last else None,
            **origins_json(warm.stoker.settings.site_urls, await warm.stores.hits.origins(),
                           warm.stoker.clock.now()),
            "pending_rewarm": pending,
            "cold": cold_json(pending, await warm.stores.pending.oldest(COLD_SHOWN)
                              if pending else (), deadlines),
            "jobs": counts_json(await warm.stores.queue.counts()),
            "deadlines": [{"name": d.name, "due_at": d.due_at, "last_error": d.last_error}
                          for d in deadlines]}


class StatusSource:
    """The status of one running Stoker (and its warmer), composed (see the module)."""

    def __init__(self, stoker: RunningStoker, warm: RunningWarmer | None, *,
                 history: History | None = None, memo: float = MEMO) -> None:
        self._stoker = stoker
        self._warm = warm
        self.history = history or History()
        self._memo = memo
        self._stored: dict[str, Any] | None = None
        self._stored_at = 0.0
        self._reading: asyncio.Future[dict[str, Any]] | None = None

    @property
    def clock(self) -> Clock:
        return self._stoker.clock

    def sample(self) -> Sample:
        """The history's counters now, read from memory (no store is asked)."""
        return sample_of(own(self._stoker), self.clock.now())

    def observe(self) -> None:
        """Give the history a sample taken now."""
        self.history.observe(self.sample())

    async def compose(self) -> dict[str, Any]:
        """The status now: memory read fresh, the stores at most :data:`MEMO` s old."""
        stored = await self._stores()
        status = {**self._in_memory(), **stored}
        status["nodes"] = stored.get("members") or [self._own_node()]
        return status

    def node_name(self) -> str:
        """This process's name: on the purge bus, else ``node_id``, else the host's."""
        relay = self._stoker.purger.relay
        return relay.me if relay is not None else (
            self._stoker.settings.node_id or socket.gethostname())

    def _own_node(self) -> dict[str, Any]:
        figures = own(self._stoker)
        return {"name": self.node_name(), "live": True,
                "figures": node_figures(figures.outcomes, figures.origin_up,
                                        figures.timing.counts, figures.timing.failures,
                                        figures.cache_bytes)}

    def _in_memory(self) -> dict[str, Any]:
        stoker = self._stoker
        pipeline, store = stoker.pipeline, stoker.store
        figures = own(stoker)
        now = self.clock.now()
        current = sample_of(figures, now)
        timing, breaker = figures.timing, pipeline.health.state
        served_by = shares(figures.outcomes)
        return {
            "now": now, "origin": stoker.settings.origin, "node": self.node_name(),
            "proxy_url": stoker.settings.site_urls[0],
            "origin_down_since": pipeline.health.down_since, "version": pipeline.keying.version,
            "requests": dict(pipeline.stats), "outcomes": outcome_rows(figures.outcomes),
            "served_by": served_by, "share": fractions(served_by),
            "hit_ratio": hit_ratio(served_by),
            "stale_if_error": figures.outcomes.get(("stale-if-error", "", False), 0),
            "uncacheable": uncacheable_reasons(figures.outcomes),
            "cache_bytes": figures.cache_bytes, "origin_bytes": figures.origin_bytes,
            "requests_per_second": round(self.history.rate(current), 3),
            "origin_timing": {"answers": timing.answers, "failures": timing.failures,
                              "p50": quantile(timing.counts, 0.5),
                              "p99": quantile(timing.counts, 0.99)},
            "breaker": {"phase": breaker.phase, "failures": breaker.failures,
                        "opened_at": breaker.opened_at if breaker.phase != "closed" else None},
            "warm_reads": {"stored": figures.warm_stored, "read": figures.warm_read},
            "l1": dict(figures.l1), "l2_tier": "Redis" if stoker.settings.l2_url else "SQLite",
            "pending_l2_writes": store.pending(),
            "in_flight": figures.in_flight,
            "cookie_bypasses": cookie_bypass_report(pipeline.cookie_bypasses, pipeline.stats),
            "history": self.history.windows(current), "gc": heap_status(),
            "refresh_ahead": None if pipeline.reads is None else {
                "tracked": len(pipeline.reads), "refreshed": figures.refreshed,
                "not_modified": figures.refresh_not_modified, "failed": figures.refresh_failed},
            "expired": None if pipeline.reads is None else expired_json(
                *pipeline.reads.expired(now, COLD_SHOWN)),
        }

    async def _stores(self) -> dict[str, Any]:
        monotonic = self.clock.monotonic()
        if self._stored is not None and monotonic - self._stored_at < self._memo:
            return self._stored
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read_stores())
        reading = self._reading
        try:
            return await asyncio.shield(reading)
        finally:
            if self._reading is reading and reading.done():
                self._reading = None

    async def _read_stores(self) -> dict[str, Any]:
        stoker, warm = self._stoker, self._warm
        wanted: dict[str, Callable[[], Awaitable[Any]]] = {"store": stoker.store.stats}
        if warm is not None:
            wanted["warm"] = lambda: warm_status(warm)
        relay = stoker.purger.relay
        if relay is not None:
            wanted["members"] = lambda: self._members(relay.members())
        found: dict[str, Any] = {}
        for name, read in wanted.items():
            value = await or_none(read())
            if value is None:
                found.setdefault("unavailable", []).append(name)
            else:
                found[name] = value
        self._stored, self._stored_at = found, self.clock.monotonic()
        return found

    async def _members(self, reading: Awaitable[Sequence[Member]]) -> list[dict[str, Any]]:
        return members_json(await reading, self.clock.now(), self._stoker.settings.node_timeout)
