"""Cold trace: a seeded visitor trace with edits and deploys, through Stoker, Varnish and nginx.

Issue 36's benchmark.  The site (``bench/cold_trace_plan.py``) has ``--pages`` (10,000)
pages and a sitemap; its origin (``bench/cold_trace_origin.py``, granian) renders a page
in ``--render-ms`` (50) ms, ``--capacity`` (8) at a time, and answers
``max-age = 300 / --compress`` (time compressed: ``--compress`` 5 makes it 60 s, and a
deploy comes every 60 s instead of 5 minutes).  The trace: ``--rate`` (200) requests a
second, Poisson, Zipf(``--zipf`` 1.0) popularity, six browser-like heads (several
``Accept-Encoding`` forms), ``--bot-share`` (10 %) of them a bot walking the sitemap.
Events of the measured phase: ``--edits-per-s`` (1) edits (the origin changes an item's
page and its list page, then the cache gets a soft purge of both), a deploy every
``300 / --compress`` s (every page changes, then a soft purge of everything).

Each system in turn (``--systems`` stoker,varnish,nginx; bench/cold_trace_systems.py has
their configurations) gets a fresh origin and cache, then the trace's warm-up part
(``--warmup`` s, default half of ``--duration``, at most 90) and its measured part
(``--duration`` s, 180) — the same requests and events for every system.  Stoker runs
with its warmer (a full warm run at start, re-warms after purges), ``origin_max_concurrency``
= the origin's capacity, ``rewarm_delay`` 60 s and ``rewarm_max_wait`` 300 s compressed
likewise; ``--stoker-setting key=value`` (repeatable, a TOML value) adds or overrides
settings (issue 36's ``purge_mode``, ``refresh_ahead``, ...), ``--no-soft-header`` drops
the ``X-Purge-Soft: 1`` header its edit purges carry.

**Waited on the origin** (the same test for every system): a request waited when the
origin's log holds its ``X-Bench-Req`` id with the origin's answer done before the
visitor's response was (a foreground fetch; a background refresh ends after the stale
answer went out), or when the response took at least ``--render-ms`` (a request that
joined another's fetch, or any stall as long as a render).  Per system, over the
measured phase: that share for human visitors and for bots, human p50/p99 latency
(from the scheduled send: open loop), origin requests per trace request, the origin's
busiest second (renders answered) and peak in flight (arrived, not yet answered: above
``--capacity`` means requests queued at the origin), edit-to-visible p50/p99/max (from
an edit's purge to the first human response with the new version, by the page's
``ETag``; edits no human saw in the phase are counted apart).

    PYTHONPATH=src .venv/bin/python bench/cold_trace.py                 # ~14 min
    PYTHONPATH=src .venv/bin/python bench/cold_trace.py --duration 60 --pages 2000
    PYTHONPATH=src .venv/bin/python bench/cold_trace.py --systems stoker \\
        --stoker-setting 'purge_mode="soft"' --stoker-setting refresh_ahead=true

Results go to ``bench/results/cold_trace.json``, process logs to
``bench/results/cold_trace-logs/``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.cold_trace_plan import BOT_HEAD, HEADS, Event, Request, Site, events, trace  # noqa: E402
from bench.cold_trace_systems import (  # noqa: E402
    TOKEN,
    Running,
    control,
    purge_deploy,
    purge_edit,
    running,
)
from bench.common import percentile  # noqa: E402

from stoker.config.units import parse_duration  # noqa: E402

RESULTS = HERE / "results"
BASE_TTL = 300.0
BASE_REWARM_DELAY, BASE_REWARM_MAX_WAIT = 60.0, 300.0
VERSION = re.compile(rb'"v(\d+)-d(\d+)')
GOAL_SHARE, GOAL_VS_PEER = 0.001, 0.1
REQUEST_TIMEOUT = 30.0


# -- the load ------------------------------------------------------------------------


@dataclass
class Seen:
    """One trace request's outcome; times from ``time.monotonic()``."""

    id: str
    path: str
    bot: bool
    scheduled: float
    done: float = 0.0
    status: int = 0
    version: int = 0
    measured: bool = False
    cache: str = ""
    """What the answer said of the cache (``Cache-Status``, ``X-Cache``, ``X-Cache-Status``)."""


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Visitors:
    """Replays requests on a pool of keep-alive connections (open loop)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[Conn] = []
        self.tasks: set[asyncio.Task[None]] = set()

    def head(self, request: Request, rid: str) -> bytes:
        agent, encoding = BOT_HEAD if request.bot else HEADS[request.head]
        lines = [f"GET {request.path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}",
                 f"User-Agent: {agent}", "Accept: text/html,application/xhtml+xml,*/*;q=0.8",
                 "Accept-Language: en-US,en;q=0.9", f"X-Bench-Req: {rid}"]  # fmt: skip
        if encoding:
            lines.append(f"Accept-Encoding: {encoding}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def replay(self, requests: list[Request], t0: float, tag: str,
                     measured_from: float) -> list[Seen]:  # fmt: skip
        seen: list[Seen] = []
        for n, request in enumerate(requests):
            at = t0 + request.at
            delay = at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            one = Seen(f"{tag}{n}", request.path, request.bot, at,
                       measured=request.at >= measured_from)  # fmt: skip
            seen.append(one)
            task = asyncio.create_task(self.one(request, one))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=REQUEST_TIMEOUT + 5)
        return seen

    async def one(self, request: Request, seen: Seen) -> None:
        """Send ``request``: on an idle connection, and once more on a new one when the
        idle one turns out closed (a server's keep-alive timeout)."""
        conn = self.idle.pop() if self.idle else None
        answer = await self.exchange(request, seen, conn) if conn is not None else None
        if answer is None:
            answer = await self.exchange(request, seen, None)
        seen.done, seen.status = time.monotonic(), answer[0] if answer else -2
        match = VERSION.search(answer[1]) if answer else None
        seen.version = int(match.group(1)) if match else 0
        seen.cache = answer[2] if answer else ""

    async def exchange(self, request: Request, seen: Seen,
                       conn: Conn | None) -> tuple[int, bytes, str] | None:  # fmt: skip
        """Status, ETag and cache status (-1 when no answer came in time), None when the
        connection failed (then closed)."""
        try:
            if conn is None:
                conn = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
            conn[1].write(self.head(request, seen.id))
            status, etag, cache, keep = await asyncio.wait_for(read_response(conn[0]),
                                                               REQUEST_TIMEOUT)  # fmt: skip
        except (OSError, asyncio.IncompleteReadError, ValueError, TimeoutError) as error:
            if conn is not None:
                conn[1].close()
            return (-1, b"", "") if isinstance(error, TimeoutError) else None
        if keep:
            self.idle.append(conn)
        else:
            conn[1].close()
        return status, etag, cache

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


CACHE_HEADERS = (b"cache-status", b"x-cache", b"x-cache-status")


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, str, bool]:
    """One response, its body read whole: status, ETag, what it said of the cache
    (:data:`CACHE_HEADERS`) and whether the connection stays."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"content-length" in headers:
        await reader.readexactly(int(headers[b"content-length"]))
    elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    cache = next((headers[name] for name in CACHE_HEADERS if name in headers), b"")
    return (status, headers.get(b"etag", b""), cache.decode("latin-1"),
            headers.get(b"connection") != b"close")


# -- events --------------------------------------------------------------------------


@dataclass
class Edit:
    at: float
    item: int
    version: int
    purged: float = 0.0  # when the purge was sent (monotonic)


async def play_events(system: Running, site: Site, planned: list[Event], t0: float,
                      soft_header: bool) -> tuple[list[Edit], list[str]]:  # fmt: skip
    """Edit the origin and purge the cache on schedule; the edits and any errors."""
    origin = f"http://127.0.0.1:{system.origin_port}"
    edits: list[Edit] = []
    errors: list[str] = []
    for event in planned:
        delay = t0 + event.at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            if event.kind == "edit":
                answer = await asyncio.to_thread(
                    control, "POST", f"{origin}/_edit?item={event.item}")
                edit = Edit(event.at, event.item, int(json.loads(answer)["version"]))
                edit.purged = time.monotonic()
                await asyncio.to_thread(purge_edit, system, event.item,
                                        site.list_of(event.item), soft_header)
                edits.append(edit)
            else:
                await asyncio.to_thread(control, "POST", f"{origin}/_deploy")
                await asyncio.to_thread(purge_deploy, system)
        except OSError as error:
            errors.append(f"{event.kind} at {event.at:.1f}s: {error}")
    return edits, errors


# -- one system ----------------------------------------------------------------------


@dataclass
class Figures:
    system: str
    requests: int = 0
    humans: int = 0
    bots: int = 0
    failed: int = 0
    waited_share: float = 0.0
    waited_by_origin_log: int = 0
    waited_by_time_only: int = 0
    bots_waited_share: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    bots_p99_ms: float = 0.0
    origin_requests: int = 0
    origin_per_request: float = 0.0
    origin_busiest_second: int = 0
    origin_peak_in_flight: int = 0
    warmup_origin_peak_in_flight: int = 0
    edits: int = 0
    edits_unseen: int = 0
    edit_visible_p50_s: float = 0.0
    edit_visible_p99_s: float = 0.0
    edit_visible_max_s: float = 0.0
    old_after_allowed: int = 0
    """Human answers of an edited item with an older version, given more than the
    allowance (``rewarm_delay`` + ``--warm-allowance``) after the edit's purge."""
    answers_after_allowed: int = 0
    """Human answers of edited items given more than the allowance after an edit."""
    waited_second_half_share: float = 0.0
    """The waited share of the human requests sent in the measured phase's second half."""
    statuses: dict[str, int] = field(default_factory=dict)
    late_old: list[list[Any]] = field(default_factory=list)
    """The old copies counted in ``old_after_allowed``: path, seconds after the edit's
    purge, cache status."""
    waits: list[list[Any]] = field(default_factory=list)
    """Each human request that waited: seconds into the measured phase, path, ``log``
    (the origin's log) or ``time`` (only slow), milliseconds, its cache status."""
    event_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def figures(name: str, seen: list[Seen], log: list[list[Any]], edits: list[Edit],
            window: tuple[float, float], render: float, allowed: float) -> Figures:  # fmt: skip
    start, end = window
    fetched = {row[0]: row[3] for row in log if row[0]}
    measured = [s for s in seen if s.measured]
    out = Figures(name, len(measured))
    humans = [s for s in measured if not s.bot and s.status > 0]
    bots = [s for s in measured if s.bot and s.status > 0]
    out.humans, out.bots = len(humans), len(bots)
    out.failed = sum(1 for s in measured if s.status != 200)
    out.statuses = {str(k): v for k, v in Counter(s.status for s in measured).items()}

    def waited(s: Seen) -> tuple[bool, bool]:
        by_log = s.id in fetched and fetched[s.id] <= s.done
        return by_log, by_log or s.done - s.scheduled >= render

    marks = [waited(s) for s in humans]
    out.waited_by_origin_log = sum(1 for by_log, _ in marks if by_log)
    out.waited_by_time_only = sum(1 for by_log, any_ in marks if any_ and not by_log)
    out.waited_share = (out.waited_by_origin_log + out.waited_by_time_only) / max(1, len(humans))
    middle = (start + end) / 2
    late = [any_ for s, (_, any_) in zip(humans, marks, strict=True) if s.scheduled >= middle]
    out.waited_second_half_share = sum(late) / max(1, len(late))
    out.bots_waited_share = sum(1 for s in bots if waited(s)[1]) / max(1, len(bots))
    out.waits = [[round(s.scheduled - start, 3), s.path, "log" if by_log else "time",
                  round((s.done - s.scheduled) * 1000, 1), s.cache]
                 for s, (by_log, any_) in zip(humans, marks, strict=True) if any_]
    latencies = [(s.done - s.scheduled) * 1000 for s in humans]
    out.p50_ms, out.p99_ms = percentile(latencies, 0.5), percentile(latencies, 0.99)
    out.bots_p99_ms = percentile([(s.done - s.scheduled) * 1000 for s in bots], 0.99)
    in_window = [row for row in log if start <= row[3] < end]
    out.origin_requests = len(in_window)
    out.origin_per_request = len(in_window) / max(1, len(measured))
    per_second = Counter(int(row[3] - start) for row in in_window)
    out.origin_busiest_second = max(per_second.values(), default=0)
    out.origin_peak_in_flight = peak_in_flight(log, start, end)
    visible = edit_delays(edits, humans)
    out.edits, out.edits_unseen = len(edits), len(edits) - len(visible)
    out.edit_visible_p50_s = percentile(visible, 0.5)
    out.edit_visible_p99_s = percentile(visible, 0.99)
    out.edit_visible_max_s = max(visible, default=float("nan"))
    out.old_after_allowed, out.answers_after_allowed = old_after(edits, humans, allowed,
                                                                 out.late_old)
    return out


