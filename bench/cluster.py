"""Stoker nodes as one cache (PostgreSQL + Redis): purge visibility, collapsing, and what
happens when Redis or a node fails.

Every scenario starts its own origin (which numbers each answer of a path, see
:mod:`bench.cluster_harness`), its own redis-server on a free port (``--save ''``), its
own PostgreSQL database (created and dropped), and ``--nodes`` (3) ``stoker serve`` nodes
of ``--processes`` (2) each, with their own ``data_dir``; all of it is stopped and removed
when the scenario ends.  ``--scenarios`` picks them (all by default); each prints a line
and writes ``bench/results/cluster-<scenario>.json``.

- ``collapse``: ``--herd`` (300) concurrent requests for one new URL over the nodes; the
  ratio is requests per origin request (goal: all of them, one origin request).
- ``purge-visibility``: ``--purges`` (100) times every node caches ``/p/N``, a tag purge
  goes to a node's admin API (in turn), which answers once every node has it in force;
  right after, each node is asked (goal: no old copy).  p50 / p99 of the call.
- ``redis-restart-empty``, ``redis-lru``, ``redis-down-purges``, ``lease-holder-killed``:
  see :mod:`bench.cluster_faults`.  Reported: old copies served after a purge's answer
  (goal 0), purges lost (goal 0), the herd's origin requests and latency.

    PYTHONPATH=src:. .venv/bin/python bench/cluster.py --scenarios collapse,purge-visibility
    PYTHONPATH=src:. .venv/bin/python bench/cluster.py --scenarios redis-down-purges --redis-down 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster_faults import SCENARIOS as FAULTS
from bench.cluster_faults import common, quantile
from bench.cluster_harness import (
    REPO,
    SITE,
    cluster,
    generation,
    purge,
    spread_client,
    warm,
)


async def purge_visibility(args: argparse.Namespace) -> dict[str, Any]:
    answered, stale_after, failed = [], 0, 0
    async with cluster("purge-visibility", **common(args), delay=args.delay) as found, \
            spread_client() as client:
        for n in range(args.purges):
            path = f"/p/{n}"
            await warm(client, found.nodes, [path])
            done = await purge(found.nodes[n % len(found.nodes)],
                               {"tags": [f"page-{n}"]}, found.origin.snapshot([path]))
            answered.append(done.answered - done.began)
            failed += done.status != 200 or bool(done.unconfirmed)
            seen = await asyncio.gather(*(client.get(f"{node.url}{path}")
                                          for node in found.nodes))
            stale_after += any((generation(r) or 10**9) <= done.snapshot[path] for r in seen)
    p50, p99 = 1000 * statistics.median(answered), 1000 * quantile(answered, 0.99)
    return {"line": f"purge-visibility over {args.purges} purges (the call answers once "
                    f"every node has it in force): p50 {p50:.1f} ms, p99 {p99:.1f} ms; "
                    f"purges after whose answer a node still served the old copy: "
                    f"{stale_after}; failed or unconfirmed answers {failed}",
            "purges": args.purges, "answered_p50_ms": p50, "answered_p99_ms": p99,
            "old_copy_served_after_the_answer": stale_after, "failed_answers": failed}


async def collapse(args: argparse.Namespace) -> dict[str, Any]:
    path = "/herd/1"
    async with cluster("collapse", **common(args), delay=args.delay) as found:
        limits = httpx.Limits(max_connections=args.herd)
        async with httpx.AsyncClient(timeout=60, limits=limits, headers=SITE) as client:
            answers = await asyncio.gather(*(
                client.get(f"{found.nodes[i % len(found.nodes)].url}{path}")
                for i in range(args.herd)))
        fetched = found.origin.hits.get(path, 0)
    statuses = sorted({response.status_code for response in answers})
    return {"line": f"collapse: {args.herd} requests over {args.nodes} nodes -> {fetched} "
                    f"origin request(s), ratio {args.herd / max(fetched, 1):.0f}, statuses "
                    f"{statuses}",
            "requests": args.herd, "origin_requests": fetched,
            "ratio": args.herd / max(fetched, 1), "statuses": statuses,
            "cache_status": dict(Counter(response.headers.get("cache-status", "")
                                         for response in answers))}


SCENARIOS = {"collapse": collapse, "purge-visibility": purge_visibility, **FAULTS}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2, help="processes per node")
    parser.add_argument("--purges", type=int, default=100,
                        help="purge-visibility's purges (redis-down-purges: 25 unless given)")
    parser.add_argument("--herd", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.2, help="origin seconds per answer "
                        "(collapse, purge-visibility; the fault scenarios use 0.02)")
    parser.add_argument("--pages", type=int, default=20, help="pages of the fault scenarios")
    parser.add_argument("--probes", type=int, default=4,
                        help="GETs of each page on each node per check (over its processes)")
    parser.add_argument("--recheck", type=float, default=10.0,
                        help="seconds after an answer of the second check")
    parser.add_argument("--maxmemory", default="4mb", help="redis-lru's maxmemory")
    parser.add_argument("--fill", type=int, default=600,
                        help="redis-lru's 20 KB pages filling Redis past maxmemory")
    parser.add_argument("--redis-down", type=float, default=30.0,
                        help="seconds Redis is stopped in redis-down-purges")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds of load after Redis is back (redis-down-purges)")
    parser.add_argument("--workers", type=int, default=16, help="redis-down-purges' clients")
    parser.add_argument("--slow-delay", type=float, default=6.0,
                        help="lease-holder-killed's origin seconds")
    parser.add_argument("--kill-after", type=float, default=1.0,
                        help="seconds into the holder's fetch it is killed -9")
    parser.add_argument("--waiters", type=int, default=200)
    parser.add_argument("--keep-logs", type=Path, default=None,
                        help="copy the nodes' logs here")
    parser.add_argument("--output-dir", type=Path, default=REPO / "bench/results")
    args = parser.parse_args()
    args.scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}")
    return args


def main() -> None:
    args = arguments()
    for name in args.scenarios:
        run_args = argparse.Namespace(**vars(args))
        if name == "redis-down-purges" and "--purges" not in sys.argv:
            run_args.purges = 25
        began = time.monotonic()
        report = asyncio.run(SCENARIOS[name](run_args))
        report |= {"scenario": name, "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   "seconds": round(time.monotonic() - began, 1), "load": os.getloadavg()[0],
                   "argv": sys.argv}
        print(report["line"], flush=True)
        args.output_dir.mkdir(parents=True, exist_ok=True)
        out = args.output_dir / f"cluster-{name}.json"
        out.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"  wrote {out}", flush=True)


if __name__ == "__main__":
    main()
