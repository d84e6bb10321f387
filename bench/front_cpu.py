"""The front's own CPU per fresh hit, without the kernel: browser-like request heads fed to
the front's connections in process, their bytes written to a transport that keeps them.

``wrk`` against ``stoker serve`` (``bench/hit_path/run.py``) measures what a client gets,
syscalls and scheduling included, and varies with the machine's load by a few percent;
this measures only the Python (and httptools/uvloop-free) work of answering a hit, which
``time.process_time`` counts the same on a busy machine, so a change's effect on the hit
path can be seen to a percent.  The origin (``bench/origin_app.py`` on granian, no added
latency) fills ``--pages`` pages once, through the same connections; then ``--requests``
heads shaped as ``bench/hit_path/browser.lua``'s (a random page, its own User-Agent,
Accept-Language and Referer) are answered, ``--connections`` per loop iteration, in
``--rounds`` rounds; printed are the median µs per request and, with ``--profile``, the
functions with the most own time (cProfile).

    PYTHONPATH=src .venv/bin/python bench/front_cpu.py      # --requests 100000 --profile

Instructions per hit, repeatable on a busy machine (``valgrind`` counts them, not time):
run ``valgrind --tool=callgrind .venv/bin/python bench/front_cpu.py --rounds 1 --pages 200
--distinct 1000`` with ``--requests 2000`` and ``12000``; per hit = the difference in
"Collected" / 11,000.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.hit_path.run import start, stop  # noqa: E402
from bench.procs import START_TIMEOUT, origin_system  # noqa: E402

from stoker.adapters.asgi_proxy import ProxyApp  # noqa: E402
from stoker.app.serving import proxy_app  # noqa: E402
from stoker.app.stoker import Stoker  # noqa: E402
from stoker.config.settings import settings_from  # noqa: E402
from stoker.server.front.connection import Connection  # noqa: E402
from stoker.server.front.listener import Listener  # noqa: E402

LANGUAGES = ("en-US,en;q=0.9", "de-DE,de;q=0.9,en;q=0.8", "fr-FR,fr;q=0.9,en;q=0.7",
             "pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7", "ja,en-US;q=0.9,en;q=0.8")
PLATFORMS = ("Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 10_15_7",
             "X11; Linux x86_64", "Linux; Android 14; Pixel 8")
ACCEPT = b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"


def browser_head(pages: int, rng: random.Random) -> bytes:
    """One request head as ``browser.lua`` makes them."""
    agent = (f"Mozilla/5.0 ({rng.choice(PLATFORMS)}) AppleWebKit/537.36 (KHTML, like Gecko) "
             f"Chrome/{rng.randint(110, 131)}.0.{rng.randint(4000, 6999)}."
             f"{rng.randint(10, 250)} Safari/537.36")
    return (b"GET /p/%d HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: %s\r\nAccept: %s\r\n"
            b"Accept-Language: %s\r\nReferer: http://www.example.test/p/%d\r\n\r\n" % (
                rng.randint(1, pages), agent.encode(), ACCEPT,
                rng.choice(LANGUAGES).encode(), rng.randint(1, pages)))


class Transport(asyncio.Transport):
    """Keeps the bytes written to it (counted, then dropped)."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0
        self.closing = False

    def write(self, data: Any) -> None:
        self.written += len(data)

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.written += len(data)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default


async def fill(connection: Connection, transport: Transport, pages: int) -> None:
    """Request every page once through ``connection`` (misses, answered through ASGI)."""
    for page in range(1, pages + 1):
        before = transport.written
        connection.data_received(b"GET /p/%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % page)
        while transport.written == before or connection._active is not None:
            await asyncio.sleep(0.001)


async def measure(listener: Listener, heads: list[bytes], connections: int) -> float:
    """CPU seconds per request answering ``heads``, ``connections`` per loop iteration."""
    pairs = []
    for _ in range(connections):
        transport = Transport()
        connection = Connection(listener)
        connection.connection_made(transport)
        pairs.append(connection)
    started = time.process_time()
    for at in range(0, len(heads), connections):
        for connection, head in zip(pairs, heads[at:at + connections], strict=False):
            connection.data_received(head)
        await asyncio.sleep(0)  # the write batch is released at the iteration's end
    return (time.process_time() - started) / len(heads)


@asynccontextmanager
async def front(prefix: str) -> AsyncIterator[tuple[Stoker, Listener]]:
    """Stoker in front of the bench origin (granian, no added latency; warming off) and a
    front listener over its proxy app, as ``stoker serve`` builds it (no Date field, so
    every answer is the same bytes); the origin stopped and the stores closed on exit."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    origin = origin_system(tmp, 0)
    start(origin, None, START_TIMEOUT)
    try:
        settings = settings_from({"origin": f"http://127.0.0.1:{origin.port}",
                                  "data_dir": str(tmp / "data"), "warm_workers": 0,
                                  "warm_on_start": "never"})
        stoker = await Stoker.open(settings)
        try:
            app = proxy_app(stoker)
            proxy = app if isinstance(app, ProxyApp) else None
            yield stoker, Listener(app, proxy, date_header=False)
        finally:
            await stoker.close()
    finally:
        stop(origin)


async def main(args: argparse.Namespace) -> None:
    async with front("stoker-front-cpu-") as (stoker, listener):
        await run(stoker, listener, args)


async def run(stoker: Stoker, listener: Listener, args: argparse.Namespace) -> None:
    transport = Transport()
    filler = Connection(listener)
    filler.connection_made(transport)
    await fill(filler, transport, args.pages)
    await stoker.pipeline.drain()
    rng = random.Random(1)
    distinct = [browser_head(args.pages, rng) for _ in range(args.distinct or args.requests)]
    heads = (distinct * (args.requests // len(distinct) + 1))[:args.requests]
    await measure(listener, heads[: args.requests // 10], args.connections)  # warm-up
    figures = []
    for round_ in range(args.rounds):
        figures.append(await measure(listener, heads, args.connections) * 1e6)
        print(f"round {round_ + 1}: {figures[-1]:.2f} µs CPU per hit")
    print(f"median: {statistics.median(figures):.2f} µs CPU per hit "
          f"({args.requests} browser-like heads, {args.connections} per iteration)")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        await measure(listener, heads, args.connections)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--distinct", type=int, default=0, help=(
        "distinct heads, repeated to --requests (0: every head new); under valgrind "
        "--tool=callgrind two runs' difference in instructions, over their difference in "
        "requests (times 1.1: the warm-up), is the instructions per hit, head-making aside"))
    parser.add_argument("--profile", action="store_true", help="then print a cProfile")
    parser.add_argument("--top", type=int, default=30, help="functions the profile prints")
    asyncio.run(main(parser.parse_args()))