def old_after(edits: list[Edit], humans: list[Seen], allowed: float,
              late: list[list[Any]] | None = None) -> tuple[int, int]:
    """``(old, all)``: human answers of an edited item given more than ``allowed`` seconds
    after an edit's purge and before its next edit's, and those of them with an older
    version than that edit's (each noted in ``late``: the path, seconds after the purge,
    the answer's cache status)."""
    by_item: dict[int, list[Edit]] = {}
    for edit in sorted(edits, key=lambda e: e.purged):
        by_item.setdefault(edit.item, []).append(edit)
    old = answered = 0
    for s in humans:
        if not s.path.startswith("/item/"):
            continue
        last = None
        for edit in by_item.get(int(s.path.removeprefix("/item/")), []):
            if edit.purged + allowed < s.done:
                last = edit
        if last is not None:
            answered += 1
            old += s.version < last.version
            if s.version < last.version and late is not None:
                late.append([s.path, round(s.done - last.purged, 2), s.cache])
    return old, answered


def peak_in_flight(log: list[list[Any]], start: float, end: float) -> int:
    """Most origin requests arrived and not yet answered at once within [start, end)."""
    moves = sorted([(row[2], 1) for row in log] + [(row[3], -1) for row in log])
    level = peak = 0
    for at, change in moves:
        level += change
        if start <= at < end:
            peak = max(peak, level)
    return peak


