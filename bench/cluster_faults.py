"""bench/cluster.py's fault scenarios: Redis restarted empty, Redis evicting
(``allkeys-lru``), Redis down during purges, a fetch lease's holder killed.

Each takes the parsed arguments and returns its report: a one-line ``line`` and the
figures.  An *old copy* is a body whose origin generation is at most the one the path had
when the purge was called, served by a request made after the purge's answer (goal 0); a
*lost purge* is one answered after which some node still serves an old copy at the end
of the scenario, when everything is back and settled (goal 0).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

import httpx
from bench.cluster_harness import (
    SITE,
    Cluster,
    Purge,
    cluster,
    generation,
    probe,
    purge,
    spread_client,
    warm,
)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def common(args: argparse.Namespace) -> dict[str, Any]:
    return {"nodes": args.nodes, "processes": args.processes, "keep_logs": args.keep_logs}


async def checked_purge(found: Cluster, index: int, payload: dict[str, Any],
                        paths: list[str], args: argparse.Namespace,
                        rounds: list[dict[str, Any]], *, recheck: bool = True) -> Purge:
    """Purge on node ``index``, then probe every node right after the answer and, with
    ``recheck``, again ``--recheck`` seconds later (appended to ``rounds``)."""
    done = await purge(found.nodes[index], payload, found.origin.snapshot(paths))
    async with spread_client() as client:
        rounds.append({"after": "answer", **await probe(client, found.nodes, paths,
                                                        done.snapshot, args.probes)})
        if recheck:
            await asyncio.sleep(args.recheck)
            rounds.append({"after": f"{args.recheck:g} s", **await probe(
                client, found.nodes, paths, done.snapshot, args.probes)})
    return done


async def redis_restart_empty(args: argparse.Namespace) -> dict[str, Any]:
    """Purge everything on node 0; restart Redis empty and the last node; then, each time
    after every node fetched the pages again, a tag purge of every page on node 0, and
    everything purged on the restarted node, then on node 0: old copies after each
    answer (and ``--recheck`` seconds later) and right after the restart."""
    paths = [f"/r/{n}" for n in range(args.pages)]
    tags = {"tags": [f"page-{n}" for n in range(args.pages)]}
    checks: dict[str, list[dict[str, Any]]] = {}
    purges: list[Purge] = []
    async with cluster("redis-restart-empty", **common(args)) as found:
        restarted = len(found.nodes) - 1
        async with spread_client() as client:
            await warm(client, found.nodes, paths)
        purges.append(await checked_purge(found, 0, {"all": True}, paths, args,
                                          checks.setdefault("all on node 0", [])))
        versions = {"before the restart": await found.versions()}
        found.redis.stop()
        found.redis.start()
        found.stop(found.nodes[restarted])
        found.start(found.nodes[restarted])
        await found.ready()
        versions["after the restart"] = await found.versions()
        async with spread_client() as client:
            await warm(client, found.nodes, paths)
            checks["the restart"] = [await probe(client, found.nodes, paths,
                                                 purges[0].snapshot, args.probes)]
        for label, index, payload in (("tags on node 0", 0, tags),
                                      (f"all on node {restarted}", restarted, {"all": True}),
                                      ("all on node 0 again", 0, {"all": True})):
            async with spread_client() as client:
                await warm(client, found.nodes, paths)
            purges.append(await checked_purge(found, index, payload, paths, args,
                                              checks.setdefault(label, [])))
            versions[f"after {label}"] = await found.versions()
    old = sum(r["old"] for rounds in checks.values() for r in rounds)
    lost = sum(1 for label, rounds in checks.items() if label != "the restart"
               and rounds[-1]["old"])
    each = ", ".join(f"{label} {'/'.join(str(r['old']) for r in rounds)}"
                     for label, rounds in checks.items())
    return {"line": f"redis-restart-empty: {old} old copies after answers ({each}; after "
                    f"the answer/{args.recheck:g} s later), purges lost {lost} of "
                    f"{len(purges)}; versions {' -> '.join(map(str, versions.values()))}",
            "old_copies_after_answers": old, "purges_lost": lost,
            "purges": [p.summary() for p in purges], "checks": checks, "versions": versions}


async def redis_lru(args: argparse.Namespace) -> dict[str, Any]:
    """Redis at a small ``maxmemory`` with ``allkeys-lru``, nodes with no L1 (every hit is
    a Redis read): tagged pages cached, Redis filled past maxmemory while they stay read,
    then each tagged page purged by tag."""
    paths = [f"/l/{n}" for n in range(args.pages)]
    redis_args = ["--maxmemory", args.maxmemory, "--maxmemory-policy", "allkeys-lru"]
    async with cluster("redis-lru", **common(args), redis_args=redis_args,
                       settings={"STOKER_L1_MAX_BYTES": "0"}) as found:
        async with spread_client() as client:
            await warm(client, found.nodes, paths)
            for start in range(0, args.fill, 50):
                await asyncio.gather(*(client.get(f"{found.nodes[n % args.nodes].url}"
                                                  f"/fill/{n}")
                                       for n in range(start, min(start + 50, args.fill))))
                await warm(client, found.nodes, paths, times=1)  # the entries stay recent
        redis = found.redis.client()
        keys = {kind: sum(1 for _ in redis.scan_iter(f"stoker:{kind}:*", count=1000))
                for kind in ("e", "t", "v")}
        info = redis.info("stats")
        tag_sets = sum(1 for n in range(args.pages) if redis.exists(f"stoker:t:page-{n}"))
        redis.close()
        rounds: list[dict[str, Any]] = []
        purges = [await checked_purge(found, n % args.nodes, {"tags": [f"page-{n}"]},
                                      [path], args, rounds, recheck=False)
                  for n, path in enumerate(paths)]
        await asyncio.sleep(args.recheck)
        snapshot = {path: p.snapshot[path] for path, p in zip(paths, purges, strict=True)}
        async with spread_client() as client:
            final = await probe(client, found.nodes, paths, snapshot, args.probes)
    old = sum(r["old"] for r in rounds) + final["old"]
    lost = len(final["old_paths"])
    return {"line": f"redis-lru (maxmemory {args.maxmemory}, {args.fill} fill pages): "
                    f"{old} old copies after answers ({sum(r['old'] for r in rounds)} right "
                    f"after, {final['old']} {args.recheck:g} s after the last), purges lost "
                    f"{lost} of {len(purges)}; tag sets left {tag_sets} of {args.pages}, "
                    f"evicted keys {info.get('evicted_keys')}",
            "old_copies_after_answers": old, "purges_lost": lost,
            "purges": [p.summary() for p in purges], "rounds": rounds, "final_probe": final,
            "redis_keys_before_purges": keys, "tag_sets_left": tag_sets,
            "evicted_keys": info.get("evicted_keys")}


class Load:
    """Clients GETting random pages on random nodes until stopped; every answer kept as
    (time asked, path, generation)."""

    def __init__(self, found: Cluster, paths: list[str], workers: int) -> None:
        self.found, self.paths, self.workers = found, paths, workers
        self.seen: list[tuple[float, str, int | None]] = []
        self.running = True

    async def run(self) -> None:
        async with spread_client(timeout=20) as client:
            await asyncio.gather(*(self._worker(client) for _ in range(self.workers)))

    async def _worker(self, client: httpx.AsyncClient) -> None:
        rng = random.Random()
        while self.running:
            node, path = rng.choice(self.found.nodes), rng.choice(self.paths)
            asked = time.monotonic()
            try:
                self.seen.append((asked, path, generation(await client.get(
                    f"{node.url}{path}"))))
            except httpx.HTTPError:
                self.seen.append((asked, path, None))
                await asyncio.sleep(0.05)

    def old_after(self, done: Purge) -> int:
        """Old copies of ``done``'s path served to requests made after its answer."""
        path, = done.snapshot
        return sum(1 for asked, seen_path, gen in self.seen
                   if seen_path == path and asked > done.answered and gen is not None
                   and gen <= done.snapshot[path])


