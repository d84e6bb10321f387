"""What an embedded Stoker costs on a hit, against hishel's ASGI middleware on the same app.

The same Starlette app (a 2 KiB HTML page, ``Cache-Control: max-age=300``) is wrapped by
``stoker.Stoker(...).asgi(app)`` and by ``hishel.asgi.ASGICacheMiddleware`` (its SQLite
storage, RFC 9111 mode), and driven in process (no HTTP server, so the figure is the
middleware's own work): one miss fills each cache, then ``--requests`` hits, sequential,
in interleaved rounds.  Prints hits per second (median of the rounds) for each, the bare
app (no cache) for reference, and Stoker's rate over hishel's.

    .venv/bin/python bench/middleware.py --rounds 5 --requests 20000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hishel import AsyncSqliteStorage
from hishel.asgi import ASGICacheMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from stoker import Stoker
from stoker.asgi import ASGIApp, Message

BODY = "<html><body>" + "x" * 2048 + "</body></html>"
SCOPE: Message = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                  "method": "GET", "scheme": "http", "path": "/page", "raw_path": b"/page",
                  "query_string": b"", "root_path": "",
                  "headers": [(b"host", b"www.example.com"), (b"accept", b"text/html")],
                  "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}


def site(calls: list[int]) -> Starlette:
    """The app; ``calls`` counts its answers (none while a cache answers)."""

    async def page(_: Request) -> HTMLResponse:
        calls.append(1)
        return HTMLResponse(BODY, headers={"cache-control": "max-age=300"})

    return Starlette(routes=[Route("/page", page)])


async def _receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def one(app: ASGIApp) -> tuple[int, bytes]:
    """One request: its status and the response's ``cache-status``/``x-hishel`` field."""
    found: dict[str, Any] = {}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            found["status"] = message["status"]
            found["mark"] = b";".join(v for k, v in message["headers"]
                                      if k in (b"cache-status", b"x-hishel-from-cache"))

    await app(dict(SCOPE), _receive, send)
    return found["status"], found.get("mark", b"")


async def rate(app: ASGIApp, requests: int) -> float:
    started = time.perf_counter()
    for _ in range(requests):
        await one(app)
    return requests / (time.perf_counter() - started)


async def main(rounds: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stoker = Stoker(data_dir=str(Path(tmp) / "stoker"))
        calls: dict[str, list[int]] = {"bare app": [], "stoker": [], "hishel": []}
        apps: dict[str, ASGIApp] = {
            "bare app": site(calls["bare app"]),
            "stoker": stoker.asgi(site(calls["stoker"])),
            "hishel": ASGICacheMiddleware(site(calls["hishel"]), storage=AsyncSqliteStorage(
                database_path=str(Path(tmp) / "hishel.db"))),
        }
        async with stoker:
            for name, app in apps.items():
                await one(app)  # the miss that fills the cache
                print(f"{name}: warm-up answer {await one(app)}")
            filled = {name: len(each) for name, each in calls.items()}
            found: dict[str, list[float]] = {name: [] for name in apps}
            for _ in range(rounds):
                for name, app in apps.items():
                    found[name].append(await rate(app, requests))
        for name in ("stoker", "hishel"):  # every measured request was a hit
            assert len(calls[name]) == filled[name], f"{name} asked the app during the hits"
        report(found, lambda name: statistics.median(found[name]))


def report(found: dict[str, list[float]], median: Callable[[str], float]) -> None:
    for name in found:
        print(f"{name:9} {median(name):10,.0f} req/s  (rounds: "
              f"{', '.join(f'{each:,.0f}' for each in found[name])})")
    print(f"stoker / hishel: {median('stoker') / median('hishel'):.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20_000)
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.requests))
