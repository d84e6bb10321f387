"""Two Stokers on one ``data_dir`` (the processes of ``--processes 2``, here in one test
process): a purge answers once the other has it in force, so it never serves the old
copy afterwards; what it does not confirm in time is named; misses of one key in both
make one origin request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.integration.conftest import Origin, drop_stoker_keys
from tests.integration.test_serve import get, read
from tests.job_backends import pg_schema, schema_url

from stoker.app.sharing import join_bus, share_cache
from stoker.app.stoker import Stoker
from stoker.backends.sqlite.purge_bus import SqlitePurgeBus
from stoker.cache.outcome import Kind
from stoker.clock import Clock
from stoker.config.settings import settings_from
from stoker.proxy.request_body import no_body
from stoker.purge.bus import NOT_RELAYED, Relayed
from stoker.purge.list import PurgeMark
from stoker.purge.relay import HEARTBEAT, LONE_POLL, PurgeRelay
from stoker.purge.scope import PurgeScope

TAGGED = [("cache-control", "max-age=600"), ("cache-tag", "post-1")]


@asynccontextmanager
async def member(origin: Origin, data_dir: Path, name: str, clock: Clock | None = None,
                 **settings: Any) -> AsyncIterator[tuple[Stoker, PurgeRelay]]:
    """One Stoker on ``data_dir`` (on ``clock``), on its bus as ``name``, following it."""
    stoker = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(data_dir),
                                              **{"processes": 2, **settings}}), clock=clock,
                               member=name)
    sharing = await share_cache(stoker, name)
    try:
        yield stoker, sharing.relay
    finally:
        await sharing.leave()
        await stoker.close()


async def served(stoker: Stoker, path: str) -> tuple[Kind, bytes]:
    reply = await stoker.pipeline.serve(get(path), no_body())
    body = await read(reply)
    return reply.outcome.kind, body


async def test_a_purge_answers_once_the_other_process_has_it_in_force(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    async with member(origin, tmp_path, "a") as (a, _), member(origin, tmp_path, "b") as (b, _):
        assert (await served(a, "/t"))[0] is Kind.MISS
        await a.store.flush()
        assert await served(b, "/t") == (Kind.HIT, b"v1")  # from the shared tier, now in B's L1
        origin.app.set("/t", headers=TAGGED, body=b"v2")
        result = await a.purger.purge(PurgeScope(tags=("post-1",)))
        after = await served(b, "/t")  # at once: no waiting for B's next poll
    assert result.unconfirmed == ()
    assert after == (Kind.MISS, b"v2")
    assert origin.app.count("/t") == 2


async def test_a_soft_purge_and_a_version_bump_reach_the_other_process(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=[*TAGGED, ("etag", '"1"')], body=b"v1")
    async with member(origin, tmp_path, "a") as (a, _), member(origin, tmp_path, "b") as (b, _):
        await served(a, "/t")
        await a.store.flush()
        await served(b, "/t")
        await a.purger.purge(PurgeScope(tags=("post-1",), soft=True))
        [stale] = b.store.get_l1(b.pipeline.keying.key_for_url("http://site.test/t")) or []
        assert stale.fresh_until <= b.clock.now()  # stale in B, kept for revalidation
        await a.purger.purge(PurgeScope(everything=True))
        assert b.pipeline.keying.version == a.pipeline.keying.version != "1"


async def test_an_unsafe_method_invalidates_the_other_process_too(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    async with member(origin, tmp_path, "a") as (a, _), member(origin, tmp_path, "b") as (b, rb):
        await served(a, "/t")
        await a.store.flush()
        await served(b, "/t")
        await read(await a.pipeline.serve(get("/t", method="POST"), no_body()))
        for _ in range(200):  # told without waiting: B takes it at its next poll
            await rb.catch_up()
            if b.store.get_l1(b.pipeline.keying.key_for_url("http://site.test/t")) is None:
                break
            await asyncio.sleep(0.01)
        assert (await served(b, "/t"))[0] is Kind.MISS


async def test_a_member_that_does_not_confirm_is_named_and_waited_for_no_longer(
        origin: Origin, tmp_path: Path) -> None:
    async with member(origin, tmp_path, "a", purge_ack_timeout=0.3) as (a, _):
        b = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(tmp_path)}))
        bus = await SqlitePurgeBus.open(b.settings.cache_path)
        silent = await join_bus(b, bus, "b")  # joined, never follows
        try:
            result = await a.purger.purge(PurgeScope(tags=("post-1",)))
            await silent.close()  # left: no longer waited for
            again = await a.purger.purge(PurgeScope(tags=("post-1",)))
        finally:
            await bus.close()
            await b.close()
    assert result.unconfirmed == ("b",)
    assert again.unconfirmed == ()


async def test_misses_in_both_processes_make_one_origin_request(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/slow", headers=TAGGED, body=b"v1", delay=0.3)
    async with member(origin, tmp_path, "a") as (a, _), member(origin, tmp_path, "b") as (b, _):
        answers = await asyncio.gather(*(served(stoker, "/slow")
                                         for stoker in (a, b) * 10))
        origin.app.set("/next", headers=TAGGED, body=b"next")
        first = await served(a, "/next")
        second = await served(b, "/next")  # at once: A's write may still be queued
    assert origin.app.count("/slow") == 1
    assert {body for _, body in answers} == {b"v1"}
    assert {kind for kind, _ in answers} == {Kind.MISS, Kind.COLLAPSED}
    assert first[0] is Kind.MISS and second[1] == b"next"
    assert second[0] in (Kind.HIT, Kind.COLLAPSED)  # from the shared tier, or A's flight
    assert origin.app.count("/next") == 1


async def test_nodes_on_one_database_purge_each_other_through_postgresql(
        origin: Origin, tmp_path: Path) -> None:
    """Two nodes, each with its own data_dir (its own cache tiers), on one database_url:
    the bus is in PostgreSQL, and a purge on one reaches the other before it answers."""
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with member(origin, tmp_path / "a", "a", processes=1, database_url=url) as (
                a, _), member(origin, tmp_path / "b", "b", processes=1,
                              database_url=url) as (b, _):
            # the bus is PostgreSQL's
            assert a.backends.pool is not None and b.backends.pool is not None
            await served(a, "/t")
            assert (await served(b, "/t"))[0] is Kind.MISS  # B's own tiers
            assert (await served(b, "/t"))[0] is Kind.HIT
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            result = await a.purger.purge(PurgeScope(tags=("post-1",)))
            after = await served(b, "/t")
    assert result.unconfirmed == ()
    assert after == (Kind.MISS, b"v2")


REDIS_DB_URL = "redis://127.0.0.1:6379/10"
"""The Redis database of the shared-tier tests: emptied of Stoker's keys before and after."""


