"""Every port a serving process uses, opened over one handle per server: :func:`open`.

:func:`open` opens what :mod:`stoker.backends.choice` chose: the persistent cache tier,
the cache version's store, the audit log, the warmer's stores (the job queue among
them), the purge bus, the fetch leases and the notifier, as one :class:`Backends`.
With ``database_url`` every PostgreSQL port shares ONE asyncpg pool
(:data:`POOL_SIZE`); with ``l2_url`` every Redis port shares ONE client (a notifier's
subscription is a connection of its own, as pub/sub needs).  SQLite ports keep their
own connection each (their files in ``data_dir``: each a writer thread of its own).
:func:`open_database` opens the job queue and the warmer's other stores alone (the
CLI's), without the cache tier.  Drivers are imported when a backend is opened, and one
not installed is refused first (:mod:`stoker.backends.drivers`).

Invariants: :func:`open` returns every port or raises with nothing left open;
:meth:`Backends.close` closes every port, then the pool and the client, in the reverse
of their opening, once (a port closed before by its user is closed again, which does
nothing; a failure is logged and the rest still close).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from stoker.backends.choice import Choice, choose
from stoker.backends.drivers import require_drivers
from stoker.backends.warm_stores import WarmStores, warm_stores_on_file, warm_stores_on_pool
from stoker.config.settings import Settings, require_data_dir
from stoker.warm.run import RevisitPolicy

if TYPE_CHECKING:
    import asyncpg
    import redis.asyncio as aioredis

    from stoker.backends.audit_backlog import AuditStore
    from stoker.cache.bodies import BodyStore
    from stoker.cache.fetch_leases import FetchLeases
    from stoker.cache.notifier import Notifier
    from stoker.cache.store import CacheStore
    from stoker.cache.version_file import VersionStore
    from stoker.clock import Clock
    from stoker.purge.audit import AuditTrail
    from stoker.purge.bus import PurgeBus

log = logging.getLogger("stoker")

WARM_POOL_SIZE: Final = 10
"""Connections the warmer's stores may take: the job queue's listener holds one while a
worker waits, the warm workers' transactions the others (asyncpg's default, the size of
the pool they had to themselves before they shared one)."""
PORTS_POOL_SIZE: Final = 4
"""Connections the audit log, the purge bus, the fetch leases, the cache version's record
and the notifier's pokes take (one statement or one short transaction each; the pool of
4 they shared before)."""
POOL_SIZE: Final = WARM_POOL_SIZE + PORTS_POOL_SIZE
"""The one pool's most connections: what the two pools held at most before."""


class Closing:
    """What was opened, to close in the reverse order, once."""

    def __init__(self) -> None:
        self._steps: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._done = False

    def add(self, what: str, close: Callable[[], Awaitable[None]]) -> None:
        self._steps.append((what, close))

    async def run(self) -> None:
        """Close each step, the last opened first, whatever one raises (logged)."""
        if self._done:
            return
        self._done = True
        for what, close in reversed(self._steps):
            try:
                await close()
            except Exception:
                log.exception("closing %s failed", what)


@dataclass(frozen=True)
class Backends:
    """Every port a serving process uses (see the module docstring)."""

    choice: Choice
    l2: CacheStore
    """The persistent cache tier: Redis, or ``data_dir/cache.db``."""
    versions: VersionStore
    """The cache version: its record in PostgreSQL, or ``data_dir/cache-version.json``."""
    audit: AuditTrail
    """The audit log, what its store refuses kept and written late."""
    warm: WarmStores
    """The job queue and the warmer's other stores, over one handle."""
    bus: PurgeBus
    leases: FetchLeases
    notifier: Notifier
    """Subscribed (:class:`~stoker.cache.notifier.LocalNotifier`: this process alone)."""
    pool: asyncpg.Pool | None = None
    """The asyncpg pool every PostgreSQL port shares (None: no ``database_url``)."""
    redis: aioredis.Redis | None = None
    """The Redis client every Redis port shares (None: no ``l2_url``)."""
    _closing: Closing = field(default_factory=Closing, repr=False, compare=False)

    async def close(self) -> None:
        """Close everything, in the reverse of its opening, once."""
        await self._closing.run()


async def open(settings: Settings, clock: Clock, bodies: BodyStore) -> Backends:
    """Open (and migrate) every port ``settings`` choose (:func:`~stoker.backends.choice.
    choose`); the cache tier keeps large bodies in ``bodies``.  Raises with nothing left
    open; a setting it cannot use, or whose driver is not installed, is a
    :class:`SettingsError` naming it."""
    choice = choose(settings)
    require_drivers(settings)
    closing = Closing()
    try:
        return await _open(settings, clock, bodies, choice, closing)
    except BaseException:
        await closing.run()
        raise


async def _open(settings: Settings, clock: Clock, bodies: BodyStore, choice: Choice,
                closing: Closing) -> Backends:
    from stoker.backends.audit_backlog import KeptAudit
    from stoker.cache.notifier import LocalNotifier

    if "sqlite" in (choice.database, choice.tier):
        require_data_dir(settings)
    redis = await _redis(settings, closing) if choice.tier == "redis" else None
    l2 = await _cache_tier(settings, clock, bodies, redis)
    closing.add("the cache tier", l2.close)
    pool = await _pool(settings, closing) if choice.database == "postgres" else None
    audit = KeptAudit(await _audit_store(settings, clock, pool), clock)
    closing.add("the audit log", audit.close)
    versions = await _versions(settings, l2, pool, redis)
    policy = RevisitPolicy(delay=settings.stopgap_delay)
    warm = await (warm_stores_on_pool(pool, clock, policy) if pool is not None
                  else warm_stores_on_file(settings.sqlite_path, clock, policy))
    closing.add("the warm stores", warm.aclose)
    bus = await _bus(settings, pool)
    closing.add("the purge bus", bus.close)
    leases = await _leases(settings, pool if choice.leases == "postgres" else None)
    closing.add("the fetch leases", leases.close)
    notifier: Notifier = LocalNotifier(clock)
    if choice.notifier == "redis":
        from stoker.backends.redis import notifier as redis_notifier

        assert settings.l2_url is not None and redis is not None  # the settings' check
        notifier = await redis_notifier.open_notifier(settings.l2_url, redis, clock)
    elif choice.notifier == "postgres":
        from stoker.backends.postgres import notifier as postgres_notifier

        assert settings.database_url is not None and pool is not None  # the settings' check
        notifier = await postgres_notifier.open_notifier(settings.database_url, pool, clock)
    closing.add("the notifier", notifier.close)
    return Backends(choice, l2, versions, audit, warm, bus, leases, notifier, pool, redis,
                    closing)


