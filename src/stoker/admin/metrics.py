"""Prometheus figures of one Stoker process, for ``GET /metrics`` on the admin listener.

The figures are read when scraped, from the counters the process keeps anyway (as
varnishstat reads Varnish's): nothing is counted twice on the request path.  Reading is
split in two: :func:`read` gathers a :class:`Figures` (the async part: L2's entry count,
the job queue, the warm run, the deadlines), :func:`families` turns it into metric
families (pure), and :func:`exposition` renders them in Prometheus's text format.

Invariants:
- Every metric is named ``stoker_*``; counters end in ``_total``; label values come from
  closed sets (outcome kinds and reasons, tiers, job states, deadline names, the cookie
  names the pipeline keeps, which it bounds) so a client cannot add series.
- Requests by outcome keep bypasses and passes apart from misses, with their reason
  (``reason``), and warm visits apart from visitors (``source``).
- A figure whose store cannot be read is left out of that scrape (logged), never faked.
- ``/metrics`` is per node: one scrape counts the processes of this node (those of one
  ``stoker serve --processes N``, named ``node/I`` on the bus: :func:`node_of`), never
  the other nodes sharing the cache, so scraping every node counts everything once.
  Each process tells the bus its own figures with its heartbeat (:func:`said`), and the
  scraped one adds those of this node's others (:func:`tally`), at most a heartbeat old.
- Counters never fall while the scraped process runs: a process of this node that leaves
  or stops answering keeps counting with the last figures it told, and one started again
  (a new ``run`` under the same name) has its old run's last figures folded into a base
  (:class:`Ledger`).  Gauges count the live processes only.  Only the scraped process's
  own restart starts the counters again (a target restart, to Prometheus).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, TypeVar

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from stoker.admin.hit_ratio import hit_ratio, places, total_requests
from stoker.origin.timing import OriginTiming
from stoker.purge.bus import Member
from stoker.purge.list import L1, L2
from stoker.version import VERSION

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker, RunningWarmer

T = TypeVar("T")

log = logging.getLogger("stoker.admin")

REFRESH_FIELDS: Final = (("refreshed", "refreshed"), ("not_modified", "refresh_not_modified"),
                         ("failed", "refresh_failed"))
"""Refresh ahead's results and the :class:`Figures` fields that count them."""

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus's text exposition format."""


@dataclass
class Figures:
    """What one scrape reports (see :func:`families`)."""

    outcomes: Mapping[tuple[str, str, bool], int]
    cookie_bypasses: Mapping[str, int]
    timing: OriginTiming
    origin_up: bool
    in_flight: int
    l1: Mapping[str, int]
    l1_evictions: int
    l2: Mapping[str, int] | None
    l2_pending: int
    l2_pending_bytes: int
    l2_dropped: int
    purge_marks: int
    applying: Mapping[str, int]
    jobs: Sequence[tuple[str, str, int]] = ()
    warm_run: Mapping[str, int] | None = None
    deadline_lag: Mapping[str, float] = field(default_factory=dict)
    notifier_reconnects: int = 0
    cache_bytes: int = 0
    """Body bytes visitors were answered with from the cache (``Pipeline.cache_bytes``)."""
    origin_bytes: int = 0
    """Body bytes read from the origin, visitors' and warm visits' (``OriginTiming``)."""
    notifier_connected: bool = True
    """``False`` while a notifier has lost its subscription (a lone process has none)."""
    node: Mapping[str, Any] = field(default_factory=dict)
    """What a member's heartbeat says of it beside its counts (:func:`node_facts`)."""
    requests: int = 0
    """Requests this process answered (``Pipeline.stats``' hits, stale, misses, bypasses)."""
    not_cached: Mapping[str, Any] = field(default_factory=dict)
    """This process's :meth:`~stoker.cache.not_cached.NotCachedLog.snapshot`, for
    ``GET /api/why`` (which merges those of the processes itself)."""
    run: str = ""
    """Which run of its process the figures are of (a process started again: another)."""
    node_name: str = ""
    """The node the scrape counts (:func:`node_of`; empty: a process sharing nothing)."""
    processes: int = 1
    """The node's live processes the scrape counts (this one among them)."""
    warm_stored: int = 0
    """Responses warm visits stored (:class:`~stoker.cache.warm_reads.WarmReads`)."""
    warm_read: int = 0
    """Of those, the ones a visitor then read from the cache (once per store)."""
    refreshed: int = 0
    """Refresh ahead's visits that stored a new response (:mod:`stoker.warm.refresh`)."""
    refresh_not_modified: int = 0
    """Refresh ahead's visits the origin answered 304 (the entry renewed)."""
    refresh_failed: int = 0
    """Refresh ahead's visits that did not renew their entry."""


