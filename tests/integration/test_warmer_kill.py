"""A ``stoker serve`` killed with SIGKILL in the middle of a warm run loses nothing: a
Stoker started on the same data dir takes the run over (its lost visits reclaimed
once their leases end) and the run ends ``done`` with every URL counted once.

The killed process runs on the real clock; the one taking over gets a clock set past
the killed workers' leases instead of waiting for them to run out.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import httpx
from tests.integration.warm_site import (
    DEADLINE,
    TOKEN,
    SiteOrigin,
    page,
    site_origin,
    start_serve,
    warming,
)

from stoker.clock import FakeClock, SystemClock
from stoker.jobs.worker import WorkerConfig

PAGES = 300
KILL_AFTER = 50  # URLs settled before the kill
PAST_LEASES = WorkerConfig("warm").lease_ttl + 60


async def test_a_killed_server_mid_run_leaves_a_run_counted_once(tmp_path: Path) -> None:
    site = SiteOrigin(PAGES, delay=0.02)
    data_dir = tmp_path / "data"
    async with site_origin(site) as origin_url:
        run_id, settled = await killed_mid_run(origin_url, data_dir, tmp_path / "serve.log")
        assert settled < PAGES + 1, "the run ended before the kill: nothing was tested"
        clock = FakeClock(SystemClock().now() + PAST_LEASES, auto_advance=False)
        async with warming(origin_url, data_dir, clock=clock, warm_workers=4) as warm:
            run = await warm.wait_run(run_id)
    counts = run.counts
    assert run.phase == "done", run
    assert (counts.total, counts.warmed, counts.settled) == (PAGES + 1,) * 3
    assert counts.failed == counts.gave_up == counts.stopgap_pending == 0
    seen = site.page_hits()
    assert set(seen) == {page(n) for n in range(1, PAGES + 1)}
    assert max(seen.values()) <= 2, {path: n for path, n in seen.items() if n > 2}


async def killed_mid_run(origin_url: str, data_dir: Path, log_path: Path,
                         **settings: Any) -> tuple[int, int]:
    """``stoker serve`` (4 warm workers, ``settings``) in its own process, killed with
    SIGKILL once its full run has settled :data:`KILL_AFTER` URLs: ``(run id, settled)``."""
    with log_path.open("wb") as log:
        proc, admin_url = await start_serve(origin_url, data_dir, log, warm_workers=4,
                                            **settings)
        try:
            run_id, settled = await warm_until_settled(admin_url, KILL_AFTER)
            proc.send_signal(signal.SIGKILL)
            assert await proc.wait() == -signal.SIGKILL
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    return run_id, settled


async def warm_until_settled(admin_url: str, at_least: int) -> tuple[int, int]:
    """Start a full run through the admin API; return once ``at_least`` URLs settled:
    ``(run id, settled)``."""
    async with httpx.AsyncClient(base_url=admin_url, timeout=30, headers={
            "authorization": f"Bearer {TOKEN}"}) as admin:
        started = await admin.post("/api/warm", json={})
        assert started.status_code == 202, started.text
        run_id = int(started.json()["run"]["id"])

        async def poll() -> int:
            while True:
                settled = int((await admin.get(f"/api/warm/{run_id}")).json()
                              ["counts"]["settled"])
                if settled >= at_least:
                    return settled
                await asyncio.sleep(0.01)

        return run_id, await asyncio.wait_for(poll(), DEADLINE)
