"""Warming N URLs against an origin of known capacity, and what it does to visitors' hits.

The origin (granian, ASGI, a subprocess) renders pages under a semaphore of
``--capacity`` (8) concurrent renders of ``--render-ms`` (50 ms) each; requests beyond
that queue at the origin, which records the peak of requests in flight (arrived, not yet
answered: above the capacity means the warmer made requests queue), the busy slot-time
and every page it rendered.  Its ``/sitemap.xml`` is an index of children of at most
``--per-sitemap`` URLs; with the home page the site has exactly ``--urls`` pages.

``stoker serve`` (a subprocess pinned to core 1, a fresh data dir each round) sits in
front with ``warm_workers`` 16, ``warm_max_concurrency`` 8 (= the origin's capacity: the
adaptive throttle may grow to it but not past it) and ``origin_max_concurrency`` 16
(warm visits may use 12 slots, 4 stay reserved for visitors).  Workers outnumber the
warm concurrency so that, while 8 visits wait on the origin, other jobs can be leased,
recorded and acked: those round trips do not leave a render slot idle.

A visitor load (aiohttp, a subprocess on core 0 with the origin) requests 100 pages
cached before the run at a fixed rate (open loop: latency counts from the scheduled
start, so a stall delays every request behind it), first ``--idle`` seconds with no
warming, then throughout a full warm run started with ``POST /api/warm`` and polled with
``GET /api/warm/{id}`` until done.  Per round: run time (the run's own started/finished
times) over the floor ``urls / (capacity / render)``, the origin's peak in-flight, its
utilisation (busy slot-seconds over capacity * run time) and visitors' hit p99 during the
run over idle p99 of the same round.  Summary: the median of every round's figures.

    .venv/bin/python bench/warm.py                         # --urls 2000 --rounds 3
    .venv/bin/python bench/warm.py --urls 10000 --rounds 1

Results go to ``bench/results/warm.json``, each process's output to
``bench/results/warm-logs/``; processes are stopped on exit and on errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# bench/queue.py would shadow the stdlib ``queue`` module: keep bench/ off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from bench.common import free_port, percentile, pin  # noqa: E402

from stoker.asgi import Receive, Scope, Send  # noqa: E402

RESULTS = REPO / "bench" / "results"
LOGS = RESULTS / "warm-logs"
TOKEN = "bench-token"
HOT = 100
SERVER_CORE, CLIENT_CORE = 1, 0
GOALS = {"floor_ratio": 1.15, "p99_ratio": 1.2}
PAGE = b"<!doctype html><html><body>" + b"<p>warm me</p>" * 300 + b"</body></html>"
HTML = [(b"content-type", b"text/html"), (b"cache-control", b"public, max-age=3600")]
XML = [(b"content-type", b"application/xml")]
JSON = [(b"content-type", b"application/json")]




# -- the origin (subprocess) ------------------------------------------------------------


class Origin:
    """An ASGI site of ``urls`` pages rendered ``capacity`` at a time, ``render`` s each."""

    def __init__(self, site: str, urls: int, per_sitemap: int, capacity: int,
                 render: float) -> None:
        self.site, self.pages, self.per_sitemap = site, urls - 1, per_sitemap  # + home
        self.capacity, self.render = capacity, render
        self.slots = asyncio.Semaphore(capacity)
        self.reset()

    def reset(self) -> None:
        self.in_flight = self.peak = self.renders = 0
        self.busy = 0.0
        self.seen: set[str] = set()
        self.repeated: list[str] = []
        self.levels: dict[int, float] = {}  # seconds spent at each number in flight
        self.since = time.perf_counter()

    def count(self, change: int) -> None:
        now = time.perf_counter()
        self.levels[self.in_flight] = self.levels.get(self.in_flight, 0.0) + now - self.since
        self.since = now
        self.in_flight += change
        self.peak = max(self.peak, self.in_flight)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            return
        path = scope["path"]
        if path == "/_stats":
            await self.reply(send, 200, json.dumps(self.stats()).encode(), JSON)
            if scope["method"] == "POST":
                self.reset()
        elif path in ("/robots.txt", "/sitemap.xml") or path.startswith("/sitemaps/"):
            await self.reply(send, 200, *self.sitemap(path))
        else:
            await self.rendered(path, send)

    async def rendered(self, path: str, send: Send) -> None:
        self.count(1)
        try:
            async with self.slots:
                started = time.perf_counter()
                await asyncio.sleep(self.render)
                self.busy += time.perf_counter() - started
            self.renders += 1
            if path in self.seen:
                self.repeated.append(path)
            self.seen.add(path)
            await self.reply(send, 200, PAGE, HTML)
        finally:
            self.count(-1)

    def sitemap(self, path: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
        if path == "/robots.txt":
            return f"User-agent: *\nSitemap: {self.site}/sitemap.xml\n".encode(), []
        if path == "/sitemap.xml":
            children = range(0, self.pages, self.per_sitemap)
            body = "".join(f"<sitemap><loc>{self.site}/sitemaps/{i}.xml</loc></sitemap>"
                           for i in children)
            return (f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns='
                    f'"http://www.sitemaps.org/schemas/sitemap/0.9">{body}</sitemapindex>'
                    ).encode(), XML
        first = int(path.removeprefix("/sitemaps/").removesuffix(".xml"))
        locs = "".join(f"<url><loc>{self.site}/page/{i}</loc></url>"
                       for i in range(first, min(self.pages, first + self.per_sitemap)))
        return (f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns='
                f'"http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>').encode(), XML

    def stats(self) -> dict[str, Any]:
        self.count(0)
        return {"peak": self.peak, "renders": self.renders, "repeated": self.repeated[:10],
                "busy": self.busy, "capacity": self.capacity, "render": self.render,
                "levels": self.levels}

    @staticmethod
    async def reply(send: Send, status: int, body: bytes,
                    headers: list[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


async def serve_origin(port: int, site: str, urls: int, per_sitemap: int, capacity: int,
                       render: float) -> None:
    from stoker.server.listeners import run_apps

    app = Origin(site, urls, per_sitemap, capacity, render)
    await run_apps("granian", [(app, f"127.0.0.1:{port}")], asyncio.Event())


# -- the visitors (subprocess) ----------------------------------------------------------


async def visit(url: str, rate: float, connections: int, out: Path) -> None:
    """Request the hot pages at ``rate``/s until stdin closes; write every sample."""
    import aiohttp

    samples: list[tuple[float, float, int]] = []
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    closed = asyncio.create_task(reader.read())
    slots = asyncio.Semaphore(connections)
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one(index: int, due: float, wall: float) -> None:
            async with slots, session.get(f"{url}/hot/{index % HOT}") as response:
                await response.read()
                hit = int("hit" in response.headers.get("cache-status", ""))
            samples.append((wall, loop.time() - due, hit))

        tasks: set[asyncio.Task[None]] = set()
        start, wall0, index = loop.time(), time.time(), 0
        while not closed.done():
            due = start + index / rate
            await asyncio.sleep(max(0.0, due - loop.time()))
            task = asyncio.create_task(one(index, due, wall0 + (due - start)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            index += 1
        await asyncio.gather(*tasks)
    out.write_text(json.dumps(samples))


# -- probes inside stoker serve (subprocess, only with --probe / --fixed-limit) -------------


@dataclass
class Probe:
    """Where a warm visit's time goes, gathered inside ``stoker serve``."""

    visits: int = 0
    visit_seconds: float = 0.0  # whole visits through the pipeline, as the throttle sees them
    limit_sum: int = 0  # the throttle's limit after each visit (its mean: limit_sum / visits)
    cuts: int = 0  # halvings the throttle decided (also counted when --fixed-limit undoes them)
    origin_requests: int = 0
    origin_ttfb: float = 0.0  # from asking for an origin slot to the response's headers
    origin_held: float = 0.0  # from asking for an origin slot to closing the response

    def summary(self) -> dict[str, float]:
        visits, requests = max(1, self.visits), max(1, self.origin_requests)
        return {"visit_ms": round(self.visit_seconds / visits * 1000, 2),
                "origin_ttfb_ms": round(self.origin_ttfb / requests * 1000, 2),
                "origin_held_ms": round(self.origin_held / requests * 1000, 2),
                "mean_limit": round(self.limit_sum / visits, 2), "cuts": self.cuts}


