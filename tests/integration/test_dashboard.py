"""The dashboard's endpoints on a real listener: login and sessions, the write guard,
the security headers, audit rows, and the status event stream's framing."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.integration.admin_harness import CACHEABLE, TOKEN, eventually
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import FORM, Dashboard, dashboard, session_cookie

from stoker.admin.auth import fingerprint
from stoker.admin.history import Sample
from stoker.admin.login_limit import FAILURES
from stoker.admin.sessions import COOKIE

QUIET = {"check_every": 3600.0}
"""No change checks: only pokes make events (so a test counts exactly its own)."""


def secure_headers(answer: httpx.Response) -> None:
    csp = answer.headers["content-security-policy"]
    script = csp.split("script-src", 1)[1].split(";", 1)[0]
    assert "'self'" in script and "unsafe-inline" not in script
    assert "frame-ancestors 'none'" in csp
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["cache-control"] == "no-store"


async def test_login_opens_a_session_the_pages_accept_and_logout_ends_it(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        first = await dash.client.get("/")
        form = await dash.client.get("/login")
        wrong = await dash.login("not-the-token")
        right = await dash.login()
        cookie = {"cookie": f"{COOKIE}={session_cookie(right)}"}
        page = await dash.client.get("/", headers=cookie)
        script = await dash.client.get("/static/dashboard.js")
        status = await dash.client.get("/api/status", headers=cookie)
        out = await dash.client.post("/logout", headers={**cookie, **dash.same_origin})
        after = await dash.client.get("/", headers=cookie)
        api_after = await dash.client.get("/api/status", headers=cookie)
        records = await dash.audit()
    assert (first.status_code, first.headers["location"]) == (303, "/login")
    assert form.status_code == 200 and 'name="token"' in form.text
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
    set_cookie = right.headers["set-cookie"]
    assert right.status_code == 303 and right.headers["location"] == "/"
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie
    assert "Secure" not in set_cookie  # plain http here
    assert page.status_code == 200 and "<h1>Overview" in page.text
    assert 'action="/logout"' in page.text
    assert 'src="/static/dashboard.js"' in page.text and "<script>" not in page.text
    assert script.status_code == 200 and "EventSource" in script.text
    for answer in (first, form, wrong, right, page, script, status, out):
        secure_headers(answer)
    assert status.status_code == 200 and "served_by" in status.json()
    assert (out.status_code, out.headers["location"]) == (303, "/login")
    assert "Max-Age=0" in out.headers["set-cookie"]
    assert after.status_code == 303 and api_after.status_code == 401
    rows = [(r["action"], r["outcome"], r["actor"]) for r in records]
    session = [actor for action, _, actor in rows if action == "login" and actor.startswith(
        "session:")]
    assert rows[:3] == [("GET /api/status", "denied", "anonymous"),
                        ("logout", "ok", session[0]), ("login", "ok", session[0])]
    assert ("login", "denied", f"token:{fingerprint('not-the-token')}") in rows
    assert TOKEN not in json.dumps(records) and session_cookie(right) not in json.dumps(records)


async def test_failed_logins_are_limited_per_client_the_token_unread(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        tries = [(await dash.login("wrong")).status_code for _ in range(FAILURES)]
        limited = await dash.login()  # the right token, too late
        bearer = await dash.client.get("/api/status", headers=dash.bearer)
    assert tries == [401] * FAILURES
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) > 0
    assert "set-cookie" not in limited.headers and "Too many failed logins" in limited.text
    assert bearer.status_code == 429  # one budget per client, whatever it presents


async def test_writes_from_another_origin_are_refused_and_audited(
        origin: Origin, tmp_path: Path) -> None:
    allowed = "https://admin.example.com"
    async with dashboard(origin.url, tmp_path / "d", admin_allowed_origins=[allowed]) as dash:
        cookie = await dash.session()
        evil = {"origin": "https://evil.example"}
        forged = await dash.client.post("/api/purge", json={"tags": ["t"]},
                                        headers={**cookie, **evil})
        by_referer = await dash.client.post("/api/purge", json={"tags": ["t"]},
                                            headers={**cookie,
                                                     "referer": "https://evil.example/x"})
        bare = await dash.client.post("/api/purge", json={"tags": ["t"]}, headers=cookie)
        logout = await dash.client.post("/logout", headers={**cookie, **evil})
        login = await dash.client.post("/login", content=f"token={TOKEN}",
                                       headers={**FORM, **evil})
        ours = await dash.client.post("/api/purge", json={"tags": ["t"]},
                                      headers={**cookie, **dash.same_origin})
        listed = await dash.client.post("/api/purge", json={"tags": ["t"]},
                                        headers={**cookie, "origin": allowed})
        curl = await dash.client.post("/api/purge", json={"tags": ["t"]}, headers=dash.bearer)
        still = await dash.client.get("/", headers=cookie)
        records = await dash.audit()
    assert [a.status_code for a in (forged, by_referer, bare, logout, login)] == [403] * 5
    assert [a.status_code for a in (ours, listed, curl)] == [200] * 3
    assert still.status_code == 200  # the refused logout ended nothing
    denied = [r for r in records if r["outcome"] == "denied"]
    assert len(denied) == 5
    assert {r["target"]["path"] for r in denied} == {"/api/purge", "/logout", "/login"}
    assert all(r["target"]["status"] == 403 for r in denied)


async def test_a_session_outlives_a_restart_but_not_a_new_token(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        cookie = await dash.session()
        cookie["host"] = dash.url.split("//", 1)[1]  # the listener the browser logged in on
    async with dashboard(origin.url, tmp_path / "d") as dash:
        again = await dash.client.get("/", headers=cookie)
        elsewhere = await dash.client.get("/", headers={**cookie, "host": "other.test:8081"})
    async with dashboard(origin.url, tmp_path / "d", token="rotated-token") as dash:
        rotated = await dash.client.get("/", headers=cookie)
        api = await dash.client.get("/api/status", headers=cookie)
    assert again.status_code == 200
    assert elsewhere.status_code == 303  # bound to the listener (Host) it was opened on
    assert rotated.status_code == 303 and api.status_code == 401


async def test_behind_a_tls_terminator_the_cookie_is_host_prefixed_and_scheme_bound(
        origin: Origin, tmp_path: Path) -> None:
    """Over https (a trusted proxy's word) the session cookie is ``__Host-`` named and
    Secure; the same id is no session over plain http, nor under the plain name."""
    https = {"x-forwarded-proto": "https"}
    async with dashboard(origin.url, tmp_path / "d") as dash:
        login = await dash.client.post("/login", content=f"token={TOKEN}", headers={
            **FORM, **https, "origin": dash.url.replace("http://", "https://")})
        name, _, secret = login.headers["set-cookie"].split(";", 1)[0].partition("=")
        prefixed = {"cookie": f"__Host-{COOKIE}={secret}"}
        page = await dash.client.get("/", headers={**prefixed, **https})
        plain_http = await dash.client.get("/", headers=prefixed)
        unprefixed = await dash.client.get("/", headers={"cookie": f"{COOKIE}={secret}",
                                                         **https})
    assert login.status_code == 303 and name == f"__Host-{COOKIE}"
    flags = login.headers["set-cookie"].split("; ")[1:]
    assert "Secure" in flags and "Path=/" in flags and not any(
        flag.lower().startswith("domain") for flag in flags)
    assert page.status_code == 200
    assert plain_http.status_code == 303 and unprefixed.status_code == 303


async def test_a_one_time_link_logs_in_once(origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        code = dash.side.sessions.once()
        first = await dash.client.get("/login", params={"once": code})
        second = await dash.client.get("/login", params={"once": code})
        page = await dash.client.get("/", headers={
            "cookie": f"{COOKIE}={session_cookie(first)}"})
        records = await dash.audit()
    assert first.status_code == 303 and "HttpOnly" in first.headers["set-cookie"]
    assert second.status_code == 401 and "set-cookie" not in second.headers
    assert page.status_code == 200
    assert [(r["action"], r["outcome"]) for r in records[:2]] == [("login", "denied"),
                                                                  ("login", "ok")]
    assert code not in json.dumps(records)


async def test_without_a_token_the_loopback_dashboard_is_open(origin: Origin,
                                                               tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d", token=None) as dash:
        page = await dash.client.get("/")
        login = await dash.client.get("/login")
        rebound = await dash.client.get("/", headers={"host": "evil.example"})
    assert page.status_code == 200 and 'action="/logout"' not in page.text
    assert (login.status_code, login.headers["location"]) == (303, "/")
    assert rebound.status_code == 403


async def events(dash: Dashboard, headers: dict[str, str]) -> AsyncIterator[str]:
    """The stream's events and comments, one string each, as they arrive."""
    async with dash.client.stream("GET", "/api/events", headers=headers) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.headers["cache-control"] == "no-store"
        block: list[str] = []
        async for line in answer.aiter_lines():
            if line:
                block.append(line)
            elif block:
                yield "\n".join(block)
                block = []


async def test_the_stream_sends_the_status_at_once_then_one_event_per_burst(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d", hub=QUIET) as dash:
        hub = dash.side.hub
        stream = events(dash, await dash.session())
        first = await asyncio.wait_for(anext(stream), 10)
        status = await dash.client.get("/api/status", headers=dash.bearer)
        for _ in range(5):  # within one debounce
            hub.poke()
            await asyncio.sleep(0.02)
        second = await asyncio.wait_for(anext(stream), 10)
        published = hub.published
        await asyncio.sleep(0.6)
        assert hub.published == published == 1  # the burst gave one event
        await dash.client.post("/api/purge", json={"tags": ["t"]}, headers=dash.bearer)
        third = await asyncio.wait_for(anext(stream), 10)  # a write pokes the hub
        await stream.aclose()
    assert first.startswith("event: status\ndata: {")
    composed = json.loads(first.split("data: ", 1)[1])
    assert set(composed) == set(status.json())  # one compose for both
    assert second.startswith("event: status\n") and third.startswith("event: status\n")


async def test_an_idle_stream_gets_keep_alive_comments(origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d",
                         hub={**QUIET, "keepalive": 0.2}) as dash:
        stream = events(dash, dash.bearer)
        await asyncio.wait_for(anext(stream), 10)
        comments = [await asyncio.wait_for(anext(stream), 10) for _ in range(2)]
        await stream.aclose()
    assert comments == [": keep-alive", ": keep-alive"]


async def test_a_stalled_subscriber_blocks_neither_the_server_nor_the_others(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d",
                         hub={**QUIET, "debounce": 0.005}) as dash:
        hub = dash.side.hub
        now = dash.proxy.stoker.clock.now()
        for minute in range(60, 0, -1):  # a full last hour: events of ~9 KB
            hub.source.history.observe(Sample(now - minute * 60, 1000 - minute, 500, 0))
        port = int(dash.url.rsplit(":", 1)[1])
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", port))
        stalled.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())  # never read
        await eventually(lambda: hub.subscribers == 1, "the stalled stream subscribed")
        stream = events(dash, dash.bearer)
        await asyncio.wait_for(anext(stream), 10)
        received = 0
        while hub.skipped < 100 and received < 3000:  # until the stalled one's buffers are full
            hub.poke()
            await asyncio.wait_for(anext(stream), 10)  # the reader gets every burst
            received += 1
        health = await asyncio.wait_for(dash.client.get("/healthz"), 5)
        assert hub.subscribers == 2 and hub.skipped >= 100, received
        stalled.close()
        await eventually(lambda: hub.subscribers == 1, "the stalled stream left")
        await stream.aclose()
    assert health.status_code == 200


@pytest.mark.parametrize("kind", ["stoker", "granian"])
async def test_bytes_from_cache_count_the_bodies_hits_were_answered_with(
        origin: Origin, tmp_path: Path, kind: str) -> None:
    origin.app.set("/big", headers=CACHEABLE, body=b"b" * 5000)
    origin.app.set("/private", headers=[("cache-control", "private")], body=b"p" * 3000)
    async with dashboard(origin.url, tmp_path / "d", kind=kind) as dash:
        for _ in range(3):  # a miss, then two hits (on the front: answered in its protocol)
            assert (await dash.proxy.client.get("/big")).status_code == 200
        assert (await dash.proxy.client.get("/private")).status_code == 200
        status = (await dash.client.get("/api/status", headers=dash.bearer)).json()
        page = await dash.client.get("/", headers=await dash.session())
        scrape = await dash.client.get("/metrics", headers=dash.bearer)
    assert status["cache_bytes"] == 10_000
    assert status["nodes"][0]["figures"]["cache_bytes"] == 10_000
    assert status["origin_bytes"] == 8_000  # the miss's body and the private page's
    assert "stoker_origin_body_bytes_total 8000.0" in scrape.text
    assert "9.8 KiB" in page.text and "7.8 KiB" in page.text


async def test_a_stream_ends_when_its_session_is_revoked(origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d", hub={**QUIET, "keepalive": 0.2}) as dash:
        cookie = await dash.session()
        stream = events(dash, cookie)
        await asyncio.wait_for(anext(stream), 10)
        await dash.side.sessions.close(cookie["cookie"].split("=", 1)[1])
        rest = [item async for item in stream]  # ends by itself
        again = await dash.client.get("/api/events", headers=cookie)
    assert rest == [] and again.status_code == 401
