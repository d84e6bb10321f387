"""Redis stopped for a while under requests: the log says so in a bounded number of lines
(when it starts, every ``SAY_EVERY`` seconds with a count, when it ends), each naming the
cause and when it began, never a traceback per request or per retry."""

from __future__ import annotations

import asyncio
import itertools
import logging
from pathlib import Path

import httpx
import pytest
from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.serve_process import DEADLINE, Serve
from tests.integration.test_cli_status import status_cli, table_row
from tests.integration.test_purge_relay import member
from tests.integration.test_redis_down import listening, own_redis
from tests.job_backends import pg_schema, schema_url

from stoker.purge.scope import PurgeScope

TAGGED = [("cache-control", "max-age=600"), ("cache-tag", "t")]
PATHS = [f"/p/{n}" for n in range(50)]
DOWN_FOR = 8.0
"""Seconds Redis is down while requests keep coming."""
MOST_LINES = 25
"""Lines the outage may take in all (today's tiers, the queue, the notifier, the bus:
each two or three, whatever the number of requests and retries)."""


async def load(port: int, seconds: float) -> int:
    """Requests for :data:`PATHS`, in turn, for ``seconds``; how many were answered 200."""
    loop = asyncio.get_running_loop()
    end, answered = loop.time() + seconds, 0
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                 timeout=DEADLINE) as client:
        for path in itertools.cycle(PATHS):
            if loop.time() > end:
                return answered
            response = await client.get(path)
            assert response.status_code == 200, (response.status_code, response.text[:200])
            answered += 1


async def test_redis_down_under_requests_logs_a_bounded_number_of_lines(
        origin: Origin, tmp_path: Path) -> None:
    for path in PATHS:
        origin.app.set(path, headers=TAGGED, body=path.encode())
    port = free_port()
    with pg_schema(migrated=False) as schema:
        serve = Serve(origin, tmp_path, "--processes", "1")
        serve.config.write_text(  # no memory tier: every request reads Redis
            f'warm_on_start = "never"\nl1_max_bytes = "0"\nl2_write_timeout = 1\n'
            f'l2_url = "redis://127.0.0.1:{port}/0"\ndatabase_url = "{schema_url(schema)}"\n')
        with own_redis(port, tmp_path) as redis:
            await listening(port)
            async with serve:
                await load(serve.port, 1.0)
                before = len(serve.lines())
                redis.terminate()
                redis.wait(10)
                during = await load(serve.port, DOWN_FOR)
                with own_redis(port, tmp_path):
                    await listening(port)
                    after = await load(serve.port, 4.0)
                    lines = serve.lines()[before:]
                    _, table, _ = await status_cli(
                        "--once", "--admin-url", f"http://127.0.0.1:{serve.admin_port}")
    assert during >= 10 and after >= 10, (during, after)  # served all along
    assert not [line for line in lines if line.startswith("Traceback")], "\n".join(lines)
    assert len(lines) <= MOST_LINES, "\n".join(lines)
    read = [line for line in lines if "L2 cache read" in line]
    assert len(read) == 2, read  # said when it began and when it ended
    assert "Connection refused" in read[0] and "serving it as a miss" in read[0]
    assert "works again after" in read[1] and " UTC)" in read[1]
    assert table_row(table, "L2 Redis")  # stoker status names the tier


async def test_a_relayed_purge_the_cache_tier_refuses_is_said_once_with_its_cause(
        origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    async with member(origin, tmp_path, "a", purge_ack_timeout=1) as (a, _), \
            member(origin, tmp_path, "b") as (b, _):

        async def refused(*_: object) -> None:
            try:
                raise ConnectionRefusedError(111, "Connection refused")
            except OSError as error:
                raise ConnectionError("Error 111 connecting to 127.0.0.1:6390") from error

        with caplog.at_level(logging.INFO, logger="stoker.purge"):
            monkeypatch.setattr(b.store, "purge", refused)
            result = await a.purger.purge(PurgeScope(tags=("t",)))
            await asyncio.sleep(1.0)  # b tries again every poll (POLL: 20 ms)
            monkeypatch.undo()
            await asyncio.sleep(0.5)
    said = [record.getMessage() for record in caplog.records if record.name == "stoker.purge"
            and "following the purge bus" in record.getMessage()]
    assert result.unconfirmed == ("b",)
    assert len(said) == 2, said  # when it began, when it ended: not a line per try
    assert said[0].startswith("following the purge bus failed (purge ")
    assert " of a read from the bus, not applied to the cache tiers here: ConnectionError: " \
        "Error 111 connecting to 127.0.0.1:6390 (cause: ConnectionRefusedError: [Errno " \
        "111] Connection refused)); trying again every " in said[0]
    assert said[1].startswith("following the purge bus works again after ")
    assert " UTC)" in said[1]
