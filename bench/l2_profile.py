"""Where a fresh hit's time goes, L1 hit vs L2 hit, for both hit-path scenarios: a py-spy
sample of ``stoker serve``.

For each tier a fresh Stoker (pinned to ``--stoker-core``) serves cached 20 KB pages
(``bench/origin_app.py`` is the origin; ``l2`` runs with ``l1_max_bytes = 0``, so
every hit is read from SQLite; ``redis`` also with ``l2_url`` on the local Redis, so every
hit is read from Redis) to wrk (``--connections`` connections, pinned to
``--client-core``), per scenario (``--scenarios``: ``identical``, one URL with one request
head; ``browser``, ``--pages`` pages with varied heads, ``bench/hit_path/browser.lua``)
in two runs of ``--duration`` seconds; the origin's counter must not move during them.
Run 1, without the profiler: req/s, p99 and CPU µs per request of each thread
(``/proc/PID/task/*/stat``, threads named through ``py-spy dump``).  Run 2: ``py-spy
record --gil --nonblocking`` samples the thread holding the GIL (functions without line
numbers); printed are the functions with the largest share of samples, inclusive (on the
stack) and self (on top).

    PYTHONPATH=src .venv/bin/python bench/l2_profile.py      # --duration 8 --top 25 --pages 2000

Needs py-spy (``pip install py-spy``, in the dev extras) and permission to ptrace.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# import bench/* as the ``bench`` package, never as top-level modules.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.run import (  # noqa: E402
    BROWSER_SCRIPT,
    SCENARIOS,
    VENV_BIN,
    Measure,
    fill,
    redis_settings,
)
from bench.hit_path.run import run_wrk as wrk  # noqa: E402
from bench.procs import Stack, serving  # noqa: E402

TIERS: dict[str, Callable[[], dict[str, Any]]] = {
    "l1": dict, "l2": lambda: {"l1_max_bytes": 0}, "redis": redis_settings}
"""Each tier's stoker.toml settings (``redis``: every hit read from Redis, L1 empty)."""
OWN_FRAME = re.compile(r"\(stoker/(?!cli|server\.py|__main__)")
THREAD = re.compile(r'^Thread (\d+) \([^)]*\)(?:: "([^"]*)")?', re.M)


def settle(stack: Stack) -> None:
    """Wait until the page the readiness probe cached has reached L2."""
    for _ in range(300):
        if stack.status()["pending_l2_writes"] == 0:
            return
        time.sleep(0.1)
    raise RuntimeError("L2 writes still pending after 30 s")


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) each thread of ``pid`` has used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread may end while we read
            fields = (task / "stat").read_text().rpartition(")")[2].split()
            found[int(task.name)] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def thread_names(py_spy: str, pid: int) -> dict[int, str]:
    """OS thread id → Python thread name, from ``py-spy dump`` (threads without Python
    frames, e.g. granian's and uvloop's own, are absent)."""
    dump = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                          timeout=60, check=True).stdout  # fmt: skip
    return {int(m.group(1)): m.group(2) or "(unnamed Python thread)" for m in THREAD.finditer(dump)}


def run_wrk(stack: Stack, scenario: str, args: argparse.Namespace) -> Measure:
    """wrk against the stack's Stoker with ``scenario``'s requests."""
    return wrk(stack.stoker.url, args.duration, args.connections, args.client_core,
               script=BROWSER_SCRIPT if scenario == "browser" else None, pages=args.pages)


def cpu_per_hit(stack: Stack, scenario: str,
                args: argparse.Namespace) -> tuple[Measure, dict[str, float]]:
    """wrk without the profiler; CPU µs per request per thread (grouped by name)."""
    before = thread_cpu(stack.pid)
    measure = run_wrk(stack, scenario, args)
    return measure, cpu_since(stack.pid, before, measure.requests, args.py_spy)


def cpu_since(pid: int, before: dict[int, float], requests: int,
              py_spy: str) -> dict[str, float]:
    """CPU µs per request each thread of ``pid`` used since ``before`` (grouped by name)."""
    after = thread_cpu(pid)
    names = thread_names(py_spy, pid)
    per_name: defaultdict[str, float] = defaultdict(float)
    for tid, seconds in after.items():
        name = re.sub(r"_\d+$", "", names.get(tid, "(no Python frames: granian, uvloop)"))
        per_name[name] += (seconds - before.get(tid, 0.0)) * 1e6 / max(requests, 1)
    return dict(per_name)


