"""A deeply nested JSON body to the admin API is a 400, not a 500."""

from __future__ import annotations

from pathlib import Path

from tests.integration.admin_harness import purging
from tests.integration.conftest import Origin


async def test_deeply_nested_json_is_a_400(origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path) as (_, admin):
        answer = await admin.client.post("/api/purge", content=b"[" * 100_000,
                                         headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert "nested too deeply" in answer.text
