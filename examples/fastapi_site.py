"""A small FastAPI blog behind an embedded Stoker, warmed by its own traffic.

    STOKER_SITE_URL=http://127.0.0.1:8000 uvicorn examples.fastapi_site:app

Pages are cached by ``@stoker.page`` (5 minutes, tagged by post); editing a post
(``POST /posts/{slug}``) purges its tag and the home page through ``stoker.purge``; the
purged pages are re-warmed after the next responses (``warm=True``: no worker process);
the admin API, dashboard and ``/metrics`` are at ``/stoker`` (``STOKER_ADMIN_TOKEN``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, Response

from stoker import Stoker
from stoker.asgi import ASGIApp


def make_app(stoker: Stoker, posts: dict[str, str]) -> ASGIApp:
    """The blog over ``posts`` (slug → text), behind ``stoker``."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with stoker:  # opens the store, closes it at shutdown
            yield

    api = FastAPI(lifespan=lifespan)

    @api.get("/")
    @stoker.page(ttl="5m", swr="30s", tags=lambda: ["home"])
    async def home() -> HTMLResponse:
        links = "".join(f'<li><a href="/posts/{slug}">{slug}</a></li>' for slug in posts)
        return HTMLResponse(f"<h1>Blog</h1><ul>{links}</ul>")

    @api.get("/posts/{slug}")
    @stoker.page(ttl="5m", swr="30s", tags=lambda slug: [f"post-{slug}"])
    async def post(slug: str) -> Response:
        if slug not in posts:
            return HTMLResponse("<h1>Not found</h1>", status_code=404)
        return HTMLResponse(f"<h1>{slug}</h1><p>{posts[slug]}</p>")

    @api.get("/sitemap.xml")
    async def sitemap() -> Response:
        site = stoker.settings.site_url[0]
        urls = "".join(f"<url><loc>{site}/posts/{slug}</loc></url>" for slug in posts)
        return Response(f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/'
                        f'schemas/sitemap/0.9"><url><loc>{site}/</loc></url>{urls}</urlset>',
                        media_type="application/xml")

    @api.post("/posts/{slug}")
    async def edit(slug: str, text: str) -> JSONResponse:
        posts[slug] = text
        result = await stoker.purge(tags=[f"post-{slug}", "home"])
        return JSONResponse({"purged": result.purged})

    return stoker.asgi(api, admin="/stoker")


stoker = Stoker(data_dir=os.environ.get("STOKER_DATA_DIR", ".stoker"),
                site_url=os.environ.get("STOKER_SITE_URL", "http://127.0.0.1:8000"),
                admin_token=os.environ.get("STOKER_ADMIN_TOKEN"), warm=True)
app = make_app(stoker, {"hello": "Hello, world.", "second": "A second post."})
