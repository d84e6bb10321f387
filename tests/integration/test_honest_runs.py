"""Honest warm runs against a real ``stoker serve`` and a WordPress-like origin, the tester's
cases of issue 36: the WordPress guide's setup (``origin_host``, no ``site_url``) whose
links and sitemap name WordPress's own host; a site whose home page links to feeds, admin
pages, files and searches only.

- The skipped URLs are counted by reason in ``stoker warm --wait``, ``GET /api/warm/{id}``,
  ``GET /api/status``; a run that found almost nothing is a warning there, in
  ``stoker check`` (its line passes) and, with ``--strict``, ``stoker warm`` exits 1.
- ``origin_host`` is one of the site's hosts: its links and sitemap are warmed on the
  site, and a ``PURGE`` carrying it purges the site's page.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import free_port, serving
from tests.integration.warm_site import TOKEN, start_serve, stoker_env, warm_cli

Message = MutableMapping[str, Any]
WP_HOST = "wp.example.test"
"""The host WordPress knows itself by (its ``home`` option): ``origin_host``."""
POSTS = [f"/post-{n}/" for n in range(1, 6)]
NOT_PAGES = ["/feed/", "/comments/feed/", "/wp-admin/", "/wp-login.php",
             "/wp-content/uploads/a.jpg", "/guide.pdf", "/?s=search", "https://twitter.example/wp"]
"""Home-page links that are no page of the site: feed 2, admin 2, file 2, query 1, other
host 1."""


class WordPressSite:
    """Pages, robots.txt and a sitemap that name every URL on :data:`WP_HOST`, as
    WordPress does whatever Host it is asked with."""

    def __init__(self, links: list[str], *, sitemap: bool) -> None:
        self.links = links
        self.sitemap = sitemap
        self.hosts: list[str] = []

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        self.hosts += [v.decode() for k, v in scope["headers"] if k == b"host"]
        status, kind, body = self.answer(scope["path"], scope["query_string"].decode())
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", kind.encode()), (b"cache-control", b"public, max-age=600")]})
        await send({"type": "http.response.body", "body": body.encode()})

    def answer(self, path: str, query: str) -> tuple[int, str, str]:
        home = f"http://{WP_HOST}"
        if path == "/" and not query:
            anchors = "".join(f'<a href="{link if "://" in link else home + link}">x</a>'
                              for link in self.links)
            return 200, "text/html; charset=UTF-8", f"<html><body>{anchors}</body></html>"
        if path == "/robots.txt" and self.sitemap:
            return 200, "text/plain", f"User-agent: *\nSitemap: {home}/wp-sitemap.xml\n"
        if path == "/wp-sitemap.xml" and self.sitemap:
            urls = "".join(f"<url><loc>{home}{post}</loc></url>" for post in POSTS)
            return 200, "application/xml", (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                f'sitemap/0.9">{urls}</urlset>')
        if path in POSTS:
            return 200, "text/html; charset=UTF-8", f"<html><body>{path}</body></html>"
        return 404, "text/html", "not found"


@asynccontextmanager
async def wordpress(site: WordPressSite, tmp_path: Path,
                    **settings: Any) -> AsyncIterator[tuple[str, str, str]]:
    """``stoker serve`` as the WordPress guide's example sets it up (``origin_host``, the
    site on the listener); ``(origin URL, proxy URL, admin URL)``."""
    port = free_port()
    async with serving(site) as origin_url:
        log = (tmp_path / "serve.log").open("wb")
        proc, admin_url = await start_serve(
            origin_url, tmp_path / "data", log, port=port, origin_host=WP_HOST,
            site_url=f"http://127.0.0.1:{port}", **settings)
        try:
            yield origin_url, f"http://127.0.0.1:{port}", admin_url
        finally:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)
            log.close()


async def admin_get(admin_url: str, path: str) -> Any:
    async with httpx.AsyncClient(base_url=admin_url,
                                 headers={"authorization": f"Bearer {TOKEN}"}) as client:
        response = await client.get(path)
        assert response.status_code == 200, response.text
        return response.json()


def check(origin_url: str, config: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``stoker check`` on the running site's configuration (other listeners)."""
    return subprocess.run(
        [sys.executable, "-m", "stoker", "check", "--config", str(config), "--origin",
         origin_url, "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{free_port()}",
         "--admin-listen", f"127.0.0.1:{free_port()}"],
        env=stoker_env(), capture_output=True, text=True, timeout=60, check=False)


