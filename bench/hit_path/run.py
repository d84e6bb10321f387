"""Fresh-hit throughput and p99 of Stoker vs nginx proxy_cache, Varnish and a raw ASGI ceiling.

Two scenarios, both in every round (:data:`SCENARIOS`): ``identical`` sends one URL with
one request head; ``browser`` sends ``--pages`` URLs (2,000), each request with its own
User-Agent, Accept-Language and Referer (``browser.lua``), all cached before it runs.
Every system serves the same 20 KB page (``Cache-Control: public, max-age=3600``) from
its cache, pinned to one core (``--server-core``, default 1) while wrk runs on another
(``--client-core``, default 0) with one thread and ``--connections`` connections. Each
proxy gets its own tiny origin, so "origin hits" proves it served from cache. Systems
are interleaved within each round (the order rotates every round) because this machine
is noisy; the summary is the median of each system and the median of the per-round
ratios ``subject / other`` (subject: Stoker, or the raw ceiling when Stoker is not run).
System ``stoker-l2`` is Stoker with ``l1_max_bytes = 0``: every fresh hit is an L2 hit.
``stoker`` runs the default server, Stoker's own HTTP/1.1 front (``server = "stoker"``),
which answers fresh hits inside the protocol; system ``stoker-granian`` is Stoker with
``server = "granian"``, every hit through granian's ASGI interface.

    .venv/bin/python bench/hit_path/run.py --rounds 5 --duration 10
    .venv/bin/python bench/hit_path/run.py --systems nginx,varnish,raw --rounds 1 --duration 3

Results also go to ``bench/results/hit_path.json``. All processes are stopped on exit,
on Ctrl-C and on errors (each server runs in its own session; its group is signalled).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from page import CACHE_CONTROL, CONTENT_TYPE, PAGE  # noqa: E402

VENV_BIN = Path(sys.executable).parent
ALL_SYSTEMS = ("stoker", "raw", "raw-uvicorn", "varnish", "nginx", "stoker-l2", "stoker-granian",
               "stoker-2p", "nginx-2w", "stoker-redis")
PROXIES = {"stoker", "varnish", "nginx", "stoker-l2", "stoker-granian", "stoker-2p", "nginx-2w",
           "stoker-redis"}
REDIS_URL = "redis://127.0.0.1:6379/14"
"""``stoker-redis``'s tier: its Stoker keys are deleted before it starts."""
BENCH_DATABASE = "stoker_bench_hits"
"""``stoker-redis``'s database (``l2_url`` needs one), made anew for each run."""
SCALING = {"stoker-2p": "stoker", "nginx-2w": "nginx"}
"""Two serving processes (``--processes 2``) and two nginx workers, each against its one."""
STOKERS = ("stoker", "stoker-granian")
GOALS = {"raw": 1.1, "varnish": 1.2}  # Stoker's req/s must be at least this times theirs.
L2_GOAL = 0.5  # stoker-l2's req/s must be at least this times Stoker's (L1) req/s.


# -- the origin ------------------------------------------------------------------------


class Origin:
    """A stdlib HTTP/1.1 server in a thread serving PAGE; each system gets its own."""

    def __init__(self) -> None:
        self.hits = 0
        origin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                origin.hits += 1
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE.decode())
                self.send_header("Content-Length", str(len(PAGE)))
                self.send_header("Cache-Control", CACHE_CONTROL.decode())
                self.send_header("ETag", '"hit-path-20k"')
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- servers under test ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class System:
    name: str
    argv: list[str]
    port: int
    origin: Origin | None
    log: Path
    cwd: Path = REPO
    proc: subprocess.Popen[bytes] | None = None
    origin_hits_after_warm: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


