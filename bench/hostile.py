"""Hostile slow clients: visitors' misses while 100 slow clients of one kind hold on, or
one client asks for many slow URLs.

Issue 19's goal: "with 100 hostile slow clients of each kind, visitors' misses keep
p99 <= 2x idle".  Stoker runs with its defaults (``origin_max_concurrency`` 16 slots,
``client_body_timeout`` 60 s) plus ``warm_workers = 0``, in front of the slow origin
(``bench/origin_app.py``'s pages on granian, one worker, ``--latency-ms`` 20 per page;
``/big/…`` pages are 2 MiB, the others 20 KB).  The origin reads each request's body
whole before it answers (:func:`reading_origin`), as an app taking a form does:
origin_app itself answers at once, so a proxy that forwarded a slow body would lose no
slot to it here (``--no-origin-reads-body`` serves origin_app as it is).  Each phase
runs for ``--duration`` seconds:

- ``idle``: the visitors alone;
- ``trickle-post``: ``--hostile`` (100) connections send ``POST /post/<i>`` with
  ``Content-Length: 100000``, then one body byte a second, never finishing;
- ``not-reading``: 100 connections (``SO_RCVBUF`` 4096) each ask for distinct uncached
  2 MiB ``GET /big/<unique>`` pages and never read a byte of the answers.  Each
  connection pipelines ``--pipelined`` (3) requests: on loopback the proxy's kernel
  send buffer grows to take one whole 2 MiB answer (``ss`` shows a Send-Q of 2,091,008
  bytes per connection), so a single request never makes the proxy wait for its
  client; the next answers must wait in the proxy (``--pipelined 1``: one page each);
- ``stalled-get-body``: 100 connections send ``GET /x/<unique>`` with
  ``Content-Length: 1000`` and one byte of body, then nothing;
- ``slow-16`` and ``slow-100`` (issue 34): 16 / 100 connections, all from ONE client
  address (bound to 127.0.0.2; the visitors come from 127.0.0.1), each ask for a
  distinct uncached ``/slow/<unique>?ms=10000`` page, which the origin answers in
  ``--slow-ms`` (10,000) ms.  When the phase ends and they are closed, the run waits for
  Stoker's ``in_flight`` to drop to 0 (nginx: ``--slow-ms``) before the next phase,
  and reports how long that took (``drain``).

The hostile connections are opened and their requests sent, then the server gets
``--settle`` (0.5 s) and 0.5 s more to take them, and longer while the origin's count
still moves (until it has stood still for 0.5 s, 10 s at most: a not-reading client's
second request is a new miss, and 100 of them at once queue for Stoker's 16 origin
slots, a miss burst rather than a slow client) before the visitors start; they are
closed when the phase ends.  The visitors are a closed loop of ``--visitors`` (4) keep-alive
connections (asyncio, raw HTTP/1.1), each asking for a new distinct 20 KB URL every
time, so every visitor request is a miss: the origin's ``/__hits`` must grow during
the measurement by at least the visitors' answered requests, and the run is flagged
otherwise.  A visitor's request still unanswered ``--grace`` (2) seconds after the
phase's end is given up and counted "unfinished", with the time it waited (a lower
bound) among the latencies.  Per phase: the visitors' p50 / p99 latency, their
answered requests, and ``p99 / p99(idle)`` of the same system and round; the summary
gives the median over ``--rounds`` (3) of each.  Phases run in order within a round,
each system's phases together (the systems' order flips every round).

With ``--nginx`` (the default when nginx is on PATH) every round also runs the same
phases through nginx's ``proxy_cache`` (one worker, as in ``bench/miss_path.py``) in
front of the same origin: the yardstick beside Stoker's ratios.  Stoker and nginx run
pinned to ``--stoker-core`` (1); this process (visitors and hostile clients) and the
origin share ``--client-core`` (0).  For Stoker each phase also records ``in_flight``
(misses being fetched, from the admin ``/api/status``; it has no count of origin slots)
before the phase and half way through, and Stoker's RSS at the phase's end.

    PYTHONPATH=src .venv/bin/python bench/hostile.py                  # --rounds 3 --duration 8
    PYTHONPATH=src .venv/bin/python bench/hostile.py --rounds 2 --no-nginx
    PYTHONPATH=src .venv/bin/python bench/hostile.py --pipelined 1 --no-origin-reads-body
    PYTHONPATH=src .venv/bin/python bench/hostile.py --phases not-reading --rounds 1
    PYTHONPATH=src .venv/bin/python bench/hostile.py --rounds 1 --duration 5 \
        --phases slow-16,slow-100

Results also go to ``bench/results/hostile.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import socket
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, pin  # noqa: E402
from bench.miss_path import nginx_in_front  # noqa: E402
from bench.origin_app import app as origin_pages  # noqa: E402
from bench.procs import (  # noqa: E402
    ORIGIN_APP,
    REPO,
    Stack,
    fetch,
    status_kib,
    stop_on_sigterm,
)
from bench.procs import serving as procs_serving  # noqa: E402

PHASES = ("idle", "trickle-post", "not-reading", "stalled-get-body", "slow-16", "slow-100")
SLOW_PHASES = {"slow-16": 16, "slow-100": 100}
"""Phases of one client asking for many slow URLs: how many it asks for."""
SLOW_CLIENT = "127.0.0.2"
"""The slow phases' one client address (loopback, but not the visitors' 127.0.0.1)."""
GOAL_P99_RATIO = 2.0
NOT_READING_RCVBUF = 4096
TRICKLE_BODY = 100_000
STALLED_BODY = 1000
HEAD_LIMIT = 64 * 1024
READING_ORIGIN = "bench.hostile:reading_origin"
QUIET = 0.5
SETTLE_MAX = 10.0


# -- the origin and the servers --------------------------------------------------------


async def reading_origin(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    """``bench/origin_app.py``'s pages, each answered only once the request's body has
    been read whole, as an app handling a form does (origin_app answers at once)."""
    if scope["type"] == "http":
        while True:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                break
    await origin_pages(scope, receive, send)


def serving(args: argparse.Namespace) -> contextlib.AbstractContextManager[Stack]:
    """The origin (pinned to ``--client-core``; :func:`reading_origin` unless
    ``--no-origin-reads-body``), then Stoker with its defaults in front of it (pinned to
    ``--stoker-core``)."""
    return procs_serving({}, latency_ms=args.latency_ms, stoker_core=args.stoker_core,
                         origin_core=args.client_core,
                         origin_app=READING_ORIGIN if args.origin_reads_body else ORIGIN_APP)


# -- visitors --------------------------------------------------------------------------


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
BROKEN = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError)


@dataclass
class Visits:
    """What the visitors saw during one measurement."""

    latencies_ms: list[float] = field(default_factory=list)
    unfinished_ms: list[float] = field(default_factory=list)  # still waiting at the end
    errors: int = 0
    non_200: int = 0

    def percentile(self, percent: float) -> float:
        """Over the answered requests and, as lower bounds, the unfinished ones."""
        return percentile(self.latencies_ms + self.unfinished_ms, percent / 100)


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one HTTP/1.1 response whole; its status and whether the connection stays."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip().lower()
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        await read_chunked(reader)
    else:
        await reader.read()
        return status, False
    return status, headers.get("connection") != "close"


async def read_chunked(reader: asyncio.StreamReader) -> None:
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        await reader.readexactly(size + 2)
        if size == 0:
            return


async def exchange(port: int, conn: Conn | None, path: str) -> tuple[Conn, int, bool]:
    """``GET path`` on ``conn`` (a new connection when None): the connection, the
    response's status and whether the connection stays open."""
    if conn is None:
        conn = await asyncio.open_connection("127.0.0.1", port, limit=HEAD_LIMIT)
    conn[1].write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  "User-Agent: hostile-bench-visitor\r\n\r\n".encode())  # fmt: skip
    status, keep = await read_response(conn[0])
    return conn, status, keep