async def redis_down_purges(args: argparse.Namespace) -> dict[str, Any]:
    """Under load, Redis stopped ``--redis-down`` seconds while ``--purges`` tag purges
    (one page each) are made over the nodes; then Redis started again and the load kept
    ``--settle`` seconds; at the end every node is probed for every purged page."""
    paths = [f"/d/{n}" for n in range(max(args.pages, args.purges))]
    async with cluster("redis-down-purges", **common(args)) as found:
        async with spread_client() as client:
            await warm(client, found.nodes, paths)
        load = Load(found, paths, args.workers)
        running = asyncio.create_task(load.run())
        await asyncio.sleep(2)
        found.redis.stop()
        stopped = time.monotonic()
        step = 0.8 * args.redis_down / args.purges

        async def nth(n: int) -> Purge:
            await asyncio.sleep(n * step)
            path = paths[n]
            return await purge(found.nodes[n % args.nodes], {"tags": [f"page-{n}"]},
                               found.origin.snapshot([path]))

        calls = asyncio.gather(*(nth(n) for n in range(args.purges)))
        await asyncio.sleep(max(0.0, args.redis_down - (time.monotonic() - stopped)))
        found.redis.start()
        purges = await calls
        await asyncio.sleep(args.settle)
        load.running = False
        await running
        purged = [paths[n] for n in range(args.purges)]
        snapshot = {path: p.snapshot[path] for path, p in zip(purged, purges, strict=True)}
        async with spread_client() as client:
            final = await probe(client, found.nodes, purged, snapshot, args.probes)
    old_each = [load.old_after(p) for p in purges]
    lost = sorted(final["old_paths"])
    statuses: dict[str, int] = {}
    for p in purges:
        statuses[str(p.status)] = statuses.get(str(p.status), 0) + 1
    seconds = [p.answered - p.began for p in purges]
    errors = sum(1 for _, _, gen in load.seen if gen is None)
    return {"line": f"redis-down-purges (Redis down {args.redis_down:g} s, {args.purges} "
                    f"purges): {sum(old_each)} old copies after answers (of "
                    f"{len(load.seen)} requests, {errors} failed), purges lost {len(lost)} "
                    f"of {args.purges}; answers {statuses}, call p50 "
                    f"{statistics.median(seconds):.2f} s, max {max(seconds):.2f} s",
            "old_copies_after_answers": sum(old_each), "purges_lost": len(lost),
            "lost_paths": lost, "old_after_each_purge": old_each,
            "purges": [p.summary() for p in purges], "answers": statuses,
            "requests": len(load.seen), "failed_requests": errors, "final_probe": final}


