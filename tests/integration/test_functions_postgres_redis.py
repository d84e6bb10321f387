"""``@cached`` across nodes: two processes with data_dirs of their own sharing a Redis L2
and a PostgreSQL database (the default runtime configured by ``STOKER_L2_URL`` and
``STOKER_DATABASE_URL``): concurrent misses make one call (fetch leases in PostgreSQL),
and a later node reads the result from Redis."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from tests.integration.test_functions import results, run
from tests.job_backends import pg_schema, schema_url

REDIS_URL = "redis://127.0.0.1:6379/8"  # a database of this module's own


@pytest.mark.parametrize("mode", ["async", "plain"])
def test_two_nodes_make_one_call_and_share_its_result(tmp_path: Path, mode: str) -> None:
    redis.Redis.from_url(REDIS_URL).flushdb()
    log = tmp_path / "calls.log"
    nodes = [tmp_path / name for name in ("a", "b", "c")]
    for node in nodes:
        node.mkdir()
    with pg_schema(migrated=False) as schema:
        env = {"STOKER_L2_URL": REDIS_URL, "STOKER_DATABASE_URL": schema_url(schema)}
        start = f"{time.time() + 4:.3f}"
        first = results([run(node, mode, start, str(log), env=env) for node in nodes[:2]])
        assert len(log.read_text().split()) == 1 and first[0] == first[1]
        [later] = results([run(nodes[2], mode, "0", str(log), env=env)])
        assert later == first[0] and len(log.read_text().split()) == 1