def nginx_config(tmp: Path, port: int, origin: int, max_size: str = "100m",
                 workers: int = 1) -> str:
    """nginx (``workers`` workers) with a ``proxy_cache`` of ``max_size`` in front of
    ``origin``, its files under ``tmp``."""
    user = "user root root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes {workers};
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy_temp;
    fastcgi_temp_path {tmp}/fastcgi_temp;
    uwsgi_temp_path {tmp}/uwsgi_temp;
    scgi_temp_path {tmp}/scgi_temp;
    proxy_cache_path {tmp}/nginx-cache levels=1:2 keys_zone=hit:10m max_size={max_size}
                     inactive=60m use_temp_path=off;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{origin};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache hit;
            proxy_cache_valid 200 1h;
            add_header X-Cache-Status $upstream_cache_status;
        }}
    }}
}}
"""


def build_system(name: str, tmp: Path, args: argparse.Namespace) -> System:
    port = free_port()
    origin = Origin() if name in PROXIES else None
    log = tmp / f"{name}.log"
    if name in ("nginx", "nginx-2w"):
        assert origin is not None
        home = tmp / name
        home.mkdir()
        conf = home / "nginx.conf"
        conf.write_text(nginx_config(home, port, origin.port,
                                     workers=2 if name == "nginx-2w" else 1))
        argv = ["nginx", "-p", str(home), "-e", str(home / "nginx-error.log"), "-c", str(conf)]
    elif name == "varnish":
        assert origin is not None
        argv = [
            "varnishd", "-F", "-a", f"127.0.0.1:{port}", "-b", f"127.0.0.1:{origin.port}",
            "-n", str(tmp / "varnish"), "-s", "malloc,64m",
            "-p", "thread_pools=1", "-p", "thread_pool_min=100", "-p", "thread_pool_max=1000",
        ]  # fmt: skip
    elif name == "raw":
        argv = [
            str(VENV_BIN / "granian"), "--interface", "asgi", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1", *granian_loop(), "--no-access-log",
            "--log-level", "warning", *args.granian_arg, "bench.hit_path.raw_app:app",
        ]  # fmt: skip
    elif name == "raw-uvicorn":
        loop = ["--loop", "uvloop"] if has_module("uvloop") else []
        argv = [
            str(VENV_BIN / "uvicorn"), "--host", "127.0.0.1", "--port", str(port), *loop,
            "--no-access-log", "--log-level", "warning", "--lifespan", "off",
            "bench.hit_path.raw_app:app",
        ]  # fmt: skip
    elif name in ("stoker", "stoker-l2", "stoker-granian", "stoker-2p", "stoker-redis"):
        assert origin is not None
        argv = stoker_argv(name, tmp, port, origin.port, args)
    else:
        raise SystemExit(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}")
    return System(name, argv, port, origin, log)


def stoker_argv(
    name: str, tmp: Path, port: int, origin: int, args: argparse.Namespace
) -> list[str]:
    """`stoker serve` for ``stoker``; for ``stoker-l2`` with an L1 that holds nothing
    (``l1_max_bytes = 0``), so every fresh hit is read from L2 (SQLite); for
    ``stoker-granian`` on granian (``server = "granian"``); for ``stoker-redis`` with
    :func:`redis_config` (made only then: it empties the Redis database and the bench
    database, which another run's ``stoker-redis`` may be using)."""
    data = tmp / f"{name}-data"
    data.mkdir()
    special = {"stoker-l2": "l1_max_bytes = 0\n", "stoker-granian": 'server = "granian"\n',
               "stoker-2p": "processes = 2\n"}
    config = redis_config() if name == "stoker-redis" else special.get(name, "")
    # no warm run of its own: the origin counts only what the benchmark asked for
    (tmp / f"{name}.toml").write_text('warm_on_start = "never"\n' + config)
    return [
        args.stoker_bin, "serve", "--config", str(tmp / f"{name}.toml"),
        "--origin", f"http://127.0.0.1:{origin}",
        "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{free_port()}",
        "--data-dir", str(data), *args.stoker_arg,
    ]  # fmt: skip


def redis_settings() -> dict[str, Any]:
    """``stoker-redis``: an L1 that holds nothing and L2 in Redis (every hit a Redis hit),
    on a fresh database and a Redis database emptied of Stoker's keys."""
    for sql in (f"DROP DATABASE IF EXISTS {BENCH_DATABASE} WITH (FORCE)",
                f"CREATE DATABASE {BENCH_DATABASE}"):
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc",
                        sql], check=True, capture_output=True)
    subprocess.run(["redis-cli", "-u", REDIS_URL, "eval",
                    "for _, k in ipairs(redis.call('keys', 'stoker:*')) do "
                    "redis.call('del', k) end", "0"], check=True, capture_output=True)
    return {"l1_max_bytes": 0, "l2_url": REDIS_URL,
            "database_url": f"postgresql://postgres@127.0.0.1:5432/{BENCH_DATABASE}"}


