"""What ``stoker serve`` writes: one line at start and one at stop, each with the version
and the addresses; with ``--log-format json`` every line is one JSON object."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from tests.integration.conftest import Origin
from tests.integration.serve_process import Serve

from stoker.version import VERSION


async def test_json_lines_from_start_to_stop(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/page", body=b"page")
    serve = Serve(origin, tmp_path, "--log-format", "json")
    serve.config.write_text('warm_on_start = "never"\n')
    async with serve:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}") as client:
            await client.get("/page", headers={"cookie": "session=1"})  # a logged warning
        await serve.reload('warm_on_start = "never"\nkeep = "2h"\n', "reloaded keep")
    records = [json.loads(line) for line in serve.lines()]  # each line one object
    assert all({"time", "level", "logger", "message"} <= set(record) for record in records)
    messages = [record["message"] for record in records]
    assert messages[0].startswith(f"stoker {VERSION}: proxying http://127.0.0.1:{serve.port}")
    assert f"admin on http://127.0.0.1:{serve.admin_port}" in messages[0]
    assert messages[-1] == (f"stoker {VERSION}: stopped proxying http://127.0.0.1:{serve.port}"
                            f" (admin on http://127.0.0.1:{serve.admin_port})")
    assert any(record["logger"] == "stoker" and "reloaded keep" in record["message"]
               for record in records)


async def test_text_lines_name_the_version_at_start_and_stop(
        origin: Origin, tmp_path: Path) -> None:
    serve = Serve(origin, tmp_path)
    serve.config.write_text('warm_on_start = "never"\n')
    async with serve:
        pass
    lines = serve.lines()
    assert lines[0].startswith(f"stoker {VERSION}: proxying")
    assert lines[-1].startswith(f"stoker {VERSION}: stopped proxying")
