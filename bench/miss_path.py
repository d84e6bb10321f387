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
``--client-core`` (0).

    PYTHONPATH=src .venv/bin/python bench/miss_path.py       # --rounds 5 --duration 6
    PYTHONPATH=src .venv/bin/python bench/miss_path.py --sizes 2m --rounds 1 --duration 3

Results also go to ``bench/results/miss_path.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.run import Measure, parse_wrk, pinned  # noqa: E402
from bench.procs import REPO, Stack, reset_peak, serving, status_kib, stop_on_sigterm  # noqa: E402

SIZES = {"20k": ("/cold/", 20 * 1024), "2m": ("/big/", 2 * 1024 * 1024)}
GOAL_ADDED_P50_MS = 1.0
GOAL_RPS_RATIO_20K = 0.9
GOAL_RSS_PER_REQUEST_MIB = 2.0
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


def measure(stack: Stack, system: str, size: str, args: argparse.Namespace) -> Run:
    prefix = f"{SIZES[size][0]}{uuid.uuid4().hex}/"
    port = stack.stoker.port if system == "stoker" else stack.origin.port
    if system == "stoker":
        reset_peak(stack.pid)
        before = status_kib(stack.pid, "VmRSS")
    hits = stack.origin_hits()
    result = wrk(port, prefix, args)
    run = Run(result, stack.origin_hits() - hits)
    if system == "stoker":
        run.rss_before_kib, run.rss_peak_kib = before, status_kib(stack.pid, "VmHWM")
    return run


def one_round(stack: Stack, index: int, args: argparse.Namespace) -> dict[str, dict[str, Run]]:
    systems = ["direct", "stoker"] if index % 2 == 0 else ["stoker", "direct"]
    runs: dict[str, dict[str, Run]] = {}
    for size in args.sizes:
        runs[size] = {system: measure(stack, system, size, args) for system in systems}
        report_round(index, size, runs[size], args)
    return runs


def report_round(index: int, size: str, runs: dict[str, Run], args: argparse.Namespace) -> None:
    direct, stoker = runs["direct"].measure, runs["stoker"].measure
    growth = (runs["stoker"].rss_peak_kib - runs["stoker"].rss_before_kib) / 1024
    print(f"round {index + 1}/{args.rounds} {size:>3} (load {os.getloadavg()[0]:.2f}): "
          f"direct {direct.rps:7.0f}/s p50 {direct.p50_ms:6.2f} p99 {direct.p99_ms:6.2f} ms | "
          f"stoker {stoker.rps:7.0f}/s p50 {stoker.p50_ms:6.2f} p99 {stoker.p99_ms:6.2f} ms | "
          f"peak RSS +{growth:.1f} MiB", flush=True)  # fmt: skip
    for system, run in runs.items():
        m = run.measure
        # wrk's bytes read include headers and the responses still in flight at the end
        off = m.bytes_per_request < SIZES[size][1] * 0.99
        if not run.all_missed or m.errors or m.non_2xx or off:
            print(f"  warning: {system}: origin served {run.origin_hits} for {m.requests} "
                  f"requests, {m.errors} socket errors, {m.non_2xx} non-2xx, "
                  f"{m.bytes_per_request:.0f} B/request")  # fmt: skip


def summarise(
    size: str, rounds: list[dict[str, dict[str, Run]]], connections: int
) -> dict[str, Any]:
    pairs = [(r[size]["direct"], r[size]["stoker"]) for r in rounds]
    added_p50 = [s.measure.p50_ms - d.measure.p50_ms for d, s in pairs]
    added_p99 = [s.measure.p99_ms - d.measure.p99_ms for d, s in pairs]
    ratio = [s.measure.rps / d.measure.rps for d, s in pairs]
    per_request = [(s.rss_peak_kib - s.rss_before_kib) / 1024 / connections for _, s in pairs]
    return {
        "added_p50_ms_per_round": added_p50, "added_p50_ms_median": statistics.median(added_p50),
        "added_p99_ms_per_round": added_p99, "added_p99_ms_median": statistics.median(added_p99),
        "rps_ratio_per_round": ratio, "rps_ratio_median": statistics.median(ratio),
        "peak_rss_growth_mib_per_request_per_round": per_request,
        "peak_rss_growth_mib_per_request_median": statistics.median(per_request),
        "every_stoker_request_missed": all(s.all_missed for _, s in pairs),
    }  # fmt: skip


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
)


def print_summary(size: str, summary: dict[str, Any]) -> None:
    print(f"\n{size}: medians over rounds (per round in brackets)")
    for label, key, fmt, unit in ROWS:
        rounds = " / ".join(format(v, fmt) for v in summary[f"{key}_per_round"])
        print(f"  {label:<13} {format(summary[f'{key}_median'], fmt)}{unit}  [{rounds}]")
    print(f"  every Stoker request reached the origin: {summary['every_stoker_request_missed']}")
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
    for tool in ("wrk", *([] if args.no_pin else ["taskset"])):
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
        with serving({"server": args.server}, latency_ms=args.latency_ms,
                     stoker_core=args.stoker_core, origin_core=args.client_core) as stack:
            for index in range(args.rounds):
                rounds.append(one_round(stack, index, args))
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
