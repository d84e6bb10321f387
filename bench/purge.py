"""Purging a tag that covers 10,000 entries: the call's latency, and what it does to
concurrent requests and to the event loop.

Stoker (proxy + admin API on ``--server``, by default Stoker's own front as ``stoker
serve`` runs it; one process) runs in this process pinned to
core 1; a load generator (aiohttp, ``--concurrency`` connections) runs in a subprocess
pinned to core 0 and records every request's start time, latency and cache status.
``--entries`` entries tagged ``bench`` are written straight into the store (L1 +
SQLite L2, flushed); 100 untagged hot pages are filled through the proxy.  After
``--purge-at`` seconds of load, one purge is sent to ``POST /api/purge``.  A ticker task
on Stoker's event loop sleeps 1 ms at a time and records how late it wakes (the
longest lateness is the longest single stall of the loop, wall clock: on a loaded
machine it includes time the OS gave to other processes) and the loop thread's CPU
time between two wake-ups (which the OS cannot inflate: an upper bound of the longest
step, since the ≥ 1 ms between ticks can span several steps and the requests served
between them; it includes any garbage collection).  Garbage-collector pauses are
recorded too (``gc.callbacks``): the longest shows how much of a stall was the collector.

Scenarios:

- ``tag`` (hard) and ``soft``: the load is fresh hits on the hot pages.  "During" is
  from the purge request until its background L2 work is done (``store.flush()``).
  Goals: purge call ≤ 100 ms, hit p99 during ≤ 2x idle ("before", same run), no stall
  over 10 ms.
- ``all`` (hard, a version bump): the load is L1 misses (every request a new URL, so
  each goes through an L2 read, the origin and a store).  "During" is from the purge
  request until the background reclaim of the old entries is done.  Goal: miss p99
  during ≤ 3x idle.

Rounds interleave the scenarios; every ratio is measured within one run (idle vs
during), and the summary is the median of the per-round figures.  The load average
is printed for every run.

    .venv/bin/python bench/purge.py                         # --entries 10000 --rounds 3
    .venv/bin/python bench/purge.py --scenarios tag --rounds 1 --duration 4

Results go to ``bench/results/purge.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# keep bench/ off the path: its modules are imported as the ``bench`` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from bench.common import free_port, percentile, pin  # noqa: E402

HOT = 100
TOKEN = "bench-token"
CACHEABLE = [(b"cache-control", b"public, max-age=3600"), (b"content-type", b"text/html")]
PAGE = b"<html>" + b"x" * 2000 + b"</html>"
TICK = 0.001
GOALS = {"purge_ms": 100.0, "hit_p99_ratio": 2.0, "stall_ms": 10.0, "miss_p99_ratio": 3.0}




# -- the load generator (subprocess) ----------------------------------------------------


async def load(url: str, mode: str, duration: float, concurrency: int, out: Path) -> None:
    """Request hot pages (``hit``) or a new URL every time (``miss``) until ``duration``."""
    import aiohttp

    samples: list[tuple[float, float, int]] = []
    deadline = time.time() + duration
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker(index: int) -> None:
            i = index
            while time.time() < deadline:
                path = f"/hot/{i % HOT}" if mode == "hit" else f"/miss/{i}"
                started = time.time()
                t0 = time.perf_counter()
                async with session.get(f"{url}{path}") as response:
                    await response.read()
                    hit = int("hit" in response.headers.get("cache-status", ""))
                samples.append((started, time.perf_counter() - t0, hit))
                i += concurrency

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    out.write_text(json.dumps(samples))


# -- the origin, the ticker and Stoker (this process) -----------------------------------


async def origin_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [*CACHEABLE, (b"content-length", str(len(PAGE)).encode())]})
    await send({"type": "http.response.body", "body": PAGE})


async def ticker(stalls: list[tuple[float, float, float]], stop: asyncio.Event) -> None:
    """Sleep :data:`TICK` at a time; record ``(wall time, seconds late, loop CPU seconds)``
    per wake-up."""
    while not stop.is_set():
        t0, cpu0 = time.perf_counter(), time.thread_time()
        await asyncio.sleep(TICK)
        stalls.append((time.time(), time.perf_counter() - t0 - TICK, time.thread_time() - cpu0))


class GcPauses:
    """Records ``(wall time, seconds)`` of every garbage collection while installed."""

    def __init__(self) -> None:
        self.pauses: list[tuple[float, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((time.time(), time.perf_counter() - self._started))


async def fill(stoker: Any, proxy_url: str, entries: int) -> None:
    import aiohttp
    from tests.entries import make_entry

    now = stoker.clock.now()
    for i in range(entries):
        if i % 1000 == 0:
            await stoker.store.flush()  # within the L2 write queue's bound: none dropped
        url = f"{proxy_url}/page/{i}"
        await stoker.store.put(make_entry(
            url, primary_key=stoker.pipeline.keying.key_for_url(url), now=now, fresh=3600,
            stale=7200, error=7200, keep=7200, tags=("bench", f"page-{i}"), body=PAGE,
            body_size=len(PAGE)))
    await stoker.store.flush()
    if stoker.store.dropped:
        raise RuntimeError(f"the fill dropped {stoker.store.dropped} L2 writes")
    async with aiohttp.ClientSession() as session:
        for i in range(HOT):
            async with session.get(f"{proxy_url}/hot/{i}") as response:
                await response.read()


async def scenario(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    from stoker.adapters.asgi_proxy import ProxyApp
    from stoker.admin.app import build_admin_app
    from stoker.app.stoker import Stoker
    from stoker.app.warm_service import WarmService
    from stoker.config.settings import settings_from
    from stoker.server.listeners import run_apps

    origin_port, proxy_port, admin_port = free_port(), free_port(), free_port()
    origin_stop, stop = asyncio.Event(), asyncio.Event()
    origin_task = asyncio.create_task(run_apps("granian", [(origin_app,
                                                            f"127.0.0.1:{origin_port}")],
                                               origin_stop))
    stalls: list[tuple[float, float, float]] = []
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_from({"origin": f"http://127.0.0.1:{origin_port}",
                                  "data_dir": tmp, "admin_token": TOKEN,
                                  "warm_on_start": "never"})
        stoker = await Stoker.open(settings)
        warming = await WarmService.open(stoker) if args.warmer else None
        proxy_url = f"http://127.0.0.1:{proxy_port}"
        servers = asyncio.create_task(run_apps(args.server, [
            (ProxyApp(stoker.pipeline), f"127.0.0.1:{proxy_port}"),
            (build_admin_app(stoker), f"127.0.0.1:{admin_port}")], stop))
        tick_task = asyncio.create_task(ticker(stalls, stop))
        try:
            await asyncio.sleep(0.5)
            started = time.perf_counter()
            await fill(stoker, proxy_url, args.entries)
            fill_seconds = time.perf_counter() - started
            out = Path(tmp) / "samples.json"
            load_start = time.time()
            loader = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--load", proxy_url, "miss" if name == "all" else "hit",
                str(args.duration), str(args.concurrency), str(out))
            await asyncio.sleep(args.purge_at)
            body = {"all": True} if name == "all" else {"tags": ["bench"], "soft": name == "soft"}
            async with aiohttp.ClientSession() as session:
                purge_start = time.time()
                t0 = time.perf_counter()
                async with session.post(f"http://127.0.0.1:{admin_port}/api/purge", json=body,
                                        headers={"authorization": f"Bearer {TOKEN}"}) as reply:
                    result = await reply.json()
                purge_seconds = time.perf_counter() - t0
            await stoker.purger.drain()  # the reclaim (all)
            await stoker.store.flush()  # the background L2 part (tag, soft)
            background_seconds = time.perf_counter() - t0 - purge_seconds
            background_end = time.time()
            load_average = os.getloadavg()[0]
            await loader.wait()
            samples = json.loads(out.read_text())
        finally:
            stop.set()
            await servers
            await tick_task
            if warming is not None:
                await warming.close()
            await stoker.close()
            origin_stop.set()
            await origin_task
            gc.callbacks.remove(pauses)
    return summarise(name, samples, stalls, pauses.pauses,
                     (load_start, purge_start, background_end), purge_seconds,
                     background_seconds, fill_seconds, load_average, result)


def summarise(name: str, samples: list[list[float]], stalls: list[tuple[float, float, float]],
              pauses: list[tuple[float, float]], times: tuple[float, float, float],
              purge_seconds: float, background_seconds: float, fill_seconds: float,
              load_average: float, result: dict[str, Any]) -> dict[str, Any]:
    load_start, purge_start, background_end = times

    def window(keep: Any) -> dict[str, Any]:
        chosen = [s for s in samples if keep(s[0], s[0] + s[1])]
        latencies = [s[1] * 1000 for s in chosen]
        return {"requests": len(chosen), "p50_ms": round(percentile(latencies, 0.5), 2),
                "p99_ms": round(percentile(latencies, 0.99), 2),
                "max_ms": round(max(latencies, default=float("nan")), 2),
                "hits": sum(int(s[2]) for s in chosen)}

    before = window(lambda start, end: end < purge_start)
    during = window(lambda start, end: end >= purge_start and start <= background_end)
    def longest(rows: Any, index: int, start: float, end: float) -> float:
        return round(max((row[index] for row in rows if start <= row[0] <= end), default=0.0)
                     * 1000, 2)

    return {
        "scenario": name, "purged": result.get("purged"),
        "purge_ms": round(purge_seconds * 1000, 1),
        "background_ms": round(background_seconds * 1000, 1),
        "fill_s": round(fill_seconds, 2), "load_average": round(load_average, 2),
        "before": before, "during": during,
        "after": window(lambda start, end: start > background_end),
        "p99_ratio": round(during["p99_ms"] / before["p99_ms"], 2),
        "stall_max_ms": longest(stalls, 1, purge_start, background_end),
        "idle_stall_max_ms": longest(stalls, 1, load_start, purge_start),
        "step_cpu_max_ms": longest(stalls, 2, purge_start, background_end),
        "idle_step_cpu_max_ms": longest(stalls, 2, load_start, purge_start),
        "gc_max_ms": longest(pauses, 1, purge_start, background_end),
        "idle_gc_max_ms": longest(pauses, 1, load_start, purge_start),
    }


def verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "**missed**"


def report(results: list[dict[str, Any]], scenarios: list[str]) -> str:
    """The markdown tables: every round, then the medians against the goals."""
    lines = ["| scenario | round | load avg | purge call | L2/reclaim after it | p99 before "
             "| p99 during (requests) | p99 ratio | longest stall during (idle) "
             "| longest loop CPU run during (idle) | longest GC pause during (idle) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r['scenario']} | {r['round']} | {r['load_average']} | {r['purge_ms']} ms "
            f"| {r['background_ms']} ms | {r['before']['p99_ms']} ms "
            f"| {r['during']['p99_ms']} ms ({r['during']['requests']}) | {r['p99_ratio']}x "
            f"| {r['stall_max_ms']} ms ({r['idle_stall_max_ms']} ms) "
            f"| {r['step_cpu_max_ms']} ms ({r['idle_step_cpu_max_ms']} ms) "
            f"| {r['gc_max_ms']} ms ({r['idle_gc_max_ms']} ms) |")
    lines += ["", "| scenario | purge call (median) | p99 ratio (median) | longest stall "
              "(median) | longest loop CPU run (median) | goals |",
              "|---|---:|---:|---:|---:|---|"]
    for name in scenarios:
        mine = [r for r in results if r["scenario"] == name]
        purge = statistics.median(r["purge_ms"] for r in mine)
        ratio = statistics.median(r["p99_ratio"] for r in mine)
        stall = statistics.median(r["stall_max_ms"] for r in mine)
        step = statistics.median(r["step_cpu_max_ms"] for r in mine)
        if name == "all":
            goals = f"miss p99 ≤ 3x: {verdict(ratio, GOALS['miss_p99_ratio'])}"
        else:
            goals = (f"call ≤ 100 ms: {verdict(purge, GOALS['purge_ms'])}; hit p99 ≤ 2x: "
                     f"{verdict(ratio, GOALS['hit_p99_ratio'])}; stall ≤ 10 ms: "
                     f"{verdict(stall, GOALS['stall_ms'])}")
        lines.append(f"| {name} | {purge:.0f} ms | {ratio:.2f}x | {stall:.1f} ms "
                     f"| {step:.1f} ms | {goals} |")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    pin(1)
    scenarios = args.scenarios.split(",")
    results = []
    for round_ in range(args.rounds):
        for name in scenarios:
            summary = await scenario(name, args)
            summary["round"] = round_ + 1
            results.append(summary)
            print(json.dumps(summary), flush=True)
    print(report(results, scenarios))
    target = REPO / "bench" / "results" / "purge.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"args": vars(args), "results": results}, indent=1))


def cli() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        pin(0)
        url, mode, duration, concurrency, out = sys.argv[2:7]
        asyncio.run(load(url, mode, float(duration), int(concurrency), Path(out)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=5.0, help="load seconds per run")
    parser.add_argument("--purge-at", type=float, default=2.0, help="seconds into the load")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", default="tag,soft,all")
    parser.add_argument("--warmer", action="store_true",
                        help="subscribe the warmer to purges, as `stoker serve` does: a purge "
                             "call then also records its URLs for the debounced re-warm")
    parser.add_argument("--server", default="stoker", choices=("stoker", "granian"),
                        help="the HTTP server of the proxy and admin listeners")
    args = parser.parse_args()
    # as `stoker serve`: uvloop, and the heap frozen once imports are done (run_async)
    from stoker.server.listeners import run_async
    run_async(main(args))


if __name__ == "__main__":
    cli()
