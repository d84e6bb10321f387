"""A WordPress-like site for tests: PHP-style pages, alone or behind a real nginx with gzip.

The app answers as WordPress under php-fpm does: HTML without Content-Length (sent
in chunks), a ``Link`` to its REST API, a caching plugin's ``Cache-Control``.  With
``compress=True`` it also does what nginx's ``gzip on; gzip_vary on`` adds in front of
it: ``Vary: Accept-Encoding`` on every page, gzip for a client whose
``Accept-Encoding`` accepts it, the ETag weakened when gzipped, and 304 to a
matching ``If-None-Match`` (weak comparison, as nginx).  :func:`behind_nginx` puts a
real nginx (``gzip on``) in front of the plain app instead, when nginx is installed.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import shutil
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.conftest import free_port, wait_listening

Message = MutableMapping[str, Any]
NGINX = shutil.which("nginx") or next(
    (path for path in ("/usr/sbin/nginx",) if Path(path).exists()), None)


def page(path: str) -> bytes:
    """The HTML of ``path``: a themed page of some 20 KB, different per path."""
    title = path.strip("/") or "home"
    paragraphs = "".join(f"<p>{title} paragraph {n}: lorem ipsum dolor sit amet.</p>\n"
                         for n in range(300))
    return (f"<!DOCTYPE html><html lang=\"en-US\"><head><title>{title} - A WordPress site"
            f"</title></head><body class=\"page\"><main>{paragraphs}</main></body>"
            "</html>").encode()


def accepts_gzip(accept_encoding: str) -> bool:
    """nginx's reading of ``Accept-Encoding``: ``gzip`` named, with a q above 0."""
    for member in accept_encoding.lower().split(","):
        name, _, params = member.partition(";")
        if name.strip() == "gzip":
            q = params.strip().removeprefix("q=") if params.strip().startswith("q=") else "1"
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False


class WordPressLike:
    """The ASGI app; counts requests per path and keeps each request's headers."""

    def __init__(self, *, compress: bool, pages: int = 20) -> None:
        self.compress = compress
        self.paths = ["/", *(f"/page-{n}/" for n in range(pages))]
        self.hits: Counter[str] = Counter()
        self.requests: list[dict[str, str]] = []
        self.extra: list[tuple[bytes, bytes]] = []
        """Headers added to every page (a test's)."""

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.hits[scope["path"]] += 1
        self.requests.append(headers)
        if scope["path"] not in self.paths:
            await self._send(send, 404, [(b"content-type", b"text/html")], b"not found")
            return
        body = page(scope["path"])
        etag = f'"{hashlib.sha1(body).hexdigest()[:16]}"'
        out = [(b"content-type", b"text/html; charset=UTF-8"),
               (b"link", b'<http://localhost/wp-json/>; rel="https://api.w.org/"'),
               (b"cache-control", b"public, max-age=300"), *self.extra]
        if self.compress:
            out.append((b"vary", b"Accept-Encoding"))
            if accepts_gzip(headers.get("accept-encoding", "")):
                body, etag = gzip.compress(body), "W/" + etag
                out.append((b"content-encoding", b"gzip"))
        out.append((b"etag", etag.encode()))
        if headers.get("if-none-match", "").removeprefix("W/") == etag.removeprefix("W/"):
            await self._send(send, 304, out, b"")
            return
        await self._send(send, 200, out, body)

    @staticmethod
    async def _send(send: Callable[[Message], Awaitable[None]], status: int,
                    headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        half = len(body) // 2  # no Content-Length: sent chunked, as php-fpm's pages are
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})


NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    gzip on;
    gzip_vary on;
    gzip_proxied any;
    gzip_types text/css application/json application/javascript;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {upstream};
            proxy_http_version 1.1;
            proxy_set_header Host $host;
        }}
    }}
}}
"""


@asynccontextmanager
async def behind_nginx(upstream: str) -> AsyncIterator[str]:
    """A real nginx with ``gzip on`` in front of ``upstream``; yields its base URL."""
    assert NGINX is not None
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="stoker-nginx-") as directory:
        conf = Path(directory) / "nginx.conf"
        conf.write_text(NGINX_CONF.format(dir=directory, port=port, upstream=upstream))
        process = await asyncio.create_subprocess_exec(
            NGINX, "-e", f"{directory}/error.log", "-c", str(conf),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await wait_listening(port)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            await process.wait()