async def test_nodes_sharing_redis_are_one_cache(origin: Origin, tmp_path: Path) -> None:
    """Two nodes with their own data_dir, one Redis tier (l2_url) and one database: B
    hits what A stored, misses over both make one origin request, a purge on A answers
    once B has it in force, and a purge of everything reaches a node started after it."""
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    origin.app.set("/slow", headers=TAGGED, body=b"slow", delay=0.3)
    await drop_stoker_keys(REDIS_DB_URL)
    with pg_schema(migrated=False) as schema:
        shared = {"processes": 1, "l2_url": REDIS_DB_URL,
                  "database_url": schema_url(schema)}
        try:
            async with member(origin, tmp_path / "a", "a", **shared) as (a, _), \
                    member(origin, tmp_path / "b", "b", **shared) as (b, _):
                await served(a, "/t")
                await a.store.flush()
                from_a = await served(b, "/t")
                herd = await asyncio.gather(*(served(node, "/slow") for node in (a, b) * 30))
                origin.app.set("/t", headers=TAGGED, body=b"v2")
                purged = await a.purger.purge(PurgeScope(tags=("post-1",)))
                after = await served(b, "/t")
                await a.purger.purge(PurgeScope(everything=True))
                version = a.pipeline.keying.version
            async with member(origin, tmp_path / "c", "c", **shared) as (c, _):
                late = c.pipeline.keying.version
        finally:
            await drop_stoker_keys(REDIS_DB_URL)
    assert from_a == (Kind.HIT, b"v1") and origin.app.count("/t") == 2
    assert origin.app.count("/slow") == 1 and {body for _, body in herd} == {b"slow"}
    assert purged.unconfirmed == () and after == (Kind.MISS, b"v2")
    assert late == version != "1"  # the version is Redis's, not a file of node c's


class Unreachable(SqlitePurgeBus):
    """A bus that, while ``down``, cannot be read (a fault: the database went away)."""

    down = False

    async def since(self, number: int) -> Sequence[Relayed]:
        if self.down:
            raise ConnectionError("injected: the bus is unreachable")
        return await super().since(number)


async def test_a_process_cut_off_from_the_bus_longer_than_node_timeout_forgets_l1(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    stoker = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(tmp_path),
                                              "node_timeout": 0.3}))
    bus = await Unreachable.open(stoker.settings.cache_path)
    relay = await join_bus(stoker, bus, "cut-off")
    stop = asyncio.Event()
    following = asyncio.create_task(relay.follow(stop))
    try:
        await served(stoker, "/t")
        key = stoker.pipeline.keying.key_for_url("http://site.test/t")
        bus.down = True
        await asyncio.sleep(0.15)
        kept = stoker.store.get_l1(key)  # within node_timeout: kept
        await asyncio.sleep(0.5)
        forgotten = stoker.store.get_l1(key)
        bus.down = False
        await asyncio.sleep(0.1)
        after = await served(stoker, "/t")  # from the persistent tier again
    finally:
        stop.set()
        await following
        await relay.close()
        await bus.close()
        await stoker.close()
    assert kept is not None and forgotten is None
    assert after == (Kind.HIT, b"v1")