def edit_delays(edits: list[Edit], humans: list[Seen]) -> list[float]:
    """Per edit a human saw: seconds from its purge to the first human response of the
    item with the edit's version (or a later one)."""
    by_path: dict[str, list[Seen]] = {}
    for s in sorted(humans, key=lambda s: s.done):
        by_path.setdefault(s.path, []).append(s)
    delays = []
    for edit in edits:
        for s in by_path.get(f"/item/{edit.item}", []):
            if s.done > edit.purged and s.version >= edit.version:
                delays.append(s.done - edit.purged)
                break
    return delays


async def measure(name: str, args: argparse.Namespace, site: Site, requests: list[Request],
                  planned: list[Event]) -> Figures:  # fmt: skip
    ttl = BASE_TTL / args.compress
    origin_env = {"COLD_TRACE_PAGES": str(args.pages), "COLD_TRACE_PER_LIST": str(args.per_list),
                  "COLD_TRACE_RENDER_MS": str(args.render_ms), "COLD_TRACE_TTL": f"{ttl:g}",
                  "COLD_TRACE_CAPACITY": str(args.capacity)}  # fmt: skip
    with running(name, origin_env, stoker_settings(args), RESULTS / "cold_trace-logs") as system:
        visitors = Visitors(system.port)
        t0 = time.monotonic() + 0.5
        print(f"  {name}: warm-up {args.warmup:g} s, then measured {args.duration:g} s "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)  # fmt: skip
        event_task = asyncio.create_task(
            play_events(system, site, planned, t0 + args.warmup, args.soft_header))
        with quiet_collector():
            seen = await visitors.replay(requests, t0, "r", args.warmup)
        edits, errors = await event_task
        visitors.close()
        log = json.loads(await asyncio.to_thread(
            control, "GET", f"http://127.0.0.1:{system.origin_port}/_log"))
        notes = await asyncio.to_thread(system_notes, system)
    window = (t0 + args.warmup, t0 + args.warmup + args.duration)
    out = figures(name, seen, log, edits, window, args.render_ms / 1000, edit_allowance(args))
    out.warmup_origin_peak_in_flight = peak_in_flight(log, t0, window[0])
    out.event_errors, out.notes = errors, notes
    if name == "nginx":
        out.notes.append("open-source nginx has no purge: edits and deploys reach visitors "
                         f"only when max-age ({ttl:g} s) runs out")
    return out


