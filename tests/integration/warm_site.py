"""A site for warmer tests: an ASGI origin of numbered pages, with robots.txt, a sitemap
index and gzip child sitemaps, and harnesses that run Stoker with its warmer.

The origin builds absolute URLs from the request's Host (like a CMS), so its sitemaps
name the site the warmer was told about.  Every request is counted per path; pages
can be held (``gate``), made stopgaps (answered with ``X-Stoker-Stopgap: 1`` a number of times) or
missing (404).  Each page ``/page/N`` carries the cache tag ``page-N``.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from tests.conftest import free_port, serving, wait_listening

import stoker
from stoker.adapters.asgi_proxy import ProxyApp
from stoker.admin.app import build_admin_app
from stoker.app.stoker import Stoker
from stoker.app.warm_service import WarmService
from stoker.clock import Clock
from stoker.config.settings import settings_from
from stoker.warm.run import Run

Message = MutableMapping[str, Any]
SRC = Path(stoker.__file__).resolve().parents[1]
SITE = "http://www.example.test"
SITE_HOST = "www.example.test"
TOKEN = "warm-test-token-0123456789"
PER_SITEMAP = 500
FOREVER = -1
DEADLINE = 60.0  # generous: only a broken build waits this long


def page(n: int) -> str:
    return f"/page/{n}"


@dataclass
class SiteOrigin:
    """The origin (see the module docstring)."""

    pages: int
    delay: float = 0.0
    stopgaps: dict[str, int] = field(default_factory=dict)  # path → stopgap answers left
    missing: set[str] = field(default_factory=set)
    hits: Counter[str] = field(default_factory=Counter)
    headers: list[dict[str, str]] = field(default_factory=list)  # of page requests
    other_heads: dict[str, dict[str, str]] = field(default_factory=dict)  # the last, by path
    order: list[str] = field(default_factory=list)  # page paths, as requested
    gate: asyncio.Event = field(default_factory=asyncio.Event)  # clear it to hold pages

    def __post_init__(self) -> None:
        self.gate.set()

    def forget(self) -> None:
        """Start counting afresh."""
        self.hits.clear()
        self.headers.clear()
        self.order.clear()

    def page_hits(self) -> Counter[str]:
        return Counter({path: n for path, n in self.hits.items() if path.startswith("/page/")})

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.hits[path] += 1
        base = f"{headers.get('x-forwarded-proto', 'http')}://{headers['host']}"
        status, out, body = self._answer(path, base)
        if not path.startswith("/page/"):
            self.other_heads[path] = headers
        else:
            self.headers.append(headers)
            self.order.append(path)
            await self.gate.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
        out.append(("content-length", str(len(body))))
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.encode(), v.encode()) for k, v in out]})
        await send({"type": "http.response.body", "body": body})

    def _answer(self, path: str, base: str) -> tuple[int, list[tuple[str, str]], bytes]:
        xml = [("content-type", "application/xml")]
        sitemaps = (self.pages + PER_SITEMAP - 1) // PER_SITEMAP
        if path == "/robots.txt":
            return 200, [("content-type", "text/plain")], \
                f"User-agent: *\nSitemap: {base}/sitemap_index.xml\n".encode()
        if path == "/sitemap_index.xml":
            children = "".join(f"<sitemap><loc>{base}/sitemaps/{i}.xml.gz</loc></sitemap>"
                               for i in range(sitemaps))
            return 200, xml, (f'<?xml version="1.0"?><sitemapindex xmlns='
                              f'"http://www.sitemaps.org/schemas/sitemap/0.9">{children}'
                              "</sitemapindex>").encode()
        if path.startswith("/sitemaps/"):
            index = int(path.removeprefix("/sitemaps/").removesuffix(".xml.gz"))
            first = index * PER_SITEMAP + 1
            urls = "".join(f"<url><loc>{base}{page(n)}</loc></url>"
                           for n in range(first, min(first + PER_SITEMAP, self.pages + 1)))
            return 200, [("content-type", "application/gzip")], gzip.compress(
                (f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                 f'sitemap/0.9">{urls}</urlset>').encode())
        if path == "/" or path.startswith("/page/"):
            return self._page(path)
        return 404, [], b"no such page"

    def _page(self, path: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if path in self.missing:
            return 404, [], b"gone"
        left = self.stopgaps.get(path, 0)
        if left:
            self.stopgaps[path] = left if left == FOREVER else left - 1
            return 200, [("x-stoker-stopgap", "1"), ("cache-control", "no-store")], \
                b"warming up"
        tag = path.strip("/").replace("/", "-") or "home"
        return 200, [("content-type", "text/html"), ("cache-control", "public, max-age=3600"),
                     ("surrogate-key", tag)], \
            f"<html><body><a href='/page/1'>one</a> {path}</body></html>".encode()


@dataclass
class Warming:
    """Stoker with its warmer in this process: proxy and admin API on real servers."""

    stoker: Stoker
    service: WarmService
    proxy: httpx.AsyncClient  # sends the site's Host
    admin: httpx.AsyncClient  # sends the admin token
    admin_url: str

    async def wait_run(self, run_id: int, *, ended: bool = True) -> Run:
        """The run once it ended (done, failed or cancelled)."""
        async def poll() -> Run:
            while True:
                run = await self.service.stores.runs.get(run_id)
                if run is not None and (not run.active or not ended):
                    return run
                await asyncio.sleep(0.02)

        try:
            return await asyncio.wait_for(poll(), DEADLINE)
        except TimeoutError:
            raise AssertionError(f"warm run {run_id} did not end within {DEADLINE} s: "
                                 f"{await self.service.stores.runs.get(run_id)}") from None


@asynccontextmanager
async def warming(origin_url: str, data_dir: Path, *, clock: Clock | None = None,
                  **settings: Any) -> AsyncIterator[Warming]:
    """Stoker in front of ``origin_url`` for :data:`SITE`, its warmer running (no run of
    its own unless ``settings`` ask: no daily refresh, no ``warm_on_start``)."""
    config = settings_from({"origin": origin_url, "data_dir": str(data_dir), "site_url": SITE,
                            "admin_token": TOKEN, "refresh_interval": 0,
                            "warm_on_start": "never", **settings})
    stoker = await Stoker.open(config, clock=clock)
    try:
        service = await WarmService.open(stoker)
        stop = asyncio.Event()
        running = asyncio.create_task(service.run(stop))
        try:
            async with serving(ProxyApp(stoker.pipeline)) as proxy_url, \
                    serving(build_admin_app(stoker, service)) as admin_url, \
                    httpx.AsyncClient(base_url=proxy_url, headers={"host": SITE_HOST},
                                      timeout=30, limits=httpx.Limits(max_connections=50)
                                      ) as proxy, \
                    httpx.AsyncClient(base_url=admin_url, timeout=30, headers={
                        "authorization": f"Bearer {TOKEN}"}) as admin:
                yield Warming(stoker, service, proxy, admin, admin_url)
        finally:
            stop.set()
            await asyncio.wait_for(running, 30)
            await service.close()
    finally:
        await stoker.close()


@asynccontextmanager
async def site_origin(site: SiteOrigin) -> AsyncIterator[str]:
    """``site`` served on a real server; yields its URL."""
    async with serving(site, kind="uvicorn") as url:
        yield url


def is_hit(response: httpx.Response) -> bool:
    return any(part.strip() == "hit" for part in response.headers["cache-status"].split(";"))


async def not_hits(proxy: httpx.AsyncClient, paths: list[str]) -> list[str]:
    """The ``paths`` the proxy does not answer 200 from cache (20 requests at a time)."""
    gate = asyncio.Semaphore(20)

    async def get(path: str) -> httpx.Response:
        async with gate:
            return await proxy.get(path)

    responses = await asyncio.gather(*(get(path) for path in paths))
    return [path for path, r in zip(paths, responses, strict=True)
            if r.status_code != 200 or not is_hit(r)]


def toml_value(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def stoker_env() -> dict[str, str]:
    """The environment for a ``python -m stoker`` child: this checkout's code, no
    STOKER_* settings from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOKER_")}
    env["PYTHONPATH"] = str(SRC)
    return env