async def visitor(port: int, prefix: str, deadline: float, grace: float, visits: Visits) -> None:
    """One closed-loop visitor: a new URL under ``prefix`` per request until ``deadline``;
    a request unanswered ``grace`` seconds after it is given up as unfinished."""
    n = 0
    conn: Conn | None = None
    while time.monotonic() < deadline:
        n += 1
        began = time.perf_counter()
        try:
            left = deadline + grace - time.monotonic()
            conn, status, keep = await asyncio.wait_for(exchange(port, conn, f"{prefix}{n}"), left)
        except TimeoutError:
            visits.unfinished_ms.append((time.perf_counter() - began) * 1000)
            break
        except BROKEN:
            visits.errors += 1
            await close_stream(conn)
            conn = None
            await asyncio.sleep(0.01)  # no busy loop on a refusing server
            continue
        visits.latencies_ms.append((time.perf_counter() - began) * 1000)
        visits.non_200 += status != 200
        if not keep:
            await close_stream(conn)
            conn = None
    await close_stream(conn)


async def close_stream(conn: Conn | None) -> None:
    if conn is not None:
        conn[1].close()
        with contextlib.suppress(OSError):
            await conn[1].wait_closed()


async def visit(port: int, args: argparse.Namespace) -> Visits:
    """``args.visitors`` concurrent visitors for ``args.duration`` seconds, each URL new."""
    visits = Visits()
    prefix = f"/visit/{uuid.uuid4().hex}/"
    deadline = time.monotonic() + args.duration
    await asyncio.gather(*(visitor(port, f"{prefix}{i}-", deadline, args.grace, visits)
                           for i in range(args.visitors)))  # fmt: skip
    return visits


