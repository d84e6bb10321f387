"""Guessing the admin token: every admin route limits a client's failed authentications,
counting each guess before it is compared, the client being the one trusted proxies name."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import httpx
from tests.integration.admin_harness import TOKEN
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import FORM, dashboard

from stoker.admin.login_limit import FAILURES

GUESSES = 100
RIGHT_AT = 50


def bearer(token: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **extra}


async def test_sequential_wrong_tokens_meet_a_429_with_retry_after(
        origin: Origin, tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        answers = [await dash.client.get("/api/status", headers=bearer(f"guess{i}"))
                   for i in range(60)]
        right = await dash.client.get("/api/status", headers=dash.bearer)
        records = await dash.audit_as(bearer(TOKEN, **{"x-forwarded-for": "192.0.2.9"}))
    statuses = [answer.status_code for answer in answers]
    assert statuses == [401] * FAILURES + [429] * (60 - FAILURES)
    assert all(int(a.headers["retry-after"]) > 0 for a in answers[FAILURES:])
    assert right.status_code == 429  # the limit is the client's: its right token waits too
    assert {r["target"]["status"] for r in records if r["outcome"] == "denied"} == {401, 429}


async def test_concurrent_guesses_beyond_the_limit_are_never_compared(
        origin: Origin, tmp_path: Path) -> None:
    """The right token among 100 concurrent wrong ones: only FAILURES are compared."""
    tokens = [TOKEN if i == RIGHT_AT else f"guess{i}" for i in range(GUESSES)]
    limits = httpx.Limits(max_connections=GUESSES)
    async with dashboard(origin.url, tmp_path / "d") as dash, httpx.AsyncClient(
            base_url=dash.url, limits=limits, timeout=30) as client:
        api = await asyncio.gather(*(client.get("/api/status", headers=bearer(token))
                                     for token in tokens))
    async with dashboard(origin.url, tmp_path / "e") as dash, httpx.AsyncClient(
            base_url=dash.url, limits=limits, timeout=30) as client:
        logins = await asyncio.gather(*(client.post(
            "/login", content=f"token={token}", headers={**FORM, "origin": dash.url})
            for token in tokens))
    for answers, allowed in ((api, 200), (logins, 303)):
        counted = Counter(answer.status_code for answer in answers)
        assert counted[401] + counted[allowed] <= FAILURES, counted  # compared at most
        assert counted[429] >= GUESSES - FAILURES, counted


async def test_the_limit_is_keyed_by_the_client_trusted_proxies_name(
        origin: Origin, tmp_path: Path) -> None:
    """Behind a trusted proxy (the test's loopback peer is one by default) one client's
    guesses hold up that client only; from an untrusted peer the header is not believed."""
    attacker, admin = {"x-forwarded-for": "203.0.113.1"}, {"x-forwarded-for": "203.0.113.2"}
    async with dashboard(origin.url, tmp_path / "d") as dash:
        for i in range(FAILURES):
            await dash.client.get("/api/status", headers=bearer(f"guess{i}", **attacker))
        held = await dash.client.get("/api/status", headers=bearer("guess", **attacker))
        other = await dash.client.get("/api/status", headers=bearer(TOKEN, **admin))
        login = await dash.client.post("/login", content=f"token={TOKEN}",
                                       headers={**FORM, **admin, "origin": dash.url})
        records = await dash.audit_as(bearer(TOKEN, **admin))
    async with dashboard(origin.url, tmp_path / "e", trusted_proxies=[]) as dash:
        for i in range(FAILURES):
            await dash.client.get("/api/status", headers=bearer(f"guess{i}", **attacker))
        shared = await dash.client.get("/api/status", headers=bearer(TOKEN, **admin))
    assert held.status_code == 429 and "203.0.113.1" in held.json()["error"]
    assert (other.status_code, login.status_code) == (200, 303)
    assert {r["target"]["client"] for r in records if r["outcome"] == "denied"} == {
        "203.0.113.1"}
    assert shared.status_code == 429  # an untrusted peer's X-Forwarded-For is its own word
