"""A node whose Redis tier goes away keeps answering (from memory and the origin, no
cache-caused 5xx) and uses the tier again once it is back."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.test_purge_relay import TAGGED, member, served
from tests.job_backends import pg_schema, schema_url

from stoker.cache.outcome import Kind


@contextmanager
def own_redis(port: int, directory: Path, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    """A redis-server of this test's own on ``port`` (so stopping it stops nobody else's),
    started with ``flags`` too."""
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--dir", str(directory), *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


async def listening(port: int) -> None:
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.02)
            continue
        writer.close()
        return
    raise AssertionError(f"redis-server on {port} did not start")


async def test_redis_stopped_and_restarted_under_load(origin: Origin, tmp_path: Path) -> None:
    for path in ("/a", "/b"):
        origin.app.set(path, headers=TAGGED, body=path.encode())
    port = free_port()
    with pg_schema(migrated=False) as schema:
        shared = {"processes": 1, "l2_url": f"redis://127.0.0.1:{port}/0",
                  "l2_write_timeout": 2,
                  "database_url": schema_url(schema)}
        with own_redis(port, tmp_path) as redis:
            await listening(port)
            async with member(origin, tmp_path / "a", "a", **shared) as (a, _):
                await served(a, "/a")  # in memory, and in Redis
                redis.terminate()
                redis.wait(10)
                during = [await served(a, path) for path in ("/a", "/b", "/b", "/a")]
                with own_redis(port, tmp_path):
                    await listening(port)
                    await asyncio.sleep(1.5)  # the queued writes retried and written
                    await a.store.flush()
                    a.store.l1.clear_nowait()
                    back = await served(a, "/b")
    assert [kind for kind, _ in during] == [Kind.HIT, Kind.MISS, Kind.HIT, Kind.HIT]
    assert [body for _, body in during] == [b"/a", b"/b", b"/b", b"/a"]
    assert back == (Kind.HIT, b"/b")  # written to the restarted Redis once it answered