async def read(stoker: RunningStoker, warm: RunningWarmer | None, ledger: Ledger) -> Figures:
    """The figures of ``stoker`` (and its warmer) now; with other processes of this node
    serving from the same cache (``--processes``), theirs added as they last told the bus
    (``ledger`` keeps what its counters need between scrapes: :func:`tally`)."""
    figures = own(stoker)
    figures.l2 = await or_none(stoker.l2.stats())
    relay = stoker.purger.relay
    if relay is not None:
        members = await or_none(relay.members())
        if members is not None:
            ledger.state, figures = tally(ledger.state, figures, members, relay.me,
                                          stoker.clock.now(), stoker.settings.node_timeout)
    if warm is not None:
        await _read_warm(figures, warm, stoker.clock.now())
    return figures


def own(stoker: RunningStoker) -> Figures:
    """This process's figures, without the shared stores' (read without waiting)."""
    store, pipeline, relay = stoker.store, stoker.pipeline, stoker.purger.relay
    notifier = relay.notifier if relay is not None else None
    refreshes: Mapping[str, int] = (
        pipeline.reads.refreshes if pipeline.reads is not None else {})
    return Figures(
        outcomes=dict(pipeline.outcomes), cookie_bypasses=dict(pipeline.cookie_bypasses),
        timing=stoker.origin_timing, origin_up=not pipeline.health.is_down(),
        in_flight=len(pipeline.collapser), l1=store.l1.stats_nowait(),
        l1_evictions=store.l1.evictions, l2=None,
        l2_pending=store.pending(), l2_pending_bytes=store.pending_bytes(),
        l2_dropped=store.dropped, purge_marks=len(store.purges),
        applying={tier: len(store.purges.unapplied(tier)) for tier in (L1, L2)},
        notifier_reconnects=notifier.reconnects if notifier is not None else 0,
        cache_bytes=pipeline.cache_bytes, origin_bytes=stoker.origin_timing.body_bytes,
        notifier_connected=notifier is None or notifier.connected, node=node_facts(stoker),
        requests=total_requests(pipeline.stats),
        not_cached=pipeline.not_cached.snapshot(), run=f"{os.getpid()}-{id(stoker):x}",
        warm_stored=pipeline.warm_reads.stored, warm_read=pipeline.warm_reads.read,
        refreshed=refreshes.get("refreshed", 0),
        refresh_not_modified=refreshes.get("not_modified", 0),
        refresh_failed=refreshes.get("failed", 0))


def node_facts(stoker: RunningStoker) -> dict[str, Any]:
    """The Stoker release, cache version and warm workers of ``stoker``'s process."""
    return {"release": VERSION, "cache_version": stoker.pipeline.keying.version,
            "warm_workers": stoker.settings.warm_jobs}