@contextlib.contextmanager
def quiet_collector() -> Iterator[None]:
    """No collector pause in the load generator while it replays: with its 54,000
    records a full collection takes about 30 ms, added to every answer that arrives
    meanwhile (and counted as the system's wait once it passes ``--render-ms``).  What
    exists is set aside, and collection is off until the block ends."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def system_notes(system: Running) -> list[str]:
    """Stoker's warm runs (reason, URLs warmed of the total, seconds), oldest first."""
    if system.name != "stoker":
        return []
    try:
        listing = json.loads(control("GET", f"http://127.0.0.1:{system.admin_port}/api/warm",
                                     {"authorization": f"Bearer {TOKEN}"}))
    except OSError as error:
        return [f"no GET /api/warm: {error}"]
    runs = [run for run in [listing["active"], *listing["recent"]] if run]
    described = []
    for run in sorted({run["id"]: run for run in runs}.values(), key=lambda run: run["id"]):
        took = (run["finished_at"] or time.time()) - run["started_at"]
        counts = run["counts"]
        done = counts["warmed"] + counts["rewarmed"] + counts["not_modified"]
        described.append(f"{run['reason']} {done}/{counts['total']} in {took:.1f} s "
                         f"({run['phase']})")
    return ["warm runs: " + "; ".join(described)]