def probed_stoker(out: Path, fixed_limit: bool, argv: list[str]) -> None:
    """Run the ``stoker`` command line with :class:`Probe` hooks on the throttle's input
    and the origin client; the summary goes to ``out`` when the process exits.  With
    ``fixed_limit`` the throttle's limit stays at ``warm_max_concurrency``."""
    import atexit
    import dataclasses
    import runpy

    import stoker.origin.limited as limited
    import stoker.warm.warmer as warmer
    from stoker.warm.throttle import ThrottleState
    from stoker.warm.throttle import on_result as decide

    probe = Probe()
    fetch = limited.LimitedOrigin.fetch

    def on_result(state: ThrottleState, latency: float, status: int, retry_after: str | None,
                  now: float) -> ThrottleState:
        new = decide(state, latency, status, retry_after, now)
        probe.cuts += new.limit < state.limit
        if fixed_limit:
            new = dataclasses.replace(new, limit=new.max_concurrency)
        probe.visits, probe.visit_seconds = probe.visits + 1, probe.visit_seconds + latency
        probe.limit_sum += new.limit
        return new

    async def timed_fetch(self: Any, *args: Any) -> Any:
        started = time.monotonic()
        response = await fetch(self, *args)
        ttfb, close = time.monotonic() - started, response.close

        async def timed_close() -> None:
            try:
                await close()
            finally:
                probe.origin_requests += 1
                probe.origin_ttfb += ttfb
                probe.origin_held += time.monotonic() - started

        response.close = timed_close
        return response

    warmer.on_result = on_result  # type: ignore[attr-defined]
    limited.LimitedOrigin.fetch = timed_fetch  # type: ignore[method-assign, assignment]
    atexit.register(lambda: out.write_text(json.dumps(probe.summary())))
    sys.argv = ["stoker", *argv]
    runpy.run_module("stoker", run_name="__main__")