def said(figures: Figures) -> str:
    """What a process tells the others of its own figures (JSON; see :func:`combined`)."""
    timing = figures.timing
    return json.dumps({
        "outcomes": [[kind, reason, warm, count]
                     for (kind, reason, warm), count in figures.outcomes.items()],
        "cookie_bypasses": dict(figures.cookie_bypasses),
        "timing": {"counts": timing.counts, "seconds": timing.seconds,
                   "failures": timing.failures},
        "origin_up": figures.origin_up, "in_flight": figures.in_flight,
        "l1": dict(figures.l1), "l1_evictions": figures.l1_evictions,
        "l2_pending": figures.l2_pending, "l2_pending_bytes": figures.l2_pending_bytes,
        "l2_dropped": figures.l2_dropped, "applying": dict(figures.applying),
        "notifier_reconnects": figures.notifier_reconnects,
        "cache_bytes": figures.cache_bytes, "origin_bytes": figures.origin_bytes,
        "notifier_connected": figures.notifier_connected, "node": dict(figures.node),
        "requests": figures.requests, "not_cached": figures.not_cached, "run": figures.run,
        "warm_stored": figures.warm_stored, "warm_read": figures.warm_read,
        **{name: getattr(figures, name) for _, name in REFRESH_FIELDS}})


def shares(outcomes: Mapping[tuple[str, str, bool], int]) -> dict[str, int]:
    """Visitors' requests by where they were answered (:func:`~stoker.admin.hit_ratio.places`:
    ``cache``, ``miss``, ``uncacheable``, ``origin_failure``, ``error`` for Stoker's own
    refusals), ``origin`` (the bodies the origin gave: ``miss`` + ``uncacheable``) and
    warm visits (``warm``), from outcome counts.  Pure."""
    split = places(outcomes)
    return {**split, "origin": split["miss"] + split["uncacheable"]}


def member_summary(said_json: str | None) -> dict[str, Any]:
    """What ``/api/status`` shows of a member from its last heartbeat's figures (:func:`said`):
    release, cache version, warm workers, requests, hit ratio (``None`` before any request),
    L1 entries and bytes; each ``None`` when the member did not say it (an older release,
    or no heartbeat with figures yet).  Pure."""
    told: dict[str, Any] = json.loads(said_json) if said_json else {}
    node, l1 = told.get("node", {}), told.get("l1", {})
    split = shares({(kind, reason, warm): count
                    for kind, reason, warm, count in told.get("outcomes", ())})
    requests = sum(count for where, count in split.items() if where not in ("origin", "warm"))
    return {"release": node.get("release"), "cache_version": node.get("cache_version"),
            "warm_workers": node.get("warm_workers"),
            "requests": requests if told else None, "hit_ratio": hit_ratio(split),
            "l1_entries": l1.get("entries"), "l1_bytes": l1.get("bytes")}


def named_others_said(members: Iterable[Member], me: str, now: float,
                      node_timeout: float) -> list[tuple[str, Any]]:
    """The figures the other live members last told the bus, each with the member's name.
    Pure."""
    return [(member.name, json.loads(member.figures)) for member in members
            if member.name != me and member.figures and now - member.seen_at <= node_timeout]


def combined(figures: Figures, others: Iterable[Any]) -> Figures:
    """``figures`` with the other processes' (:func:`said`) added: their counts summed,
    the origin up (and the notifiers connected) only if every one of them finds it so;
    the shared stores' figures (the
    persistent tier, the queue, the warm run, the deadlines) are read once.  Pure."""
    outcomes = Counter(figures.outcomes)
    cookies = Counter(figures.cookie_bypasses)
    timing = OriginTiming()
    _add_timing(timing, figures.timing.counts, figures.timing.seconds, figures.timing.failures)
    sums = {name: getattr(figures, name) for name in _SUMMED}
    l1, applying = Counter(figures.l1), Counter(figures.applying)
    origin_up, connected = figures.origin_up, figures.notifier_connected
    for other in others:
        outcomes.update({(kind, reason, warm): count
                         for kind, reason, warm, count in other["outcomes"]})
        cookies.update(other["cookie_bypasses"])
        _add_timing(timing, other["timing"]["counts"], other["timing"]["seconds"],
                    other["timing"]["failures"])
        for name in _SUMMED:
            sums[name] += other.get(name, 0)  # a key a release added: 0 before it
        l1.update(other.get("l1", {}))
        applying.update(other.get("applying", {}))
        origin_up = origin_up and other.get("origin_up", True)
        connected = connected and other.get("notifier_connected", True)
    return replace(figures, outcomes=dict(outcomes), cookie_bypasses=dict(cookies),
                   timing=timing, origin_up=origin_up, l1=dict(l1), applying=dict(applying),
                   notifier_connected=connected, **sums)