async def stoker_command(*args: str, log: IO[bytes] | int) -> asyncio.subprocess.Process:
    """``python -m stoker ARGS`` as a child process."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stoker", *args, env=stoker_env(), stdout=log,
        stderr=asyncio.subprocess.STDOUT)


async def warm_cli(admin_url: str, *args: str) -> tuple[int, str]:
    """``stoker warm ARGS`` against ``admin_url`` (its output a pipe, not a terminal):
    exit code and output."""
    proc = await stoker_command("warm", "--admin-url", admin_url, "--admin-token", TOKEN,
                                *args, log=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return await proc.wait(), out.decode()


async def start_serve(origin_url: str, data_dir: Path, log: IO[bytes], *,
                      port: int | None = None, **settings: Any
                      ) -> tuple[asyncio.subprocess.Process, str]:
    """``stoker serve`` for :data:`SITE` in its own process (proxying on ``port``, a free
    one unless given), ``settings`` in its config file; ``(process, admin URL)``."""
    port, admin_port = port or free_port(), free_port()
    config = data_dir.parent / "stoker.toml"
    config.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in
                              {"site_url": SITE, "refresh_interval": 0,
                               "warm_on_start": "never", **settings}.items()))
    proc = await stoker_command(
        "serve", "--origin", origin_url, "--listen", f"127.0.0.1:{port}",
        "--admin-listen", f"127.0.0.1:{admin_port}", "--data-dir", str(data_dir),
        "--admin-token", TOKEN, "--config", str(config), log=log)
    try:
        await wait_listening(admin_port, timeout=30)
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    return proc, f"http://127.0.0.1:{admin_port}"


@dataclass
class Node:
    """``stoker serve`` in its own process: its proxy (Host :data:`SITE_HOST`), its admin
    API (with the token) and its log file."""

    proc: asyncio.subprocess.Process
    proxy: httpx.AsyncClient
    admin: httpx.AsyncClient
    admin_url: str
    log: Path


@asynccontextmanager
async def serve_node(origin_url: str, directory: Path, *, timeout: float = 30.0,
                     **settings: Any) -> AsyncIterator[Node]:
    """A :class:`Node` for the site at ``origin_url`` (4 warm workers unless ``settings``
    say, ``settings`` in its config file), its data and ``serve.log`` in ``directory``;
    terminated on exit."""
    directory.mkdir(exist_ok=True)
    port = free_port()
    log_path = directory / "serve.log"
    with log_path.open("wb") as log:
        proc, admin_url = await start_serve(origin_url, directory / "data", log, port=port,
                                            **{"warm_workers": 4, **settings})
        try:
            await wait_listening(port, timeout=timeout)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                                         headers={"host": SITE_HOST}) as proxy, \
                    httpx.AsyncClient(base_url=admin_url, timeout=30, headers={
                        "authorization": f"Bearer {TOKEN}"}) as admin:
                yield Node(proc, proxy, admin, admin_url, log_path)
        finally:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), timeout)