async def test_a_site_of_feeds_admin_and_files_is_a_warning_with_its_reasons(
        tmp_path: Path) -> None:
    site = WordPressSite(NOT_PAGES, sitemap=False)
    async with wordpress(site, tmp_path) as (origin_url, _, admin_url):
        code, out = await warm_cli(admin_url, "--wait")
        strict, strict_out = await warm_cli(admin_url, "--wait", "--strict")
        shown = await admin_get(admin_url, "/api/warm/2")
        status = await admin_get(admin_url, "/api/status")
        checked = await asyncio.to_thread(check, origin_url, tmp_path / "stoker.toml",
                                          tmp_path / "data")
    reasons = {"admin": 2, "feed": 2, "file": 2, "other_host": 1, "query": 1}
    said = "8 skipped (admin: 2, feed: 2, file: 2, other_host: 1, query: 1)"
    assert code == 0, out  # a warning, not a failure
    assert said in out and "warning: warm run 1 found only 1 URL" in " ".join(out.split())
    assert strict == 1, strict_out
    assert "warning: warm run 2 found only 1 URL" in " ".join(strict_out.split())
    assert shown["counts"]["total"] == 1 and shown["counts"]["skipped"] == 8
    assert shown["skipped_reasons"] == reasons
    assert shown["warning"] == f"found only 1 URL ({said})"
    last = status["warm"]["last"]
    assert last["id"] == 2 and last["skipped_reasons"] == reasons
    assert last["warning"] == shown["warning"]
    assert checked.returncode == 0, checked.stdout + checked.stderr
    line = next(line for line in checked.stdout.splitlines() if "last warm run" in line)
    assert line.startswith("ok") and f"warning: run 2 (manual, site) done: found only 1 URL " \
        f"({said})" in line, line


async def test_origin_host_links_are_warmed_on_the_site_and_its_purges_purge(
        tmp_path: Path) -> None:
    site = WordPressSite([*POSTS, "/feed/"], sitemap=True)
    async with wordpress(site, tmp_path, purge_allow=["127.0.0.1"]) as (_, proxy_url, admin_url):
        code, out = await warm_cli(admin_url, "--wait", "--strict")
        shown = await admin_get(admin_url, "/api/warm/1")
        async with httpx.AsyncClient(base_url=proxy_url) as proxy:
            before = await proxy.get("/post-1/")
            purge = await proxy.request("PURGE", "/post-1/", headers={"host": WP_HOST})
            after = await proxy.get("/post-1/")
    assert code == 0, out
    assert shown["counts"]["total"] == 1 + len(POSTS) and shown["counts"]["warmed"] == 6
    assert shown["skipped_reasons"] == {"feed": 1} and shown["warning"] is None
    assert set(site.hosts) == {WP_HOST}  # the origin was always asked with its own host
    assert before.headers["cache-status"].startswith("stoker; hit")  # warmed on the site
    assert purge.status_code == 200, purge.text
    assert purge.json()["purged"] >= 1 and purge.json()["unknown_hosts"] == []
    assert not after.headers["cache-status"].startswith("stoker; hit")


async def test_a_purge_carrying_origin_host_purges_a_page_visitors_filled(
        tmp_path: Path) -> None:
    site = WordPressSite([], sitemap=False)
    async with wordpress(site, tmp_path, purge_allow=["127.0.0.1"],
                         rewarm_now_max=0  # no re-warm refilling it before `after`
                         ) as (_, proxy_url, _), \
            httpx.AsyncClient(base_url=proxy_url) as proxy:
        await proxy.get("/post-2/")
        cached = await proxy.get("/post-2/")
        purge = await proxy.request("PURGE", "/post-2/", headers={"host": WP_HOST})
        after = await proxy.get("/post-2/")
    assert cached.headers["cache-status"].startswith("stoker; hit")
    assert purge.status_code == 200 and purge.json()["purged"] == 1, purge.text
    assert purge.json()["unknown_hosts"] == []
    assert not after.headers["cache-status"].startswith("stoker; hit")
