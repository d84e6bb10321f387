"""``stoker.backends.open``: every port a serving process uses, from the settings alone.

On SQLite (a ``data_dir``) and on PostgreSQL with Redis (``database_url`` and
``l2_url``, the services the tests run), every port opens and works; the PostgreSQL
ports share one pool and the Redis ports one client; ``close`` closes everything once
(again: nothing); a backend setting it cannot use is refused naming it, with nothing
opened; a server that cannot be reached leaves nothing open."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.contract.test_cache_store import REDIS_URL
from tests.job_backends import pg_schema, schema_url

from stoker import backends
from stoker.app.stoker import Stoker
from stoker.backends.audit_backlog import KeptAudit
from stoker.backends.choice import choose
from stoker.backends.opening import POOL_SIZE
from stoker.backends.postgres.fetch_leases import PostgresFetchLeases
from stoker.backends.postgres.purge_bus import PostgresPurgeBus
from stoker.backends.postgres.version_store import PostgresVersionStore
from stoker.backends.redis.cache_store import RedisCacheStore
from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases
from stoker.backends.sqlite.purge_bus import SqlitePurgeBus
from stoker.cache.bodies import BodyStore
from stoker.cache.notifier import LocalNotifier
from stoker.cache.subscription import Subscription
from stoker.cache.version_file import INITIAL_VERSION, VersionFile
from stoker.clock import FakeClock, SystemClock
from stoker.config.settings import SettingsError, settings_from
from stoker.jobs.model import NewJob
from stoker.purge.mark import PurgeMark


def sqlite_threads() -> set[str]:
    """The threads SQLite connections run on (each named ``stoker-…``)."""
    return {thread.name for thread in threading.enumerate()
            if thread.name.startswith("stoker-")}


@pytest.fixture
def schema() -> Iterator[str]:
    with pg_schema(migrated=False) as made:
        yield made


async def opened(values: dict[str, Any], data_dir: Path) -> backends.Backends:
    settings = settings_from({"data_dir": str(data_dir), **values})
    return await backends.open(settings, SystemClock(), BodyStore(data_dir / "bodies"))


async def works(ports: backends.Backends) -> None:
    """Each port answers: the cache tier, the version, the audit log, the job queue, the
    bus, the leases and the notifier."""
    assert await ports.l2.get("nothing-here") == []
    assert (await ports.versions.load()).version == INITIAL_VERSION
    await ports.audit.record(actor="test", action="purge", target={"url": "/x"}, count=1,
                             outcome="ok")
    await ports.warm.queue.enqueue([NewJob("warm", {"kind": "visit"})])
    assert [row.count for row in await ports.warm.queue.counts()] == [1]
    mark = PurgeMark(seq=1, at=0.0, now=0.0, soft=False, keys=frozenset({"k"}))
    number = await ports.bus.publish("me", mark, None)
    assert [one.number for one in await ports.bus.since(0)] == [number]
    assert await ports.leases.take("key", "me", 10.0, 0.0)
    await ports.notifier.poke("published")


async def test_on_sqlite_every_port_opens_in_data_dir_and_closes_once(tmp_path: Path) -> None:
    threads = sqlite_threads()
    ports = await opened({}, tmp_path)
    assert ports.choice == choose(settings_from({}))
    assert ports.pool is None and ports.redis is None
    assert isinstance(ports.l2, SqliteCacheStore) and isinstance(ports.versions, VersionFile)
    assert isinstance(ports.audit, KeptAudit)
    assert isinstance(ports.bus, SqlitePurgeBus)
    assert isinstance(ports.leases, SqliteFetchLeases)
    assert isinstance(ports.notifier, LocalNotifier)
    await works(ports)
    assert {path.name for path in tmp_path.glob("*.db")} == {"cache.db", "stoker.db"}
    await ports.close()
    await ports.close()  # again: nothing
    assert sqlite_threads() == threads  # every SQLite thread stopped


async def test_on_postgres_and_redis_the_ports_share_one_pool_and_one_client(
        tmp_path: Path, schema: str) -> None:
    ports = await opened({"database_url": schema_url(schema), "l2_url": REDIS_URL}, tmp_path)
    pool, client = ports.pool, ports.redis
    try:
        assert pool is not None and client is not None
        assert pool.get_max_size() == POOL_SIZE
        assert isinstance(ports.l2, RedisCacheStore) and ports.l2._client is client
        assert isinstance(ports.notifier, Subscription)
        assert ports.notifier.channel._client is client  # type: ignore[attr-defined]
        assert isinstance(ports.versions, PostgresVersionStore) and ports.versions._pool is pool
        assert isinstance(ports.bus, PostgresPurgeBus) and ports.bus._pool is pool
        assert isinstance(ports.leases, PostgresFetchLeases) and ports.leases._pool is pool
        assert isinstance(ports.audit, KeptAudit) and ports.audit._store._pool is pool  # type: ignore[attr-defined]
        assert ports.warm.queue._db.pool is pool  # type: ignore[attr-defined]
        await works(ports)
        assert not list(tmp_path.glob("*.db"))  # nothing of theirs in data_dir
    finally:
        await ports.close()
    assert pool.is_closing()
    await ports.close()  # again: nothing


async def test_on_postgres_alone_the_tier_and_leases_stay_in_cache_db(
        tmp_path: Path, schema: str) -> None:
    ports = await opened({"database_url": schema_url(schema)}, tmp_path)
    try:
        assert ports.redis is None and ports.pool is not None
        assert isinstance(ports.l2, SqliteCacheStore)
        assert isinstance(ports.leases, SqliteFetchLeases)  # the processes of one machine
        assert isinstance(ports.bus, PostgresPurgeBus) and ports.bus._pool is ports.pool
        assert isinstance(ports.notifier, Subscription)  # auto: LISTEN/NOTIFY
        await works(ports)
    finally:
        await ports.close()


@pytest.mark.parametrize("url", ["mysql://stoker:s3cret@db/stoker", "stoker:s3cret@db/stoker"])
async def test_a_database_url_that_is_not_postgresql_is_refused_naming_the_setting(
        tmp_path: Path, url: str) -> None:
    with pytest.raises(SettingsError, match=r"^database_url: expected postgresql://") as error:
        await opened({"database_url": url}, tmp_path / "data")
    assert "s3cret" not in str(error.value)
    assert not list((tmp_path / "data").glob("*.db"))  # refused before anything opened
    with pytest.raises(SettingsError, match=r"^database_url: "):
        await Stoker.open(settings_from({"database_url": url, "data_dir": str(tmp_path),
                                         "origin": "http://127.0.0.1:9"}), clock=FakeClock())


async def test_an_unreachable_database_leaves_nothing_open(tmp_path: Path) -> None:
    threads = sqlite_threads()
    with pytest.raises(ConnectionError, match="cannot connect to PostgreSQL"):
        await opened({"database_url": "postgresql://stoker@127.0.0.1:1/x"}, tmp_path)
    assert sqlite_threads() == threads  # the cache tier opened first, closed again
