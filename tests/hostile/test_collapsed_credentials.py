"""Collapsed waiters get only what they could reuse from the cache themselves (issue 34,
case 1): WordPress answers an authenticated REST call ``no-cache, must-revalidate,
max-age=0`` (storable under RFC 9111 §3.5, stale at once); requests that arrive while it
is being fetched must not be handed the admin's answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import request_body, serving
from tests.integration.conftest import Proxy, running_proxy

from stoker.asgi import Message, Receive, Send

FETCH = 0.6
"""Seconds the origin takes for each answer: the window in which waiters collapse."""


class RestOrigin:
    """WordPress's REST shape: ``/me`` tells who asked (``Authorization``), with the
    Cache-Control WordPress sends for an authenticated call (or ``public`` when
    ``public`` is set); 401 ``no-store`` without credentials.  ``/page`` is an ordinary
    page, stale at once; every request is counted by path."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.public = False

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await request_body(receive)
        path = scope["path"]
        self.counts[path] = self.counts.get(path, 0) + 1
        auth = dict(scope["headers"]).get(b"authorization")
        await asyncio.sleep(FETCH)
        if path == "/me" and auth is None:
            status, control, body = 401, b"no-store", b"no credentials"
        elif path == "/me":
            control = b"public, max-age=60" if self.public else (
                b"no-cache, must-revalidate, max-age=0")
            status, body = 200, b"SECRET-FOR " + auth
        else:
            status, control, body = 200, b"max-age=60", b"page for " + (auth or b"anyone")
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"cache-control", control), (b"content-type", b"text/plain"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def rest() -> AsyncIterator[tuple[RestOrigin, str]]:
    app = RestOrigin()
    async with serving(app, kind="uvicorn") as url:
        yield app, url


@pytest.fixture(params=["stoker", "granian"])
async def proxy(rest: tuple[RestOrigin, str], tmp_path: Path,
                request: pytest.FixtureRequest) -> AsyncIterator[Proxy]:
    async with running_proxy(rest[1], tmp_path / "data", kind=request.param) as running:
        yield running


async def _leader_then_waiters(proxy: Proxy, path: str, leader: dict[str, str],
                               waiters: list[dict[str, str]]) -> list[str]:
    """The leader's request, then ``waiters`` 50 ms later (collapsed on its fetch): the
    waiters' bodies."""
    first = asyncio.create_task(proxy.client.get(path, headers=leader))
    await asyncio.sleep(0.05)
    answers = await asyncio.gather(*(proxy.client.get(path, headers=h) for h in waiters))
    await first
    return [answer.text for answer in answers]


async def test_anonymous_waiters_never_get_an_authorized_answer(
        rest: tuple[RestOrigin, str], proxy: Proxy) -> None:
    bodies = await _leader_then_waiters(proxy, "/me", {"authorization": "Basic YWRtaW4="},
                                        [{}] * 5)
    assert not [body for body in bodies if "SECRET" in body]
    assert bodies == ["no credentials"] * 5


async def test_another_user_waiting_gets_their_own_answer(
        rest: tuple[RestOrigin, str], proxy: Proxy) -> None:
    bodies = await _leader_then_waiters(proxy, "/me", {"authorization": "Basic YWRtaW4="},
                                        [{"authorization": "Basic Ym9i"}] * 5)
    assert bodies == ["SECRET-FOR Basic Ym9i"] * 5


async def test_waiters_behind_a_credentialed_leader_collapse_among_themselves(
        rest: tuple[RestOrigin, str], proxy: Proxy) -> None:
    """The leader's answer is not ``public``: the five anonymous waiters make one origin
    request of their own between them, not five."""
    origin, _ = rest
    bodies = await _leader_then_waiters(proxy, "/page", {"authorization": "Basic YWRtaW4="},
                                        [{}] * 5)
    assert bodies == ["page for anyone"] * 5
    assert origin.counts["/page"] == 2


async def test_a_public_answer_to_a_credentialed_leader_is_shared(
        rest: tuple[RestOrigin, str], proxy: Proxy) -> None:
    origin, _ = rest
    origin.public = True
    bodies = await _leader_then_waiters(proxy, "/me", {"authorization": "Basic YWRtaW4="},
                                        [{}] * 5)
    assert bodies == ["SECRET-FOR Basic YWRtaW4="] * 5
    assert origin.counts["/me"] == 1


async def test_a_stale_at_once_answer_is_not_handed_to_waiters(
        rest: tuple[RestOrigin, str], proxy: Proxy) -> None:
    """Anonymous leader and waiters, an answer stored already stale (``no-cache``): each
    waiter must revalidate it, so each goes to the origin itself."""
    origin, _ = rest
    bodies = await _leader_then_waiters(proxy, "/me", {"authorization": "Basic YWRtaW4="},
                                        [{"authorization": "Basic YWRtaW4="}] * 3)
    assert bodies == ["SECRET-FOR Basic YWRtaW4="] * 3
    assert origin.counts["/me"] == 4
