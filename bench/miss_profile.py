"""Where a cold miss's CPU goes (20 KB; 2 MiB with ``--size 2m``): CPU µs per miss per
thread, and a py-spy sample.

A fresh Stoker (pinned to ``--stoker-core``) in front of ``bench/origin_app.py``
(``--latency-ms``, 20) gets a distinct URL on every request from wrk (as
``bench/miss_path.py`` does: every request is a miss, stored in L1 and L2), in two
runs of ``--duration`` seconds.  Run 1, without the profiler: req/s, p50 and CPU µs per
miss of each thread (``/proc/PID/task/*/stat``, threads named through ``py-spy
dump``), counted until the L2 writes the run queued have landed.  Run 2: ``py-spy
record --gil`` samples the thread holding the GIL; printed are the functions with the
largest share of samples (as ``bench/l2_profile.py`` prints them).  ``--accept-encoding``
sends that header with every request (default: none, as wrk).

    PYTHONPATH=src .venv/bin/python bench/miss_profile.py     # --duration 8 --top 25
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.run import VENV_BIN, Measure  # noqa: E402
from bench.l2_profile import cpu_since, report, sampled, settle, thread_cpu  # noqa: E402
from bench.miss_path import wrk  # noqa: E402
from bench.procs import Stack, serving  # noqa: E402


def run_wrk(stack: Stack, args: argparse.Namespace) -> Measure:
    """wrk against Stoker, a distinct URL per request (a prefix unique to this run)."""
    prefix = "/big/" if args.size == "2m" else "/cold/"
    return wrk(stack.stoker.port, f"{prefix}{uuid.uuid4().hex}/", args, args.accept_encoding)


def cpu_per_miss(stack: Stack, args: argparse.Namespace) -> tuple[Measure, dict[str, float]]:
    """wrk without the profiler; CPU µs per miss per thread (grouped by name), counted
    until the run's L2 writes have landed."""
    before = thread_cpu(stack.pid)
    hits = stack.origin_hits()
    measure = run_wrk(stack, args)
    settle(stack)
    missed = stack.origin_hits() - hits
    if missed < measure.requests:
        print(f"  warning: the origin served {missed} pages for {measure.requests} requests")
    return measure, cpu_since(stack.pid, before, measure.requests, args.py_spy)


def profile(stack: Stack, args: argparse.Namespace, out: Path) -> None:
    """Run wrk while py-spy samples the GIL holder into ``out``."""
    sampled(stack.pid, args, out, lambda: run_wrk(stack, args))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="origin's fixed latency")
    parser.add_argument("--accept-encoding", default="", help="header sent with every request")
    parser.add_argument("--size", choices=("20k", "2m"), default="20k",
                        help="the page: 20 KB, or 2 MiB (the origin's /big/ pages)")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-profile", action="store_true", help="CPU per miss only")
    parser.add_argument("--stoker-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0)
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or str(VENV_BIN / "py-spy"))
    args = parser.parse_args(argv)
    for tool in ("wrk", "taskset", args.py_spy):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed")
    with serving({}, latency_ms=args.latency_ms, stoker_core=args.stoker_core,
                 origin_core=args.client_core) as stack, \
            tempfile.TemporaryDirectory() as tmp:  # fmt: skip
        settle(stack)
        measure, cpu = cpu_per_miss(stack, args)
        print(f"load average: {Path('/proc/loadavg').read_text().strip()}")
        out = Path(tmp) / "stacks.txt"
        if args.no_profile:
            out.write_text("")
        else:
            profile(stack, args, out)
        report(f"{'2 MiB' if args.size == '2m' else '20 KB'} miss", measure, cpu,
               out.read_text(), args.top)
        print(f"  p50 {measure.p50_ms:.2f} ms (origin latency {args.latency_ms:g} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
