"""The purger's invalidation (RFC 9111 §4.4): an unsafe method's invalidation takes the
path every purge takes (the purge list's mark, the applier, the relay, the purge events),
relayed without waiting, without ``rewarm_also`` and without an audit record."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from tests.entries import make_entry

from stoker.app.stoker import Stoker
from stoker.backends.sqlite.cache_store import SqliteCacheStore
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.memory import MemoryStore
from stoker.cache.tiered import TieredStore
from stoker.cache.version_file import VersionFile
from stoker.clock import FakeClock
from stoker.config.settings import settings_from
from stoker.origin.context import RequestContext
from stoker.origin.port import Body, Headers, OriginResponse
from stoker.proxy.request import RequestInfo
from stoker.proxy.request_body import no_body
from stoker.purge.bus import Member, RelaySlot
from stoker.purge.events import PurgeEvents
from stoker.purge.list import PurgeList, PurgeMark
from stoker.purge.purger import Purger
from stoker.purge.scope import PurgeScope

A, B, GONE = ("https://example.com/a", "https://example.com/b", "https://example.com/gone")
ALSO = ("https://example.com/also",)
Event = tuple[PurgeScope, tuple[str, ...], tuple[str, ...]]


def key(url: str) -> str:
    return f"v1|{url}"  # as the request core's key function makes them


def entry(url: str, variant: str = "") -> CacheEntry:
    return make_entry(url, variant=variant, primary_key=key(url))


class Keys:
    """The request core's keys and cache version."""

    version = "v1"

    def key_for_url(self, url: str) -> str:
        return key(url)


class Relay:
    """A relay that records what it is told, and fails a purge that waits for it."""

    me = "here"

    def __init__(self) -> None:
        self.told: list[PurgeMark] = []

    async def spread(self, mark: PurgeMark, version: str | None) -> tuple[str, ...]:
        raise AssertionError("an invalidation does not wait for the others")

    def tell(self, mark: PurgeMark) -> None:
        self.told.append(mark)

    async def members(self) -> Sequence[Member]:
        return ()


def heard(events: PurgeEvents) -> list[Event]:
    seen: list[Event] = []

    async def record(scope: PurgeScope, keys: Sequence[str], urls: Sequence[str]) -> None:
        seen.append((scope, tuple(keys), tuple(urls)))

    events.subscribe(record)
    return seen


@pytest.fixture
def relays() -> RelaySlot:
    return RelaySlot()


@pytest.fixture
async def purger(tmp_path: Path, relays: RelaySlot) -> AsyncIterator[Purger]:
    clock = FakeClock()
    purges = PurgeList(clock)
    l2 = await SqliteCacheStore.open(tmp_path / "cache.sqlite3", BodyStore(tmp_path / "b"),
                                     clock)
    store = TieredStore(MemoryStore(1_000_000, clock, purges), l2, clock, step_budget=0,
                        settle_budget=0, settle_pause=0)
    purger = Purger(store, purges, PurgeEvents(), clock, VersionFile(tmp_path), Keys(),
                    also=lambda: ALSO, relays=relays)  # rewarm_also configured
    for one in (entry(A, "en"), entry(A, "de"), entry(B)):
        await store.put(one)
    await store.flush()
    try:
        yield purger
    finally:
        await store.close()


async def test_an_invalidation_is_a_hard_mark_carried_out_in_both_tiers(
        purger: Purger) -> None:
    store = purger.store
    result = await purger.invalidate([key(A), key(GONE)])
    mark = purger.purges.latest
    assert (mark.soft, mark.keys, mark.everything) == (False, {key(A), key(GONE)}, False)
    assert store.get_l1(key(A)) is None  # in force at once
    await store.flush()
    assert await store.get_l2(key(A)) == []
    assert len(await store.get(key(B))) == 1  # what it did not name stays
    assert (result.purged, result.keys, result.urls) == (2, (key(A),), (A,))
    assert not result.scope.soft and not result.l2_pending


async def test_a_fetch_that_began_before_an_invalidation_does_not_store_the_old_copy(
        purger: Purger) -> None:
    began = purger.purges.seq
    await purger.invalidate([key(A)])
    verdict = purger.purges.check(began, entry(A))
    assert verdict is not None and verdict.hard


async def test_an_invalidation_is_published_to_the_purge_events_without_rewarm_also(
        purger: Purger) -> None:
    seen = heard(purger.events)
    await purger.invalidate([key(A), key(GONE)])
    [(scope, keys, urls)] = seen
    assert scope == PurgeScope(urls=(A, GONE))  # hard, the URLs named; no rewarm_also
    assert (keys, urls) == ((key(A),), (A,))  # the warmer re-warms what was cached


async def test_an_invalidation_is_told_to_the_relay_without_waiting(
        purger: Purger, relays: RelaySlot) -> None:
    relay = Relay()
    relays.hold(relay)
    result = await purger.invalidate([key(A)])
    assert relay.told == [purger.purges.latest]
    assert result.unconfirmed == ()


# -- through the request core ------------------------------------------------------


class Origin:
    """An origin whose pages are cacheable and whose POSTs answer 201 with a Location."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        self.asked.append((method, target))
        if method == "POST":
            fields = [(b"location", b"/made"), (b"content-length", b"0")]
            return OriginResponse(201, fields, _chunks(b""), _closed)
        fields = [(b"cache-control", b"max-age=600"), (b"content-length", b"2")]
        return OriginResponse(200, fields, _chunks(b"v1"), _closed)

    async def close(self) -> None:
        return None


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    if data:
        yield data


async def _closed() -> None:
    return None


def request(path: str, method: str = "GET") -> RequestInfo:
    return RequestInfo(method=method, scheme="http", host="site.test", path=path, query="",
                       headers=[(b"host", b"site.test")], client="203.0.113.9",
                       context=RequestContext(), declares_body=False)


async def served(stoker: Stoker, path: str, method: str = "GET") -> int:
    reply = await stoker.pipeline.serve(request(path, method), no_body())
    if not isinstance(reply.body, bytes):
        async for _ in reply.body:
            pass
    return reply.status


async def test_an_unsafe_request_invalidates_through_the_purger(tmp_path: Path) -> None:
    origin = Origin()
    stoker = await Stoker.open(settings_from({"origin": "http://origin.test",
                                              "data_dir": str(tmp_path)}),
                               clock=FakeClock(), origin=origin, evict_loop=False)
    relay = Relay()
    stoker.relays.hold(relay)
    seen = heard(stoker.events)
    try:
        for path in ("/post", "/made", "/other"):
            assert await served(stoker, path) == 200
        began = stoker.purger.purges.seq
        assert await served(stoker, "/post", "POST") == 201
        keys = [stoker.pipeline.keying.key_for_url(f"http://site.test{path}")
                for path in ("/post", "/made", "/other")]
        after = [stoker.store.get_l1(one) for one in keys]
        audited = await stoker.audit.recent()
    finally:
        await stoker.close()
    assert stoker.purger.purges.seq == began + 1
    mark = stoker.purger.purges.latest
    assert mark.keys == {keys[0], keys[1]} and not mark.soft  # the target and its Location
    assert relay.told == [mark]
    assert after[:2] == [None, None] and after[2] is not None
    [(scope, touched, urls)] = seen
    assert scope.urls == ("http://site.test/post", "http://site.test/made")
    assert (touched, urls) == (tuple(sorted(keys[:2])), tuple(sorted(scope.urls)))
    assert audited == []  # automatic, not an operator's change
