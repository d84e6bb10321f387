"""``/readyz`` says not ready while the data volume refuses writes: a real fault a root
process cannot ignore (a directory where the probe writes its file), then recovery."""

from __future__ import annotations

from pathlib import Path

from tests.integration.admin_harness import purging
from tests.integration.conftest import Origin

from stoker.admin.health import OK, PROBE_EVERY, PROBE_FILE
from stoker.clock import FakeClock, SystemClock


async def test_readyz_fails_while_data_dir_refuses_writes_and_recovers(
        origin: Origin, tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    clock = FakeClock(start=SystemClock().now(), auto_advance=False)
    async with purging(origin.url, data_dir, clock=clock) as (_, admin):
        ready = await admin.client.get("/readyz")
        clock.advance(PROBE_EVERY)
        (data_dir / PROBE_FILE).unlink()
        (data_dir / PROBE_FILE).mkdir()  # every write to the probe's file now fails
        refused = await admin.client.get("/readyz")
        (data_dir / PROBE_FILE).rmdir()
        still = await admin.client.get("/readyz")  # within PROBE_EVERY: no new write
        clock.advance(PROBE_EVERY)
        again = await admin.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["data_dir"] == OK
    assert refused.status_code == 503 and refused.json()["ready"] is False
    assert refused.json()["checks"]["data_dir"].startswith(
        "data_dir refuses writes: IsADirectoryError")
    assert refused.json()["checks"]["l2"] == OK  # reads alone would have said ready
    assert still.status_code == 503
    assert again.status_code == 200
