"""``CacheMiddleware`` around a real Starlette app, served by a real server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from tests.conftest import serving

from stoker import CacheMiddleware
from stoker.config.rules import parse_rules


def make_app() -> tuple[Starlette, dict[str, int]]:
    calls = {"article": 0, "dashboard": 0, "edit": 0}

    async def article(request: Request) -> PlainTextResponse:
        calls["article"] += 1
        await asyncio.sleep(0.1)
        return PlainTextResponse(f"article {calls['article']}",
                                 headers={"surrogate-key": "articles"})

    async def dashboard(request: Request) -> PlainTextResponse:
        calls["dashboard"] += 1
        return PlainTextResponse("secret", headers={"cache-control": "private, max-age=60"})

    async def edit(request: Request) -> PlainTextResponse:
        calls["edit"] += 1
        return PlainTextResponse("saved")

    app = Starlette(routes=[Route("/article", article), Route("/dashboard", dashboard),
                            Route("/article", edit, methods=["POST"])])
    return app, calls


async def test_middleware_caches_a_starlette_app(tmp_path: Path) -> None:
    inner, calls = make_app()
    rules = parse_rules([{"path": "/article", "ttl": 60}])
    app = CacheMiddleware(inner, data_dir=str(tmp_path / "mw"), rules=rules)
    async with serving(app, kind="uvicorn") as url, httpx.AsyncClient(base_url=url) as client:
        burst = await asyncio.gather(*(client.get("/article") for _ in range(20)))
        hit = await client.get("/article")
        private = [await client.get("/dashboard") for _ in range(2)]
        await client.post("/article")
        after_edit = await client.get("/article")
    await app.close()
    assert {r.text for r in burst} == {"article 1"}
    assert calls["article"] == 2  # one collapsed fill, one refill after the POST
    assert "hit" in hit.headers["cache-status"]
    assert "surrogate-key" not in hit.headers
    assert calls["dashboard"] == 2
    assert all("detail=private" in r.headers["cache-status"] for r in private)
    assert after_edit.text == "article 2"


async def test_the_wrapped_app_sees_neither_the_admin_session_nor_override_fields(
        tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    async def echo(request: Request) -> PlainTextResponse:
        seen.append(dict(request.headers))
        return PlainTextResponse("echo", headers={"cache-control": "no-store"})

    app = CacheMiddleware(Starlette(routes=[Route("/echo", echo)]), data_dir=str(tmp_path))
    async with serving(app, kind="uvicorn") as url, httpx.AsyncClient(base_url=url) as client:
        await client.get("/echo", headers={
            "cookie": "stoker_session=s1; theme=dark", "x-original-url": "/admin",
            "forwarded": "host=evil.example;proto=https"})
    await app.close()
    [headers] = seen
    assert headers["cookie"] == "theme=dark" and "x-original-url" not in headers
    assert "evil.example" not in headers["forwarded"]