_SUMMED = ("in_flight", "l1_evictions", "l2_pending", "l2_pending_bytes", "l2_dropped",
           "notifier_reconnects", "cache_bytes", "origin_bytes", "warm_stored", "warm_read",
           "refreshed", "refresh_not_modified", "refresh_failed")
_COUNTERS = ("outcomes", "cookie_bypasses", "timing", "l1_evictions", "l2_dropped",
             "notifier_reconnects", "cache_bytes", "origin_bytes", "warm_stored", "warm_read",
             "refreshed", "refresh_not_modified", "refresh_failed")
"""The fields of :class:`Figures` that only grow while a process runs."""


def node_of(member: str) -> str:
    """The node a bus member belongs to: ``N`` for ``N/I`` (a process of ``stoker serve
    --processes``, :mod:`stoker.app.processes`), else the member's own name.  Pure."""
    node, _, index = member.rpartition("/")
    return node if node and index.isdigit() else member


@dataclass(frozen=True)
class Tally:
    """What a node's counters need between scrapes: the last figures each other process of
    the node told (by name: its run and figures), and the last figures of the runs that
    were replaced (a process started again), summed into ``base`` (:func:`said` JSON)."""

    last: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    base: Any = None


@dataclass
class Ledger:
    """The scraped process's :class:`Tally`, kept from one scrape to the next."""

    state: Tally = field(default_factory=Tally)


def tally(state: Tally, figures: Figures, members: Iterable[Member], me: str, now: float,
          node_timeout: float) -> tuple[Tally, Figures]:
    """``figures`` (this process's own) with the other processes of ``me``'s node added:
    the gauges of the live ones, the counters of every one ever seen (their last figures,
    the replaced runs' in the base: see the module invariants); and the tally to keep.
    Pure."""
    node = node_of(me)
    last, base = dict(state.last), state.base
    live = []
    for member in members:
        if member.name == me or not member.figures or node_of(member.name) != node:
            continue
        told = json.loads(member.figures)
        run = told.get("run", "")
        if member.name in last and last[member.name][0] != run:
            base = _folded(base, last[member.name][1])
        last[member.name] = (run, told)
        if now - member.seen_at <= node_timeout:
            live.append(told)
    gauges = combined(figures, live)
    counted = [told for _, told in last.values()] + ([base] if base is not None else [])
    counters = combined(figures, counted)
    return Tally(last, base), replace(
        gauges, node_name=node, processes=1 + len(live),
        **{name: getattr(counters, name) for name in _COUNTERS})


def _folded(base: Any, told: Any) -> Any:
    """``told``'s counters added to ``base`` (both :func:`said` JSON, ``base`` possibly
    ``None``).  Pure."""
    empty = Figures(outcomes={}, cookie_bypasses={}, timing=OriginTiming(), origin_up=True,
                    in_flight=0, l1={}, l1_evictions=0, l2=None, l2_pending=0,
                    l2_pending_bytes=0, l2_dropped=0, purge_marks=0, applying={})
    return json.loads(said(combined(empty, [told] + ([base] if base is not None else []))))


def _add_timing(timing: OriginTiming, counts: Sequence[int], seconds: float,
                failures: int) -> None:
    timing.counts = [mine + theirs for mine, theirs in zip(timing.counts, counts, strict=True)]
    timing.answers = sum(timing.counts)
    timing.seconds += seconds
    timing.failures += failures


async def _read_warm(figures: Figures, warm: RunningWarmer, now: float) -> None:
    counts = await or_none(warm.stores.queue.counts())
    if counts is not None:
        figures.jobs = [(count.queue, count.state, count.count) for count in counts]
    active = await or_none(warm.stores.runs.active())
    if active is not None:
        run = active.counts
        figures.warm_run = {"total": run.total, "settled": run.settled, "warmed": run.warmed,
                            "failed": run.failed, "open": run.open}
    deadlines = await or_none(warm.ticker.status())
    if deadlines is not None:
        figures.deadline_lag = {deadline.name: max(0.0, now - deadline.due_at)
                                for deadline in deadlines if deadline.due_at is not None}