# -- hostile clients -------------------------------------------------------------------


def hostile_request(phase: str, port: int, tag: str, i: int, pipelined: int = 1,
                    slow_ms: int = 10_000) -> bytes:
    """The bytes a hostile client of ``phase`` sends at once (a trickle adds more later);
    a not-reading client pipelines ``pipelined`` requests for distinct 2 MiB pages, a
    slow phase's asks for a distinct page the origin answers in ``slow_ms``."""
    host = f"Host: 127.0.0.1:{port}\r\nUser-Agent: hostile-bench\r\n"
    if phase in SLOW_PHASES:
        return f"GET /slow/{tag}-{i}?ms={slow_ms} HTTP/1.1\r\n{host}\r\n".encode()
    if phase == "trickle-post":
        return (f"POST /post/{tag}-{i} HTTP/1.1\r\n{host}Content-Type: text/plain\r\n"
                f"Content-Length: {TRICKLE_BODY}\r\n\r\nx").encode()  # fmt: skip
    if phase == "not-reading":
        return b"".join(f"GET /big/{tag}-{i}-{k} HTTP/1.1\r\n{host}\r\n".encode()
                        for k in range(pipelined))  # fmt: skip
    if phase == "stalled-get-body":
        return (f"GET /x/{tag}-{i} HTTP/1.1\r\n{host}"
                f"Content-Length: {STALLED_BODY}\r\n\r\nx").encode()  # fmt: skip
    raise ValueError(f"no hostile clients in phase {phase!r}")


async def open_hostile(phase: str, port: int, args: argparse.Namespace) -> list[socket.socket]:
    """``args.hostile`` connections of ``phase``'s kind (a slow phase: its count, all
    from :data:`SLOW_CLIENT`), each with its request sent."""
    loop = asyncio.get_running_loop()
    tag = uuid.uuid4().hex
    socks: list[socket.socket] = []
    for i in range(SLOW_PHASES.get(phase, args.hostile)):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if phase == "not-reading":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, NOT_READING_RCVBUF)
        if phase in SLOW_PHASES:
            sock.bind((SLOW_CLIENT, 0))
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, ("127.0.0.1", port))
            await loop.sock_sendall(sock, hostile_request(phase, port, tag, i, args.pipelined,
                                                          args.slow_ms))
        except OSError:
            sock.close()
            continue
        socks.append(sock)
    return socks


