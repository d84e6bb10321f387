"""Where a cold 20 KB miss's CPU goes: CPU µs per miss per thread, and a py-spy sample.

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
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.run import VENV_BIN, Measure, parse_wrk, pinned  # noqa: E402
from bench.l2_profile import report, settle, thread_cpu, thread_names  # noqa: E402
from bench.procs import Stack, serving  # noqa: E402

WRK_SCRIPT = """local n = 0
local prefix = "{prefix}"
request = function()
  n = n + 1
  return wrk.format("GET", prefix .. n, {headers})
end
"""


def run_wrk(stack: Stack, args: argparse.Namespace) -> Measure:
    """wrk against Stoker, a distinct URL per request (a prefix unique to this run)."""
    headers = "{}" if not args.accept_encoding else (
        f'{{["Accept-Encoding"] = "{args.accept_encoding}"}}')
    script = WRK_SCRIPT.format(prefix=f"/cold/{uuid.uuid4().hex}/", headers=headers)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as file:
        file.write(script)
    try:
        argv = ["wrk", "-t1", f"-c{args.connections}", f"-d{args.duration:g}s", "--latency",
                "-s", file.name, stack.stoker.url]  # fmt: skip
        done = subprocess.run(pinned(args.client_core, argv), capture_output=True, text=True,
                              timeout=args.duration + 60)  # fmt: skip
    finally:
        os.unlink(file.name)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    return parse_wrk(done.stdout)


def cpu_per_miss(stack: Stack, args: argparse.Namespace) -> tuple[Measure, dict[str, float]]:
    """wrk without the profiler; CPU µs per miss per thread (grouped by name), counted
    until the run's L2 writes have landed."""
    before = thread_cpu(stack.pid)
    hits = stack.origin_hits()
    measure = run_wrk(stack, args)
    settle(stack)
    after = thread_cpu(stack.pid)
    missed = stack.origin_hits() - hits
    if missed < measure.requests:
        print(f"  warning: the origin served {missed} pages for {measure.requests} requests")
    names = thread_names(args.py_spy, stack.pid)
    per_name: defaultdict[str, float] = defaultdict(float)
    for tid, seconds in after.items():
        name = re.sub(r"_\d+$", "", names.get(tid, "(no Python frames: granian, uvloop)"))
        per_name[name] += (seconds - before.get(tid, 0.0)) * 1e6 / max(measure.requests, 1)
    return measure, dict(per_name)


def profile(stack: Stack, args: argparse.Namespace, out: Path) -> None:
    """Run wrk while py-spy samples the GIL holder into ``out``."""
    spy = subprocess.Popen(
        [args.py_spy, "record", "--pid", str(stack.pid), "--duration", f"{args.duration:g}",
         "--rate", str(args.rate), "--format", "raw", "--nolineno", "--gil", "--nonblocking",
         "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        run_wrk(stack, args)
    finally:
        _, error = spy.communicate(timeout=args.duration + 60)
    if spy.returncode != 0:
        raise RuntimeError(f"py-spy failed ({spy.returncode}): {error}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="origin's fixed latency")
    parser.add_argument("--accept-encoding", default="", help="header sent with every request")
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
        report("20 KB miss", measure, cpu, out.read_text(), args.top)
        print(f"  p50 {measure.p50_ms:.2f} ms (origin latency {args.latency_ms:g} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
