"""``/metrics`` is per node: two nodes of ``stoker serve --processes 2`` on one PostgreSQL
database and one Redis (both relaying their figures on the purge bus) each count their
own processes' requests only, so scraping both counts every request once; a process of
a node killed and started again does not make the node's counters fall."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.serve_process import DEADLINE, Serve, eventually_two, serving_pids
from tests.integration.test_redis_down import listening, own_redis
from tests.job_backends import pg_schema, schema_url

from stoker.purge.relay import HEARTBEAT

TAGGED = [("cache-control", "max-age=600"), ("cache-tag", "t")]
TOKEN = "test-admin-token-0123456789"


def node(origin: Origin, directory: Path, name: str, shared: str) -> Serve:
    directory.mkdir()
    serve = Serve(origin, directory, "--processes", "2", "--node-id", name,
                  "--admin-token", TOKEN)
    serve.config.write_text(f'warm_on_start = "never"\n{shared}')
    return serve


async def requests(serve: Serve, count: int) -> None:
    for _ in range(count):  # a connection each: the kernel spreads them over the processes
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.port}",
                                     timeout=DEADLINE) as client:
            assert (await client.get("/page")).status_code == 200


async def scrape(serve: Serve) -> dict[str, float]:
    """The node's visitors' requests and its processes, as ``/metrics`` says."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{serve.admin_port}", headers={
            "authorization": f"Bearer {TOKEN}"}, timeout=DEADLINE) as admin:
        text = (await admin.get("/metrics")).text
    samples = [sample for family in text_string_to_metric_families(text)
               for sample in family.samples]
    return {"requests": sum(sample.value for sample in samples
                            if sample.name == "stoker_requests_total"
                            and sample.labels["source"] == "visitor"),
            **{f"processes {sample.labels['node']}": sample.value for sample in samples
               if sample.name == "stoker_node_processes"}}


def second_process(serve: Serve) -> int:
    """The pid of ``serve``'s process 2 (it does not serve the admin API)."""
    return max(int(line.rsplit("pid ", 1)[1].split(",")[0]) for line in serve.lines()
               if ": proxying " in line and "process 2 of 2" in line)


async def test_each_node_counts_its_own_processes_and_never_falls(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/page", headers=TAGGED, body=b"page")
    port = free_port()
    with pg_schema(migrated=False) as schema, own_redis(port, tmp_path):
        await listening(port)
        shared = (f'database_url = "{schema_url(schema)}"\n'
                  f'l2_url = "redis://127.0.0.1:{port}/0"\n')
        async with node(origin, tmp_path / "a", "a", shared) as a, \
                node(origin, tmp_path / "b", "b", shared) as b:
            await eventually_two(a)
            await eventually_two(b)
            await asyncio.sleep(0.5)  # every process listening
            await requests(a, 20)
            await requests(b, 10)
            await asyncio.sleep(HEARTBEAT + 0.5)  # each has told the bus its figures
            first = (await scrape(a), await scrape(b))
            os.kill(second_process(a), signal.SIGKILL)  # the supervisor starts it again
            for _ in range(int(DEADLINE / 0.05)):
                if len(serving_pids(a)) == 3:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(HEARTBEAT + 1.0)  # the new one has told its (empty) figures
            after = await scrape(a)
            await requests(a, 5)
            await asyncio.sleep(HEARTBEAT + 0.5)
            later = await scrape(a)
    assert first == ({"requests": 20, "processes a": 2}, {"requests": 10, "processes b": 2})
    assert after == {"requests": 20, "processes a": 2}  # the killed one's requests kept
    assert later == {"requests": 25, "processes a": 2}