async def trickle(socks: list[socket.socket], stop: asyncio.Event) -> None:
    """One more body byte a second on every connection, until ``stop``."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
        if stop.is_set():
            return
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.send(b"x")


def answered(socks: list[socket.socket]) -> int:
    """Connections the server has written to or closed (readable without blocking)."""
    count = 0
    for sock in socks:
        try:
            sock.recv(1, socket.MSG_PEEK)  # data, or b"" when the server closed
        except BlockingIOError:
            continue
        except OSError:
            pass
        count += 1
    return count


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


# -- one phase -------------------------------------------------------------------------


@dataclass
class PhaseRun:
    """One phase against one system."""

    p50_ms: float
    p99_ms: float
    max_ms: float
    requests: int  # answered
    unfinished: int  # still unanswered --grace seconds after the phase's end
    errors: int
    non_200: int
    origin_hits: int  # during the measurement
    hostile_open: int  # hostile connections established
    settle_s: float  # seconds from opening them to the measurement
    hostile_to_origin: int  # origin hits between opening them and the measurement
    hostile_to_origin_total: int  # origin hits of the phase beyond the visitors' requests
    hostile_answered: int  # hostile connections the server wrote to or closed by the end
    in_flight_before: int | None = None  # Stoker's /api/status in_flight before the phase
    in_flight_mid: int | None = None  # ... and half way through the measurement
    rss_end_mib: float | None = None  # Stoker's RSS at the phase's end
    drain_s: float | None = None  # a slow phase: seconds until its misses had ended

    @property
    def all_missed(self) -> bool:
        return self.origin_hits >= self.requests

    @property
    def clean(self) -> bool:
        return self.all_missed and not self.errors and not self.non_200


async def blocking(call: Callable[[], Any]) -> Any:
    return await asyncio.to_thread(call)


async def in_flight(stack: Stack, system: str, after: float = 0) -> int | None:
    """Stoker's ``in_flight`` (misses being fetched) ``after`` seconds from now (None
    for another system)."""
    if system != "stoker":
        return None
    await asyncio.sleep(after)
    try:
        status = await blocking(stack.status)
        return int(status["in_flight"])
    except (OSError, ValueError, KeyError):
        return None


async def drain(stack: Stack, system: str, args: argparse.Namespace) -> float:
    """After a slow phase: wait until Stoker has no miss in flight (its slow fetches
    outlive their closed clients; at most twice ``--slow-ms`` plus 10 s), for nginx
    ``--slow-ms``; the seconds waited."""
    began = time.monotonic()
    if system != "stoker":
        await asyncio.sleep(args.slow_ms / 1000)
        return time.monotonic() - began
    while time.monotonic() - began < 2 * args.slow_ms / 1000 + 10:
        if await in_flight(stack, system) == 0:
            break
        await asyncio.sleep(0.25)
    return time.monotonic() - began


async def settle(stack: Stack, args: argparse.Namespace) -> float:
    """Wait ``--settle`` seconds, then on until the origin's count has stood still for
    QUIET seconds (at most SETTLE_MAX in all): the server has taken the hostile requests
    and sent what it will to the origin.  The seconds waited."""
    began = time.monotonic()
    await asyncio.sleep(args.settle)
    hits = await blocking(stack.origin_hits)
    while time.monotonic() - began < SETTLE_MAX:
        await asyncio.sleep(QUIET)
        now = await blocking(stack.origin_hits)
        if now == hits:
            break
        hits = now
    return time.monotonic() - began


async def phase_run(
    stack: Stack, system: str, port: int, phase: str, args: argparse.Namespace
) -> PhaseRun:
    """Open ``phase``'s hostile clients, let them settle, measure the visitors, close."""
    before = await blocking(stack.origin_hits)
    in_flight_before = await in_flight(stack, system)
    socks = [] if phase == "idle" else await open_hostile(phase, port, args)
    stop = asyncio.Event()
    trickling = asyncio.create_task(trickle(socks if phase == "trickle-post" else [], stop))
    try:
        settled = await settle(stack, args) if socks else 0.0
        start_hits = await blocking(stack.origin_hits)
        midway = in_flight(stack, system, args.duration / 2)
        visits, in_flight_mid = await asyncio.gather(visit(port, args), midway)
        end_hits = await blocking(stack.origin_hits)
        hostile_answered = answered(socks)
    finally:
        stop.set()
        await trickling
        close_all(socks)
    drained = await drain(stack, system, args) if phase in SLOW_PHASES else None
    rss = status_kib(stack.pid, "VmRSS") / 1024 if system == "stoker" else None
    done = len(visits.latencies_ms)
    return PhaseRun(
        p50_ms=visits.percentile(50), p99_ms=visits.percentile(99),
        max_ms=visits.percentile(100), requests=done,
        unfinished=len(visits.unfinished_ms), errors=visits.errors, non_200=visits.non_200,
        origin_hits=end_hits - start_hits, hostile_open=len(socks), settle_s=settled,
        hostile_to_origin=start_hits - before, hostile_to_origin_total=end_hits - before - done,
        hostile_answered=hostile_answered, in_flight_before=in_flight_before,
        in_flight_mid=in_flight_mid, rss_end_mib=rss, drain_s=drained,
    )  # fmt: skip


# -- rounds ----------------------------------------------------------------------------


Round = dict[str, dict[str, PhaseRun]]


def one_round(stack: Stack, ports: dict[str, int], index: int, args: argparse.Namespace) -> Round:
    """Every system's phases once (the systems' order flips every other round)."""
    systems = list(ports) if index % 2 == 0 else list(reversed(ports))
    found: Round = {}
    for system in systems:
        found[system] = {}
        for phase in args.phases:
            run = asyncio.run(phase_run(stack, system, ports[system], phase, args))
            found[system][phase] = run
            report_phase(index, system, phase, run, found[system], args)
            time.sleep(args.gap)
    return found


