"""SqliteCacheStore: persistence, eviction, body-file ownership, orphan sweeps, inline reads."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.backends.sqlite import cache_store
from stoker.backends.sqlite.cache_store import ORPHAN_GRACE, SqliteCacheStore
from stoker.backends.sqlite.connection import connect_reader
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.store import EntryRef
from stoker.clock import FakeClock


async def file_entry(
    bodies: BodyStore, url: str, data: bytes = b"body", **fields: Any
) -> CacheEntry:
    spool = bodies.spool(threshold=0)
    await spool.write(data)
    _, name, size = await spool.finish()
    return make_entry(url, body=None, body_file=name, body_size=size, **fields)


def body_files(bodies: BodyStore) -> set[str]:
    return {path.name for path in bodies.directory.iterdir()}


@pytest.mark.parametrize("entry", [
    make_entry(tags=("post-1",), headers=((b"x", b"\x00\x01"),),
               encoded=(("br", b"\x00br"), ("gzip", b"\x1f\x8b"))),
    make_entry(tags=("post-1",), codings_due=True),
], ids=["encoded", "codings-due"])
async def test_entries_survive_a_restart(
    tmp_path: Path, bodies: BodyStore, clock: FakeClock, entry: CacheEntry
) -> None:
    path = tmp_path / "cache.sqlite3"
    first = await SqliteCacheStore.open(path, bodies, clock)
    await first.put(entry)
    await first.close()

    second = await SqliteCacheStore.open(path, bodies, clock)
    try:
        assert await second.get(entry.primary_key) == [entry]
        assert await second.refs_for_tags(["post-1"]) == [EntryRef(entry.primary_key, "")]
    finally:
        await second.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM schema_migrations WHERE component = 'cache'")
        assert rows.fetchall() == [(name,) for name in CACHE_MIGRATIONS]


CACHE_MIGRATIONS = ["0001_cache.sql", "0002_cache_entry_flags.sql", "0003_cache_live_index.sql",
                    "0004_cache_entry_encoded.sql", "0005_cache_entry_codings_due.sql",
                    "0006_cache_entry_record.sql", "0007_cache_url_covering.sql"]


async def test_a_ledger_written_under_the_old_file_names_is_up_to_date(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The files were renamed (``0002_entry_flags.sql`` became ``0002_cache_entry_flags.sql``
    when every component's migrations joined one package): the ledger is keyed by component
    and version, so a database migrated before opens without applying anything again."""
    path = tmp_path / "cache.sqlite3"
    store = await SqliteCacheStore.open(path, BodyStore(tmp_path / "bodies"), clock)
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_migrations SET name = 'old-' || name")
    store = await SqliteCacheStore.open(path, BodyStore(tmp_path / "bodies"), clock)
    await store.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM schema_migrations WHERE component = 'cache'")
        assert rows.fetchall() == [(f"old-{name}",) for name in CACHE_MIGRATIONS]


async def test_a_tag_lookup_reads_indexes_only(
    tmp_path: Path, sqlite_store: SqliteCacheStore, clock: FakeClock
) -> None:
    with sqlite3.connect(tmp_path / "cache.sqlite3") as conn:
        plan = conn.execute("EXPLAIN QUERY PLAN " + cache_store.SELECT_TAGGED,
                            ('["t", "u"]', clock.now())).fetchall()
    assert [row[3].split(" USING ")[1].split(" (")[0] for row in plan if " USING " in row[3]
            and not row[3].startswith("USE ")] == [
        "COVERING INDEX sqlite_autoindex_cache_tags_1", "COVERING INDEX cache_entries_live"]


@pytest.mark.parametrize(("sql", "args", "bounds"), [
    (cache_store.SELECT_URL_RANGE, ("https://a/", "https://a0", 0.0), "url>? AND url<?"),
    (cache_store.SELECT_URL_FROM, ("https://a/", 0.0), "url>?"),
])
async def test_a_prefix_lookup_reads_its_index_only(
    tmp_path: Path, sqlite_store: SqliteCacheStore, sql: str, args: tuple[object, ...],
    bounds: str,
) -> None:
    with sqlite3.connect(tmp_path / "cache.sqlite3") as conn:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, args)]
    assert [step for step in plan if " USING " in step] == [
        f"SEARCH cache_entries USING COVERING INDEX cache_entries_url ({bounds})"]


