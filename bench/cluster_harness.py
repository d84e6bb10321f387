"""What bench/cluster.py's scenarios run on: an origin, a redis-server and a PostgreSQL
database of the bench's own, and ``stoker serve`` nodes it can stop, kill and restart.

Invariants: every process started here runs in a session of its own and is stopped (its
process group signalled) when :func:`cluster` exits, on errors and Ctrl-C too; the
redis-server listens on a free port with ``--save ''`` (nothing survives its restart) and
the database (``stoker_bench_<scenario>_<pid>``) is created and dropped here: nothing
another run or test uses is touched.  The origin numbers each answer of a path (its
*generation*, in the body after ``#``), so a served body tells which fetch it came from.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import httpx

REPO = Path(__file__).resolve().parent.parent
TOKEN = "bench-cluster-token-0123456789"
SITE = {"host": "www.example.test"}
"""The site's Host on every request, as a load balancer passes it on (the nodes listen on
ports of their own, and the key holds the Host)."""
FILL_BYTES = 20_000
"""Body size of ``/fill/…`` pages (the others are a line)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Origin:
    """A threaded stdlib origin: cacheable pages tagged ``page-<last path segment>``,
    answered after ``delay`` seconds (``slow_delay`` for ``/slow/…``); counts requests."""

    def __init__(self, delay: float, slow_delay: float) -> None:
        self.hits: dict[str, int] = {}
        self._lock = threading.Lock()
        origin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                generation = origin.count(self.path)
                time.sleep(slow_delay if self.path.startswith("/slow/") else delay)
                body = f"{self.path} #{generation}".encode()
                if self.path.startswith("/fill/"):
                    body = body.ljust(FILL_BYTES, b".")
                self.send_response(200)
                self.send_header("Cache-Control", "public, max-age=3600")
                self.send_header("Cache-Tag", f"page-{self.path.rsplit('/', 1)[-1]}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(ConnectionError):  # a killed node's request
                    self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, path: str) -> int:
        """Count one request for ``path``: its generation."""
        with self._lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            return self.hits[path]

    def snapshot(self, paths: Sequence[str]) -> dict[str, int]:
        """The generation each of ``paths`` has reached (a body at most this is older)."""
        with self._lock:
            return {path: self.hits.get(path, 0) for path in paths}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def generation(response: httpx.Response) -> int | None:
    """The origin's generation of a served body (None for an error page)."""
    if response.status_code != 200:
        return None
    head = response.content[:200].split(b"#", 1)
    digits = head[1].split(b".", 1)[0] if len(head) == 2 else b""
    return int(digits) if digits.isdigit() else None


class OwnRedis:
    """A redis-server of the bench's own on a free port (``extra`` arguments added)."""

    def __init__(self, directory: Path, extra: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.directory = directory
        self.extra = list(extra)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory), *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.2):
                return
            time.sleep(0.02)
        raise SystemExit(f"redis-server on {self.port} did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def client(self) -> Any:
        import redis

        return redis.Redis(port=self.port, socket_timeout=5)


def psql(sql: str) -> None:
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", sql],
                   check=True, capture_output=True, timeout=60)


@dataclass
class Node:
    """One ``stoker serve`` (all its processes in one process group)."""

    index: int
    port: int
    admin: int
    data_dir: Path
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin}"


@dataclass
class Cluster:
    """The origin, Redis, database and nodes of one scenario."""

    origin: Origin
    redis: OwnRedis
    database: str
    processes: int
    tmp: Path
    settings: Mapping[str, str]
    nodes: list[Node] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{os.environ.get('PYTHONPATH', '')}",
                "STOKER_DATABASE_URL": f"postgresql://postgres@127.0.0.1:5432/{self.database}",
                "STOKER_L2_URL": self.redis.url, "STOKER_WARM_ON_START": "never",
                "STOKER_REFRESH_INTERVAL": "0", **self.settings}

    def add_node(self) -> Node:
        index = len(self.nodes)
        node = Node(index, free_port(), free_port(), self.tmp / f"node{index}",
                    self.tmp / f"node{index}.log")
        self.nodes.append(node)
        return node

    def start(self, node: Node) -> None:
        node.log = node.log_path.open("ab")
        node.proc = subprocess.Popen(
            [sys.executable, "-m", "stoker", "serve", "--origin",
             f"http://127.0.0.1:{self.origin.port}", "--listen", f"127.0.0.1:{node.port}",
             "--admin-listen", f"127.0.0.1:{node.admin}", "--data-dir", str(node.data_dir),
             "--admin-token", TOKEN, "--node-id", f"bench-{node.index}",
             "--processes", str(self.processes)],
            env=self.env(), stdout=node.log, stderr=subprocess.STDOUT, cwd=REPO,
            start_new_session=True)

    def stop(self, node: Node, *, kill: bool = False) -> None:
        """Stop ``node`` (SIGTERM, SIGKILL after 30 s), or kill -9 its process group."""
        if node.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                node.proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.proc.pid, signal.SIGKILL)
                node.proc.wait(10)
            with contextlib.suppress(ProcessLookupError):  # children left by a killed parent
                os.killpg(node.proc.pid, signal.SIGKILL)
        if node.log is not None:
            node.log.close()
        node.proc, node.log = None, None

    async def ready(self, nodes: Sequence[Node] | None = None, timeout: float = 60) -> None:
        async with httpx.AsyncClient(timeout=2) as client:
            for node in nodes if nodes is not None else self.nodes:
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(f"{node.admin_url}/readyz")).status_code == 200:
                            break
                    await asyncio.sleep(0.1)
                else:
                    raise SystemExit(f"node {node.index} did not get ready; see its log:\n"
                                     + node.log_path.read_text()[-2000:])

    async def versions(self) -> list[str | None]:
        """Each node's cache version (its ``/api/status``), None when it does not answer."""
        found: list[str | None] = []
        async with httpx.AsyncClient(timeout=5, headers=auth(None)) as client:
            for node in self.nodes:
                try:
                    status = (await client.get(f"{node.admin_url}/api/status")).json()
                    found.append(str(status.get("version")))
                except (httpx.HTTPError, ValueError):
                    found.append(None)
        return found


