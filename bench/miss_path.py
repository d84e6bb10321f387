"""The miss path: a cold page through Stoker vs the same page straight from the origin.

The origin (``bench/origin_app.py``, granian, one worker) answers every page after a
fixed ``--latency-ms`` (20); ``/big/…`` pages are 2 MiB, the others 20 KB.  wrk
(one thread, ``--connections`` 16) asks for a distinct URL on every request (a Lua
counter under a prefix unique to each run), so every request through Stoker is a
miss: the origin's request counter must grow by at least wrk's completed requests,
and the run is flagged otherwise.  Direct and Stoker runs alternate within each round
(the order flips every round); per size the summary is the median over rounds of
Stoker's added p50 / p99 latency and of the throughput ratio ``stoker / direct``.
Stoker's peak RSS growth during each Stoker run (``VmHWM`` reset before the run,
minus ``VmRSS`` before it) divided by the connections is the memory a concurrent
miss costs.  Stoker runs pinned to ``--stoker-core`` (1); wrk and the origin share
``--client-core`` (0).  With ``--nginx``, every round also runs the same misses
through nginx's ``proxy_cache`` (one worker, pinned where Stoker is, storing every
page on disk as Stoker does, never evicting during the run): what a C proxy that
stores each miss adds on this machine, the yardstick for Stoker's figures.

    PYTHONPATH=src .venv/bin/python bench/miss_path.py       # --rounds 5 --duration 6
    PYTHONPATH=src .venv/bin/python bench/miss_path.py --sizes 2m --rounds 1 --duration 3
    PYTHONPATH=src .venv/bin/python bench/miss_path.py --nginx --rounds 3

Results also go to ``bench/results/miss_path.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.run import (  # noqa: E402
    Measure,
    System,
    free_port,
    nginx_config,
    parse_wrk,
    pinned,
    start,
    stop,
)
from bench.procs import (  # noqa: E402
    REPO,
    START_TIMEOUT,
    Stack,
    reset_peak,
    serving,
    status_kib,
    stop_on_sigterm,
)

SIZES = {"20k": ("/cold/", 20 * 1024), "2m": ("/big/", 2 * 1024 * 1024)}
GOAL_ADDED_P50_MS = 1.0
GOAL_RPS_RATIO_20K = 0.9
GOAL_RSS_PER_REQUEST_MIB = 2.0
SYSTEMS = ("direct", "stoker", "nginx")
WRK_SCRIPT = """local n = 0
local prefix = "{prefix}"
request = function()
  n = n + 1
  return wrk.format("GET", prefix .. n, {headers})
end
"""


@dataclass
class Run:
    """One wrk run against one system, with the origin's count and Stoker's memory."""

    measure: Measure
    origin_hits: int
    rss_before_kib: int = 0
    rss_peak_kib: int = 0

    @property
    def all_missed(self) -> bool:
        return self.origin_hits >= self.measure.requests


def wrk(port: int, prefix: str, args: argparse.Namespace, accept_encoding: str = "") -> Measure:
    """wrk on ``port``, a distinct URL under ``prefix`` per request (``args``: connections,
    duration, client_core), with ``Accept-Encoding`` when given."""
    headers = f'{{["Accept-Encoding"] = "{accept_encoding}"}}' if accept_encoding else "{}"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(prefix=prefix, headers=headers))
    try:
        argv = ["wrk", "-t1", f"-c{args.connections}", f"-d{args.duration:g}s", "--latency",
                "-s", script.name, f"http://127.0.0.1:{port}/"]  # fmt: skip
        done = subprocess.run(pinned(args.client_core, argv), capture_output=True, text=True,
                              timeout=args.duration + 60)  # fmt: skip
    finally:
        os.unlink(script.name)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    return parse_wrk(done.stdout)


@contextlib.contextmanager
def nginx_in_front(origin_port: int, core: int | None) -> Iterator[int]:
    """nginx's ``proxy_cache`` in front of the origin (pinned to ``core``); yields its port."""
    tmp = Path(tempfile.mkdtemp(prefix="stoker-bench-nginx-"))
    tmp.chmod(0o755)  # nginx's worker may run as another user
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(nginx_config(tmp, port, origin_port, max_size="64g"))
    argv = ["nginx", "-p", str(tmp), "-e", str(tmp / "nginx-error.log"), "-c", str(conf)]
    system = System("nginx", argv, port, None, tmp / "nginx.log")
    try:
        start(system, core, START_TIMEOUT)
        yield port
    finally:
        stop(system)
        shutil.rmtree(tmp, ignore_errors=True)