async def or_none(reading: Awaitable[T]) -> T | None:
    """What ``reading`` gives, or ``None`` (logged) when it fails: a figure left out."""
    try:
        return await reading
    except Exception:
        log.warning("a metrics figure could not be read; left out of this scrape",
                    exc_info=True)
        return None


def families(figures: Figures) -> list[Metric]:
    """The metric families for ``figures``.  Pure."""
    return [*_node_families(figures), *_request_families(figures),
            *_origin_families(figures), *_cache_families(figures), *_warm_families(figures)]


def _node_families(figures: Figures) -> Iterable[Metric]:
    if figures.node_name:
        processes = GaugeMetricFamily(
            "stoker_node_processes", "This node's live serving processes the scrape counts "
            "(the others' figures come with their heartbeats)", labels=["node"])
        processes.add_metric([figures.node_name], figures.processes)
        yield processes


def _request_families(figures: Figures) -> Iterable[Metric]:
    requests = CounterMetricFamily(
        "stoker_requests", "Requests answered, by what the cache did (outcome), why it was "
        "left out (reason, for pass and bypass) and who asked (visitor or warmer)",
        labels=["outcome", "reason", "source"])
    for (kind, reason, warm), count in sorted(figures.outcomes.items()):
        requests.add_metric([kind, reason, "warmer" if warm else "visitor"], count)
    cookies = CounterMetricFamily(
        "stoker_cookie_bypasses", "Requests that skipped the cache for a cookie, by name",
        labels=["cookie"])
    for name, count in sorted(figures.cookie_bypasses.items()):
        cookies.add_metric([name], count)
    return requests, cookies, *_visitor_families(figures)


VISITOR_COUNTERS: Final = (
    ("stoker_cache_hits", "cache", "Visitors' requests answered from the cache (fresh, stale "
     "or revalidated). Hit ratio = hits / (hits + misses + passes + origin failure replies)"),
    ("stoker_cache_misses", "miss", "Visitors' cacheable requests the origin answered (misses "
     "and collapsed requests)"),
    ("stoker_cache_passes", "uncacheable", "Visitors' requests forwarded past the cache "
     "(passes and bypasses: uncacheable)"),
    ("stoker_origin_failure_replies", "origin_failure", "Visitors' requests Stoker answered "
     "502, 503 or 504 because the origin failed"),
    ("stoker_warm_requests", "warm", "The warmer's own requests (never in the hit ratio)"))
"""The varnishstat-like counters of :func:`shares`: metric name, share, help."""


def _visitor_families(figures: Figures) -> Iterable[Metric]:
    split = shares(figures.outcomes)
    return [CounterMetricFamily(name, text, value=split[where])
            for name, where, text in VISITOR_COUNTERS]


