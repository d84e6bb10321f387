"""The admin API's guard rails, the audit log, the PURGE method and ``stoker purge``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import free_port
from tests.integration.admin_harness import CACHEABLE, TOKEN, purging
from tests.integration.conftest import Origin
from typer.testing import CliRunner

from stoker.admin.api import MAX_BODY
from stoker.admin.app import build_admin_app
from stoker.admin.audit import REFUSALS_PER_WINDOW, WINDOW
from stoker.admin.auth import fingerprint
from stoker.admin.login_limit import FAILURES
from stoker.app.serving import run_service
from stoker.asgi import Message
from stoker.cli.main import app as cli_app
from stoker.clock import FakeClock, SystemClock
from stoker.config.settings import SettingsError, settings_from
from stoker.purge.audit import AuditTrail

BAD_BODIES: list[tuple[bytes, str]] = [
    (b"{not json", "body"),
    (b'{"tags": ["t"], "everything": true}', "everything"),
    (b"{}", "urls"),
    (b'{"tags": ["post 1"]}', "tags[0]"),
    (b'{"urls": ["https://elsewhere.example/t"]}', "urls[0]"),
]


async def test_bad_input_is_refused_naming_the_field_and_purges_nothing(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=[*CACHEABLE, ("cache-tag", "t")], body=b"t")
    async with purging(origin.url, tmp_path / "d", purge_hosts=["127.0.0.1"]) as (proxy, admin):
        await proxy.client.get("/t")
        for body, field in BAD_BODIES:
            response = await admin.client.post("/api/purge", content=body)
            assert response.status_code == 400, body
            assert response.json()["field"] == field
            assert field in response.json()["error"]
            assert response.headers["cache-control"] == "no-store"
        still = await proxy.client.get("/t")
        records = (await admin.client.get("/api/audit", params={"limit": 10})).json()["records"]
    assert "hit" in still.headers["cache-status"]
    assert [r["outcome"] for r in records] == ["invalid"] * len(BAD_BODIES)


async def test_missing_or_wrong_token_is_401_audited_and_purges_nothing(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=[*CACHEABLE, ("cache-tag", "t")], body=b"t")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/t")
        async with httpx.AsyncClient(base_url=admin.url) as anonymous:
            missing = await anonymous.post("/api/purge", json={"tags": ["t"]})
            wrong = await anonymous.post("/api/purge", json={"tags": ["t"]},
                                         headers={"authorization": "Bearer nope"})
            status = await anonymous.get("/api/status")
            health = await anonymous.get("/healthz")
        ok = await admin.purge(tags=["t"])
        records = (await admin.client.get("/api/audit")).json()["records"]
    assert (missing.status_code, wrong.status_code, status.status_code) == (401, 401, 401)
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert all(r.headers["cache-control"] == "no-store" for r in (missing, wrong, health))
    assert health.status_code == 200
    assert ok.json()["purged"] == 1  # the refused calls purged nothing
    newest_first = [(r["actor"], r["action"], r["outcome"], r["count"]) for r in records]
    assert newest_first == [
        (f"token:{fingerprint(TOKEN)}", "purge", "ok", 1),
        ("anonymous", "GET /api/status", "denied", None),
        (f"token:{fingerprint('nope')}", "purge", "denied", None),
        ("anonymous", "purge", "denied", None),
    ]
    assert records[0]["target"] == {"urls": [], "prefixes": [], "tags": ["t"], "all": False,
                                    "soft": False}
    database = (tmp_path / "d" / "stoker.db").read_bytes()
    assert TOKEN.encode() not in database


async def test_cross_origin_writes_are_refused(origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d") as (_, admin):
        host = admin.url.removeprefix("http://")
        foreign = await admin.client.post("/api/purge", json={"all": True},
                                          headers={"origin": "https://evil.example"})
        same = await admin.client.post("/api/purge", json={"tags": ["x"]},
                                       headers={"origin": f"http://{host}"})
    assert foreign.status_code == 403 and foreign.headers["cache-control"] == "no-store"
    assert same.status_code == 200


STRANGER = "192.0.2.7"


def _audit_bytes(data_dir: Path) -> bytes:
    return b"".join(path.read_bytes() for path in data_dir.glob("stoker.db*"))


async def test_refused_calls_are_audited_and_a_flood_is_summarised(origin: Origin,
                                                                   tmp_path: Path) -> None:
    clock = FakeClock(start=SystemClock().now(), auto_advance=False)
    async with purging(origin.url, tmp_path / "d", clock=clock) as (_, admin):
        foreign = await admin.client.post("/api/purge", json={"all": True},
                                          headers={"origin": "https://evil.example"})
        # a stranger behind a trusted proxy (the loopback peer): its own client, so the
        # admin's token from 127.0.0.1 is not held up by the stranger's guesses
        async with httpx.AsyncClient(base_url=admin.url) as stranger:
            flood = [await stranger.post("/api/purge", json={"all": True},
                                         headers={"authorization": "Bearer guess-0",
                                                  "x-forwarded-for": STRANGER})
                     for _ in range(REFUSALS_PER_WINDOW + 4)]
        within = (await admin.client.get("/api/audit")).json()["records"]
        clock.advance(WINDOW)
        after = (await admin.client.get("/api/audit")).json()["records"]
        stored = _audit_bytes(tmp_path / "d")
    assert foreign.status_code == 403
    assert [r.status_code for r in flood] == [401] * FAILURES + [429] * (
        REFUSALS_PER_WINDOW + 4 - FAILURES)  # past the limit, guesses are not compared
    # the admin's refusal, and the stranger's first ones: the rest of its flood was counted
    assert len(within) == 1 + REFUSALS_PER_WINDOW
    first = within[-1]
    assert (first["actor"], first["action"], first["outcome"]) == (
        f"token:{fingerprint(TOKEN)}", "purge", "denied")
    assert first["target"]["status"] == 403 and first["target"]["client"] == "127.0.0.1"
    assert {(r["actor"], r["target"]["status"]) for r in within[:-1]} == {
        (f"token:{fingerprint('guess-0')}", 401), ("anonymous", 429)}
    summary = after[0]
    assert (summary["actor"], summary["outcome"], summary["count"]) == (
        f"client:{STRANGER}", "suppressed", 4)
    assert summary["target"]["summary"] == "4 more refused calls suppressed"
    assert after[1:] == within
    assert TOKEN.encode() not in stored and b"guess-0" not in stored


def _purge_scope(extra_headers: list[tuple[bytes, bytes]]) -> Message:
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {TOKEN}".encode()),
               (b"content-type", b"application/json"), *extra_headers]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/api/purge", "raw_path": b"/api/purge",
            "root_path": "", "query_string": b"", "headers": headers,
            "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8081)}


async def _post_chunks(app: Any, extra_headers: list[tuple[bytes, bytes]],
                       chunks: list[bytes]) -> tuple[int, int]:
    """``(status, chunks the app received)`` for a purge body sent straight to the ASGI app."""
    received = 0
    statuses: list[int] = []

    async def receive() -> Message:
        nonlocal received
        if received == len(chunks):
            return {"type": "http.disconnect"}
        received += 1
        return {"type": "http.request", "body": chunks[received - 1],
                "more_body": received < len(chunks)}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(_purge_scope(extra_headers), receive, send)
    return statuses[0], received


async def test_an_oversized_purge_body_is_refused_before_it_is_read_whole(
        origin: Origin, tmp_path: Path) -> None:
    chunk = 64 * 1024
    origin.app.set("/b", headers=[*CACHEABLE, ("cache-tag", "b")], body=b"b")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/b")
        app = build_admin_app(proxy.stoker)
        streamed = await _post_chunks(app, [], [b" " * chunk] * (2 * MAX_BODY // chunk))
        declared = await _post_chunks(app, [(b"content-length", str(MAX_BODY + 1).encode())],
                                      [b" " * (MAX_BODY + 1)])
        over = await admin.client.post("/api/purge", content=b" " * (MAX_BODY + 1))
        body = b'{"tags": ["b"]}'
        at_limit = await admin.client.post("/api/purge",
                                           content=body + b" " * (MAX_BODY - len(body)))
    assert streamed == (413, MAX_BODY // chunk + 1)  # stopped at the first chunk past it
    assert declared == (413, 0)  # refused on Content-Length alone
    assert over.status_code == 413 and over.json()["field"] == "body"
    assert at_limit.status_code == 200 and at_limit.json()["purged"] == 1


class FailingAudit:
    """An audit trail whose writes fail (an injected fault); reads and close go through."""

    def __init__(self, inner: AuditTrail) -> None:
        self.inner = inner

    async def record(self, *, actor: str, action: str, target: Mapping[str, Any],
                     count: int | None, outcome: str) -> None:
        raise OSError("injected fault: disk full")

    async def recent(self, limit: int = 100, *, action: str | None = None,
                     before: int | None = None) -> list[dict[str, Any]]:
        return await self.inner.recent(limit, action=action, before=before)

    async def prune(self, before: float, keep: int) -> int:
        return await self.inner.prune(before, keep)

    async def close(self) -> None:
        await self.inner.close()


async def test_an_audit_write_failing_after_a_purge_leaves_the_purge_a_success(
        origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    origin.app.set("/f", headers=[*CACHEABLE, ("cache-tag", "f")], body=b"f")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/f")
        proxy.stoker.audit = FailingAudit(proxy.stoker.audit)
        with caplog.at_level(logging.ERROR):
            purged = await admin.purge(tags=["f"])
        after = await proxy.client.get("/f")
    assert purged.status_code == 200 and purged.json()["purged"] == 1
    [error] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "injected fault" in error.getMessage() and "purge" in error.getMessage()
    assert "fwd=uri-miss" in after.headers["cache-status"]


async def test_without_a_token_the_api_is_open_on_loopback_only(origin: Origin,
                                                                tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d", token=None) as (_, admin):
        local = await admin.purge(tags=["x"])
        rebound = await admin.client.post("/api/purge", json={"tags": ["x"]},
                                          headers={"host": "attacker.example"})
        records = (await admin.client.get("/api/audit")).json()["records"]
    assert local.status_code == 200 and rebound.status_code == 403
    assert records[0]["actor"] == "anonymous"


async def test_a_public_admin_listener_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    settings = settings_from({"origin": "http://127.0.0.1:9", "data_dir": str(tmp_path / "d"),
                              "admin_listen": f"0.0.0.0:{free_port()}"})
    with pytest.raises(SettingsError, match="admin_token"):
        await run_service(settings, announce=lambda _: None)
    assert not (tmp_path / "d").exists()  # refused before opening anything


async def test_purge_method(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/m", headers=[*CACHEABLE, ("vary", "Accept-Language")], body=b"m")
    async with purging(origin.url, tmp_path / "off") as (proxy, _):
        disabled = await proxy.client.request("PURGE", "/m")
    async with purging(origin.url, tmp_path / "d", purge_allow=["127.0.0.1/32"]) as (
            proxy, admin):
        for language in ("en", "de"):
            await proxy.client.get("/m", headers={"accept-language": language})
        soft = await proxy.client.request("PURGE", "/m", headers={"x-purge-soft": "1"})
        hard = await proxy.client.request("PURGE", "/m")
        stale_gone = await proxy.client.get("/m", headers={"accept-language": "en"})
        records = (await admin.client.get("/api/audit")).json()["records"]
    async with purging(origin.url, tmp_path / "d2", purge_allow=["10.0.0.0/8"]) as (proxy, _):
        forbidden = await proxy.client.request("PURGE", "/m")
    assert disabled.status_code == 405
    assert (soft.status_code, soft.json()["purged"], soft.json()["soft"]) == (200, 2, True)
    assert (hard.status_code, hard.json()["purged"]) == (200, 2)
    assert hard.headers["cache-control"] == "no-store"
    assert "fwd=uri-miss" in stale_gone.headers["cache-status"]
    assert forbidden.status_code == 403
    assert [(r["actor"], r["outcome"]) for r in records] == [("purge-method:127.0.0.1", "ok")] * 2
    assert origin.app.count("/m") == 3  # PURGE never reached the origin


def _cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli_app, list(args), env={"STOKER_CONFIG": "", **(env or {})})


async def test_stoker_purge_cli(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/c", headers=[*CACHEABLE, ("cache-tag", "cli")], body=b"c")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        await proxy.client.get("/c")
        by_tag = await asyncio.to_thread(
            _cli, "purge", "--tag", "cli", "--admin-url", admin.url, "--admin-token", TOKEN)
        by_env = await asyncio.to_thread(
            _cli, "purge", "--all", "--soft",
            env={"STOKER_ADMIN_URL": admin.url, "STOKER_ADMIN_TOKEN": TOKEN})
        refused = await asyncio.to_thread(
            _cli, "purge", "--tag", "cli", "--admin-url", admin.url, "--admin-token", "wrong")
        invalid = await asyncio.to_thread(
            _cli, "purge", "--tag", "a b", "--admin-url", admin.url, "--admin-token", TOKEN)
        stranger = await asyncio.to_thread(
            _cli, "purge", "--url", "https://elsewhere.example/c", "--admin-url", admin.url,
            "--admin-token", TOKEN)
        shown = await asyncio.to_thread(
            _cli, "entry", f"{proxy.url}/c", "--admin-url", admin.url, "--admin-token", TOKEN)
    unreachable = await asyncio.to_thread(
        _cli, "purge", "--url", "/x", "--admin-url", f"http://127.0.0.1:{free_port()}")
    nothing = await asyncio.to_thread(_cli, "purge")
    assert by_tag.exit_code == 0, by_tag.output
    assert by_tag.output.startswith(f"stoker at {admin.url}:\n")  # the one it talked to
    assert "purged 1 entry (deleted)" in by_tag.output and f"{proxy.url}/c" in by_tag.output
    assert by_env.exit_code == 0 and "made stale" in by_env.output
    assert refused.exit_code == 1 and "--admin-token" in refused.output
    assert invalid.exit_code == 1 and "tags[0]" in invalid.output
    assert shown.exit_code == 0 and "not cached" in shown.output
    assert stranger.exit_code == 0
    assert "note: elsewhere.example is not a host of this site" in stranger.output
    assert unreachable.exit_code == 1 and "is `stoker serve` running?" in unreachable.output
    assert nothing.exit_code == 2