def stoker_settings(args: argparse.Namespace) -> dict[str, str]:
    """Stoker's stoker.toml (TOML values), ``--stoker-setting`` last."""
    settings = {
        "purge_allow": '["127.0.0.1"]',
        "origin_max_concurrency": str(args.capacity),
        "warm_max_concurrency": str(args.capacity),
        "rewarm_delay": f'"{BASE_REWARM_DELAY / args.compress:g}s"',
        "rewarm_max_wait": f'"{BASE_REWARM_MAX_WAIT / args.compress:g}s"',
    }
    for item in args.stoker_setting:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--stoker-setting {item!r}: expected key=value")
        settings[key.strip()] = value.strip()
    return settings


# -- the report ----------------------------------------------------------------------


def report(results: list[Figures], args: argparse.Namespace) -> list[str]:
    lines = [f"{'system':8} {'waited':>8} {'(log/time)':>11} {'bots':>7} {'p50 ms':>7} "
             f"{'p99 ms':>7} {'origin/req':>10} {'busiest/s':>9} {'peak':>5} "
             f"{'edit p50 s':>10} {'p99 s':>6} {'max s':>6} {'unseen':>6} {'failed':>6}"]
    for r in results:
        lines.append(f"{r.system:8} {r.waited_share:8.3%} "
                     f"{f'{r.waited_by_origin_log}/{r.waited_by_time_only}':>11} "
                     f"{r.bots_waited_share:7.2%} {r.p50_ms:7.1f} {r.p99_ms:7.1f} "
                     f"{r.origin_per_request:10.4f} {r.origin_busiest_second:9d} "
                     f"{r.origin_peak_in_flight:5d} {r.edit_visible_p50_s:10.2f} "
                     f"{r.edit_visible_p99_s:6.2f} {r.edit_visible_max_s:6.2f} "
                     f"{r.edits_unseen:6d} {r.failed:6d}")  # fmt: skip
        if r.failed:
            lines.append(f"  {r.system}: statuses {r.statuses} "
                         "(-1: none within 30 s, -2: connection failed)")
        lines.append(f"  {r.system}: waited in the second half {r.waited_second_half_share:.3%}; "
                     f"old copies more than {edit_allowance(args):g} s after an edit: "
                     f"{r.old_after_allowed} of {r.answers_after_allowed} answers")
        if r.waits:
            lines.append(f"  {r.system}: {waits_text(r.waits, args.duration)}")
        if r.late_old:
            lines.append(f"  {r.system}: old copies after the allowance (path, s after the "
                         f"purge, cache status): {r.late_old[:5]}")
        lines += [f"  {r.system}: {note}" for note in r.notes + r.event_errors[:5]]
    lines += goals(results, args)
    return lines


def waits_text(waits: list[list[Any]], duration: float) -> str:
    """Where the waits were: by tenth of the measured phase and by what the answer said
    of the cache (its first two fields)."""
    tenths = Counter(min(9, int(10 * at / duration)) for at, *_ in waits)
    said = Counter(";".join(cache.split(";")[:2]) or "-" for *_, cache in waits)
    return ("waits by tenth " + " ".join(str(tenths[n]) for n in range(10))
            + "; by cache status " + ", ".join(f"{k} {v}" for k, v in said.most_common(6)))


