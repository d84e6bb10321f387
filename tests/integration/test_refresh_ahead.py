"""Refresh ahead on a real ``stoker serve``: a page visitors keep reading stays a hit
across several of its lifetimes, the warmer revalidating it (conditional GETs) before it
goes stale; a page no visitor read within ``refresh_window`` is left to expire;
``refresh_ahead = 0`` turns it off."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from tests.integration.conftest import Origin
from tests.integration.serve_process import DEADLINE, Serve

LIFETIME = 4.0
"""Seconds the test pages stay fresh, less their age by the origin's whole-second Date:
3 to 4 s, refreshed at 80 % of that, 2.4 to 3.4 s after each fetch."""
PAGE = [("cache-control", f"max-age={LIFETIME:.0f}"), ("etag", '"1"'),
        ("last-modified", "Mon, 01 Jan 2024 00:00:00 GMT")]
TOKEN = "refresh-ahead-test-token-0123456789"
QUIET = f'warm_on_start = "never"\nadmin_token = "{TOKEN}"\n'


def hit(response: httpx.Response) -> bool:
    """Answered from a fresh entry, the origin not waited on."""
    status = response.headers["cache-status"]
    return "; hit" in status and "fwd=" not in status


def pages(origin: Origin) -> None:
    for path in ("/hot", "/cold"):
        origin.app.set(path, headers=PAGE, body=path.encode(), delay=0.2,
                       not_modified_etag='"1"')


async def read_for(client: httpx.AsyncClient, path: str, seconds: float,
                   every: float = 0.5) -> list[httpx.Response]:
    """Read ``path`` every ``every`` seconds for ``seconds``."""
    found = []
    for _ in range(int(seconds / every)):
        found.append(await client.get(path))
        await asyncio.sleep(every)
    return found


def conditionals(origin: Origin, path: str) -> int:
    return sum(1 for method, target, headers in origin.app.requests
               if target == path and method == "GET" and (
                   "if-none-match" in headers or "if-modified-since" in headers))


def refreshes_seen(origin: Origin) -> int:
    return conditionals(origin, "/hot") + conditionals(origin, "/cold")


async def settled_counts(admin: httpx.AsyncClient, origin: Origin,
                         tries: int = 40) -> tuple[int, str, dict[str, int]]:
    """The refreshes the origin saw, with the metrics and status read while no refresh was
    in flight (the origin's count alike before and after, the refresh it answered counted):
    the warmer keeps refreshing /hot while the test reads, so a read made mid-refresh sees
    the origin one ahead of the metrics."""
    for _ in range(tries):
        before = refreshes_seen(origin)
        status = (await admin.get("/api/status")).json()["refresh_ahead"]
        metrics = (await admin.get("/metrics")).text  # after: holds what status counted
        if before == refreshes_seen(origin) == status["not_modified"]:
            break
        await asyncio.sleep(0.05)
    return before, metrics, status


async def test_a_page_visitors_read_stays_a_hit_and_one_they_left_expires(
        origin: Origin, tmp_path: Path) -> None:
    pages(origin)
    serve = Serve(origin, tmp_path)
    serve.config.write_text(QUIET + 'refresh_window = "4.5s"\n')
    async with serve, httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                        timeout=DEADLINE) as client:
        await client.get("/cold")  # read once: refreshed while within the window only
        first = await client.get("/hot")
        later = await read_for(client, "/hot", 2 * LIFETIME)
        cold_after_window = origin.app.count("/cold")
        later += await read_for(client, "/hot", LIFETIME)
        async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{serve.admin_port}", timeout=DEADLINE,
                headers={"authorization": f"Bearer {TOKEN}"}) as admin:
            refreshes, metrics, status = await settled_counts(admin, origin)
    assert "fwd=uri-miss" in first.headers["cache-status"]
    assert all(hit(response) for response in later), [
        response.headers["cache-status"] for response in later if not hit(response)]
    assert origin.app.count("/hot") >= 3  # refreshed once per lifetime at least
    assert conditionals(origin, "/hot") == origin.app.count("/hot") - 1
    assert all(headers["user-agent"].startswith("stoker-warmer/")
               for method, target, headers in origin.app.requests[2:])  # the refreshes
    # /cold: fetched, refreshed (read at most 3.4 s before: within the window; a refresh a
    # loaded machine delays past its claim may be asked again once), then no more: 8 s
    # after its one read it is outside the 4.5 s window and nothing refreshes it
    assert origin.app.count("/cold") == cold_after_window
    assert 1 <= conditionals(origin, "/cold") == origin.app.count("/cold") - 1 <= 2
    assert f'stoker_refreshes_total{{result="not_modified"}} {refreshes}.0' in metrics
    assert status == {"tracked": 1, "refreshed": 0, "not_modified": refreshes, "failed": 0}


async def test_refresh_ahead_0_leaves_pages_to_expire(
        origin: Origin, tmp_path: Path) -> None:
    pages(origin)
    serve = Serve(origin, tmp_path)
    serve.config.write_text(QUIET + "refresh_ahead = 0\n")
    async with serve, httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                        timeout=DEADLINE) as client:
        await client.get("/hot")
        later = await read_for(client, "/hot", 2 * LIFETIME)
    missed = [response for response in later if not hit(response)]
    assert missed and all("fwd=stale" in r.headers["cache-status"] for r in missed)