async def test_purge_lookups_and_the_count_are_answered_while_a_write_is_in_progress(
    sqlite_store: SqliteCacheStore,
) -> None:
    """They run on a thread of their own: a write holding the writer thread (inside its
    transaction) delays none of them, and they see what was committed before it."""
    entry = make_entry("https://example.com/a", tags=("t",))
    await sqlite_store.put(entry)
    release, writing = threading.Event(), threading.Event()

    def long_write(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM cache_entries")
        writing.set()
        release.wait(30)
        conn.execute("ROLLBACK")

    busy = asyncio.ensure_future(sqlite_store._db.run(long_write))
    try:
        await asyncio.to_thread(writing.wait, 30)
        found = await asyncio.wait_for(asyncio.gather(
            sqlite_store.refs_for_tags(["t"]),
            sqlite_store.refs_for_url_prefix("https://example.com/"),
            sqlite_store.stats()), 30)  # a guard against a hang, not a timing
        assert not busy.done()
    finally:
        release.set()
        await busy
    ref = [EntryRef(entry.primary_key, entry.variant)]
    assert found[:2] == [ref, ref]
    assert found[2]["entries"] == 1


async def test_use_before_start_is_a_clear_error(
    tmp_path: Path, bodies: BodyStore, clock: FakeClock
) -> None:
    store = SqliteCacheStore(tmp_path / "cache.sqlite3", bodies, clock)
    with pytest.raises(RuntimeError, match="before start"):
        await store.get("k")


async def test_replacing_an_entry_removes_its_old_body_file(
    sqlite_store: SqliteCacheStore, bodies: BodyStore
) -> None:
    old = await file_entry(bodies, "https://example.com/a", b"old")
    new = await file_entry(bodies, "https://example.com/a", b"new")
    assert old.body_file is not None and new.body_file is not None
    await sqlite_store.put(old)
    await sqlite_store.put(new)
    assert body_files(bodies) == {new.body_file}
    await sqlite_store.put(replace(new, status=203))  # same file name: kept
    assert body_files(bodies) == {new.body_file}


async def test_every_delete_removes_body_files(
    sqlite_store: SqliteCacheStore, bodies: BodyStore
) -> None:
    by_ref = await file_entry(bodies, "https://example.com/ref")
    by_key = await file_entry(bodies, "https://example.com/key")
    by_version = await file_entry(bodies, "https://example.com/old", version="v0")
    for entry in (by_ref, by_key, by_version):
        await sqlite_store.put(entry)
    assert await sqlite_store.delete([EntryRef(by_ref.primary_key, "")]) == 1
    assert await sqlite_store.delete_primary([by_key.primary_key]) == 1
    assert await sqlite_store.delete_except_version("v1") == 1
    assert body_files(bodies) == set()


async def test_evict_drops_expired_entries_and_their_files(
    sqlite_store: SqliteCacheStore, bodies: BodyStore, clock: FakeClock
) -> None:
    short = await file_entry(bodies, "https://example.com/short", keep=10.0)
    long = make_entry("https://example.com/long", keep=100.0)
    await sqlite_store.put(short)
    await sqlite_store.put(long)
    clock.advance(10.0)
    assert await sqlite_store.evict(clock.now()) == 1
    assert body_files(bodies) == set()
    assert (await sqlite_store.stats())["entries"] == 1
    assert await sqlite_store.evict(clock.now()) == 0


async def test_evict_enforces_max_bytes_oldest_first(
    tmp_path: Path, bodies: BodyStore, clock: FakeClock
) -> None:
    entries = [
        make_entry(f"https://example.com/{i}", body=b"x" * 1000, body_size=1000, stored_at=float(i))
        for i in (3, 1, 4, 2)
    ]
    store = await SqliteCacheStore.open(tmp_path / "c.sqlite3", bodies, clock, max_bytes=2500)
    try:
        for entry in entries:
            await store.put(entry)
        assert await store.evict(clock.now()) == 2
        remaining = [await store.get(entry.primary_key) for entry in entries]
        assert [bool(found) for found in remaining] == [True, False, True, False]
        assert (await store.stats())["bytes"] <= 2500
    finally:
        await store.close()


async def orphan(bodies: BodyStore) -> str:
    """A committed body file no row references (as a crash before the row insert leaves)."""
    spool = bodies.spool(threshold=0)
    await spool.write(b"orphan")
    _, name, _ = await spool.finish()
    assert name is not None
    return name


def age(bodies: BodyStore, name: str, changed_at: float) -> None:
    os.utime(bodies.path(name), (changed_at, changed_at))


async def test_start_sweeps_old_orphaned_body_files_and_keeps_referenced_ones(
    tmp_path: Path, bodies: BodyStore, clock: FakeClock
) -> None:
    path = tmp_path / "cache.sqlite3"
    first = await SqliteCacheStore.open(path, bodies, clock)
    entry = await file_entry(bodies, "https://example.com/big")
    await first.put(entry)
    await first.close()
    assert entry.body_file is not None
    old, young = await orphan(bodies), await orphan(bodies)
    temp = bodies.new_temp_path()
    temp.write_bytes(b"partial")
    long_ago = clock.now() - ORPHAN_GRACE - 1
    for name in (entry.body_file, old, temp.name):
        age(bodies, name, long_ago)
    age(bodies, young, clock.now() - ORPHAN_GRACE + 1)  # may still be on its way to a row

    second = await SqliteCacheStore.open(path, bodies, clock)
    try:
        assert body_files(bodies) == {entry.body_file, young}
        assert await second.get(entry.primary_key) == [entry]
    finally:
        await second.close()


async def test_evict_sweeps_orphans_once_the_grace_has_passed(
    sqlite_store: SqliteCacheStore, bodies: BodyStore, clock: FakeClock
) -> None:
    name = await orphan(bodies)
    age(bodies, name, clock.now())
    await sqlite_store.evict(clock.now())
    assert body_files(bodies) == {name}
    clock.advance(ORPHAN_GRACE + 1)
    await sqlite_store.evict(clock.now())
    assert body_files(bodies) == set()


async def test_url_prefix_with_the_highest_code_point(sqlite_store: SqliteCacheStore) -> None:
    top = chr(0x10FFFF)
    inside = make_entry(f"https://example.com/{top}{top}x")
    outside = make_entry("https://example.com0")
    await sqlite_store.put(inside)
    await sqlite_store.put(outside)
    refs = await sqlite_store.refs_for_url_prefix(f"https://example.com/{top}")
    assert refs == [EntryRef(inside.primary_key, "")]


@given(st.text(max_size=6), st.text(max_size=8))
def test_prefix_upper_bound_brackets_exactly_the_prefixed_strings(prefix: str, text: str) -> None:
    upper = cache_store._prefix_upper_bound(prefix)
    for candidate in (text, prefix + text):
        in_range = prefix <= candidate and (upper is None or candidate < upper)
        assert in_range == candidate.startswith(prefix)


async def test_batched_deletes_and_softens_match_any_key_exactly(
    sqlite_store: SqliteCacheStore, clock: FakeClock
) -> None:
    odd = ['q"uote\\back', "emoji-\U0001f600", "ctl-\x01\t", "é/ü?a=1&b=[2]"]
    entries = [make_entry(f"https://example.com/{name}", variant=name, now=clock.now())
               for name in odd]
    for entry in entries:
        await sqlite_store.put(entry)
    refs = [EntryRef(entry.primary_key, entry.variant) for entry in entries]
    decoy = EntryRef(entries[0].primary_key, "other")
    assert await sqlite_store.soften([*refs[:2], decoy], clock.now()) == 2
    assert await sqlite_store.delete([*refs[1:], decoy]) == 3
    [left] = await sqlite_store.get(entries[0].primary_key)
    assert left.fresh_until == clock.now() and left.variant == odd[0]


# -- inline reads (on the caller's thread, a read-only connection of their own) ----------


async def test_an_inline_read_sees_exactly_what_was_committed(
    tmp_path: Path, sqlite_store: SqliteCacheStore, bodies: BodyStore, clock: FakeClock
) -> None:
    entry = make_entry()
    await sqlite_store.put(entry)
    assert await sqlite_store.get(entry.primary_key) == [entry]
    newer = replace(entry, status=203)
    await sqlite_store.put(newer)
    assert await sqlite_store.get(entry.primary_key) == [newer]
    await sqlite_store.soften([EntryRef(entry.primary_key, "")], clock.now())
    [softened] = await sqlite_store.get(entry.primary_key)
    assert softened.fresh_until == clock.now()
    other = await SqliteCacheStore.open(tmp_path / "cache.sqlite3", bodies, clock)
    try:  # another process's writes are seen as soon as they commit
        await other.delete_primary([entry.primary_key])
        assert await sqlite_store.get(entry.primary_key) == []
        await other.put(entry)
        assert await sqlite_store.get(entry.primary_key) == [entry]
    finally:
        await other.close()
    await sqlite_store.delete([EntryRef(entry.primary_key, "")])
    assert await sqlite_store.get(entry.primary_key) == []


async def test_an_inline_read_never_sees_an_uncommitted_write_nor_waits_for_it(
    tmp_path: Path, sqlite_store: SqliteCacheStore
) -> None:
    entry = make_entry()
    await sqlite_store.put(entry)
    with sqlite3.connect(tmp_path / "cache.sqlite3", isolation_level=None, timeout=0) as writer:
        writer.execute("BEGIN IMMEDIATE")  # holds the write lock until the end
        writer.execute("DELETE FROM cache_entries")
        assert await sqlite_store.get(entry.primary_key) == [entry]
        writer.execute("COMMIT")
    await asyncio.sleep(0)  # seen from the next loop iteration (one snapshot per iteration)
    assert await sqlite_store.get(entry.primary_key) == []


async def test_the_inline_reads_of_one_loop_iteration_share_one_read_transaction(
    tmp_path: Path, sqlite_store: SqliteCacheStore
) -> None:
    entry = make_entry()
    await sqlite_store.put(entry)
    assert sqlite_store.read_now(entry.primary_key) == [entry]  # begins this iteration's
    with sqlite3.connect(tmp_path / "cache.sqlite3", isolation_level=None) as writer:
        writer.execute("DELETE FROM cache_entries")  # committed, unreported to the loop
    assert sqlite_store.read_now(entry.primary_key) == [entry]  # the same snapshot
    await asyncio.sleep(0)  # the transaction ends before the next iteration's reads
    assert sqlite_store.read_now(entry.primary_key) == []


def test_the_inline_reader_cannot_write(tmp_path: Path, sqlite_store: SqliteCacheStore) -> None:
    reader = connect_reader(tmp_path / "cache.sqlite3")
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.execute("DELETE FROM cache_entries")
    finally:
        reader.close()


@pytest.mark.parametrize("inline_reads", [True, False])
async def test_reads_return_what_was_written_and_fail_clearly_after_close(
    tmp_path: Path, bodies: BodyStore, clock: FakeClock, inline_reads: bool
) -> None:
    store = await SqliteCacheStore.open(tmp_path / "c.sqlite3", bodies, clock,
                                        inline_reads=inline_reads)
    entry = make_entry()
    try:
        await store.put(entry)
        assert await store.get(entry.primary_key) == [entry]
    finally:
        await store.close()
    with pytest.raises(RuntimeError, match="after close"):
        await store.get(entry.primary_key)


@pytest.mark.parametrize("count", [0, 1, cache_store.REF_SLICE - 1, cache_store.REF_SLICE,
                                   cache_store.REF_SLICE + 1, 2 * cache_store.REF_SLICE + 7])
def test_refs_made_in_slices_are_the_refs_in_their_order(count: int) -> None:
    keys = [f"v1|https://example.com/{index}" for index in reversed(range(count))]
    variants = [f"accept-encoding={index % 3}" for index in range(count)]
    assert cache_store.refs_letting_go(keys, variants) == [
        EntryRef(key, variant) for key, variant in zip(keys, variants, strict=True)]


def test_refs_from_misaligned_columns_are_an_error() -> None:
    with pytest.raises(ValueError, match="2 keys but 1 variants"):
        cache_store.refs_letting_go(["a", "b"], [""])
