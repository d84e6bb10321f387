"""``error_page`` in a real ``stoker serve`` (a child process) in front of an origin that
is not there: the site's own page for Stoker's answers to origin failures, to clients
that accept HTML, read at start and again on ``SIGHUP``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.origin import ScriptedOrigin
from tests.integration.serve_process import Serve
from tests.integration.warm_site import stoker_env

PAGE = "<!doctype html><title>Back soon</title><h1>We'll be right back</h1>\n"
HTML = "text/html; charset=utf-8"


def nowhere() -> Origin:
    """An origin nothing listens on: every fetch fails."""
    return Origin(app=ScriptedOrigin(), url=f"http://127.0.0.1:{free_port()}")


async def test_an_origin_failure_gets_the_page_when_html_is_accepted(tmp_path: Path) -> None:
    page = tmp_path / "502.html"
    page.write_text(PAGE)
    serve = Serve(nowhere(), tmp_path, "--error-page", str(page))
    serve.config.write_text("")
    async with serve, httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}") as client:
        browser = await client.get("/p", headers={"accept": "text/html,*/*;q=0.8"})
        head = await client.head("/p", headers={"accept": "text/html"})
        api = await client.get("/p", headers={"accept": "application/json"})
        curl = await client.get("/p")  # no Accept: anything will do
        for _ in range(10):  # the breaker opens: 503 at once, with Retry-After
            down = await client.get("/p", headers={"accept": "text/html"})
            if down.status_code == 503:
                break
        page.write_text("<p>new page</p>")
        await serve.reload("", "reload:")
        reloaded = await client.get("/q", headers={"accept": "text/html"})
    assert browser.status_code in (502, 503) and browser.text == PAGE
    assert browser.headers["content-type"] == HTML
    assert browser.headers["cache-control"] == "no-store"
    assert "origin-" in browser.headers["cache-status"]  # still Stoker's own answer
    assert (head.status_code, head.content) == (browser.status_code, b"")
    assert head.headers["content-type"] == HTML
    assert head.headers["content-length"] == str(len(PAGE.encode()))
    assert api.headers["content-type"].startswith("text/plain")  # the plain answer kept
    assert api.status_code in (502, 503) and "origin" in api.text and "<" not in api.text
    assert curl.text == PAGE
    assert down.status_code == 503 and down.text == PAGE and "retry-after" in down.headers
    assert reloaded.text == "<p>new page</p>"  # read again on SIGHUP, path unchanged


async def test_an_error_page_that_cannot_be_read_stops_serve_naming_the_setting(
        tmp_path: Path) -> None:
    big = tmp_path / "big.html"
    big.write_bytes(b"x" * (1024 * 1024 + 1))
    said = []
    for page in (tmp_path / "missing.html", big):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stoker", "serve", "--origin", nowhere().url,
            "--listen", f"127.0.0.1:{free_port()}",
            "--admin-listen", f"127.0.0.1:{free_port()}",
            "--data-dir", str(tmp_path / "data"), "--error-page", str(page),
            env=stoker_env(), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        said.append((proc.returncode, out.decode()))
    (missing_code, missing), (big_code, too_big) = said
    assert missing_code == 2
    assert f"error: error_page: {tmp_path / 'missing.html'} is not a readable file" in missing
    assert big_code == 2 and "error_page" in too_big and "larger than 1 MiB" in too_big
