"""``GET /api/why`` and ``stoker why`` against a real Stoker on real servers, in front of a
real origin that answers with the shapes a cache may not store."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from tests.integration.admin_harness import CACHEABLE, TOKEN, purging
from tests.integration.conftest import Origin, Proxy
from tests.integration.serve_process import Serve, eventually_two
from tests.integration.warm_site import stoker_env

from stoker.admin.why import NOT_REQUESTED
from stoker.config.rules import parse_rules
from stoker.purge.relay import HEARTBEAT

PIPE = asyncio.subprocess.PIPE
DEADLINE = 60.0
RULES = parse_rules([{"path": "/admin/", "bypass": True},
                     {"path": "/news/", "ttl": "10m"}])


def script(origin: Origin) -> None:
    """The origin's pages: one per shape the cache leaves out, and one it keeps."""
    app = origin.app
    for number in range(4):
        app.set(f"/blog/{number}", body=b"no lifetime")  # no Cache-Control, no validator
    app.set("/about", body=b"no lifetime either")
    app.set("/cart", headers=[("cache-control", "max-age=60"),
                              ("set-cookie", "PHPSESSID=secret-value; Path=/")])
    app.set("/account", headers=[("cache-control", "private, max-age=60")])
    app.set("/feed", headers=[("cache-control", "no-store")])
    app.set("/star", headers=[("cache-control", "max-age=60"), ("vary", "*")])
    app.set("/big", headers=[("cache-control", "max-age=60")], body=b"x" * 5000)
    app.set("/moved", status=302, headers=[("location", "/about")])
    app.set("/news/1", body=b"news")  # a rule's ttl: a cookie keeps it from the cache
    app.set("/admin/x", headers=CACHEABLE)
    app.set("/api", headers=[("cache-control", "max-age=60")])
    app.set("/kept", headers=CACHEABLE)


async def visit(proxy: Proxy) -> None:
    client = proxy.client
    for number in range(4):
        for _ in range(2):
            await client.get(f"/blog/{number}")
    for path in ("/about", "/cart", "/account", "/feed", "/star", "/big", "/moved",
                 "/admin/x", "/kept", "/kept"):
        await client.get(path)
    for _ in range(3):
        await client.get("/news/1", headers={"cookie": "_ga=GA1.2.3; theme=dark"})
    await client.get("/api", headers={"authorization": "Bearer user-token"})
    await client.post("/api", content=b"x")