def ratio(runs: dict[str, PhaseRun], phase: str) -> float:
    """``p99(phase) / p99(idle)`` of one system in one round."""
    return runs[phase].p99_ms / runs["idle"].p99_ms


def report_phase(
    index: int,
    system: str,
    phase: str,
    run: PhaseRun,
    runs: dict[str, PhaseRun],
    args: argparse.Namespace,
) -> None:
    extra = ""
    if phase != "idle":
        extra = (
            f"  {ratio(runs, phase):5.2f}x idle  hostile {run.hostile_open} "
            f"open, settled {run.settle_s:.1f} s, {run.hostile_to_origin}/"
            f"{run.hostile_to_origin_total} to origin (by start/in all), "
            f"{run.hostile_answered} answered"
        )
    if run.unfinished:
        extra += f", {run.unfinished} visitor requests UNFINISHED"
    if run.in_flight_mid is not None:
        extra += f", in_flight {run.in_flight_before} before, {run.in_flight_mid} midway"
    if run.rss_end_mib is not None:
        extra += f", RSS {run.rss_end_mib:.0f} MiB"
    if run.drain_s is not None:
        extra += f", drained in {run.drain_s:.1f} s"
    figures = f"p50 {run.p50_ms:7.2f} p99 {run.p99_ms:7.2f} max {run.max_ms:7.1f} ms"
    print(f"round {index + 1}/{args.rounds} {system:<6} {phase:<16} {figures}  "
          f"n {run.requests:5d}{extra}", flush=True)  # fmt: skip
    if run.in_flight_before:
        print(f"  warning: {system} {phase}: {run.in_flight_before} misses still in flight "
              "before the phase (left over from the one before)", flush=True)  # fmt: skip
    if not run.clean:
        print(f"  warning: {system} {phase}: origin served {run.origin_hits} for "
              f"{run.requests} visitor requests, {run.errors} errors, "
              f"{run.non_200} non-200", flush=True)  # fmt: skip


# -- summary ---------------------------------------------------------------------------


def summarise(rounds: list[Round], system: str, phases: list[str]) -> dict[str, Any]:
    """Per phase: the medians over rounds, the per-round p99 ratios and the verdict."""
    summary: dict[str, Any] = {}
    for phase in phases:
        runs = [r[system][phase] for r in rounds]
        ratios = [ratio(r[system], phase) for r in rounds]
        summary[phase] = {
            "p50_ms_median": statistics.median(run.p50_ms for run in runs),
            "p99_ms_median": statistics.median(run.p99_ms for run in runs),
            "max_ms_median": statistics.median(run.max_ms for run in runs),
            "requests_median": statistics.median(run.requests for run in runs),
            "unfinished_total": sum(run.unfinished for run in runs),
            "p99_ratio_per_round": ratios,
            "p99_ratio_median": statistics.median(ratios),
            "every_visitor_request_missed": all(run.all_missed for run in runs),
            "clean": all(run.clean for run in runs),
        }
        if phase != "idle":
            summary[phase]["goal_met"] = summary[phase]["p99_ratio_median"] <= GOAL_P99_RATIO
    return summary


def summary_row(system: str, phase: str, s: dict[str, Any]) -> str:
    """One line of the summary table."""
    rounds_text = " / ".join(f"{x:.2f}" for x in s["p99_ratio_per_round"])
    verdict = ""
    if "goal_met" in s:
        verdict = f"  goal <= {GOAL_P99_RATIO:g}x: {'met' if s['goal_met'] else 'MISSED'}"
    flag = "" if s["clean"] else "  (FLAGGED: see warnings)"
    if s["unfinished_total"]:
        flag += f"  ({s['unfinished_total']} unfinished)"
    return (f"  {system:<6} {phase:<16} {s['p50_ms_median']:8.2f} {s['p99_ms_median']:8.2f} "
            f"{s['max_ms_median']:8.1f} {s['requests_median']:6.0f}  "
            f"{s['p99_ratio_median']:7.2f}x  [{rounds_text}]{verdict}{flag}")  # fmt: skip