def auth(node: Node | None) -> dict[str, str]:
    head = {"authorization": f"Bearer {TOKEN}"}
    return head | ({"host": f"127.0.0.1:{node.admin}"} if node is not None else {})


@dataclass
class Purge:
    """One purge call and its answer."""

    node: int
    payload: dict[str, Any]
    snapshot: dict[str, int]
    """The generation of each purged path when the call was made."""
    began: float
    answered: float = 0.0
    status: int | None = None
    unconfirmed: Any = None
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"node": self.node, "payload": self.payload, "status": self.status,
                "seconds": round(self.answered - self.began, 3),
                "unconfirmed": self.unconfirmed, "error": self.error}


async def purge(node: Node, payload: dict[str, Any], snapshot: dict[str, int],
                timeout: float = 60) -> Purge:
    """Call ``node``'s purge API; a failed or timed-out call is recorded, not raised."""
    done = Purge(node.index, payload, snapshot, time.monotonic())
    try:
        async with httpx.AsyncClient(timeout=timeout, headers=auth(node)) as client:
            answer = await client.post(f"{node.admin_url}/api/purge", json=payload)
        done.status = answer.status_code
        with contextlib.suppress(ValueError):
            done.unconfirmed = answer.json().get("unconfirmed")
        if answer.status_code != 200:
            done.error = answer.text[:200]
    except httpx.HTTPError as error:
        done.error = f"{type(error).__name__}: {error}"
    done.answered = time.monotonic()
    return done


def spread_client(timeout: float = 30) -> httpx.AsyncClient:
    """A client opening a connection per request, so a node's requests reach each of its
    processes (they share the port), as a load balancer's would."""
    return httpx.AsyncClient(timeout=timeout, headers=SITE,
                             limits=httpx.Limits(max_keepalive_connections=0,
                                                 max_connections=400))


async def probe(client: httpx.AsyncClient, nodes: Sequence[Node], paths: Sequence[str],
                snapshot: Mapping[str, int], per_node: int) -> dict[str, Any]:
    """``per_node`` GETs of every path on every node: the old bodies (generation at most
    ``snapshot``'s) served, per node, and the paths any node served old."""
    async def one(node: Node, path: str) -> tuple[int, str, int | None]:
        try:
            return node.index, path, generation(await client.get(f"{node.url}{path}"))
        except httpx.HTTPError:
            return node.index, path, None

    seen = await asyncio.gather(*(one(node, path) for node in nodes for path in paths
                                  for _ in range(per_node)))
    old = [(index, path) for index, path, gen in seen
           if gen is not None and gen <= snapshot[path]]
    return {"requests": len(seen), "old": len(old),
            "old_by_node": {str(node.index): sum(1 for index, _ in old if index == node.index)
                            for node in nodes},
            "old_paths": sorted({path for _, path in old}),
            "errors": sum(1 for _, _, gen in seen if gen is None)}


async def warm(client: httpx.AsyncClient, nodes: Sequence[Node], paths: Sequence[str],
               times: int = 2) -> None:
    """GET every path ``times`` on every node (cached in its L1 and in Redis)."""
    for _ in range(times):
        await asyncio.gather(*(client.get(f"{node.url}{path}") for node in nodes
                               for path in paths))


@contextlib.asynccontextmanager
async def cluster(name: str, *, nodes: int, processes: int, delay: float = 0.02,
                  slow_delay: float = 6.0, redis_args: Sequence[str] = (),
                  settings: Mapping[str, str] | None = None,
                  keep_logs: Path | None = None) -> AsyncIterator[Cluster]:
    """Start the origin, a redis-server, a database and ``nodes`` ready nodes; stop and
    remove all of them on exit (the nodes' logs copied to ``keep_logs`` first)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"stoker-cluster-{name}-"))
    database = f"stoker_bench_{name.replace('-', '_')}_{os.getpid()}"
    origin = Origin(delay, slow_delay)
    redis = OwnRedis(tmp, redis_args)
    psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    psql(f"CREATE DATABASE {database}")
    found = Cluster(origin, redis, database, processes, tmp, settings or {})
    try:
        redis.start()
        for _ in range(nodes):
            found.start(found.add_node())
        await found.ready()
        yield found
    finally:
        for node in found.nodes:
            found.stop(node)
        redis.stop()
        origin.close()
        with contextlib.suppress(subprocess.SubprocessError):
            psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for node in found.nodes:
                if node.log_path.exists():
                    shutil.copy(node.log_path, keep_logs / f"{name}-node{node.index}.log")
        shutil.rmtree(tmp, ignore_errors=True)