def measure(stack: Stack, ports: dict[str, int], system: str, size: str,
            args: argparse.Namespace) -> Run:
    prefix = f"{SIZES[size][0]}{uuid.uuid4().hex}/"
    if system == "stoker":
        reset_peak(stack.pid)
        before = status_kib(stack.pid, "VmRSS")
    hits = stack.origin_hits()
    result = wrk(ports[system], prefix, args)
    run = Run(result, stack.origin_hits() - hits)
    if system == "stoker":
        run.rss_before_kib, run.rss_peak_kib = before, status_kib(stack.pid, "VmHWM")
    return run


def one_round(stack: Stack, ports: dict[str, int], index: int,
              args: argparse.Namespace) -> dict[str, dict[str, Run]]:
    """Each system once per size, in the order of ``ports`` (reversed every other round)."""
    systems = list(ports) if index % 2 == 0 else list(reversed(ports))
    runs: dict[str, dict[str, Run]] = {}
    for size in args.sizes:
        runs[size] = {system: measure(stack, ports, system, size, args) for system in systems}
        report_round(index, size, runs[size], args)
    return runs


def report_round(index: int, size: str, runs: dict[str, Run], args: argparse.Namespace) -> None:
    growth = (runs["stoker"].rss_peak_kib - runs["stoker"].rss_before_kib) / 1024
    figures = " | ".join(f"{system} {runs[system].measure.rps:7.0f}/s "
                         f"p50 {runs[system].measure.p50_ms:6.2f} "
                         f"p99 {runs[system].measure.p99_ms:6.2f} ms"
                         for system in SYSTEMS if system in runs)
    print(f"round {index + 1}/{args.rounds} {size:>3} (load {os.getloadavg()[0]:.2f}): "
          f"{figures} | peak RSS +{growth:.1f} MiB", flush=True)  # fmt: skip
    for system, run in runs.items():
        m = run.measure
        # wrk's bytes read include headers and the responses still in flight at the end
        off = m.bytes_per_request < SIZES[size][1] * 0.99
        if not run.all_missed or m.errors or m.non_2xx or off:
            print(f"  warning: {system}: origin served {run.origin_hits} for {m.requests} "
                  f"requests, {m.errors} socket errors, {m.non_2xx} non-2xx, "
                  f"{m.bytes_per_request:.0f} B/request")  # fmt: skip


def versus_direct(pairs: list[tuple[Run, Run]], prefix: str = "") -> dict[str, Any]:
    """A proxy's added p50 / p99 latency and throughput ratio against the direct runs of
    the same rounds (``pairs`` of ``(direct, proxy)``), per round and their medians."""
    figures = {
        "added_p50_ms": [p.measure.p50_ms - d.measure.p50_ms for d, p in pairs],
        "added_p99_ms": [p.measure.p99_ms - d.measure.p99_ms for d, p in pairs],
        "rps_ratio": [p.measure.rps / d.measure.rps for d, p in pairs],
    }
    found: dict[str, Any] = {}
    for key, values in figures.items():
        found[f"{prefix}{key}_per_round"] = values
        found[f"{prefix}{key}_median"] = statistics.median(values)
    return found


def summarise(
    size: str, rounds: list[dict[str, dict[str, Run]]], connections: int
) -> dict[str, Any]:
    pairs = [(r[size]["direct"], r[size]["stoker"]) for r in rounds]
    per_request = [(s.rss_peak_kib - s.rss_before_kib) / 1024 / connections for _, s in pairs]
    summary = {
        **versus_direct(pairs),
        "peak_rss_growth_mib_per_request_per_round": per_request,
        "peak_rss_growth_mib_per_request_median": statistics.median(per_request),
        "every_stoker_request_missed": all(s.all_missed for _, s in pairs),
    }  # fmt: skip
    if all("nginx" in r[size] for r in rounds):
        summary.update(versus_direct([(r[size]["direct"], r[size]["nginx"]) for r in rounds],
                                     "nginx_"))
        ratio = [r[size]["stoker"].measure.rps / r[size]["nginx"].measure.rps for r in rounds]
        summary["stoker_vs_nginx_rps_ratio_per_round"] = ratio
        summary["stoker_vs_nginx_rps_ratio_median"] = statistics.median(ratio)
        summary["every_nginx_request_missed"] = all(r[size]["nginx"].all_missed for r in rounds)
    return summary


def verdicts(size: str, summary: dict[str, Any]) -> list[str]:
    def check(name: str, ok: bool) -> str:
        return f"{name}: {'met' if ok else 'MISSED'}"

    found = [check(f"added p50 <= {GOAL_ADDED_P50_MS:g} ms",
                   summary["added_p50_ms_median"] <= GOAL_ADDED_P50_MS)]  # fmt: skip
    if size == "20k":
        found.append(check(f"throughput >= {GOAL_RPS_RATIO_20K}x direct",
                           summary["rps_ratio_median"] >= GOAL_RPS_RATIO_20K))  # fmt: skip
    if size == "2m":
        found.append(check(f"peak RSS growth <= {GOAL_RSS_PER_REQUEST_MIB:g} MiB per request",
                           summary["peak_rss_growth_mib_per_request_median"]
                           <= GOAL_RSS_PER_REQUEST_MIB))  # fmt: skip
    return found