def by_reason(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {found["reason"]: found for found in report["reasons"]}


async def test_the_report_counts_every_reason_with_its_urls_and_advice(
        origin: Origin, tmp_path: Path) -> None:
    script(origin)
    async with purging(origin.url, tmp_path / "d", rules=RULES,
                       max_object_bytes=1000) as (proxy, admin):
        await visit(proxy)
        answered = await admin.client.get("/api/why")
        async with httpx.AsyncClient(base_url=admin.url) as anonymous:
            refused = await anonymous.get("/api/why")
    assert answered.status_code == 200 and refused.status_code == 401
    assert answered.headers["cache-control"] == "no-store"
    report = answered.json()
    reasons = by_reason(report)
    counts = {reason: found["count"] for reason, found in reasons.items()}
    assert counts == {"no-freshness": 9, "cookie": 3, "set-cookie": 1, "private": 1,
                      "no-store": 1, "vary-star": 1, "too-large": 1, "status": 1,
                      "bypass": 1, "authorization": 1, "method": 1}
    assert report["not_cached"] == 21 and report["requests"] == 23
    assert report["reasons"][0]["reason"] == "no-freshness"  # most counted first
    fresh = reasons["no-freshness"]
    site = proxy.url
    assert [item["url"] for item in fresh["urls"][:4]] == [
        f"{site}/blog/{number}" for number in range(4)]  # 2 each, before /about's 1
    assert fresh["sections"][0] == {"section": f"{site}/blog/", "count": 8, "error": 0,
                                    "pages": 4}
    assert fresh["advice"][0]["text"] == (
        '4 pages (8 responses) under /blog/ had no freshness: add '
        '`[[rule]] path = "/blog/" ttl = "5m"`')
    assert parse_rules([{"path": "/blog/", "ttl": "5m"}])  # the advice's keys are real
    cookie = reasons["cookie"]
    assert [(item["name"], item["count"]) for item in cookie["details"]] == [
        ("_ga", 3), ("theme", 3)]
    ga = cookie["advice"][0]
    assert ga["kind"] == "change" and "add it to `strip_cookies`" in ga["text"]
    assert ga["text"].startswith("13% of requests (3) carried cookie `_ga`")
    set_cookie = reasons["set-cookie"]
    assert set_cookie["details"] == [{"name": "PHPSESSID", "count": 1}]
    assert "secret-value" not in answered.text  # names, never values
    for private in ("set-cookie", "private", "authorization"):
        assert [advice["kind"] for advice in reasons[private]["advice"]] == ["right"]
        assert all(advice["config"] is None for advice in reasons[private]["advice"])
    assert reasons["status"]["details"] == [{"name": "302", "count": 1}]
    assert reasons["method"]["details"] == [{"name": "POST", "count": 1}]
    assert reasons["bypass"]["details"] == [{"name": "bypass = true", "count": 1}]
    assert reasons["too-large"]["advice"][0]["text"].startswith(
        "1 response larger than `max_object_bytes` (1000)")


async def test_one_url_says_why_it_is_not_cached_or_that_it_is(
        origin: Origin, tmp_path: Path) -> None:
    script(origin)
    async with purging(origin.url, tmp_path / "d", rules=RULES) as (proxy, admin):
        await visit(proxy)
        site = proxy.url
        missing = (await admin.client.get("/api/why", params={"url": f"{site}/blog/1"})).json()
        cached = (await admin.client.get("/api/why", params={"url": f"{site}/kept"})).json()
        unknown = (await admin.client.get("/api/why", params={"url": f"{site}/never"})).json()
        bad = await admin.client.get("/api/why", params={"url": "ftp://x/"})
    [blog] = missing["urls"]
    assert blog["cached"] is False and blog["variants"] == []
    assert blog["verdict"] == ("not cached: no lifetime (max-age, s-maxage, Expires) and no "
                               "validator (no-freshness)")
    assert blog["last"]["reason"] == "no-freshness" and blog["last"]["status"] == 200
    assert blog["advice"][0]["config"] == '[[rule]]\npath = "/blog/"\nttl = "5m"\n'
    [kept] = cached["urls"]
    assert kept["cached"] is True and kept["last"] is None and kept["advice"] == []
    assert kept["variants"][0]["state"] == "fresh"
    [never] = unknown["urls"]
    assert never["cached"] is False and never["last"] is None
    assert never["verdict"] == NOT_REQUESTED and never["seen"] is False
    assert bad.status_code == 400 and bad.json()["field"] == "url"


async def why_cli(*args: str) -> tuple[int, str, str]:
    """``stoker why ARGS`` as a child process: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stoker", "why", *args, env=stoker_env(), stdout=PIPE,
        stderr=PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), DEADLINE)
    return await proc.wait(), out.decode(), err.decode()


async def test_stoker_why_prints_the_report_as_a_table_and_as_json(
        origin: Origin, tmp_path: Path) -> None:
    script(origin)
    async with purging(origin.url, tmp_path / "d", rules=RULES) as (proxy, admin):
        await visit(proxy)
        access = ("--admin-url", admin.url, "--admin-token", TOKEN)
        code, out, err = await why_cli(*access, "--json")
        table_code, table, table_err = await why_cli(*access)
        url_code, explained, _ = await why_cli(*access, f"{proxy.url}/cart")
        refused = await why_cli("--admin-url", admin.url, "--admin-token", "wrong")
    assert (code, err) == (0, "")
    assert by_reason(json.loads(out))["no-freshness"]["count"] == 9
    assert (table_code, table_err) == (0, "")
    assert table.startswith(f"stoker at {admin.url}: why not cached")
    lines = table.splitlines()
    at = lines.index("no-freshness (9)")
    assert lines[at + 1:at + 5] == [*(f"  {proxy.url}/blog/{number} (2)" for number in range(3)),
                                    "  … and 2 more URLs"]
    assert lines[at + 5] == ('  change: 4 pages (8 responses) under /blog/ had no freshness: '
                             'add `[[rule]] path = "/blog/" ttl = "5m"`')
    assert url_code == 0
    assert explained.splitlines()[:2] == [
        f"{proxy.url}/cart: not cached: the response sets a cookie (set-cookie)",
        "  last not cached: status 200; PHPSESSID; seen by this process"]
    assert refused[0] == 1 and "--admin-token" in refused[2]


async def test_a_revalidation_that_may_not_be_stored_is_counted(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/r", headers=[("cache-control", "max-age=0"), ("etag", '"v1"')])
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/r")  # stored, to be revalidated
        origin.app.set("/r", headers=[("cache-control", "no-store"), ("etag", '"v1"')],
                       not_modified_etag='"v1"')
        await proxy.client.get("/r")  # 304, now no-store: the entry goes
        report = (await admin.client.get("/api/why")).json()
        entry = (await admin.client.get("/api/entry", params={"url": f"{proxy.url}/r"})).json()
    assert by_reason(report)["no-store"]["urls"] == [
        {"url": f"{proxy.url}/r", "count": 1, "error": 0}]
    assert entry["keys"][0]["variants"] == []


async def test_with_two_processes_the_report_counts_both(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/blog/p", body=b"no lifetime")
    serve = Serve(origin, tmp_path, "--processes", "2", "--admin-token", TOKEN)
    serve.config.write_text('warm_on_start = "never"\n')
    async with serve:
        await eventually_two(serve)
        await asyncio.sleep(0.3)  # both listening
        for _ in range(20):  # a connection each: the kernel spreads them over both
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}") as client:
                await client.get("/blog/p")
        await asyncio.sleep(HEARTBEAT + 0.5)  # each process has told the bus its figures
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.admin_port}",
                                     headers={"authorization": f"Bearer {TOKEN}"}) as admin:
            report = (await admin.get("/api/why")).json()
    assert len(report["processes"]) == 2
    assert report["requests"] == 20
    fresh = by_reason(report)["no-freshness"]
    assert fresh["count"] == 20
    assert fresh["urls"] == [{"url": f"http://127.0.0.1:{serve.port}/blog/p", "count": 20,
                              "error": 0}]


async def test_a_miss_that_found_only_other_variants_is_counted_by_their_vary(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/v", headers=[("cache-control", "max-age=600"), ("vary", "User-Agent")])
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        for agent in ("firefox", "firefox", "chrome", "chrome", "safari"):
            await proxy.client.get("/v", headers={"user-agent": agent})
        report = (await admin.client.get("/api/why")).json()
    [found] = report["reasons"]  # stored each time: vary-miss is the only reason
    assert (found["reason"], found["count"]) == ("vary-miss", 2)  # chrome, then safari
    assert found["details"] == [{"name": "user-agent", "count": 2}]
    assert found["advice"][0]["kind"] == "origin"


async def test_a_path_shows_the_hosts_it_was_seen_on_and_every_host_only_when_none(
        origin: Origin, tmp_path: Path) -> None:
    script(origin)
    async with purging(origin.url, tmp_path / "d", rules=RULES) as (proxy, admin):
        # On the proxy's own address (not the configured listener the site's hosts name):
        await proxy.client.get("/kept")  # stored
        await proxy.client.get("/cart")  # not stored: a record of why
        looked = {path: (await admin.client.get("/api/why", params={"url": path})).json()
                  for path in ("/kept", "/cart", "/never")}
    assert [item["url"] for item in looked["/kept"]["urls"]] == [f"{proxy.url}/kept"]
    assert looked["/kept"]["urls"][0]["cached"] is True
    [cart] = looked["/cart"]["urls"]
    assert cart["url"] == f"{proxy.url}/cart" and cart["last"]["reason"] == "set-cookie"
    never = looked["/never"]["urls"]
    assert [item["url"] for item in never] == [  # the site's hosts: the configured listener's
        f"{scheme}://{host}:8080/never" for host in ("127.0.0.1", "localhost")
        for scheme in ("http", "https")]
    assert all((item["seen"], item["verdict"]) == (False, NOT_REQUESTED) for item in never)
