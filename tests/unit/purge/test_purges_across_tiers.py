"""Purges across both tiers: once a purge has returned, nothing it covers is read fresh.

The property test runs random stores, fetches racing purges (the fetcher's check:
the list's sequence noted before the origin request, what lands screened against the
marks since), L1 evictions (so reads go to L2), reads and hard and soft purges of URLs,
prefixes, tags and everything, some left running in the background while the rest goes
on, through a :class:`TieredStore` of a :class:`MemoryStore` and SQLite.  Each stored
version is judged by an oracle of its own, not by the marks' matching: a read may return
a version only if no purge that returned since that version's fetch began covers it
hard, and only stale from the purge's time if one covers it soft.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.l2_queue import L2WriteTimeout
from stoker.cache.memory import MemoryStore
from stoker.cache.tiered import TieredStore
from stoker.clock import FakeClock
from stoker.purge.list import PurgeList

NAMES = ("a/1", "a/2", "b/1")
TAGS = ("t0", "t1")
PREFIXES = ("https://example.com/a/", "https://example.com/b/")


def url(name: str) -> str:
    return f"https://example.com/{name}"


@dataclass(frozen=True)
class Purge:
    """A purge as the oracle sees it."""

    kind: str  # "url", "prefix", "tag" or "all"
    target: str
    soft: bool
    seq: int = 0
    now: float = 0.0

    def covers(self, entry: CacheEntry) -> bool:
        match self.kind:
            case "url":
                return entry.url == url(self.target)
            case "prefix":
                return entry.url.startswith(self.target)
            case "tag":
                return self.target in entry.tags
        return True


PURGES = st.one_of(
    st.builds(Purge, st.just("url"), st.sampled_from(NAMES), st.booleans()),
    st.builds(Purge, st.just("prefix"), st.sampled_from(PREFIXES), st.booleans()),
    st.builds(Purge, st.just("tag"), st.sampled_from(TAGS), st.booleans()),
    st.builds(Purge, st.just("all"), st.just(""), st.booleans()),
)
OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMES), st.sets(st.sampled_from(TAGS))),
    st.tuples(st.just("fetch"), st.sampled_from(NAMES), st.sets(st.sampled_from(TAGS))),
    st.tuples(st.just("land")),
    st.tuples(st.just("purge"), PURGES, st.booleans()),
    st.tuples(st.just("evict"), st.sampled_from(NAMES)),
    st.tuples(st.just("get"), st.sampled_from(NAMES)),
    st.tuples(st.just("read_now"), st.sampled_from(NAMES)),
    st.tuples(st.just("step"), st.integers(1, 5)),
    st.tuples(st.just("tick"), st.integers(1, 5)),
    st.tuples(st.just("flush")),
), max_size=40)


class Run:
    """One interleaving against real tiers, checked read by read."""

    def __init__(self, tiered: TieredStore, l1: MemoryStore, clock: FakeClock) -> None:
        self.tiered, self.l1, self.clock = tiered, l1, clock
        self.purges: PurgeList = tiered.purges
        self.since: dict[int, int] = {}  # version -> the list's seq its fetch began at
        self.returned: list[Purge] = []
        self.running: list[tuple[Purge, asyncio.Task[object]]] = []
        self.fetches: list[tuple[CacheEntry, int]] = []
        self.version = 0

    def entry(self, name: str, tags: set[str]) -> CacheEntry:
        self.version += 1
        return make_entry(url(name), now=self.clock.now(), tags=tuple(sorted(tags)),
                          status=200 + self.version)

    async def apply(self, operation: tuple) -> None:
        match operation:
            case ("put", name, tags):
                entry = self.entry(name, tags)
                self.since[entry.status] = self.purges.seq
                await self.tiered.put(entry)
            case ("fetch", name, tags):
                self.fetches.append((self.entry(name, tags), self.purges.seq))
            case ("land",) if self.fetches:
                await self.land(*self.fetches.pop(0))
            case ("purge", purge, background):
                await self.purge(purge, background)
            case ("evict", name):
                self.l1.delete_primary_nowait([make_entry(url(name)).primary_key])
            case ("get", name):
                self.check(await self.tiered.get(make_entry(url(name)).primary_key))
            case ("read_now", name):
                self.check(self.tiered.read_now(make_entry(url(name)).primary_key) or [])
            case ("step", count):
                for _ in range(count):
                    await asyncio.sleep(0)
            case ("tick", seconds):
                self.clock.advance(seconds)
            case ("flush",):
                await self.tiered.flush()
        self.note_returned()

    async def land(self, entry: CacheEntry, since: int) -> None:
        """What the fetcher does with a response: screened by the marks since ``since``."""
        verdict = self.purges.check(since, entry)
        if verdict is not None and verdict.hard:
            return
        if verdict is not None:
            entry = entry.softened(verdict.stale_from)
        self.since[entry.status] = since
        await self.tiered.put(entry)

    async def purge(self, purge: Purge, background: bool) -> None:
        """Record and apply ``purge`` as the purger does (awaited, or left running)."""
        key = make_entry(url(purge.target)).primary_key
        seq = self.purges.record(
            soft=purge.soft, now=self.clock.now(),
            keys=[key] if purge.kind == "url" else [],
            prefixes=[purge.target] if purge.kind == "prefix" else [],
            tags=[purge.target] if purge.kind == "tag" else [], everything=purge.kind == "all")
        noted = Purge(purge.kind, purge.target, purge.soft, seq, self.clock.now())
        task = asyncio.create_task(self.tiered.purge(self.purges.latest))
        self.running.append((noted, task))
        if not background:
            await task

    def note_returned(self) -> None:
        """Purges whose call returned join the oracle's; one that answered
        :class:`L2WriteTimeout` (the fake clock ticked past ``l2_write_timeout`` while
        it ran) promised nothing yet, and is not counted."""
        self.returned.extend(purge for purge, task in self.running
                             if task.done() and not _timed_out(task))
        self.running = [(purge, task) for purge, task in self.running if not task.done()]

    def check(self, entries: list[CacheEntry]) -> None:
        for entry in entries:
            for purge in self.returned:
                if purge.seq <= self.since[entry.status] or not purge.covers(entry):
                    continue
                assert purge.soft, f"{entry.url} v{entry.status} read after {purge}"
                assert entry.fresh_until <= purge.now, f"{entry.url} fresh after {purge}"

    async def finish(self) -> None:
        await asyncio.gather(*(task for _, task in self.running), return_exceptions=True)
        for _, task in self.running:
            if not _timed_out(task):
                task.result()  # any other failure fails the test
        self.note_returned()
        for name in NAMES:
            self.l1.delete_primary_nowait([make_entry(url(name)).primary_key])
            self.check(await self.tiered.get(make_entry(url(name)).primary_key))


def _timed_out(task: asyncio.Task[object]) -> bool:
    return not task.cancelled() and isinstance(task.exception(), L2WriteTimeout)


async def run(operations: list[tuple]) -> None:
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as folder:
        l2 = await SqliteCacheStore.open(Path(folder) / "cache.sqlite3",
                                         BodyStore(Path(folder) / "bodies"), clock)
        l1 = MemoryStore(1_000_000, clock)
        tiered = TieredStore(l1, l2, clock, step_budget=0, settle_budget=0, settle_pause=0)
        try:
            checked = Run(tiered, l1, clock)
            for operation in operations:
                await checked.apply(operation)
            await checked.finish()
        finally:
            await tiered.close()


@settings(max_examples=150)
@given(OPERATIONS)
@example([("put", "a/1", {"t0"}), ("flush",), ("purge", Purge("tag", "t0", False), True),
          ("evict", "a/1"), ("step", 1), ("get", "a/1")])
@example([("purge", Purge("all", "", False), True), ("step", 1), ("tick", 5), ("tick", 5),
          ("put", "a/1", set())])
@example([("fetch", "a/1", {"t0"}), ("purge", Purge("prefix", PREFIXES[0], True), False),
          ("land",), ("get", "a/1"), ("evict", "a/1"), ("flush",), ("get", "a/1")])
def test_no_read_returns_what_a_returned_purge_covers(operations: list[tuple]) -> None:
    asyncio.run(run(operations))