def goals(results: list[Figures], args: argparse.Namespace) -> list[str]:
    stoker = next((r for r in results if r.system == "stoker"), None)
    if stoker is None:
        return []
    peers = [r.waited_share for r in results if r.system != "stoker"]
    best = min(peers, default=float("nan"))
    rewarm = edit_allowance(args) - args.warm_allowance
    checks = [
        (f"Stoker's waited share {stoker.waited_share:.3%} < {GOAL_SHARE:.1%}",
         stoker.waited_share < GOAL_SHARE),
        (f"<= 1/10 of the best peer's ({best:.3%})",
         bool(peers) and stoker.waited_share <= GOAL_VS_PEER * best),
        (f"every edit visible within rewarm_delay {rewarm:g} s + {args.warm_allowance:g} s "
         f"({stoker.old_after_allowed} older copies of {stoker.answers_after_allowed} answers "
         "after it)", stoker.old_after_allowed == 0),
        (f"origin peak in flight {stoker.origin_peak_in_flight} <= capacity {args.capacity}",
         stoker.origin_peak_in_flight <= args.capacity),
    ]
    return ["goal: " + "; ".join(f"{text} {'MET' if ok else 'NOT MET'}" for text, ok in checks)]


def edit_allowance(args: argparse.Namespace) -> float:
    """Seconds after an edit's purge by which visitors must see it: Stoker's
    ``rewarm_delay`` plus ``--warm-allowance``."""
    rewarm = parse_duration(tomllib.loads(f"v = {stoker_settings(args)['rewarm_delay']}")["v"])
    return rewarm + args.warm_allowance


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE.parent,
                          capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="stoker,varnish,nginx")
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--per-list", type=int, default=50)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--bot-share", type=float, default=0.1)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--duration", type=float, default=180.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=None,
                        help="warm-up seconds (default: half of --duration, at most 90)")
    parser.add_argument("--compress", type=float, default=5.0,
                        help="time compression: max-age and the deploy period are 300 s / this")
    parser.add_argument("--edits-per-s", type=float, default=1.0)
    parser.add_argument("--render-ms", type=float, default=50.0)
    parser.add_argument("--capacity", type=int, default=8)
    parser.add_argument("--warm-allowance", type=float, default=2.0,
                        help="seconds an edit's re-warm may take beyond rewarm_delay (goal)")
    parser.add_argument("--stoker-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a stoker.toml setting (TOML value), repeatable")
    parser.add_argument("--no-soft-header", dest="soft_header", action="store_false",
                        help="Stoker's edit purges without X-Purge-Soft: 1")
    parser.add_argument("--output", type=Path, default=RESULTS / "cold_trace.json")
    args = parser.parse_args(argv)
    if args.warmup is None:
        args.warmup = min(90.0, args.duration / 2)
    return args


async def main_async(args: argparse.Namespace) -> None:
    site = Site(args.pages, args.per_list)
    requests = trace(site, seed=args.seed, rate=args.rate, duration=args.warmup + args.duration,
                     bot_share=args.bot_share, s=args.zipf)  # fmt: skip
    planned = events(site, seed=args.seed, duration=args.duration,
                     edits_per_s=args.edits_per_s,
                     deploy_every=BASE_TTL / args.compress, s=args.zipf)  # fmt: skip
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"cold trace {started}, commit {commit()}, {args.pages} pages, {args.rate:g} req/s, "
          f"{len(requests)} requests ({args.warmup:g} s warm-up + {args.duration:g} s), "
          f"{len(planned)} events, "
          f"max-age {BASE_TTL / args.compress:g} s, load {os.getloadavg()[0]:.2f}", flush=True)
    results = []
    for name in [n.strip() for n in args.systems.split(",") if n.strip()]:
        results.append(await measure(name, args, site, requests, planned))
    lines = report(results, args)
    print("\n".join(lines))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "started": started, "commit": commit(), "load_end": os.getloadavg()[0],
        "args": {k: str(v) for k, v in vars(args).items()},
        "results": [asdict(r) for r in results], "report": lines}, indent=1) + "\n")


def main() -> None:
    try:
        import uvloop  # the load generator's own cost stays out of the latencies
    except ImportError:
        asyncio.run(main_async(parse()))
    else:
        uvloop.run(main_async(parse()))


if __name__ == "__main__":
    main()