class Refusing(SqlitePurgeBus):
    """A bus that, while ``down``, takes no purge (a fault: the database went away)."""

    down = False

    async def publish(self, sender: str, mark: PurgeMark, version: str | None) -> int:
        if self.down:
            raise ConnectionError("injected: the bus does not answer")
        return await super().publish(sender, mark, version)


@asynccontextmanager
async def following(stoker: Stoker, bus: SqlitePurgeBus, name: str) -> AsyncIterator[PurgeRelay]:
    """``stoker`` on ``bus`` as ``name``, following it (``bus`` closed after the relay)."""
    relay = await join_bus(stoker, bus, name)
    stop = asyncio.Event()
    task = asyncio.create_task(relay.follow(stop))
    try:
        yield relay
    finally:
        stop.set()
        await task
        await relay.close()
        await bus.close()


async def test_purges_the_bus_did_not_take_are_answered_kept_and_relayed_once_it_does(
        origin: Origin, tmp_path: Path) -> None:
    for path in ("/t", "/u"):
        origin.app.set(path, headers=TAGGED, body=b"v1")
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path), "processes": 2})
    a, b = await Stoker.open(settings), await Stoker.open(settings)
    refusing = await Refusing.open(settings.cache_path)
    try:
        async with following(a, refusing, "a") as relay_a, \
                following(b, await SqlitePurgeBus.open(settings.cache_path), "b"):
            for path in ("/t", "/u"):
                await served(a, path)
                await a.store.flush()
                await served(b, path)  # now in B's memory tier
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            origin.app.set("/u", headers=TAGGED, body=b"v2")
            refusing.down = True
            purged = await a.purger.purge(PurgeScope(urls=("http://site.test/t",)))
            also = await a.purger.purge(PurgeScope(urls=("http://site.test/u",), soft=True))
            kept = relay_a.kept()
            during = await served(b, "/t")  # B never heard of it: its copy stands
            refusing.down = False
            await asyncio.sleep(0.3)  # a's next looks at the bus publish what it kept
            after = [await served(b, path) for path in ("/t", "/u")]
            left = relay_a.kept()
    finally:
        await a.close()
        await b.close()
    assert purged.unconfirmed == also.unconfirmed == (NOT_RELAYED,)
    assert kept == 2 and left == 0
    assert during == (Kind.HIT, b"v1")
    assert after[0] == (Kind.MISS, b"v2")
    assert after[1] == (Kind.STALE_SWR, b"v1"), after  # soft on B too: stale, revalidated


class Unrecorded:
    """A version store that does not answer (a fault: PostgreSQL went away)."""

    async def bump(self, past: str) -> Any:
        raise ConnectionError("injected: the version's record does not answer")


async def test_a_purge_of_everything_without_its_version_record_purges_by_a_mark(
        origin: Origin, tmp_path: Path) -> None:
    """A hard purge of everything whose version cannot be bumped (the record does not
    answer) is a hard mark of everything: answered, in force here, relayed and applied on
    the other node; the version stays."""
    origin.app.set("/t", headers=TAGGED, body=b"v1")
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        async with member(origin, tmp_path / "a", "a", processes=1, database_url=url) as (
                a, _), member(origin, tmp_path / "b", "b", processes=1,
                              database_url=url) as (b, _):
            for node in (a, b):
                await served(node, "/t")
                assert (await served(node, "/t"))[0] is Kind.HIT
            origin.app.set("/t", headers=TAGGED, body=b"v2")
            a.purger._versions = Unrecorded()  # type: ignore[assignment]
            result = await a.purger.purge(PurgeScope(everything=True))
            after = [await served(node, "/t") for node in (a, b)]
    assert result.version == "1" and result.unconfirmed == () and result.purged >= 1
    assert after == [(Kind.MISS, b"v2")] * 2


class Counting(SqlitePurgeBus):
    """A bus that counts its reads of what was relayed."""

    reads = 0

    async def since(self, number: int) -> Sequence[Relayed]:
        self.reads += 1
        return await super().since(number)


async def test_a_member_alone_on_the_bus_reads_it_every_lone_poll(
        origin: Origin, tmp_path: Path) -> None:
    """Alone (an embedded worker, a single node): a read every ``LONE_POLL`` seconds, not
    every ``POLL``; once another member is seen (its next heartbeat), every ``POLL``."""
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path)})
    a, b = await Stoker.open(settings), await Stoker.open(settings)
    counting = await Counting.open(settings.cache_path)
    try:
        async with following(a, counting, "a"):
            await asyncio.sleep(LONE_POLL * 4)
            alone = counting.reads
            async with following(b, await SqlitePurgeBus.open(settings.cache_path), "b"):
                await asyncio.sleep(HEARTBEAT + LONE_POLL)  # a's heartbeat sees b
                counting.reads = 0
                await asyncio.sleep(LONE_POLL * 4)
                together = counting.reads
    finally:
        await a.close()
        await b.close()
    assert alone <= 6, "about one read every LONE_POLL seconds"
    assert together >= 3 * alone, "every POLL seconds once another member is on the bus"
