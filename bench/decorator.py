"""A cached call's cost on a fresh L1 hit: ``@stoker.functions.cached`` against a plain
dict lookup, cashews' ``@cache`` and aiocache's ``@cached`` (both from PyPI, in memory),
in the same run.

Each system decorates the same async function of two arguments returning a small dict;
after one call has stored it, a round times ``--calls`` awaited calls with the same
arguments (every one a fresh hit), and gives the mean time per call.  Rounds interleave
the systems; the figures are the medians of the rounds, with the ratios of Stoker's to
each other system's taken within each round.  Goal: Stoker ≤ 1.0x the fastest of
cashews and aiocache.  Stoker's runtime is a Stoker opened on SQLite in a temporary
``data_dir`` (L1 in memory in front), no origin, the system clock.

    .venv/bin/python bench/decorator.py                  # --calls 100000 --rounds 7

Results go to ``bench/results/decorator.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(REPO / "src"))

from aiocache import cached as aiocache_cached  # noqa: E402
from cashews import cache as cashews_cache  # noqa: E402

from stoker.app.stoker import Stoker  # noqa: E402
from stoker.config.settings import settings_from  # noqa: E402
from stoker.functions import cached  # noqa: E402
from stoker.functions.runtime import NoOrigin  # noqa: E402

Call = Callable[[int, str], Awaitable[Any]]


def result(a: int, b: str) -> dict[str, Any]:
    return {"id": a, "name": b, "tags": ["x", "y"]}


def dict_lookup() -> Call:
    """The floor: a coroutine that looks its result up in a dict."""
    memo: dict[tuple[int, str], Any] = {}

    async def call(a: int, b: str) -> Any:
        found = memo.get((a, b))
        if found is None:
            found = memo[(a, b)] = result(a, b)
        return found

    return call


def stoker_cached(stoker: Stoker) -> Call:
    async def runtime() -> Stoker:
        return stoker

    @cached(runtime, ttl="1h")
    async def call(a: int, b: str) -> Any:
        return result(a, b)

    return call


def cashews() -> Call:
    cashews_cache.setup("mem://")

    @cashews_cache(ttl="1h")
    async def call(a: int, b: str) -> Any:
        return result(a, b)

    return call


def aiocache() -> Call:
    @aiocache_cached(ttl=3600)
    async def call(a: int, b: str) -> Any:
        return result(a, b)

    return call


async def per_call(call: Call, calls: int) -> float:
    """Mean seconds per awaited call of ``call(1, "x")``, a fresh hit each."""
    await call(1, "x")
    start = time.perf_counter()
    for _ in range(calls):
        await call(1, "x")
    return (time.perf_counter() - start) / calls


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data_dir:
        stoker = await Stoker.open(settings_from({"data_dir": data_dir}), origin=NoOrigin(),
                                   evict_loop=False)
        try:
            systems = {"dict": dict_lookup(), "stoker": stoker_cached(stoker),
                       "cashews": cashews(), "aiocache": aiocache()}
            rounds: list[dict[str, float]] = []
            for number in range(args.rounds):
                figures = {name: await per_call(call, args.calls)
                           for name, call in systems.items()}
                rounds.append(figures)
                print(f"round {number + 1}: " + "  ".join(
                    f"{name} {seconds * 1e6:.2f} µs" for name, seconds in figures.items()))
        finally:
            await stoker.close()
    return summary(rounds, args)


def summary(rounds: list[dict[str, float]], args: argparse.Namespace) -> dict[str, Any]:
    median = {name: statistics.median(each[name] for each in rounds) * 1e6
              for name in rounds[0]}
    ratios = {other: statistics.median(each["stoker"] / each[other] for each in rounds)
              for other in ("dict", "cashews", "aiocache")}
    fastest = min(("cashews", "aiocache"), key=lambda name: median[name])
    return {"calls": args.calls, "rounds": args.rounds, "python": platform.python_version(),
            "loadavg": os.getloadavg(), "us_per_call": median, "stoker_over": ratios,
            "fastest_other": fastest, "goal_met": ratios[fastest] <= 1.0}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "decorator.json")
    arguments = parser.parse_args()
    report = asyncio.run(main(arguments))
    for name, micros in report["us_per_call"].items():
        print(f"{name:>9}: {micros:7.2f} µs per fresh hit")
    for other, ratio in report["stoker_over"].items():
        print(f"stoker / {other}: {ratio:.2f}x")
    print(f"goal (stoker <= 1.0x {report['fastest_other']}): "
          f"{'met' if report['goal_met'] else 'NOT met'}")
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