async def lease_holder_killed(args: argparse.Namespace) -> dict[str, Any]:
    """Node 0 fetches a slow page (``--slow-delay``); once its request reaches the origin,
    ``--waiters`` requests for it go to the other nodes; node 0 is killed -9 ``--kill-after``
    seconds into its fetch.  The waiters' latency and the origin's requests."""
    path = "/slow/1"
    async with cluster("lease-holder-killed", **common(args),
                       slow_delay=args.slow_delay) as found:
        holder, others = found.nodes[0], found.nodes[1:]
        async with httpx.AsyncClient(timeout=120, headers=SITE) as first, spread_client(
                timeout=120) as client:
            leading = asyncio.create_task(first.get(f"{holder.url}{path}"))
            while not found.origin.hits.get(path):
                await asyncio.sleep(0.01)
            fetch_began = time.monotonic()

            async def waiter(n: int) -> tuple[float, int | None]:
                began = time.monotonic()
                try:
                    answer = await client.get(f"{others[n % len(others)].url}{path}")
                    return time.monotonic() - began, answer.status_code
                except httpx.HTTPError:
                    return time.monotonic() - began, None

            waiting = asyncio.gather(*(waiter(n) for n in range(args.waiters)))
            await asyncio.sleep(max(0.0, args.kill_after - (time.monotonic() - fetch_began)))
            found.stop(holder, kill=True)
            answers = await waiting
            leading.cancel()
        origin_requests = found.origin.hits.get(path, 0)
    latencies = [seconds for seconds, _ in answers]
    statuses: dict[str, int] = {}
    for _, status in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {"line": f"lease-holder-killed (origin {args.slow_delay:g} s, holder killed at "
                    f"{args.kill_after:g} s, {args.waiters} waiters on {len(others)} nodes): "
                    f"waiters p50 {statistics.median(latencies):.1f} s, max "
                    f"{max(latencies):.1f} s, statuses {statuses}; origin requests "
                    f"{origin_requests} (goal <= {len(found.nodes)}: 1 per node)",
            "waiters": args.waiters, "latency_p50_s": statistics.median(latencies),
            "latency_p99_s": quantile(latencies, 0.99), "latency_max_s": max(latencies),
            "statuses": statuses, "origin_requests": origin_requests}


SCENARIOS = {"redis-restart-empty": redis_restart_empty, "redis-lru": redis_lru,
             "redis-down-purges": redis_down_purges,
             "lease-holder-killed": lease_holder_killed}
