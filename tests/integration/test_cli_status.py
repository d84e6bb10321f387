"""``stoker status`` against a real Stoker: its proxy and admin API on real servers, the
command run as a user runs it (a child process, its output a pipe, not a terminal)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from tests.conftest import free_port
from tests.integration import warm_site
from tests.integration.admin_harness import CACHEABLE, TOKEN, purging
from tests.integration.conftest import Origin
from tests.integration.warm_site import SITE, SiteOrigin, page, site_origin, stoker_env, warming

PIPE = asyncio.subprocess.PIPE
DEADLINE = 60.0  # generous: only a broken build waits this long


async def status_cli(*args: str) -> tuple[int, str, str]:
    """``stoker status ARGS`` as a child process: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stoker", "status", *args, env=stoker_env(), stdout=PIPE,
        stderr=PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), DEADLINE)
    return await proc.wait(), out.decode(), err.decode()


def table_row(table: str, name: str) -> list[str]:
    """The cells of the row called ``name`` in a printed table (borders left out)."""
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if name in cells:
            return [cell for cell in cells if cell]
    raise AssertionError(f"no row {name!r} in:\n{table}")


async def test_once_shows_the_hits_as_json_and_as_a_table(origin: Origin,
                                                          tmp_path: Path) -> None:
    origin.app.set("/p", headers=CACHEABLE, body=b"p")
    async with purging(origin.url, tmp_path / "d") as (proxy, admin):
        for _ in range(4):  # a miss, then 3 hits
            await proxy.client.get("/p")
        code, out, err = await status_cli(  # the acceptance check's command, exactly
            "--once", "--json", "--admin-url", admin.url, "--admin-token", TOKEN)
        table_code, table, table_err = await status_cli(
            "--once", "--interval", "0.2", "--admin-url", admin.url, "--admin-token", TOKEN)
    assert (code, err) == (0, "")
    shown = json.loads(out)  # stdout is the one JSON document, nothing else
    assert (shown["requests"]["hit"], shown["requests"]["miss"]) == (3, 1)
    assert (shown["requests_total"], shown["hit_ratio"]) == (4, 0.75)
    assert shown["sampled_over"] >= 1.0  # two samples, --interval (1 s) apart
    assert shown["requests_per_second"] == 0.0  # no request between them
    assert shown["request_rates"]["hit"] == 0.0
    assert shown["origin"] == origin.url and shown["origin_down_since"] is None
    assert shown["origin_down_for"] is None and shown["warm_progress"] is None
    assert shown["store"]["l1_entries"] == 1
    assert (table_code, table_err) == (0, "")
    assert table.startswith(f"stoker at {admin.url}\n")
    assert table_row(table, "hit") == ["requests", "hit", "3", "0.0"]
    assert table_row(table, "hit ratio") == ["hit ratio", "75.0%"]
    assert table_row(table, "state") == ["state", "up"]


async def test_without_once_it_refreshes_until_ctrl_c(origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d") as (_, admin):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stoker", "status", "--interval", "0.2", "--admin-url",
            admin.url, "--admin-token", TOKEN, env=stoker_env(), stdout=PIPE, stderr=PIPE)
        assert proc.stdout is not None
        frames = 0
        while frames < 2:  # the second has rates: two samples
            line = await asyncio.wait_for(proc.stdout.readline(), DEADLINE)
            assert line, "stoker status ended on its own"
            frames += line.decode().strip() == "every 0.2 s, Ctrl-C to stop"
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), DEADLINE)
    assert (proc.returncode, err) == (0, b"")  # Ctrl-C is how it ends: no traceback


async def test_an_active_warm_run_shows_its_progress(tmp_path: Path) -> None:
    site = SiteOrigin(pages=5)
    urls = [f"{SITE}{page(n)}" for n in range(1, 6)]
    async with site_origin(site) as origin_url, warming(origin_url, tmp_path / "d") as warm:
        site.gate.clear()  # hold the run's visits at the origin: it stays active
        try:
            started = (await warm.admin.post("/api/warm", json={"urls": urls})).json()
            run_id = started["run"]["id"]
            args = ("--once", "--interval", "0.2", "--admin-url", warm.admin_url,
                    "--admin-token", warm_site.TOKEN)
            code, out, err = await status_cli(*args, "--json")
            table_code, table, _ = await status_cli(*args)
        finally:
            site.gate.set()
        await warm.wait_run(run_id)
    assert (code, err) == (0, "")
    shown = json.loads(out)
    assert shown["warm"]["active"]["id"] == run_id
    assert shown["warm"]["active"]["counts"]["total"] == 5
    assert shown["warm_progress"] == 0.0  # every visit is held at the origin
    assert table_code == 0
    assert table_row(table, "run") == ["warm", "run", f"{run_id} (manual, urls): warm"]
    assert table_row(table, "settled") == ["settled", "0/5 (0.0%)"]


async def test_a_stoker_it_cannot_talk_to_is_one_sentence_and_exit_1(
        origin: Origin, tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    code, out, err = await status_cli("--once", "--json", "--admin-url", nowhere)
    async with purging(origin.url, tmp_path / "d") as (_, admin):
        refused = await status_cli("--once", "--json", "--admin-url", admin.url,
                                   "--admin-token", "wrong")
    json_alone = await status_cli("--json", "--admin-url", nowhere)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: cannot reach Stoker's admin API at {nowhere} (ConnectError) — is `stoker "
        "serve` running? Point to it with --admin-url or STOKER_ADMIN_URL"]
    assert refused[0] == 1 and refused[1] == "" and "--admin-token" in refused[2]
    assert json_alone == (2, "", "error: --json prints one document: add --once\n")
