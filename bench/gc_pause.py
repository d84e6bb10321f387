"""Full garbage collections while a cache grows, with and without stoker.server.heap's policy.

A cache at its size bound churns without growing the heap (each store frees what it
evicts), and CPython then rarely collects at all; full collections come while the heap
grows: a cold cache filling, a burst of requests, the refs a large purge holds.  So for
each ``--entries`` size N and each mode, a fresh child process (its own collector state,
the start-up heap frozen by ``freeze_heap`` as in a serving process) fills an L1
(``MemoryStore``) with N entries of a 2 KB page with two tags, ``--per-second`` entries a
second, and a ``gc.callbacks`` hook times every full (generation 2) collection.

- ``off``: CPython's default: every full collection traverses the whole cache so far.
- ``keeper``: :class:`stoker.server.heap.HeapKeeper` installed, with its production intervals.

Modes alternate within each round.  L2 is left out: the objects a full collection
traverses are L1's (per entry: the entry, its slot, the slot's dict and list, a tag set).

    PYTHONPATH=src .venv/bin/python bench/gc_pause.py      # --entries 100000 --per-second 2000

Results also go to ``bench/results/gc_pause.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PAGE = b"<html>" + b"x" * 2000 + b"</html>"


def child(entries: int, mode: str, per_second: float) -> dict[str, Any]:
    """One measurement, in this (fresh) process."""
    from tests.entries import make_entry

    from stoker.cache.memory import MemoryStore
    from stoker.clock import SystemClock
    from stoker.server.heap import HeapKeeper, freeze_heap

    clock = SystemClock()
    now = clock.now()
    freeze_heap()
    keeper = HeapKeeper()
    if mode == "keeper":
        keeper.install()
    store = MemoryStore(1 << 40, clock)
    pauses: list[float] = []
    started = [0.0]

    def timer(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - started[0])

    gc.callbacks.insert(0, timer)  # before the keeper's: its freeze is not a pause's part
    begun = time.perf_counter()
    for i in range(entries):
        url = f"https://example.com/page/{i}"
        store.put_nowait(make_entry(url, primary_key=f"v1|{url}", now=now, fresh=3600,
                                    stale=7200, error=7200, keep=7200,
                                    tags=("site", f"page-{i}"), body=PAGE, body_size=len(PAGE)))
        if i % 100 == 99:
            time.sleep(max(0.0, begun + (i + 1) / per_second - time.perf_counter()))
    gc.callbacks.remove(timer)
    ms = sorted(p * 1000 for p in pauses)
    return {"entries": entries, "mode": mode, "seconds": round(time.perf_counter() - begun, 1),
            "full_collections": len(ms), "total_ms": round(sum(ms), 1),
            "median_ms": round(statistics.median(ms), 2) if ms else None,
            "max_ms": round(ms[-1], 2) if ms else None, "freezes": keeper.freezes}


def run_child(entries: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", str(entries), mode, str(args.per_second)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(REPO / "src")})
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        entries, mode, per_second = sys.argv[2:5]
        print(json.dumps(child(int(entries), mode, float(per_second))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default="100000")
    parser.add_argument("--per-second", type=float, default=2000.0, help="entries stored a second")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    results = []
    for round_ in range(args.rounds):
        for entries in map(int, args.entries.split(",")):
            modes = ("off", "keeper") if round_ % 2 == 0 else ("keeper", "off")
            for mode in modes:
                result = run_child(entries, mode, args) | {"round": round_ + 1}
                results.append(result)
                print(json.dumps(result), flush=True)
    print("\n| entries | mode | round | seconds | full collections | all their pauses "
          "| median pause | longest pause | freezes |\n"
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['entries']:,} | {r['mode']} | {r['round']} | {r['seconds']} "
              f"| {r['full_collections']} | {r['total_ms']} ms | {r['median_ms']} ms "
              f"| {r['max_ms']} ms | {r['freezes']} |")
    target = REPO / "bench" / "results" / "gc_pause.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"args": vars(args), "results": results}, indent=1))


if __name__ == "__main__":
    main()
