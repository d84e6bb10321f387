"""Three Stoker nodes as one cache (PostgreSQL + Redis): purge visibility and collapsing.

Starts ``--nodes`` (3) ``stoker serve`` processes, each with its own ``data_dir``, sharing a
fresh PostgreSQL database (``--database``, created and dropped here) and a Redis database
(``--redis``, its Stoker keys deleted before and after), in front of one origin that
counts its requests and takes ``--delay`` seconds per answer.

- **Purge visibility**, ``--purges`` (100) times: every node caches ``/p/N``; the purge
  goes to a node's admin API (in turn), which answers once every node has it in force, so
  the call's duration is the time until every node refuses the old copy. Right after the
  answer a request goes to each node: none may be a hit (the count of purges where one
  was is reported, and must be 0). Reported: p50 and p99 of the duration.
- **Collapse ratio**: ``--herd`` (300) concurrent requests for one new URL spread over the
  nodes; the ratio is requests per origin request (the goal: all of them, one origin
  request).

    .venv/bin/python bench/cluster.py --purges 100 --herd 300

Results go to ``bench/results/cluster.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOKEN = "bench-cluster-token-0123456789"
SITE = {"host": "www.example.test"}
"""The site's Host on every request, as a load balancer passes it on (the nodes listen on
ports of their own, and the key holds the Host)."""


class Origin:
    """A threaded stdlib origin: cacheable pages, tagged by their number; counts requests."""

    def __init__(self, delay: float) -> None:
        self.hits: dict[str, int] = {}
        origin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                origin.hits[self.path] = origin.hits.get(self.path, 0) + 1
                time.sleep(delay)
                body = f"{self.path} #{origin.hits[self.path]}".encode()
                self.send_response(200)
                self.send_header("Cache-Control", "public, max-age=3600")
                self.send_header("Cache-Tag", f"page-{self.path.rsplit('/', 1)[-1]}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def psql(sql: str, args: argparse.Namespace) -> None:
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", sql],
                   check=True, capture_output=True)


def drop_redis_keys(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter("stoker:*"))
    if keys:
        client.delete(*keys)
    client.close()


def start_nodes(args: argparse.Namespace, origin: Origin, tmp: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "STOKER_DATABASE_URL": f"postgresql://postgres@127.0.0.1:5432/"
           f"{args.database}", "STOKER_L2_URL": args.redis,
           "STOKER_WARM_ON_START": "never", "STOKER_REFRESH_INTERVAL": "0"}
    nodes = []
    for index in range(args.nodes):
        port, admin = free_port(), free_port()
        log = (tmp / f"node{index}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "stoker", "serve", "--origin",
             f"http://127.0.0.1:{origin.port}", "--listen", f"127.0.0.1:{port}",
             "--admin-listen", f"127.0.0.1:{admin}", "--data-dir", str(tmp / f"node{index}"),
             "--admin-token", TOKEN, "--node-id", f"bench-{index}"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        nodes.append({"proc": proc, "port": port, "admin": admin, "log": log})
    return nodes


async def wait_ready(nodes: list[dict[str, Any]]) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        for node in nodes:
            for _ in range(300):
                try:
                    if (await client.get(f"http://127.0.0.1:{node['admin']}/readyz")
                            ).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise SystemExit(f"node on {node['port']} did not get ready")


def is_hit(response: httpx.Response) -> bool:
    return any(part.strip() == "hit" for part in response.headers.get("cache-status", "")
               .split(";"))


async def purge_visibility(nodes: list[dict[str, Any]], purges: int) -> dict[str, Any]:
    answered, stale_after = [], 0
    async with httpx.AsyncClient(timeout=30, headers=SITE) as client:
        for n in range(purges):
            path = f"/p/{n}"
            for node in nodes:
                await client.get(f"http://127.0.0.1:{node['port']}{path}")
                await client.get(f"http://127.0.0.1:{node['port']}{path}")  # in its L1
            admin = nodes[n % len(nodes)]["admin"]
            began = time.perf_counter()
            done = await client.post(f"http://127.0.0.1:{admin}/api/purge",
                                     json={"tags": [f"page-{n}"]},
                                     headers={"authorization": f"Bearer {TOKEN}",
                                              "host": f"127.0.0.1:{admin}"})
            answered.append(time.perf_counter() - began)
            if done.status_code != 200 or done.json()["unconfirmed"]:
                raise SystemExit(f"purge {n}: {done.status_code} {done.text[:200]}")
            seen = await asyncio.gather(*(client.get(f"http://127.0.0.1:{node['port']}{path}")
                                          for node in nodes))
            stale_after += any(is_hit(response) for response in seen)
    return {"purges": purges, "answered_p50_ms": 1000 * statistics.median(answered),
            "answered_p99_ms": 1000 * quantile(answered, 0.99),
            "old_copy_served_after_the_answer": stale_after}


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def collapse(nodes: list[dict[str, Any]], origin: Origin, herd: int) -> dict[str, Any]:
    path = "/herd/1"
    limits = httpx.Limits(max_connections=herd)
    async with httpx.AsyncClient(timeout=60, limits=limits, headers=SITE) as client:
        answers = await asyncio.gather(*(
            client.get(f"http://127.0.0.1:{nodes[i % len(nodes)]['port']}{path}")
            for i in range(herd)))
    fetched = origin.hits.get(path, 0)
    return {"requests": herd, "origin_requests": fetched,
            "ratio": herd / max(fetched, 1),
            "statuses": sorted({response.status_code for response in answers}),
            "cache_status": dict(Counter(response.headers.get("cache-status", "")
                                         for response in answers))}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    origin = Origin(args.delay)
    tmp = Path(tempfile.mkdtemp(prefix="stoker-cluster-"))
    nodes = start_nodes(args, origin, tmp)
    try:
        await wait_ready(nodes)
        herd = await collapse(nodes, origin, args.herd)
        visibility = await purge_visibility(nodes, args.purges)
        return {"nodes": args.nodes, "origin_delay_s": args.delay, "collapse": herd,
                "purge_visibility": visibility}
    finally:
        for node in nodes:
            node["proc"].terminate()
        for node in nodes:
            node["proc"].wait(30)
            node["log"].close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--purges", type=int, default=100)
    parser.add_argument("--herd", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.2, help="origin seconds per answer")
    parser.add_argument("--database", default="stoker_bench_cluster")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--output", type=Path, default=REPO / "bench/results/cluster.json")
    args = parser.parse_args()
    psql(f"DROP DATABASE IF EXISTS {args.database} WITH (FORCE)", args)
    psql(f"CREATE DATABASE {args.database}", args)
    drop_redis_keys(args.redis)
    try:
        report = asyncio.run(run(args))
    finally:
        drop_redis_keys(args.redis)
        psql(f"DROP DATABASE IF EXISTS {args.database} WITH (FORCE)", args)
    report["when"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    report["load"] = os.getloadavg()[0]
    herd, seen = report["collapse"], report["purge_visibility"]
    print(f"collapse: {herd['requests']} requests over {args.nodes} nodes -> "
          f"{herd['origin_requests']} origin request(s), ratio {herd['ratio']:.0f}, "
          f"statuses {herd['statuses']}")
    print(f"purge visibility over {seen['purges']} purges (the call answers once every node "
          f"has it in force): p50 {seen['answered_p50_ms']:.1f} ms, p99 "
          f"{seen['answered_p99_ms']:.1f} ms; purges after whose answer a node still served "
          f"the old copy: {seen['old_copy_served_after_the_answer']}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