# -- the controller (this process) ------------------------------------------------------


@dataclass
class Round:
    """One round's figures."""

    round: int
    urls: int
    seconds: float
    floor: float
    floor_ratio: float
    origin_peak: int
    capacity: int
    utilisation: float
    at_capacity: float
    time_at: dict[int, float]
    repeated: list[str]
    renders: int
    stoker_cpu: float
    idle_p99_ms: float
    run_p99_ms: float
    p99_ratio: float
    idle_p50_ms: float
    run_p50_ms: float
    visitor_requests: int
    visitor_misses: int
    load: str
    probe: dict[str, float] | None


@contextlib.contextmanager
def process(argv: list[str], core: int, log: Path,
            **kwargs: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``argv`` pinned to ``core`` in its own session, its output going to ``log``;
    stop its group on exit."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as output:
        child = subprocess.Popen(argv, start_new_session=True, preexec_fn=lambda: pin(core),
                                 stdout=output, stderr=subprocess.STDOUT, **kwargs)
    try:
        yield child
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


async def wait_listening(port: int, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s "
                       f"(see {LOGS})")


def stoker_env(args: argparse.Namespace, origin: str, data_dir: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "STOKER_ORIGIN": origin,
            "STOKER_DATA_DIR": data_dir, "STOKER_ADMIN_TOKEN": TOKEN,
            "STOKER_WARM_WORKERS": str(args.warm_workers),
            "STOKER_WARM_MAX_CONCURRENCY": str(args.warm_max_concurrency),
            "STOKER_ORIGIN_MAX_CONCURRENCY": str(args.origin_max_concurrency),
            "STOKER_WARM_ON_START": "never"}  # the run measured is the one this bench starts


async def warm_run(session: Any, admin: str, timeout: float) -> dict[str, Any]:
    """Start a full run and poll it until it is no longer active (at most ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with session.post(f"{admin}/api/warm", json={}, headers=headers) as reply:
        body = await reply.json()
        if reply.status != 202:
            raise RuntimeError(f"POST /api/warm answered {reply.status}: {body}")
    run_id = body["run"]["id"]
    while True:
        await asyncio.sleep(0.25)
        async with session.get(f"{admin}/api/warm/{run_id}", headers=headers) as reply:
            run: dict[str, Any] = await reply.json()
        if run["phase"] not in ("collect", "warm"):
            return run
        if time.monotonic() > deadline:
            raise RuntimeError(f"warm run {run_id} still {run['phase']} after {timeout:.0f} s: "
                               f"{run['counts']} (see {LOGS})")


async def one_round(number: int, args: argparse.Namespace) -> Round:
    import aiohttp

    origin_port, proxy_port, admin_port = free_port(), free_port(), free_port()
    origin, proxy = f"http://127.0.0.1:{origin_port}", f"http://127.0.0.1:{proxy_port}"
    admin = f"http://127.0.0.1:{admin_port}"
    me = [sys.executable, str(Path(__file__).resolve())]
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        stack.enter_context(process(
            [*me, "--origin-server", str(origin_port), proxy, str(args.urls),
             str(args.per_sitemap), str(args.capacity), str(args.render_ms / 1000)],
            CLIENT_CORE, LOGS / f"round-{number}-origin.log"))
        probe = LOGS / f"round-{number}-probe.json"  # written when stoker exits
        probe.unlink(missing_ok=True)
        command = ([*me, "--probed-stoker", str(probe), str(int(args.fixed_limit))]
                   if args.probe or args.fixed_limit else [sys.executable, "-m", "stoker"])
        stoker = stack.enter_context(process(
            [*command, "serve", "--listen", f"127.0.0.1:{proxy_port}",
             "--admin-listen", f"127.0.0.1:{admin_port}"], SERVER_CORE,
            LOGS / f"round-{number}-stoker.log", env=stoker_env(args, origin, f"{tmp}/data")))
        await wait_listening(origin_port, "the origin")
        await wait_listening(proxy_port, "stoker serve")
        async with aiohttp.ClientSession() as session:
            for i in range(HOT):
                async with session.get(f"{proxy}/hot/{i}") as response:
                    await response.read()
            out = Path(tmp) / "samples.json"
            visitors = stack.enter_context(process(
                [*me, "--visitors", proxy, str(args.rate), str(args.connections), str(out)],
                CLIENT_CORE, LOGS / f"round-{number}-visitors.log", stdin=subprocess.PIPE))
            await asyncio.sleep(args.idle)
            loads: list[float] = []
            load_task = asyncio.create_task(sample_load(loads))
            async with session.post(f"{origin}/_stats"):
                pass
            cpu = cpu_seconds(stoker.pid)
            run = await warm_run(session, admin, 60 + 5 * args.urls * args.render_ms / 1000
                                 / args.capacity)
            cpu = cpu_seconds(stoker.pid) - cpu
            load_task.cancel()
            async with session.get(f"{origin}/_stats") as reply:
                stats = await reply.json()
        assert visitors.stdin is not None
        visitors.stdin.close()
        await asyncio.to_thread(visitors.wait)
        samples = json.loads(out.read_text())
    probed = json.loads(probe.read_text()) if probe.exists() else None
    return summarise(number, run, stats, samples, loads, cpu, probed)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def sample_load(loads: list[float]) -> None:
    while True:
        loads.append(os.getloadavg()[0])
        await asyncio.sleep(5)


def summarise(number: int, run: dict[str, Any], stats: dict[str, Any],
              samples: list[list[float]], loads: list[float], cpu: float,
              probe: dict[str, float] | None) -> Round:
    if run["phase"] != "done":
        raise RuntimeError(f"warm run ended {run['phase']}: {run.get('error')} "
                           f"{run['counts']}")
    started, finished = run["started_at"], run["finished_at"]
    seconds = finished - started
    urls = run["counts"]["total"]
    floor = urls * stats["render"] / stats["capacity"]
    warmed_up = min((s[0] for s in samples), default=started) + 1.0  # connections open
    idle = [s for s in samples if warmed_up <= s[0] < started]
    during = [s for s in samples if started <= s[0] <= finished]
    idle_ms = [s[1] * 1000 for s in idle]
    run_ms = [s[1] * 1000 for s in during]
    idle_p99, run_p99 = percentile(idle_ms, 0.99), percentile(run_ms, 0.99)
    return Round(
        round=number, urls=urls, seconds=round(seconds, 2), floor=round(floor, 2),
        floor_ratio=round(seconds / floor, 3), origin_peak=stats["peak"],
        capacity=stats["capacity"],
        utilisation=round(stats["busy"] / (stats["capacity"] * seconds), 3),
        at_capacity=round(sum(t for level, t in stats["levels"].items()
                              if int(level) >= stats["capacity"]) / seconds, 3),
        time_at={int(level): round(t / seconds, 3) for level, t in
                 sorted(stats["levels"].items(), key=lambda item: int(item[0]))},
        repeated=stats["repeated"], renders=stats["renders"],
        stoker_cpu=round(cpu / seconds, 3),
        idle_p99_ms=round(idle_p99, 2), run_p99_ms=round(run_p99, 2),
        p99_ratio=round(run_p99 / idle_p99, 3),
        idle_p50_ms=round(percentile(idle_ms, 0.5), 2),
        run_p50_ms=round(percentile(run_ms, 0.5), 2),
        visitor_requests=len(during), visitor_misses=sum(1 for s in during if not s[2]),
        load=f"{min(loads, default=0):.1f}-{max(loads, default=0):.1f}", probe=probe)


def verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "MISSED"


def report(rounds: list[Round]) -> str:
    lines = ["| round | URLs | run s | floor s | ratio | origin peak | utilisation | "
             "at capacity | stoker CPU | hit p99 idle / run | p99 ratio | load |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    lines += [f"| {r.round} | {r.urls:,} | {r.seconds:.1f} | {r.floor:.1f} | "
              f"{r.floor_ratio:.3f}x | {r.origin_peak} / {r.capacity} | {r.utilisation:.0%} | "
              f"{r.at_capacity:.0%} | {r.stoker_cpu:.0%} | {r.idle_p99_ms:.2f} / "
              f"{r.run_p99_ms:.2f} ms | {r.p99_ratio:.2f}x | {r.load} |" for r in rounds]
    floor_ratio = statistics.median(r.floor_ratio for r in rounds)
    p99_ratio = statistics.median(r.p99_ratio for r in rounds)
    peak = max(r.origin_peak for r in rounds)
    capacity = rounds[0].capacity
    lines += [
        "",
        f"median run / floor: {floor_ratio:.3f}x (goal <= {GOALS['floor_ratio']}x: "
        f"{verdict(floor_ratio, GOALS['floor_ratio'])})",
        f"origin peak in flight: {peak} (capacity {capacity}: "
        f"{verdict(peak, capacity)})",
        f"median visitors' hit p99 run / idle: {p99_ratio:.2f}x (goal <= "
        f"{GOALS['p99_ratio']}x: {verdict(p99_ratio, GOALS['p99_ratio'])})",
        f"pages rendered twice: {sorted({p for r in rounds for p in r.repeated})} (the home "
        f"page is also read by discovery); visitor misses during runs: "
        f"{sum(r.visitor_misses for r in rounds)}",
    ]
    lines += [f"round {r.round} probe: warm visit {r.probe['visit_ms']} ms, of which the "
              f"origin request {r.probe['origin_held_ms']} ms (headers after "
              f"{r.probe['origin_ttfb_ms']} ms); throttle limit {r.probe['mean_limit']} on "
              f"average, {r.probe['cuts']:.0f} halvings" for r in rounds if r.probe]
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    pin(CLIENT_CORE)
    rounds = []
    for number in range(1, args.rounds + 1):
        result = await one_round(number, args)
        print(json.dumps(asdict(result)), flush=True)
        rounds.append(result)
    print(report(rounds))
    target = RESULTS / "warm.json"
    target.write_text(json.dumps({"args": vars(args),
                                  "rounds": [asdict(r) for r in rounds]}, indent=1))


def cli() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--origin-server":
        port, site, urls, per_sitemap, capacity, render = sys.argv[2:8]
        asyncio.run(serve_origin(int(port), site, int(urls), int(per_sitemap), int(capacity),
                                 float(render)))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--probed-stoker":
        probed_stoker(Path(sys.argv[2]), sys.argv[3] == "1", sys.argv[4:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--visitors":
        url, rate, connections, out = sys.argv[2:6]
        asyncio.run(visit(url, float(rate), int(connections), Path(out)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=2000, help="pages on the site (home "
                        "page included)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-sitemap", type=int, default=5000)
    parser.add_argument("--capacity", type=int, default=8, help="origin's concurrent renders")
    parser.add_argument("--render-ms", type=float, default=50.0)
    parser.add_argument("--warm-workers", type=int, default=16)
    parser.add_argument("--warm-max-concurrency", type=int, default=8)
    parser.add_argument("--origin-max-concurrency", type=int, default=16)
    parser.add_argument("--rate", type=float, default=400.0, help="visitors' requests/s")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--probe", action="store_true", help="measure inside stoker serve "
                        "where a warm visit's time goes and how often the throttle halves")
    parser.add_argument("--fixed-limit", action="store_true", help="(implies --probe) keep "
                        "the warm throttle at warm_max_concurrency: what AIMD costs")
    parser.add_argument("--idle", type=float, default=8.0,
                        help="seconds of visitor load before the run (the first is dropped)")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