def _origin_families(figures: Figures) -> Iterable[Metric]:
    timing = figures.timing
    latency = HistogramMetricFamily(
        "stoker_origin_response_seconds", "Seconds until the origin's response head arrived")
    latency.add_metric([], [(_bound(bound), count) for bound, count in timing.cumulative()],
                       sum_value=timing.seconds)
    yield latency
    yield CounterMetricFamily("stoker_origin_failures",
                              "Origin requests that got no answer (refused, reset, timed out)",
                              value=timing.failures)
    yield GaugeMetricFamily("stoker_origin_up",
                            "1 while the origin answers, 0 while its breaker is open",
                            value=1 if figures.origin_up else 0)
    yield GaugeMetricFamily("stoker_collapsed_fetches_in_flight",
                            "Origin fetches in flight that concurrent misses wait on",
                            value=figures.in_flight)


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def _cache_families(figures: Figures) -> Iterable[Metric]:
    entries = GaugeMetricFamily("stoker_cache_entries", "Entries stored, by tier",
                                labels=["tier"])
    size = GaugeMetricFamily("stoker_cache_bytes", "Bytes stored, by tier", labels=["tier"])
    entries.add_metric(["l1"], figures.l1["entries"])
    size.add_metric(["l1"], figures.l1["bytes"])
    if figures.l2 is not None:
        entries.add_metric(["l2"], figures.l2["entries"])
        size.add_metric(["l2"], figures.l2["bytes"])
    yield entries
    yield size
    yield CounterMetricFamily("stoker_cache_served_bytes",
                              "Body bytes visitors were answered with from the cache (what "
                              "the origin was spared)", value=figures.cache_bytes)
    yield CounterMetricFamily("stoker_origin_body_bytes",
                              "Body bytes read from the origin (visitors' requests and warm "
                              "visits)", value=figures.origin_bytes)
    yield GaugeMetricFamily("stoker_l1_max_bytes", "The memory tier's bound",
                            value=figures.l1["max_bytes"])
    yield CounterMetricFamily("stoker_l1_evictions",
                              "Keys evicted from the memory tier to stay within its bound",
                              value=figures.l1_evictions)
    yield GaugeMetricFamily("stoker_l2_queued_writes",
                            "Operations queued for the persistent tier", value=figures.l2_pending)
    yield GaugeMetricFamily("stoker_l2_queued_bytes", "Bytes of the puts queued for the "
                            "persistent tier", value=figures.l2_pending_bytes)
    yield CounterMetricFamily("stoker_l2_dropped_writes", "Puts dropped (queue full)",
                              value=figures.l2_dropped)
    yield GaugeMetricFamily("stoker_purge_marks", "Recent purges kept in the purge list",
                            value=figures.purge_marks)
    applying = GaugeMetricFamily("stoker_purge_marks_applying",
                                 "Purges still being applied, by tier", labels=["tier"])
    for tier, count in sorted(figures.applying.items()):
        applying.add_metric([tier], count)
    yield applying
    yield CounterMetricFamily("stoker_notifier_reconnects",
                              "Lost notifier subscriptions made again (the purge bus is "
                              "polled meanwhile)", value=figures.notifier_reconnects)
    yield GaugeMetricFamily("stoker_notifier_connected",
                            "0 while a process's notifier has lost its subscription",
                            value=1 if figures.notifier_connected else 0)


def _warm_families(figures: Figures) -> Iterable[Metric]:
    jobs = GaugeMetricFamily("stoker_jobs", "Jobs in the durable queue, by queue and state",
                             labels=["queue", "state"])
    for queue, state, count in sorted(figures.jobs):
        jobs.add_metric([queue, state], count)
    yield jobs
    run = GaugeMetricFamily("stoker_warm_run_urls",
                            "The active warm run's URLs, by how far they got", labels=["state"])
    for state, count in sorted((figures.warm_run or {}).items()):
        run.add_metric([state], count)
    yield run
    lag = GaugeMetricFamily("stoker_deadline_lag_seconds",
                            "How long each armed deadline is past due (0: not yet due)",
                            labels=["deadline"])
    for name, seconds in sorted(figures.deadline_lag.items()):
        lag.add_metric([name], seconds)
    yield lag
    yield CounterMetricFamily("stoker_warm_stored_entries",
                              "Responses warm visits stored", value=figures.warm_stored)
    yield CounterMetricFamily("stoker_warm_entries_read",
                              "Responses a warm visit stored that a visitor then read from "
                              "the cache (the first read after each store)",
                              value=figures.warm_read)
    refreshes = CounterMetricFamily(
        "stoker_refreshes", "Refresh ahead's revalidations of entries visitors read, by "
        "result (refreshed: a new response stored; not_modified: 304; failed)",
        labels=["result"])
    for result, name in REFRESH_FIELDS:
        refreshes.add_metric([result], getattr(figures, name))
    yield refreshes


class _Scrape:
    """A collector handing out one scrape's families."""

    def __init__(self, found: list[Metric]) -> None:
        self._found = found

    def collect(self) -> Iterable[Metric]:
        return self._found


def exposition(found: list[Metric]) -> bytes:
    """``found`` in Prometheus's text format (:data:`CONTENT_TYPE`)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape(found))
    return generate_latest(registry)