def redis_config() -> str:
    """:func:`redis_settings` as stoker.toml lines."""
    return "".join(f"{name} = {json.dumps(value)}\n" for name, value in redis_settings().items())


def l2_verdict(rounds: list[dict[str, Measure]]) -> dict[str, Any]:
    """The L2-hit goal: ``stoker-l2`` serves at least L2_GOAL times Stoker's L1 rate."""
    found = ratios(rounds, "stoker-l2", "stoker")
    met = found["rps_ratio_median"] >= L2_GOAL
    print(f"  stoker-l2/stoker     req/s {found['rps_ratio_median']:.3f}x   "
          f"p99 {found['p99_ratio_median']:.3f}x   goal >= {L2_GOAL}x: "
          f"{'met' if met else 'MISSED'}")  # fmt: skip
    return found


def scaling_verdict(rounds: list[dict[str, Measure]]) -> dict[str, Any]:
    """Issue 23's goal: Stoker's 1 → 2 processes scaling at least nginx's 1 → 2 workers
    (per round: (stoker-2p / stoker) / (nginx-2w / nginx), same client, same run)."""
    both = [r for r in rounds if all(n in r for n in (*SCALING, *SCALING.values()))]
    per_round = [(r["stoker-2p"].rps / r["stoker"].rps) / (r["nginx-2w"].rps / r["nginx"].rps)
                 for r in both]
    found = {name: ratios(rounds, name, one) for name, one in SCALING.items()}
    median = statistics.median(per_round)
    print(f"  scaling 1 -> 2: stoker {found['stoker-2p']['rps_ratio_median']:.3f}x, nginx "
          f"{found['nginx-2w']['rps_ratio_median']:.3f}x; stoker's / nginx's {median:.3f}x   "
          f"goal >= 1x: {'met' if median >= 1.0 else 'MISSED'}")  # fmt: skip
    return {"stoker": found["stoker-2p"], "nginx": found["nginx-2w"],
            "relative_per_round": per_round, "relative_median": median}


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def granian_loop() -> list[str]:
    return ["--loop", "uvloop"] if has_module("uvloop") else []


def pinned(core: int | None, argv: list[str]) -> list[str]:
    return argv if core is None else ["taskset", "-c", str(core), *argv]