ROWS = (
    ("added p50", "added_p50_ms", "+.2f", " ms"),
    ("added p99", "added_p99_ms", "+.2f", " ms"),
    ("req/s ratio", "rps_ratio", ".3f", "x"),
    ("peak RSS growth per concurrent request", "peak_rss_growth_mib_per_request", ".2f", " MiB"),
    ("nginx proxy_cache: added p50", "nginx_added_p50_ms", "+.2f", " ms"),
    ("nginx proxy_cache: added p99", "nginx_added_p99_ms", "+.2f", " ms"),
    ("nginx proxy_cache: req/s ratio", "nginx_rps_ratio", ".3f", "x"),
    ("stoker / nginx req/s", "stoker_vs_nginx_rps_ratio", ".3f", "x"),
)


def print_summary(size: str, summary: dict[str, Any]) -> None:
    print(f"\n{size}: medians over rounds (per round in brackets)")
    for label, key, fmt, unit in ROWS:
        if f"{key}_median" not in summary:
            continue
        rounds = " / ".join(format(v, fmt) for v in summary[f"{key}_per_round"])
        print(f"  {label:<13} {format(summary[f'{key}_median'], fmt)}{unit}  [{rounds}]")
    print(f"  every Stoker request reached the origin: {summary['every_stoker_request_missed']}")
    if "every_nginx_request_missed" in summary:
        print(f"  every nginx request reached the origin: {summary['every_nginx_request_missed']}")
    for verdict in verdicts(size, summary):
        print(f"  goal {verdict}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="20k,2m", help="comma-separated, from 20k, 2m")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=6.0, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="origin's fixed latency")
    parser.add_argument("--stoker-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0, help="wrk and the origin")
    parser.add_argument("--no-pin", action="store_true", help="do not use taskset")
    parser.add_argument("--server", default="stoker", help="Stoker's `server` setting")
    parser.add_argument("--nginx", action="store_true",
                        help="also run every round through nginx's proxy_cache (the yardstick)")
    parser.add_argument(
        "--output", type=Path, default=REPO / "bench" / "results" / "miss_path.json"
    )
    args = parser.parse_args(argv)
    args.sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if not args.sizes or set(args.sizes) - set(SIZES):
        parser.error(f"--sizes takes names from {', '.join(SIZES)}")
    if args.no_pin:
        args.stoker_core = args.client_core = None
    elif (os.cpu_count() or 1) <= max(args.stoker_core, args.client_core):
        parser.error("this machine lacks the cores to pin to; pass --no-pin or other cores")
    needed = ["wrk", *([] if args.no_pin else ["taskset"]), *(["nginx"] if args.nginx else [])]
    for tool in needed:
        if shutil.which(tool) is None:
            parser.error(
                f"{tool} is not installed (apt-get install {tool}; taskset is in util-linux)"
            )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop_on_sigterm()
    rounds: list[dict[str, dict[str, Run]]] = []
    loads: list[float] = []
    try:
        with contextlib.ExitStack() as running:
            stack = running.enter_context(serving(
                {"server": args.server}, latency_ms=args.latency_ms,
                stoker_core=args.stoker_core, origin_core=args.client_core))
            ports = {"direct": stack.origin.port, "stoker": stack.stoker.port}
            if args.nginx:
                ports["nginx"] = running.enter_context(
                    nginx_in_front(stack.origin.port, args.stoker_core))
            for index in range(args.rounds):
                rounds.append(one_round(stack, ports, index, args))
                loads.append(os.getloadavg()[0])
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped", file=sys.stderr)
        return 130
    summaries = {size: summarise(size, rounds, args.connections) for size in args.sizes}
    for size, summary in summaries.items():
        print_summary(size, summary)
    print(f"load average (1 min) after each round: {' / '.join(f'{x:.2f}' for x in loads)}")
    write_report(args, rounds, summaries, loads)
    return 0


def write_report(
    args: argparse.Namespace,
    rounds: list[dict[str, dict[str, Run]]],
    summaries: dict[str, Any],
    loads: list[float],
) -> None:
    report = {
        "benchmark": "miss_path",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": {key: value for key, value in vars(args).items() if key != "output"},
        "load_average_per_round": loads,
        "rounds": [{size: {system: {**asdict(run.measure), "origin_hits": run.origin_hits,
                                    "rss_before_kib": run.rss_before_kib,
                                    "rss_peak_kib": run.rss_peak_kib}
                           for system, run in runs.items()}
                    for size, runs in r.items()} for r in rounds],
        "summary": summaries,
    }  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
