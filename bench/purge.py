"""Purging a tag that covers 10,000 entries, and what it does to concurrent hit latency.

Stoker (proxy + admin API on granian, one process) runs in this process pinned to
core 1; a load generator (aiohttp, ``--concurrency`` connections, fresh hits on 100
untagged hot pages) runs in a subprocess pinned to core 0 and records every request's
start time and latency.  ``--entries`` entries tagged ``bench`` are written straight
into the store (L1 + SQLite L2, flushed); the hot pages are filled through the proxy.
After ``--purge-at`` seconds of load, one purge is sent to ``POST /api/purge``.

Scenarios: ``tag`` (hard: delete from L1 and L2), ``soft`` (mark stale), ``all``
(bump the version; old entries reclaimed in the background — the hot pages become
misses too, so its "during" latencies include origin fetches).

    .venv/bin/python bench/purge.py                         # --entries 10000 --rounds 3
    .venv/bin/python bench/purge.py --scenarios tag --rounds 1 --duration 4

Results go to ``bench/results/purge.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# bench/queue.py would shadow the stdlib ``queue`` module: keep bench/ off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(REPO / "src"))

HOT = 100
TOKEN = "bench-token"
CACHEABLE = [(b"cache-control", b"public, max-age=3600"), (b"content-type", b"text/html")]
PAGE = b"<html>" + b"x" * 2000 + b"</html>"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pin(core: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        if os.cpu_count() and os.cpu_count() > core:  # type: ignore[operator]
            os.sched_setaffinity(0, {core})


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the load generator (subprocess) ----------------------------------------------------


async def load(url: str, duration: float, concurrency: int, out: Path) -> None:
    import aiohttp

    samples: list[tuple[float, float, int]] = []
    deadline = time.time() + duration
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker(index: int) -> None:
            i = index
            while time.time() < deadline:
                started = time.time()
                t0 = time.perf_counter()
                async with session.get(f"{url}/hot/{i % HOT}") as response:
                    await response.read()
                    hit = int("hit" in response.headers.get("cache-status", ""))
                samples.append((started, time.perf_counter() - t0, hit))
                i += concurrency

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    out.write_text(json.dumps(samples))


# -- the origin and Stoker (this process) -----------------------------------------------


async def origin_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [*CACHEABLE, (b"content-length", str(len(PAGE)).encode())]})
    await send({"type": "http.response.body", "body": PAGE})


async def fill(stoker: Any, proxy_url: str, entries: int) -> None:
    import aiohttp

    from stoker.cache.testing import make_entry

    now = stoker.clock.now()
    for i in range(entries):
        url = f"{proxy_url}/page/{i}"
        await stoker.store.put(make_entry(
            url, primary_key=stoker.pipeline.key_for_url(url), now=now, fresh=3600,
            stale=7200, error=7200, keep=7200, tags=("bench", f"page-{i}"), body=PAGE,
            body_size=len(PAGE)))
    await stoker.store.flush()
    async with aiohttp.ClientSession() as session:
        for i in range(HOT):
            async with session.get(f"{proxy_url}/hot/{i}") as response:
                await response.read()


async def scenario(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    from stoker.admin.app import build_admin_app
    from stoker.proxy.asgi_proxy import ProxyApp
    from stoker.runtime import Stoker
    from stoker.server import run_apps
    from stoker.settings import settings_from

    origin_port, proxy_port, admin_port = free_port(), free_port(), free_port()
    origin_stop, stop = asyncio.Event(), asyncio.Event()
    origin_task = asyncio.create_task(run_apps("granian", [(origin_app,
                                                            f"127.0.0.1:{origin_port}")],
                                               origin_stop))
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_from({"origin": f"http://127.0.0.1:{origin_port}",
                                  "data_dir": tmp, "admin_token": TOKEN})
        stoker = await Stoker.open(settings)
        proxy_url = f"http://127.0.0.1:{proxy_port}"
        servers = asyncio.create_task(run_apps("granian", [
            (ProxyApp(stoker.pipeline), f"127.0.0.1:{proxy_port}"),
            (build_admin_app(stoker), f"127.0.0.1:{admin_port}")], stop))
        try:
            await asyncio.sleep(0.5)
            started = time.perf_counter()
            await fill(stoker, proxy_url, args.entries)
            fill_seconds = time.perf_counter() - started
            out = Path(tmp) / "samples.json"
            loader = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--load", proxy_url, str(args.duration),
                str(args.concurrency), str(out))
            await asyncio.sleep(args.purge_at)
            body = {"all": True} if name == "all" else {"tags": ["bench"], "soft": name == "soft"}
            async with aiohttp.ClientSession() as session:
                purge_start = time.time()
                t0 = time.perf_counter()
                async with session.post(f"http://127.0.0.1:{admin_port}/api/purge", json=body,
                                        headers={"authorization": f"Bearer {TOKEN}"}) as reply:
                    result = await reply.json()
                purge_seconds = time.perf_counter() - t0
                purge_end = time.time()
            t0 = time.perf_counter()
            await stoker.purger.drain()
            reclaim_seconds = time.perf_counter() - t0
            await loader.wait()
            samples = json.loads(out.read_text())
        finally:
            stop.set()
            await servers
            await stoker.close()
            origin_stop.set()
            await origin_task
    return summarise(name, samples, purge_start, purge_end, purge_seconds, reclaim_seconds,
                     fill_seconds, result)


def summarise(name: str, samples: list[list[float]], purge_start: float, purge_end: float,
              purge_seconds: float, reclaim_seconds: float, fill_seconds: float,
              result: dict[str, Any]) -> dict[str, Any]:
    def window(keep: Any) -> dict[str, Any]:
        chosen = [s for s in samples if keep(s[0], s[0] + s[1])]
        latencies = [s[1] * 1000 for s in chosen]
        return {"requests": len(chosen), "p50_ms": round(percentile(latencies, 0.5), 2),
                "p99_ms": round(percentile(latencies, 0.99), 2),
                "max_ms": round(max(latencies, default=float("nan")), 2),
                "hits": sum(int(s[2]) for s in chosen)}

    return {
        "scenario": name, "purged": result.get("purged"), "purge_ms": round(purge_seconds * 1000,
                                                                           1),
        "reclaim_ms": round(reclaim_seconds * 1000, 1), "fill_s": round(fill_seconds, 2),
        "before": window(lambda start, end: end < purge_start),
        "during": window(lambda start, end: end >= purge_start and start <= purge_end),
        "after": window(lambda start, end: start > purge_end),
    }


async def main(args: argparse.Namespace) -> None:
    pin(1)
    results = []
    for round_ in range(args.rounds):
        for name in args.scenarios.split(","):
            summary = await scenario(name, args)
            summary["round"] = round_ + 1
            results.append(summary)
            print(json.dumps(summary))
    table = ["| scenario | purged | purge (median) | hit p50/p99 before | hit p50/p99 during "
             "(requests) | p50/p99 after |", "|---|---:|---:|---|---|---|"]
    for name in args.scenarios.split(","):
        mine = [r for r in results if r["scenario"] == name]
        med = statistics.median(r["purge_ms"] for r in mine)
        last = mine[len(mine) // 2]
        table.append(
            f"| {name} | {last['purged']} | {med:.0f} ms | {last['before']['p50_ms']} / "
            f"{last['before']['p99_ms']} ms | {last['during']['p50_ms']} / "
            f"{last['during']['p99_ms']} ms ({last['during']['requests']}) | "
            f"{last['after']['p50_ms']} / {last['after']['p99_ms']} ms |")
    print("\n".join(table))
    target = REPO / "bench" / "results" / "purge.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"args": vars(args), "results": results}, indent=1))


def cli() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        pin(0)
        url, duration, concurrency, out = sys.argv[2:6]
        asyncio.run(load(url, float(duration), int(concurrency), Path(out)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=5.0, help="load seconds per run")
    parser.add_argument("--purge-at", type=float, default=2.0, help="seconds into the load")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", default="tag,soft,all")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
