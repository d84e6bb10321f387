"""Memory per cached entry: L1's accounted bytes vs the real RSS growth of ``stoker serve``.

For each scenario a fresh Stoker (in front of ``bench/origin_app.py``) is filled with
``--entries`` distinct 20 KB pages through its proxy (aiohttp, ``--concurrency``
connections; the origin's counter must grow by ``--entries``), then the benchmark
waits until no L2 write is pending and reads ``l1_bytes`` / ``l1_entries`` from the
admin ``/api/status`` and ``VmRSS`` / ``VmHWM`` from ``/proc``.  Growth is measured
from the state after one request (the process warmed up), so it holds the cache and
whatever serving the fill left behind.

- ``fits``: ``l1_max_bytes`` 256 MiB (the default), so every entry stays in L1; the
  figure is ``RSS growth / L1 bytes accounted`` (goal ≤ 1.15).
- ``bounded``: ``l1_max_bytes`` = ``--bound`` (64 MiB), a third of the fill, so L1
  evicts; the figures are ``RSS growth / l1_max_bytes`` and ``peak RSS growth /
  l1_max_bytes`` (goal ≤ 1.15: the bound is never exceeded by more than that).

Scenarios alternate within each round (the order flips every round); the summary is
the median of the per-round ratios.  Stoker is pinned to ``--stoker-core`` (1), the
origin and this process to ``--client-core`` (0).

    PYTHONPATH=src .venv/bin/python bench/memory.py           # --entries 10000 --rounds 3
    PYTHONPATH=src .venv/bin/python bench/memory.py --scenarios bounded --rounds 1 \
        --stoker-env STOKER_L2_QUEUE_MAX_BYTES=1MiB          # Stoker's environment, repeatable

Results also go to ``bench/results/memory.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.page import PAGE  # noqa: E402
from bench.procs import REPO, Stack, reset_peak, serving, status_kib, stop_on_sigterm  # noqa: E402

MIB = 1024 * 1024
GOAL = 1.15
SCENARIOS = ("fits", "bounded")


async def fill(port: int, entries: int, concurrency: int) -> None:
    """GET ``entries`` distinct pages through Stoker; each must come back whole."""
    import aiohttp

    prefix = f"http://127.0.0.1:{port}/mem/{uuid.uuid4().hex}/"
    numbers = iter(range(entries))

    async def worker(session: aiohttp.ClientSession) -> None:
        for number in numbers:
            async with session.get(f"{prefix}{number}") as response:
                body = await response.read()
            if response.status != 200 or body != PAGE:
                raise RuntimeError(f"{prefix}{number}: status {response.status}, {len(body)} bytes")

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))


def settled_status(stack: Stack) -> dict[str, Any]:
    """``/api/status`` once no L2 write is pending (the store's stats flush first)."""
    for _ in range(600):
        status = stack.status()
        if status["pending_l2_writes"] == 0:
            return status
        time.sleep(0.1)
    raise RuntimeError("L2 writes still pending after 60 s")


def scenario(name: str, args: argparse.Namespace) -> dict[str, Any]:
    bound = 256 * MIB if name == "fits" else args.bound
    with serving({"l1_max_bytes": bound}, latency_ms=args.latency_ms,
                 stoker_core=args.stoker_core, origin_core=args.client_core,
                 env=args.stoker_env) as stack:  # fmt: skip
        before = settled_status(stack)["store"]
        rss_before = status_kib(stack.pid, "VmRSS")
        reset_peak(stack.pid)
        hits = stack.origin_hits()
        asyncio.run(fill(stack.stoker.port, args.entries, args.concurrency))
        missed = stack.origin_hits() - hits
        after = settled_status(stack)["store"]
        rss_after, peak = status_kib(stack.pid, "VmRSS"), status_kib(stack.pid, "VmHWM")
    accounted = after["l1_bytes"] - before["l1_bytes"]
    growth, peak_growth = (rss_after - rss_before) * 1024, (peak - rss_before) * 1024
    return {
        "l1_max_bytes": bound, "origin_hits": missed,
        "l1_entries": after["l1_entries"], "l1_bytes_accounted": accounted,
        "rss_before_kib": rss_before, "rss_after_kib": rss_after, "rss_peak_kib": peak,
        "growth_per_accounted": growth / accounted,
        "growth_per_bound": growth / bound, "peak_growth_per_bound": peak_growth / bound,
    }  # fmt: skip


def report_round(index: int, results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"round {index + 1}/{args.rounds} (load {os.getloadavg()[0]:.2f}):")
    for name, r in results.items():
        growth = (r["rss_after_kib"] - r["rss_before_kib"]) / 1024
        peak = (r["rss_peak_kib"] - r["rss_before_kib"]) / 1024
        print(
            f"  {name:<8} L1 {r['l1_entries']:>6} entries, "
            f"{r['l1_bytes_accounted'] / MIB:7.1f} MiB accounted (bound "
            f"{r['l1_max_bytes'] / MIB:.0f} MiB) | RSS +{growth:7.1f} MiB, peak +{peak:7.1f} MiB"
        )
        print(f"           growth/accounted {r['growth_per_accounted']:.3f}  growth/bound "
              f"{r['growth_per_bound']:.3f}  peak/bound {r['peak_growth_per_bound']:.3f}",
              flush=True)  # fmt: skip
        if r["origin_hits"] < args.entries:
            print(f"  warning: the origin served {r['origin_hits']} of {args.entries} pages")


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    def series(name: str, key: str) -> list[float]:
        return [r[name][key] for r in rounds if name in r]

    figures = {
        "fits": ["growth_per_accounted"],
        "bounded": ["growth_per_accounted", "growth_per_bound", "peak_growth_per_bound"],
    }
    summary: dict[str, Any] = {}
    for name in SCENARIOS:
        for key in figures[name]:
            values = series(name, key)
            if values:
                summary[f"{name}/{key}"] = {
                    "per_round": values,
                    "median": statistics.median(values),
                }
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    goals = {
        "fits/growth_per_accounted",
        "bounded/growth_per_bound",
        "bounded/peak_growth_per_bound",
    }
    print("\nmedians of per-round ratios:")
    for key, figure in summary.items():
        verdict = ""
        if key in goals:
            verdict = f"   goal <= {GOAL}: {'met' if figure['median'] <= GOAL else 'MISSED'}"
        rounds = " / ".join(f"{v:.3f}" for v in figure["per_round"])
        print(f"  {key:<34} {figure['median']:.3f}  [{rounds}]{verdict}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bound", type=int, default=64 * MIB, help="l1_max_bytes of 'bounded'")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=1.0, help="origin's fixed latency")
    parser.add_argument("--stoker-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0, help="the origin and this process")
    parser.add_argument(
        "--stoker-env",
        action="append",
        default=[],
        help="NAME=VALUE for Stoker's environment, e.g. MALLOC_ARENA_MAX=2 (repeatable)",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin to cores")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "memory.json")
    args = parser.parse_args(argv)
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if not args.scenarios or set(args.scenarios) - set(SCENARIOS):
        parser.error(f"--scenarios takes names from {', '.join(SCENARIOS)}")
    if args.no_pin:
        args.stoker_core = args.client_core = None
    elif (os.cpu_count() or 1) <= max(args.stoker_core, args.client_core):
        parser.error("this machine lacks the cores to pin to; pass --no-pin or other cores")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop_on_sigterm()
    if args.client_core is not None:
        os.sched_setaffinity(0, {args.client_core})
    rounds: list[dict[str, dict[str, Any]]] = []
    loads: list[float] = []
    try:
        for index in range(args.rounds):
            order = args.scenarios if index % 2 == 0 else args.scenarios[::-1]
            rounds.append({name: scenario(name, args) for name in order})
            loads.append(os.getloadavg()[0])
            report_round(index, rounds[-1], args)
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped", file=sys.stderr)
        return 130
    summary = summarise(rounds)
    print_summary(summary)
    print(f"load average (1 min) after each round: {' / '.join(f'{x:.2f}' for x in loads)}")
    report = {"benchmark": "memory", "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "config": {k: v for k, v in vars(args).items() if k != "output"},
              "load_average_per_round": loads, "rounds": rounds, "summary": summary}  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