def profile(stack: Stack, scenario: str, args: argparse.Namespace, out: Path) -> None:
    """Run wrk against the cached pages while py-spy samples the GIL holder into ``out``."""
    sampled(stack.pid, args, out, lambda: run_wrk(stack, scenario, args))


def sampled(pid: int, args: argparse.Namespace, out: Path, load: Callable[[], object]) -> None:
    """Run ``load`` while py-spy samples ``pid``'s GIL holder into ``out`` (``args``:
    py_spy, duration, rate)."""
    spy = subprocess.Popen(
        [args.py_spy, "record", "--pid", str(pid), "--duration", f"{args.duration:g}",
         "--rate", str(args.rate), "--format", "raw", "--nolineno", "--gil", "--nonblocking",
         "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        load()
    finally:
        _, error = spy.communicate(timeout=args.duration + 60)
    if spy.returncode != 0:
        raise RuntimeError(f"py-spy failed ({spy.returncode}): {error}")


def shares(collapsed: str) -> tuple[int, Counter[str], Counter[str]]:
    """Total samples, and samples per function: inclusive (anywhere on the stack), self."""
    total, inclusive, own = 0, Counter[str](), Counter[str]()
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():  # a frame name holding a newline (rare): skip its pieces
            continue
        frames = stack.split(";")
        total += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            inclusive[frame] += int(count)
    return total, inclusive, own


def report(tier: str, measure: Measure, cpu: dict[str, float], collapsed: str, top: int) -> None:
    total, inclusive, own = shares(collapsed)
    print(f"\n{tier}: {measure.rps:.0f} req/s, p99 {measure.p99_ms:.2f} ms (without the "
          f"profiler); CPU per request {sum(cpu.values()):.1f} µs:")  # fmt: skip
    for name, micros in sorted(cpu.items(), key=lambda item: -item[1]):
        if micros >= 0.05:
            print(f"    {micros:7.1f} µs  {name}")
    print(f"  py-spy --gil: {total} samples of the thread holding the GIL")
    inclusive = Counter({f: n for f, n in inclusive.items() if OWN_FRAME.search(f)})
    for title, counts in (("inclusive (Stoker's own functions)", inclusive), ("self", own)):
        print(f"  top {top} {title}:")
        for frame, count in counts.most_common(top):
            print(f"    {100 * count / total:5.1f}%  {frame}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tiers", default="l1,l2", help="comma-separated, from l1, l2, redis")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, from {', '.join(SCENARIOS)}")
    parser.add_argument("--pages", type=int, default=2000,
                        help="pages of the browser scenario, each cached once before it runs")
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--stoker-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0)
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or str(VENV_BIN / "py-spy"))
    args = parser.parse_args(argv)
    tiers = [t.strip() for t in args.tiers.split(",") if t.strip()]
    if not tiers or set(tiers) - set(TIERS):
        parser.error(f"--tiers takes names from {', '.join(TIERS)}")
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if not scenarios or set(scenarios) - set(SCENARIOS):
        parser.error(f"--scenarios takes names from {', '.join(SCENARIOS)}")
    for tool in ("wrk", "taskset", args.py_spy):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed")
    for tier in tiers:
        with serving(TIERS[tier](), latency_ms=0, stoker_core=args.stoker_core,
                     origin_core=args.client_core) as stack:
            if "browser" in scenarios:
                fill(stack.stoker, args.pages)
            settle(stack)
            for scenario in scenarios:
                profile_scenario(stack, f"{tier} {scenario}", scenario, args)
    return 0


def profile_scenario(stack: Stack, title: str, scenario: str, args: argparse.Namespace) -> None:
    """Measure, then sample, one scenario on a running stack; report both."""
    with tempfile.TemporaryDirectory() as tmp:
        hits = stack.origin_hits()
        measure, cpu = cpu_per_hit(stack, scenario, args)
        out = Path(tmp) / "stacks.txt"
        profile(stack, scenario, args, out)
        missed = stack.origin_hits() - hits
        report(title, measure, cpu, out.read_text(), args.top)
    if missed:
        print(f"  warning: the origin served {missed} pages during the runs; expected 0")


if __name__ == "__main__":
    sys.exit(main())
