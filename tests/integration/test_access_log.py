"""The access log through a real server: one line per request, no secrets."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from tests.conftest import serving
from tests.integration.conftest import Origin

from stoker.app.serving import proxy_app
from stoker.app.stoker import Stoker
from stoker.config.settings import settings_from


async def test_one_json_line_per_request_and_no_secrets(origin: Origin, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    origin.app.set("/p", headers=[("cache-control", "max-age=60")], body=b"x" * 100)
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path / "d"),
                              "access_log": str(log), "access_log_format": "json"})
    stoker = await Stoker.open(settings)
    try:
        async with serving(proxy_app(stoker), kind="granian") as url, \
                httpx.AsyncClient(base_url=url) as client:
            await client.get("/p?token=s3cret&page=1", headers={"cookie": "sid=c00kie"})
            await client.get("/p?token=s3cret&page=1")
            await client.get("/p", headers={"authorization": "Bearer t0ken"})
            await client.post("/p", content=b"abc")
    finally:
        await stoker.close()
    text = log.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert [(line["method"], line["status"]) for line in lines] == [
        ("GET", 200), ("GET", 200), ("GET", 200), ("POST", 200)]
    assert lines[0]["url"] == "/p?token=REDACTED&page=1" and lines[0]["bytes"] == 100
    assert [line["cache"] for line in lines] == ["miss", "hit", "miss", "bypass"]
    assert lines[0]["origin_ms"] > 0 and lines[1]["origin_ms"] == 0
    assert lines[0]["client"] == "127.0.0.1"
    for secret in ("s3cret", "c00kie", "t0ken"):
        assert secret not in text