async def open_database(settings: Settings, clock: Clock) -> WarmStores:
    """The job queue and the warmer's other stores alone, on a handle of their own that
    their ``aclose`` closes (the CLI's: no cache tier, nothing else opened or made)."""
    policy = RevisitPolicy(delay=settings.stopgap_delay)
    require_drivers(settings)
    if choose(settings).database == "postgres":
        from stoker.backends.postgres.connection import create_pool

        assert settings.database_url is not None
        pool = await create_pool(settings.database_url, max_size=WARM_POOL_SIZE)
        try:
            return await warm_stores_on_pool(pool, clock, policy, owns=True)
        except BaseException:
            await pool.close()
            raise
    require_data_dir(settings)
    return await warm_stores_on_file(settings.sqlite_path, clock, policy)


async def _redis(settings: Settings, closing: Closing) -> aioredis.Redis:
    """The one client on ``l2_url``, answering."""
    import redis.asyncio as aioredis

    assert settings.l2_url is not None
    client = aioredis.Redis.from_url(settings.l2_url)
    closing.add("the Redis client", client.aclose)
    await client.ping()
    return client


async def _pool(settings: Settings, closing: Closing) -> asyncpg.Pool:
    """The one pool on ``database_url``."""
    from stoker.backends.postgres.connection import create_pool

    assert settings.database_url is not None
    pool = await create_pool(settings.database_url, min_size=1, max_size=POOL_SIZE)
    closing.add("the PostgreSQL pool", pool.close)
    return pool


async def _cache_tier(settings: Settings, clock: Clock, bodies: BodyStore,
                      redis: aioredis.Redis | None) -> CacheStore:
    """Redis (on the shared client) with ``l2_url``, else ``data_dir/cache.db``."""
    if redis is not None:
        from stoker.backends.redis.cache_store import RedisCacheStore

        return RedisCacheStore(redis, clock, max_object_bytes=settings.l2_max_object_bytes,
                               bodies=bodies)
    from stoker.backends.sqlite.cache_store import SqliteCacheStore

    return await SqliteCacheStore.open(settings.cache_path, bodies, clock,
                                       max_bytes=settings.l2_max_bytes,
                                       inline_reads=settings.l2_inline_reads)


async def _audit_store(settings: Settings, clock: Clock,
                       pool: asyncpg.Pool | None) -> AuditStore:
    """The audit log's store: on ``pool``, else in ``data_dir/stoker.db``."""
    if pool is not None:
        from stoker.backends.postgres.audit_store import PostgresAuditStore

        return await PostgresAuditStore.open(pool, clock)
    from stoker.backends.sqlite.audit_store import SqliteAuditStore

    return await SqliteAuditStore.open(settings.sqlite_path, clock)


async def _versions(settings: Settings, l2: CacheStore, pool: asyncpg.Pool | None,
                    redis: aioredis.Redis | None) -> VersionStore:
    """Where the cache version is kept: its record in PostgreSQL on ``pool`` (shared by
    every node), raised to where earlier releases kept it if that is newer (the Redis
    tier's key, or ``data_dir``: an upgrade keeps its version), else
    ``data_dir/cache-version.json``."""
    from stoker.cache.version_file import VersionFile, VersionState, newer

    if pool is None:
        return VersionFile(settings.data_dir)
    from stoker.backends.postgres.version_store import PostgresVersionStore

    record = await PostgresVersionStore.open(pool)
    if redis is not None:
        from stoker.backends.redis.cache_store import RedisCacheStore

        assert isinstance(l2, RedisCacheStore)
        earlier = await l2.earlier_version()
    else:
        earlier = await VersionFile(settings.data_dir).load()
    if newer(earlier.version, (await record.load()).version):
        await record.save(VersionState(earlier.version, reclaimed=False))
    return record


async def _bus(settings: Settings, pool: asyncpg.Pool | None) -> PurgeBus:
    """The purge bus: on ``pool`` (the nodes), else in ``cache.db`` (one machine's)."""
    if pool is not None:
        from stoker.backends.postgres.purge_bus import PostgresPurgeBus

        return await PostgresPurgeBus.open(pool)
    from stoker.backends.sqlite.purge_bus import SqlitePurgeBus

    return await SqlitePurgeBus.open(settings.cache_path)


async def _leases(settings: Settings, pool: asyncpg.Pool | None) -> FetchLeases:
    """The fetch leases: on ``pool`` (the nodes sharing a Redis tier), else in
    ``cache.db`` (the processes of one machine)."""
    if pool is not None:
        from stoker.backends.postgres.fetch_leases import PostgresFetchLeases

        return await PostgresFetchLeases.open(pool)
    from stoker.backends.sqlite.fetch_leases import SqliteFetchLeases

    return await SqliteFetchLeases.open(settings.cache_path)
