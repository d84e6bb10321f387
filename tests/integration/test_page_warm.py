"""The Warm page over a running warmer: logged in (session or bearer) it shows the latest
run's progress, counts, why pages were not stored (with their URLs), a list's URLs by
name with their results, the map and the
recent runs; without a login it sends the browser to /login; ``X-Stoker-Part`` gives the
content alone."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from tests.integration.conftest import Origin
from tests.integration.warm_site import SITE, TOKEN, warming

URLS = [f"{SITE}/ok", f"{SITE}/cookie", f"{SITE}/gone"]
CACHEABLE = ("cache-control", "public, max-age=3600")
FORM = {"content-type": "application/x-www-form-urlencoded"}


async def session_of(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    answer = await client.post("/login", content=f"token={TOKEN}",
                               headers={**FORM, "origin": url})
    assert answer.status_code == 303, answer.text
    return {"cookie": answer.headers["set-cookie"].split(";", 1)[0]}


async def test_the_warm_page_shows_the_latest_run(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/ok", headers=[CACHEABLE], body=b"ok")
    origin.app.set("/cookie", headers=[CACHEABLE, ("set-cookie", "s=1; Path=/")], body=b"c")
    origin.app.set("/gone", status=404, body=b"no")
    async with warming(origin.url, tmp_path / "data") as w, httpx.AsyncClient(
            base_url=w.admin_url, timeout=30) as anonymous:
        empty = await w.admin.get("/warm")
        started = await w.admin.post("/api/warm", json={"urls": URLS})
        run = await w.wait_run(started.json()["run"]["id"])
        session = await session_of(anonymous, w.admin_url)
        page = await anonymous.get("/warm", headers=session)
        part = await anonymous.get("/warm", headers={**session, "x-stoker-part": "1"})
        anonymous.cookies.clear()  # the login left its cookie in the client's jar
        refused = await anonymous.get("/warm")
    assert empty.status_code == 200 and "No warm run yet" in empty.text
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    text = page.text
    assert "<html" in text and 'aria-current="page">Warm</a>' in text
    assert f"Latest run #{run.id}" in text and "manual, urls" in text
    assert '<progress id="warm-progress" value="3" max="3">' in text
    assert "3 of 3 URLs settled (100.0 %)" in text
    assert "<dt>Warmed</dt><dd>1</dd>" in text and "<dt>Not stored</dt><dd>1</dd>" in text
    assert "<dt>Failed</dt><dd>1</dd>" in text and "<dt>Took</dt>" in text
    assert "<strong>set-cookie</strong>: 1 URL" in text and f"<li>{SITE}/cookie</li>" in text
    cells = dict(re.findall(r'class="cell s-(\w+)" title="([^"]*) — ', text))
    assert cells == {"warmed": f"{SITE}/ok", "not_stored": f"{SITE}/cookie",
                     "failed": f"{SITE}/gone"}
    named = re.findall(r'<td data-label="URL"><span class="detail">([^<]*)</span></td>'
                       r'<td data-label="Result"><span class="tag \w*">([^<]*)</span>', text)
    assert named == [(f"{SITE}/cookie", "not stored"), (f"{SITE}/gone", "failed"),
                     (f"{SITE}/ok", "warmed")]  # a list's URLs by name, with their results
    assert "3 URLs: 1 warmed, 1 not stored, 1 failed" in text  # the recent runs
    assert "/cancel" not in text  # the run ended
    assert part.status_code == 200 and "<html" not in part.text
    assert part.text.startswith("<h1>Warm") and "<div data-live>" in part.text
    assert refused.status_code == 303 and refused.headers["location"] == "/login"

