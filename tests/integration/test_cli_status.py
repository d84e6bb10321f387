"""``stoker status`` against a real Stoker: its proxy and admin API on real servers, the
command run as a user runs it (a child process, its output a pipe, not a terminal)."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
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
    """The cells of the row called ``name`` in the plain view (columns two spaces apart or
    more)."""
    for line in table.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if name in cells:
            return cells
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
    assert table_row(table, "hit") == ["requests", "hit", "3", "0.0/s"]
    assert table_row(table, "hit ratio") == ["requests", "hit ratio", "75.0%"]
    assert table_row(table, "state") == ["origin", "state", "up"]
    assert "\x1b" not in table and "│" not in table  # plain text: no escapes, no box


async def test_into_a_pipe_without_once_it_prints_one_plain_snapshot_and_exits(
        origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d") as (_, admin):
        code, out, err = await status_cli("--interval", "0.2", "--admin-url", admin.url,
                                          "--admin-token", TOKEN)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"stoker at {admin.url}" and lines[-1] == "rates over 0.2 s"
    assert table_row(out, "all") == ["requests", "all", "0", "0.0/s"]  # two samples: rates
    assert "\x1b" not in out and "│" not in out


async def terminal_frames(admin_url: str, frames: int, **env: str) -> bytes:
    """What ``stoker status`` shows on a terminal (a pseudo-terminal) until ``frames``
    views were drawn, then Ctrl-C; it must end with exit 0."""
    leader, follower = pty.openpty()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stoker", "status", "--interval", "0.2", "--admin-url",
        admin_url, "--admin-token", TOKEN, env={**stoker_env(), "TERM": "xterm", **env},
        stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    shown = b""
    try:
        while shown.count(b"Ctrl-C to stop") < frames:
            piece = await asyncio.wait_for(asyncio.to_thread(os.read, leader, 65536), DEADLINE)
            assert piece, "stoker status ended on its own"
            shown += piece
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), DEADLINE) == 0  # no traceback exit
    finally:
        os.close(leader)
    return shown


async def test_on_a_terminal_it_refreshes_in_place_until_ctrl_c_and_honours_no_color(
        origin: Origin, tmp_path: Path) -> None:
    async with purging(origin.url, tmp_path / "d") as (_, admin):
        styled = await terminal_frames(admin.url, 2)
        uncoloured = await terminal_frames(admin.url, 2, NO_COLOR="1")
    bold = b"\x1b[1m"
    assert bold in styled and "│".encode() in styled  # the table, styled
    assert b"\x1b[?25l" in styled  # the live view hides the cursor to redraw in place
    assert bold not in uncoloured and b"\x1b[3m" not in uncoloured  # no styles at all
    assert "│".encode() in uncoloured  # the same table, redrawn


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
    assert table_row(table, "settled") == ["warm", "settled", "0/5 (0.0%)"]


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
