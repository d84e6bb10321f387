"""A long mixed-traffic soak of ``stoker serve``: does its RSS level off while
:class:`stoker.server.heap.HeapKeeper` freezes what survives full collections?  (An object alive
at a freeze that later dies in a reference cycle waits for the hourly unfreeze.)

The origin (``bench/origin_app.py``, ``--latency-ms``) and ``stoker serve`` (the default
server, ``l1_max_bytes = "32MiB"``, an admin token) run as subprocesses
(``bench/procs.py``), Stoker pinned to core 1 and the origin and this process to core 0.
One asyncio/aiohttp client starts ``--rate`` requests a second at fixed times (a slow
answer delays none of the next) for ``--minutes``:

- 70 %: one of 200 hot URLs (``/soak/hot/N``), hits once stored;
- 30 %: one of 200,000 cold URLs (``/soak/cold/D/N``, ``D`` = N mod 10), mostly misses
  that fill L1 (20 KB pages: about 1,100 fit) and evict from it, and fill L2 (SQLite);
- a URL whose number is a multiple of 3 carries ``?tag=tK`` (K = N mod 4), which the
  origin turns into ``Cache-Tag: tK``.

Every 30 s one purge goes to ``POST /api/purge``, in turn: a soft purge of a tag, a hard
purge of a tag, a purge of the prefix ``/soak/cold/D/`` (a tenth of the cold URLs).
Every 10 s (and once before the load) Stoker's ``VmRSS`` and the ``gc`` block of
``/api/status`` (objects frozen, collections per generation, the keeper's freezes and
deep collections) are sampled and printed, one line each.  At the end a table: RSS
before the load, at minutes 1, 5, 10, … and at the end; the largest RSS; the
least-squares slope of RSS over the second half (MiB per 10 min: near 0 is a plateau);
freezes; deep collections; requests by Cache-Status; errors (an exception, a status
outside 200-399 or a wrong body); requests not started because ``MAX_IN_FLIGHT`` were
outstanding; the purges.

``--no-keeper`` runs Stoker as ``python -m bench.stoker_no_keeper`` (the keeper removed
right after ``run_async`` installs it), for comparison; run it after, never alongside.

    PYTHONPATH=$PWD/src .venv/bin/python bench/soak.py               # --minutes 20 --rate 400
    PYTHONPATH=$PWD/src .venv/bin/python bench/soak.py --no-keeper

Results go to ``bench/results/soak.json`` (``soak-no-keeper.json`` with ``--no-keeper``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import pin  # noqa: E402
from bench.hit_path.page import PAGE  # noqa: E402
from bench.procs import REPO, serving, status_kib, stop_on_sigterm  # noqa: E402

MIB = 1024 * 1024
TOKEN = "soak-token"
HOT, COLD, TAGS = 200, 200_000, 4
HOT_SHARE = 0.7
SAMPLE_EVERY, PURGE_EVERY = 10.0, 30.0
MAX_IN_FLIGHT = 256
TIMEOUT = aiohttp.ClientTimeout(total=30)


@dataclass
class Tally:
    """What the load saw: requests started, answers by Cache-Status, errors by kind."""

    sent: int = 0
    skipped: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)  # since the last sample


@dataclass
class Admin:
    """Stoker's admin API, with the bearer token."""

    session: aiohttp.ClientSession
    url: str

    async def status(self) -> dict[str, Any]:
        async with self.session.get(f"{self.url}/api/status") as response:
            response.raise_for_status()
            status: dict[str, Any] = await response.json()
            return status

    async def purge(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        async with self.session.post(f"{self.url}/api/purge", json=body) as response:
            return response.status, await response.json()


def path_for(rng: random.Random) -> str:
    """A hot or a cold path, tagged when its number is a multiple of 3."""
    if rng.random() < HOT_SHARE:
        number = rng.randrange(HOT)
        path = f"/soak/hot/{number}"
    else:
        number = rng.randrange(COLD)
        path = f"/soak/cold/{number % 10}/{number}"
    return f"{path}?tag=t{number % TAGS}" if number % 3 == 0 else path


def purge_body(index: int) -> dict[str, Any]:
    """The ``index``-th purge: a soft tag purge, a hard tag purge, a prefix purge, in turn."""
    if index % 3 == 2:
        return {"prefixes": [f"/soak/cold/{index % 10}/"]}
    return {"tags": [f"t{index % TAGS}"], "soft": index % 3 == 0}


def answer_kind(cache_status: str) -> str:
    """The ``hit``, ``fwd=`` and ``detail=`` parameters of a Cache-Status value (``hit``,
    ``fwd=uri-miss``, ``hit; detail=stale-while-revalidate`` …), ``none`` without."""
    params = [part.strip() for part in cache_status.split(";")[1:]]
    kept = [p for p in params if p == "hit" or p.startswith(("fwd=", "detail="))]
    return "; ".join(kept) or "none"


async def fetch_page(session: aiohttp.ClientSession, url: str, tally: Tally) -> None:
    started = time.perf_counter()
    try:
        async with session.get(url) as response:
            body = await response.read()
    except (aiohttp.ClientError, TimeoutError) as error:
        tally.errors[type(error).__name__] += 1
        return
    tally.latencies.append(time.perf_counter() - started)
    if not 200 <= response.status < 400:
        tally.errors[f"status {response.status}"] += 1
    elif body != PAGE:
        tally.errors["wrong body"] += 1
    else:
        tally.answers[answer_kind(response.headers.get("cache-status", ""))] += 1


async def sleep_until(when: float) -> None:
    await asyncio.sleep(max(0.0, when - asyncio.get_running_loop().time()))


async def drive(base: str, rate: float, deadline: float, tally: Tally, seed: int) -> None:
    """Start a request every ``1 / rate`` s until ``deadline`` (loop time), catching up
    after a late wake-up; one is skipped while ``MAX_IN_FLIGHT`` are outstanding."""
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    outstanding: set[asyncio.Task[None]] = set()
    connector = aiohttp.TCPConnector(limit=MAX_IN_FLIGHT)
    async with aiohttp.ClientSession(connector=connector, timeout=TIMEOUT) as session:
        due = loop.time()
        while due < deadline:
            await sleep_until(due)
            while due <= min(loop.time(), deadline):
                due += 1 / rate
                if len(outstanding) >= MAX_IN_FLIGHT:
                    tally.skipped += 1
                    continue
                task = asyncio.create_task(fetch_page(session, base + path_for(rng), tally))
                outstanding.add(task)
                task.add_done_callback(outstanding.discard)
                tally.sent += 1
        await asyncio.gather(*outstanding)


async def purge_loop(admin: Admin, start: float, deadline: float,
                     purges: list[dict[str, Any]]) -> None:
    """One purge every ``PURGE_EVERY`` s, each recorded and printed."""
    loop = asyncio.get_running_loop()
    while (due := start + (len(purges) + 1) * PURGE_EVERY) < deadline:
        await sleep_until(due)
        body = purge_body(len(purges))
        began = time.perf_counter()
        try:
            status, reply = await admin.purge(body)
        except (aiohttp.ClientError, TimeoutError) as error:
            status, reply = 0, {"error": type(error).__name__}
        record = {"t_s": round(loop.time() - start, 1), "body": body, "status": status,
                  "ms": round((time.perf_counter() - began) * 1000, 1),
                  "purged": reply.get("purged"), "error": reply.get("error")}
        purges.append(record)
        print(f"  purge {json.dumps(body)}: {status} in {record['ms']} ms, purged "
              f"{record['purged']}" + (f", {record['error']}" if record["error"] else ""),
              flush=True)


async def take_sample(admin: Admin, pid: int, start: float, tally: Tally) -> dict[str, Any]:
    """RSS, the ``gc`` and ``store`` blocks of ``/api/status``, the load so far."""
    try:
        status = await admin.status()
    except (aiohttp.ClientError, TimeoutError) as error:
        status = {"gc": None, "store": {}, "error": type(error).__name__}
    latencies, tally.latencies = sorted(tally.latencies), []
    p99 = latencies[int(0.99 * len(latencies))] * 1000 if latencies else None
    return {"t_s": round(asyncio.get_running_loop().time() - start, 1),
            "rss_kib": status_kib(pid, "VmRSS"), "gc": status["gc"],
            "l1_entries": status["store"].get("l1_entries"),
            "l1_bytes": status["store"].get("l1_bytes"), "status_error": status.get("error"),
            "sent": tally.sent, "errors": sum(tally.errors.values()),
            "p99_ms": p99 and round(p99, 1), "load_average": os.getloadavg()[0]}


def sample_line(sample: dict[str, Any]) -> str:
    gc_block = sample["gc"] or {}
    collections = "/".join(map(str, gc_block.get("collections", [])))
    l1_mib = (sample["l1_bytes"] or 0) / MIB
    return (f"  t={sample['t_s']:6.0f}s RSS {sample['rss_kib'] / 1024:6.1f} MiB | frozen "
            f"{gc_block.get('frozen_objects')} gc {collections} freezes "
            f"{gc_block.get('freezes')} deep {gc_block.get('deep_collections')} | L1 "
            f"{sample['l1_entries']} ({l1_mib:.1f} MiB) | sent {sample['sent']} errors "
            f"{sample['errors']} p99 {sample['p99_ms']} ms | load {sample['load_average']:.2f}"
            + (f" | status {sample['status_error']}" if sample["status_error"] else ""))


async def sample_loop(admin: Admin, pid: int, start: float, deadline: float, tally: Tally,
                      samples: list[dict[str, Any]]) -> None:
    """A sample every ``SAMPLE_EVERY`` s from ``start`` until ``deadline``."""
    while (due := start + len(samples) * SAMPLE_EVERY) < deadline:
        await sleep_until(due)
        samples.append(await take_sample(admin, pid, start, tally))
        print(sample_line(samples[-1]), flush=True)


async def soak(port: int, admin_port: int, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    """Load, purges and samples together for ``--minutes``; a last sample after the load."""
    tally, samples, purges = Tally(), [], []
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers, timeout=TIMEOUT) as session:
        admin = Admin(session, f"http://127.0.0.1:{admin_port}")
        start = asyncio.get_running_loop().time()
        deadline = start + args.minutes * 60
        samples.append(await take_sample(admin, pid, start, tally))
        print(sample_line(samples[-1]), flush=True)
        await asyncio.gather(
            drive(f"http://127.0.0.1:{port}", args.rate, deadline, tally, args.seed),
            purge_loop(admin, start, deadline, purges),
            sample_loop(admin, pid, start, deadline, tally, samples))
        samples.append(await take_sample(admin, pid, start, tally))
        print(sample_line(samples[-1]), flush=True)
    return {"samples": samples, "purges": purges, "sent": tally.sent, "skipped": tally.skipped,
            "answers": dict(tally.answers), "errors": dict(tally.errors)}


def rss_mib_at(samples: list[dict[str, Any]], seconds: float) -> tuple[float, float]:
    """``(time, RSS in MiB)`` of the sample nearest ``seconds``."""
    sample = min(samples, key=lambda each: abs(each["t_s"] - seconds))
    return sample["t_s"], sample["rss_kib"] / 1024


def slope_mib_per_10min(samples: list[dict[str, Any]]) -> float:
    """Least-squares slope of RSS over the samples of the second half."""
    half = [s for s in samples if s["t_s"] >= samples[-1]["t_s"] / 2]
    xs, ys = [s["t_s"] for s in half], [s["rss_kib"] / 1024 for s in half]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    return covariance / spread * 600 if spread else 0.0


def rss_rows(samples: list[dict[str, Any]], minutes: float) -> list[tuple[str, str]]:
    marks = [1.0, *range(5, int(minutes), 5)]
    rows = [("RSS before the load", f"{samples[0]['rss_kib'] / 1024:.1f} MiB")]
    for minute in [m for m in marks if m < minutes]:
        at, mib = rss_mib_at(samples, minute * 60)
        rows.append((f"RSS at minute {minute:g}", f"{mib:.1f} MiB (sample at {at:.0f} s)"))
    rows.append((f"RSS at the end ({samples[-1]['t_s']:.0f} s)",
                 f"{samples[-1]['rss_kib'] / 1024:.1f} MiB"))
    rows.append(("largest RSS sampled", f"{max(s['rss_kib'] for s in samples) / 1024:.1f} MiB"))
    rows.append(("RSS slope, second half", f"{slope_mib_per_10min(samples):+.2f} MiB / 10 min"))
    return rows


def gc_rows(samples: list[dict[str, Any]]) -> list[tuple[str, str]]:
    last = next((s["gc"] for s in reversed(samples) if s["gc"]), {})
    frozen = [s["gc"]["frozen_objects"] for s in samples if s["gc"]]
    keeper = (f"{last['freezes']} / {last['deep_collections']}"
              if last.get("freezes") is not None else "no keeper installed")
    return [("keeper freezes / deep collections", keeper),
            ("collections per generation (end)",
             " / ".join(map(str, last.get("collections", [])))),
            ("objects frozen: start, largest, end",
             f"{frozen[0]:,}, {max(frozen):,}, {frozen[-1]:,}" if frozen else "none sampled"),
            ("L1 at the end", f"{samples[-1]['l1_entries']} entries, "
                              f"{(samples[-1]['l1_bytes'] or 0) / MIB:.1f} MiB")]


def load_rows(run: dict[str, Any]) -> list[tuple[str, str]]:
    answers = ", ".join(f"{kind} {count:,}" for kind, count in sorted(run["answers"].items()))
    errors = ", ".join(f"{kind} {count:,}" for kind, count in sorted(run["errors"].items()))
    purges = run["purges"]
    failed = sum(1 for p in purges if p["status"] != 200)
    return [("requests started (skipped)", f"{run['sent']:,} ({run['skipped']:,})"),
            ("answers by Cache-Status", answers or "none"),
            ("errors", f"{sum(run['errors'].values()):,}" + (f" ({errors})" if errors else "")),
            ("purges (failed), entries purged",
             f"{len(purges)} ({failed}), {sum(p['purged'] or 0 for p in purges):,}"),
            ("longest purge call", f"{max((p['ms'] for p in purges), default=0):.0f} ms"),
            ("status calls that failed", str(sum(1 for s in run["samples"]
                                                 if s["status_error"])))]


def table(run: dict[str, Any], args: argparse.Namespace) -> str:
    mode = "without the keeper" if args.no_keeper else "with the keeper"
    rows = [*rss_rows(run["samples"], args.minutes), *gc_rows(run["samples"]), *load_rows(run)]
    return "\n".join([f"| soak {mode}, {args.minutes:g} min at {args.rate:g} req/s | |",
                      "|---|---:|", *(f"| {name} | {value} |" for name, value in rows)])


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = {"l1_max_bytes": "32MiB", "admin_token": TOKEN}
    module = "bench.stoker_no_keeper" if args.no_keeper else "stoker"
    stoker_core = 1 if (os.cpu_count() or 1) > 1 else None
    pin(0)
    with serving(settings, latency_ms=args.latency_ms, stoker_core=stoker_core,
                 origin_core=0, module=module) as stack:  # fmt: skip
        return asyncio.run(soak(stack.stoker.port, stack.admin_port, stack.pid, args))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=400.0, help="requests started a second")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="origin's fixed latency")
    parser.add_argument("--seed", type=int, default=1, help="of the URL draw")
    parser.add_argument("--no-keeper", action="store_true",
                        help="run Stoker without stoker.server.heap.HeapKeeper, for comparison")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    stop_on_sigterm()
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        result = run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped", file=sys.stderr)
        return 130
    print(table(result, args))
    name = "soak-no-keeper.json" if args.no_keeper else "soak.json"
    target = REPO / "bench" / "results" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"benchmark": "soak", "when": when, "config": vars(args),
                                  **result}, indent=1) + "\n")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
