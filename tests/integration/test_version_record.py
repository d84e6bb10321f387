"""The cache version survives Redis (issue 35, item 1): ``stoker serve`` nodes on a
PostgreSQL schema and a redis-server of the test's own.  A purge of everything on one
node; Redis restarted empty; a node started then runs on the version the others serve
(the record is in PostgreSQL), so a purge answered 200 with every member confirmed
covers what it cached, and it never serves the purged page.  ``/readyz`` says whether a
node is on the record: a record lost is raised back (no node goes back), a record ahead
is adopted at once, a record that cannot be read makes the node not ready, naming why.

On a build that kept the version in Redis alone, the node started after the restart ran
on version 1 while the other ran on 2, and served the old page after the purge."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import httpx
from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.test_postgres_restart import Node, eventually, node
from tests.integration.test_redis_down import listening, own_redis
from tests.integration.warm_site import SITE
from tests.job_backends import PG_URL, pg_schema, schema_url

PAGE = "/p"
CACHED = [("cache-control", "public, max-age=600")]
ASKED = 6


async def version(admin: httpx.AsyncClient) -> str:
    """The cache version ``admin``'s node serves."""
    answer = await admin.get("/api/entry", params={"url": f"{SITE}{PAGE}"})
    return str(answer.json()["version"])


async def readiness(admin: httpx.AsyncClient) -> tuple[int, str]:
    """``/readyz``'s status and its ``version`` check."""
    answer = await admin.get("/readyz")
    return answer.status_code, answer.json()["checks"].get("version", "(no such check)")


async def record(schema: str, sql: str) -> str:
    """Run ``sql`` on ``schema`` (the test's hand on the record); the first value it
    returns, as text ("" for none)."""
    conn = await asyncpg.connect(PG_URL, server_settings={"search_path": schema})
    try:
        return str(await conn.fetchval(sql) or "")
    finally:
        await conn.close()


async def test_a_node_started_after_redis_restarted_empty_serves_the_recorded_version(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set(PAGE, headers=CACHED, body=b"old")
    port = free_port()
    with pg_schema(migrated=False) as schema:
        settings = {"database_url": schema_url(schema), "processes": 1,
                    "l2_url": f"redis://127.0.0.1:{port}/0"}
        with own_redis(port, tmp_path) as redis:
            await listening(port)
            async with node(origin.url, tmp_path / "a", **settings) as a:
                assert (await a.proxy.get(PAGE)).text == "old"
                everything = (await a.admin.post("/api/purge", json={"all": True})).json()
                redis.terminate()
                redis.wait(10)
                with own_redis(port, tmp_path):  # empty: no save, no append-only file
                    await listening(port)
                    async with node(origin.url, tmp_path / "c", **settings) as c:
                        started_on = await version(c.admin)
                        assert (await c.proxy.get(PAGE)).text == "old"  # cached on C
                        origin.app.set(PAGE, headers=CACHED, body=b"new")
                        purge = (await a.admin.post("/api/purge", json={
                            "urls": [f"{SITE}{PAGE}"]})).json()
                        after = [(await n.proxy.get(PAGE)).text for _ in range(ASKED)
                                 for n in (c, a)]
                        assert everything["version"] == "2"
                        assert everything["unconfirmed"] == []
                        assert purge["unconfirmed"] == [] and purge["relayed"] is True
                        assert (started_on, after) == ("2", ["new"] * (2 * ASKED))
                        ready = [await readiness(n.admin) for n in (a, c)]
                        lost = await lost_record_is_raised_back(schema, a.admin, c.admin)
                        ahead = await record_ahead_is_adopted(schema, a, c)
                        unreadable = await unreadable_record_is_not_ready(schema, c.admin)
    assert ready == [(200, "ok"), (200, "ok")]
    assert lost == ("2", ["2", "2"])
    assert ahead == (["7", "7"], ["new", "new"])
    assert unreadable[0][0] == 503 and unreadable[0][1].startswith(
        "cannot read or keep the cache version's record: UndefinedTableError")
    assert unreadable[1] == (200, "ok")


async def lost_record_is_raised_back(schema: str, *admins: httpx.AsyncClient
                                     ) -> tuple[str, list[str]]:
    """The record deleted (lost, as a restore from before the first purge would): the
    nodes raise it back to their version and stay on it; the record, their versions."""
    await record(schema, "DELETE FROM cache_version")
    raised = await eventually(lambda: record(schema, "SELECT version FROM cache_version"),
                              "the record raised back")
    return raised, [await version(admin) for admin in admins]


async def record_ahead_is_adopted(schema: str, *nodes: Node) -> tuple[list[str], list[str]]:
    """The record bumped behind the nodes' backs (a purge of everything they never heard
    of): each adopts it within a check, and serves nothing cached under the old one;
    their versions and what they serve then."""
    await record(schema, "UPDATE cache_version SET version = 7, reclaimed = false")
    admins = [n.admin for n in nodes]

    async def adopted() -> list[str] | None:
        found = [await version(admin) for admin in admins]
        return found if found == ["7"] * len(found) else None

    return await eventually(adopted, "the record's version adopted"), [
        (await n.proxy.get(PAGE)).text for n in nodes]


async def unreadable_record_is_not_ready(schema: str, admin: httpx.AsyncClient
                                         ) -> tuple[tuple[int, str], tuple[int, str]]:
    """The record's table out of reach: ``/readyz`` 503 naming why; back: 200."""
    await record(schema, "ALTER TABLE cache_version RENAME TO cache_version_away")
    gone = await readiness(admin)
    await record(schema, "ALTER TABLE cache_version_away RENAME TO cache_version")
    return gone, await readiness(admin)