def start(system: System, core: int | None, timeout: float) -> None:
    with system.log.open("wb") as log:
        system.proc = subprocess.Popen(
            pinned(core, system.argv),
            cwd=system.cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        if system.proc.poll() is not None:
            raise RuntimeError(
                f"{system.name} exited with code {system.proc.returncode} while starting; "
                f"command: {' '.join(system.argv)}\n{tail(system.log)}"
            )
        try:
            status, body = get(system.port)
            if status == 200 and body == PAGE:
                return
            last_error = f"status {status}, {len(body)} bytes"
        except OSError as error:
            last_error = str(error)
        time.sleep(0.1)
    raise RuntimeError(
        f"{system.name} did not serve the page on port {system.port} within {timeout:.0f} s "
        f"({last_error}); command: {' '.join(system.argv)}\n{tail(system.log)}"
    )


def get(port: int) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop(system: System) -> None:
    proc = system.proc
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    # Varnish's child and nginx's worker are in the same group; reap stragglers.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


# -- wrk -------------------------------------------------------------------------------

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass
class Measure:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    non_2xx: int
    bytes_per_request: float


def run_wrk(url: str, duration: float, connections: int, core: int | None, *,
            script: Path | None = None, pages: int = 0) -> Measure:
    """wrk against ``url``; with ``script`` (a wrk Lua script) its requests, ``PAGES`` in
    its environment."""
    extra = ["-s", str(script)] if script is not None else []
    argv = pinned(core, ["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "--latency",
                         *extra, url])
    env = {**os.environ, "PAGES": str(pages)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    return parse_wrk(done.stdout)


def parse_wrk(out: str) -> Measure:
    def latency(percent: str) -> float:
        found = re.search(rf"^\s*{percent}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not found:
            raise RuntimeError(f"no {percent}% latency in wrk output:\n{out}")
        return float(found.group(1)) * _UNITS[found.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", out)
    read = re.search(r"requests in [^,]+, ([\d.]+)([KMGT]?B) read", out)
    if not (rps and total and read):
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}[read.group(2)]
    requests = int(total.group(1))
    return Measure(
        rps=float(rps.group(1)),
        p50_ms=latency("50"),
        p99_ms=latency("99"),
        requests=requests,
        errors=sum(int(g) for g in socket_errors.groups()) if socket_errors else 0,
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        bytes_per_request=float(read.group(1)) * scale / max(requests, 1),
    )


# -- the run ---------------------------------------------------------------------------


def versions() -> dict[str, str]:
    def first_line(argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"unavailable ({error})"
        return (done.stdout + done.stderr).strip().splitlines()[0] if done else ""

    return {
        "python": platform.python_version(),
        "nginx": first_line(["nginx", "-v"]),
        "varnish": first_line(["varnishd", "-V"]),
        "wrk": first_line(["wrk", "-v"]),
        "granian": first_line([str(VENV_BIN / "granian"), "--version"]),
        "uvloop": "yes" if has_module("uvloop") else "no",
        "kernel": platform.release(),
    }


def ratios(rounds: list[dict[str, Measure]], subject: str, other: str) -> dict[str, Any]:
    rps = [r[subject].rps / r[other].rps for r in rounds if subject in r and other in r]
    p99 = [r[subject].p99_ms / r[other].p99_ms for r in rounds if subject in r and other in r]
    return {
        "rps_ratio_per_round": rps,
        "rps_ratio_median": statistics.median(rps),
        "p99_ratio_per_round": p99,
        "p99_ratio_median": statistics.median(p99),
    }


@contextlib.contextmanager
def running(names: list[str], args: argparse.Namespace) -> Iterator[list[System]]:
    tmp = Path(tempfile.mkdtemp(prefix="stoker-hit-path-"))
    tmp.chmod(0o755)  # nginx workers and varnish's child may run as other users
    systems: list[System] = []
    try:
        for name in names:
            system = build_system(name, tmp, args)
            systems.append(system)
            print(f"starting {name}: {' '.join(system.argv)}", flush=True)
            start(system, args.server_core, args.start_timeout)
        yield systems
    finally:
        for system in systems:
            stop(system)
            if system.origin is not None:
                system.origin.close()
        if args.keep_tmp:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


SCENARIOS = ("identical", "browser")
"""``identical``: one URL, one request head, over and over (what a memo of heads serves);
``browser``: ``--pages`` URLs, each request with its own User-Agent, Accept-Language and
Referer (``browser.lua``), as browsers and bots behind CDNs send them."""
BROWSER_GOALS = {"varnish": 1.0, "raw": 1.2}
"""Issue 21's goals for browser-like hits: req/s at least this times theirs (and p99 no
worse than Varnish's)."""
BROWSER_SCRIPT = HERE / "browser.lua"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--systems",
        default="stoker,raw,varnish,nginx",
        help=f"comma-separated, from {', '.join(ALL_SYSTEMS)}",
    )
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, from {', '.join(SCENARIOS)}")
    parser.add_argument("--pages", type=int, default=2000,
                        help="pages of the browser scenario, each cached once before it runs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of wrk per system first")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--server-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0)
    parser.add_argument("--no-pin", action="store_true", help="do not use taskset")
    parser.add_argument("--start-timeout", type=float, default=30.0)
    parser.add_argument("--stoker-bin", default=str(VENV_BIN / "stoker"))
    parser.add_argument(
        "--stoker-arg",
        action="append",
        default=[],
        help="extra argument for `stoker serve` (repeatable)",
    )
    parser.add_argument(
        "--granian-arg",
        action="append",
        default=[],
        help="extra granian option for the raw ceiling, e.g. --granian-arg=--http=1 (repeatable)",
    )
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "hit_path.json")
    parser.add_argument("--keep-tmp", action="store_true")
    args = parser.parse_args(argv)  # fmt: skip

    args.names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = sorted(set(args.names) - set(ALL_SYSTEMS))
    if unknown or not args.names or len(set(args.names)) != len(args.names):
        parser.error(f"--systems takes distinct names from {', '.join(ALL_SYSTEMS)}")
    args.scenario_names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
    if not args.scenario_names or set(args.scenario_names) - set(SCENARIOS):
        parser.error(f"--scenarios takes names from {', '.join(SCENARIOS)}")
    if args.no_pin:
        args.server_core = args.client_core = None
    elif (os.cpu_count() or 1) <= max(args.server_core, args.client_core):
        parser.error("this machine lacks the cores to pin to; pass --no-pin or other cores")
    for tool in ("wrk", *(["taskset"] if not args.no_pin else [])):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed")
    return args


def measure(system: System, scenario: str, args: argparse.Namespace, duration: float) -> Measure:
    """One wrk run of ``scenario`` against ``system``."""
    script = BROWSER_SCRIPT if scenario == "browser" else None
    return run_wrk(system.url, duration, args.connections, args.client_core, script=script,
                   pages=args.pages)


def fill(system: System, pages: int) -> None:
    """Cache every page of the browser scenario once (one keep-alive connection)."""
    conn = http.client.HTTPConnection("127.0.0.1", system.port, timeout=10)
    try:
        for n in range(1, pages + 1):
            conn.request("GET", f"/p/{n}")
            response = conn.getresponse()
            if response.status != 200 or response.read() != PAGE:
                raise RuntimeError(f"{system.name} answered /p/{n} with {response.status}")
    finally:
        conn.close()


def warm_up(systems: list[System], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Fill each system's cache for every scenario and run a short warm-up of each; the
    origin must then have been asked once per URL (``/``, which :func:`start` asked for,
    and the browser scenario's pages)."""
    info: dict[str, dict[str, Any]] = {}
    urls = 1 + (args.pages if "browser" in args.scenario_names else 0)  # "/": start()'s
    for system in systems:
        if "browser" in args.scenario_names:
            fill(system, args.pages)
        warmed = {scenario: measure(system, scenario, args, args.warmup).rps
                  for scenario in args.scenario_names}
        hits = system.origin.hits if system.origin else 0
        system.origin_hits_after_warm = hits
        info[system.name] = {"command": system.argv, "warmup_rps": warmed}
        flag = "" if system.origin is None or hits == urls else f"  <-- NOT {urls} ORIGIN HITS"
        cells = "  ".join(f"{scenario} {rps:.0f} req/s" for scenario, rps in warmed.items())
        print(f"warmed {system.name:<14} {cells}, origin hits {hits}{flag}", flush=True)
    return info


Rounds = list[dict[str, dict[str, Measure]]]
"""Per round: scenario → system → what wrk measured."""


def measure_rounds(systems: list[System], args: argparse.Namespace) -> Rounds:
    """``args.rounds`` rounds; in each, every scenario on every system, interleaved (the
    systems' order rotates every round)."""
    rounds: Rounds = []
    for index in range(args.rounds):
        shift = index % len(systems)
        order = systems[shift:] + systems[:shift]
        results = {scenario: {system.name: measure(system, scenario, args, args.duration)
                              for system in order} for scenario in args.scenario_names}
        rounds.append(results)
        load = os.getloadavg()[0]
        for scenario, measured in results.items():
            cells = "  ".join(f"{n} {measured[n].rps:>8.0f}/s p99 {measured[n].p99_ms:>6.2f}ms"
                              for n in args.names)
            print(f"round {index + 1}/{args.rounds} {scenario:<9} (load {load:.2f}): {cells}",
                  flush=True)
            for n, m in measured.items():
                if m.errors or m.non_2xx or abs(m.bytes_per_request - len(PAGE)) > 2048:
                    print(f"  warning: {n} had {m.errors} socket errors, {m.non_2xx} "
                          f"non-2xx, {m.bytes_per_request:.0f} B/request")  # fmt: skip
    return rounds


def report_scenario(scenario: str, rounds: list[dict[str, Measure]], names: list[str],
                    info: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Print and return one scenario's medians and ratios with their goals."""
    subject = "stoker" if "stoker" in names else "raw" if "raw" in names else names[0]
    summary: dict[str, Any] = {}
    print(f"\n{scenario}: medians over {len(rounds)} rounds:")
    for n in names:
        rps = statistics.median(r[n].rps for r in rounds)
        p99 = statistics.median(r[n].p99_ms for r in rounds)
        summary[n] = {"rps_median": rps, "p99_ms_median": p99}
        print(f"  {n:<14} {rps:>9.0f} req/s   p99 {p99:6.2f} ms   "
              f"origin hits {info[n]['origin_hits']}")  # fmt: skip
    goals = BROWSER_GOALS if scenario == "browser" else GOALS
    comparisons: dict[str, Any] = {}
    subjects = [subject, *(["stoker-granian"] if subject == "stoker" and "stoker-granian" in names
                           else [])]
    for this in subjects:
        others = [n for n in names if n not in subjects and n not in ("stoker-l2", "stoker-redis")
                  and n not in SCALING]
        if others:
            print(f"{scenario}: median of per-round ratios ({this} / other; req/s higher is "
                  "better, p99 lower is better):")
        for other in others:
            r = ratios(rounds, this, other)
            comparisons[f"{this}/{other}"] = r
            goal = goals.get(other) if this in STOKERS else None
            verdict = ""
            if goal is not None:
                met = r["rps_ratio_median"] >= goal and (
                    scenario != "browser" or other != "varnish" or r["p99_ratio_median"] <= 1.0)
                p99_goal = ", p99 <= 1x" if scenario == "browser" and other == "varnish" else ""
                verdict = f"   goal >= {goal}x{p99_goal}: {'met' if met else 'MISSED'}"
            print(f"  {this}/{other:<14} req/s {r['rps_ratio_median']:.3f}x   "
                  f"p99 {r['p99_ratio_median']:.3f}x{verdict}")  # fmt: skip
    if "stoker-granian" in subjects:
        comparisons["stoker/stoker-granian"] = ratios(rounds, "stoker", "stoker-granian")
    if scenario == "identical" and subject == "stoker" and "stoker-l2" in names:
        comparisons["stoker-l2/stoker"] = l2_verdict(rounds)
    if subject == "stoker" and "stoker-redis" in names:
        found = ratios(rounds, "stoker-redis", "stoker")
        met = found["rps_ratio_median"] >= L2_GOAL
        print(f"  stoker-redis/stoker  req/s {found['rps_ratio_median']:.3f}x   p99 "
              f"{found['p99_ratio_median']:.3f}x   goal >= {L2_GOAL}x: "
              f"{'met' if met else 'MISSED'}")  # fmt: skip
        comparisons["stoker-redis/stoker"] = found
    if all(n in names for n in (*SCALING, *SCALING.values())):
        comparisons["scaling"] = scaling_verdict(rounds)
    return {"rounds": [{n: vars(m) for n, m in r.items()} for r in rounds],
            "summary": summary, "ratios": comparisons}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    # Ctrl-C raises KeyboardInterrupt; make SIGTERM do the same so cleanup always runs.
    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        with running(args.names, args) as systems:
            info = warm_up(systems, args)
            rounds = measure_rounds(systems, args)
            for system in systems:
                info[system.name]["origin_hits"] = system.origin.hits if system.origin else 0
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped", file=sys.stderr)
        return 130

    print(f"\n{args.rounds} rounds, {args.duration:g} s per run, {args.connections} "
          f"connections, browser scenario over {args.pages} pages")
    scenarios = {scenario: report_scenario(scenario, [r[scenario] for r in rounds],
                                           args.names, info)
                 for scenario in args.scenario_names}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": "hit_path",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": {
            "systems": args.names,
            "scenarios": args.scenario_names,
            "pages": args.pages,
            "rounds": args.rounds,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "connections": args.connections,
            "wrk_threads": 1,
            "server_core": args.server_core,
            "client_core": args.client_core,
            "page_bytes": len(PAGE),
        },
        "versions": versions(),
        "systems": info,
        "scenarios": scenarios,
        # the first scenario's figures where this report always had them (readers of
        # earlier reports: rounds, summary, ratios)
        **scenarios[args.scenario_names[0]],
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
