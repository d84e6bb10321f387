"""``stoker serve --processes 2``: two serving processes on one address share the cache
tier (a miss of one is the other's hit or waits for its fetch); a purge answers once
both have it in force; a process that dies is started again."""

from __future__ import annotations

import asyncio
import copy
import os
import signal
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tests.integration.conftest import Origin
from tests.integration.serve_process import DEADLINE, Serve, eventually_two, serving_pids

from stoker.purge.relay import HEARTBEAT

TAGGED = [("cache-control", "max-age=600"), ("cache-tag", "post-9")]
TOKEN = "test-admin-token-0123456789"


async def fresh_get(serve: Serve, path: str) -> httpx.Response:
    """One request on a connection of its own (the kernel picks the process)."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                 timeout=DEADLINE) as client:
        return await client.get(path)


async def test_two_processes_share_the_cache_and_every_purge(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/tagged/9", headers=TAGGED, body=b"v1")
    serve = Serve(origin, tmp_path, "--processes", "2", "--admin-token", TOKEN)
    serve.config.write_text('warm_on_start = "never"\n')
    async with serve:
        pids = await eventually_two(serve)
        await asyncio.sleep(0.3)  # both listening
        first = [await fresh_get(serve, "/tagged/9") for _ in range(30)]
        origin.app.set("/tagged/9", headers=TAGGED, body=b"v2")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.admin_port}",
                                     headers={"authorization": f"Bearer {TOKEN}"}) as admin:
            purge = await admin.post("/api/purge", json={"tags": ["post-9"]})
            status = (await admin.get("/api/status")).json()
            after = [await fresh_get(serve, "/tagged/9") for _ in range(30)]
            await asyncio.sleep(HEARTBEAT + 0.5)  # each process has told the bus its figures
            scraped = (await admin.get("/metrics")).text
    assert len(pids) == 2
    assert all(response.content == b"v1" for response in first)
    assert origin.app.count("/tagged/9") == 2  # one fetch for both processes, one after
    assert purge.status_code == 200 and purge.json()["unconfirmed"] == []
    members = status["members"]
    assert [member["name"].rsplit("/", 1)[1] for member in members] == ["0", "1"]
    assert all(member["live"] for member in members)
    assert not [response for response in after if response.content != b"v2"]
    answered = sum(sample.value for family in text_string_to_metric_families(scraped)
                   for sample in family.samples if sample.name == "stoker_requests_total"
                   and sample.labels["source"] == "visitor")
    assert answered == 60  # one scrape counts both processes' requests


async def test_a_process_killed_is_started_again(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/page", headers=TAGGED, body=b"page")
    serve = Serve(origin, tmp_path, "--processes", "2")
    serve.config.write_text('warm_on_start = "never"\n')
    async with serve:
        pids = await eventually_two(serve)
        await asyncio.sleep(0.3)
        os.kill(min(pids), signal.SIGKILL)
        for _ in range(int(DEADLINE / 0.05)):
            if len(serving_pids(serve)) == 3:
                break
            await asyncio.sleep(0.05)
        answers = [await fresh_get(serve, "/page") for _ in range(10)]
    assert len(serving_pids(serve)) == 3  # the two, and the one started again
    assert all(response.status_code == 200 for response in answers)
    assert "starting it again" in serve.log.read_text()


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie not reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_children_stop_when_the_supervisor_is_killed(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/page", headers=TAGGED, body=b"page")
    serve = Serve(origin, tmp_path, "--processes", "2")
    serve.config.write_text('warm_on_start = "never"\n')
    async with serve:
        pids = await eventually_two(serve)
        await asyncio.sleep(0.3)
        serve.proc.kill()  # kill -9 of the supervisor: it cannot stop its children
        await serve.proc.wait()
        for _ in range(int(10 / 0.05)):
            if not any(alive(pid) for pid in pids):
                break
            await asyncio.sleep(0.05)
        left = {pid for pid in pids if alive(pid)}
        for pid in left:  # a failure leaves no stray processes behind
            os.kill(pid, signal.SIGKILL)
    assert not left, f"children still running 10 s after the supervisor died: {left}"
    again = copy.copy(serve)
    again.log = tmp_path / "again.log"
    async with again:  # the same listen and admin_listen: free again
        answer = await fresh_get(again, "/page")
    assert answer.status_code == 200