def print_summary(summaries: dict[str, dict[str, Any]], rounds: int) -> None:
    print(f"\nvisitors' misses, medians over {rounds} rounds (p99/idle per round in "
          f"brackets); goal: p99 <= {GOAL_P99_RATIO:g}x idle")  # fmt: skip
    print(f"  {'system':<6} {'phase':<16} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'count':>6}  {'p99/idle':>8}  per round")  # fmt: skip
    for system, summary in summaries.items():
        for phase, s in summary.items():
            print(summary_row(system, phase, s))
    missed = [
        f"{system}"
        for system, summary in summaries.items()
        if not all(s["every_visitor_request_missed"] for s in summary.values())
    ]
    print(
        "  every visitor request reached the origin: "
        + ("yes" if not missed else f"NO ({', '.join(missed)})")
    )


def stoker_package() -> str:
    """Where the ``stoker`` that ran was imported from (PYTHONPATH decides)."""
    spec = importlib.util.find_spec("stoker")
    return str(Path(spec.origin).parent) if spec and spec.origin else "unknown"


def write_report(
    args: argparse.Namespace, rounds: list[Round], summaries: dict[str, Any], seconds: float
) -> None:
    report = {
        "benchmark": "hostile",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": {key: value for key, value in vars(args).items() if key != "output"},
        "runtime_s": seconds,
        "stoker_package": stoker_package(),
        "goal_p99_ratio": GOAL_P99_RATIO,
        "rounds": [{system: {phase: {**asdict(run), "all_missed": run.all_missed}
                             for phase, run in runs.items()}
                    for system, runs in r.items()} for r in rounds],
        "summary": summaries,
    }  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


# -- command line ----------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per phase")
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"comma-separated, from {', '.join(PHASES)} (idle always runs)",
    )
    parser.add_argument("--visitors", type=int, default=4, help="concurrent visitors")
    parser.add_argument("--hostile", type=int, default=100, help="hostile connections")
    parser.add_argument(
        "--pipelined",
        type=int,
        default=3,
        help="requests each not-reading client sends at once (1: one page)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=2.0,
        help="seconds a visitor's request may run past the phase's end",
    )
    parser.add_argument(
        "--origin-reads-body",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="origin reads each request body before answering",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=0.5,
        help="seconds the server gets to take the hostile connections (then 0.5 s or more)",
    )
    parser.add_argument("--gap", type=float, default=0.3, help="quiet seconds after a phase")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="origin's fixed latency")
    parser.add_argument("--slow-ms", type=int, default=10_000,
                        help="the slow phases' pages: ms the origin takes to answer each")
    parser.add_argument("--stoker-core", type=int, default=1, help="Stoker and nginx")
    parser.add_argument("--client-core", type=int, default=0, help="this process and the origin")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to cores")
    parser.add_argument(
        "--nginx",
        action=argparse.BooleanOptionalAction,
        default=shutil.which("nginx") is not None,
        help="also run nginx's proxy_cache (default: when nginx is on PATH)",
    )
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "hostile.json")
    args = parser.parse_args(argv)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if set(phases) - set(PHASES):
        parser.error(f"--phases takes names from {', '.join(PHASES)}")
    args.phases = [p for p in PHASES if p == "idle" or p in phases]
    check_tools(parser, args)
    return args


def check_tools(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.no_pin:
        args.stoker_core = args.client_core = None
    elif (os.cpu_count() or 1) <= max(args.stoker_core, args.client_core):
        parser.error("this machine lacks the cores to pin to; pass --no-pin or other cores")
    needed = [*([] if args.no_pin else ["taskset"]), *(["nginx"] if args.nginx else [])]
    for tool in needed:
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed (apt-get install {tool}; "
                         "taskset is in util-linux)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop_on_sigterm()
    began = time.monotonic()
    rounds: list[Round] = []
    try:
        with contextlib.ExitStack() as running:
            stack = running.enter_context(serving(args))
            ports = {"stoker": stack.stoker.port}
            if args.nginx:
                ports["nginx"] = running.enter_context(
                    nginx_in_front(stack.origin.port, args.stoker_core)
                )
            if args.client_core is not None:
                pin(args.client_core)
            fetch(stack.admin_port, "/api/status")
            for index in range(args.rounds):
                rounds.append(one_round(stack, ports, index, args))
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped", file=sys.stderr)
        return 130
    summaries = {system: summarise(rounds, system, args.phases) for system in rounds[0]}
    print_summary(summaries, args.rounds)
    seconds = time.monotonic() - began
    print(f"runtime {seconds:.0f} s")
    write_report(args, rounds, summaries, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
