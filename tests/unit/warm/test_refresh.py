"""Refresh ahead's loop: what a tick refreshes, how results are counted, when it retries."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.reads import STALE_COVER, ReadTracker, read_key
from stoker.clock import FakeClock
from stoker.warm.refresh import MAX_TICK, MIN_TICK, Refresher, next_tick, visit_headers
from stoker.warm.visits import VisitResult

AHEAD = 30.0
UA = b"stoker-warmer/test"
Header = tuple[bytes, bytes]


def page(path: str, at: float, fresh: float = 600.0) -> CacheEntry:
    return make_entry(f"https://example.com{path}", now=at, fresh=fresh, stale=fresh,
                      error=fresh, keep=fresh, variant="en" if path == "/en" else "",
                      vary=("accept-language",) if path == "/en" else ())


class Origin:
    """Refresh visits answered with a scripted outcome; a renewing one tells the tracker
    of the entry it stored, as the pipeline does."""

    def __init__(self, tracker: ReadTracker, clock: FakeClock) -> None:
        self.tracker = tracker
        self.clock = clock
        self.outcomes: dict[str, str] = {}
        self.visits: list[tuple[str, tuple[Header, ...]]] = []

    async def visit(self, url: str, headers: tuple[Header, ...]) -> VisitResult:
        self.visits.append((url, headers))
        outcome = self.outcomes.get(url, "not_modified")
        if outcome == "raise":
            raise OSError("gone")
        if outcome in ("warmed", "not_modified"):
            path = url.removeprefix("https://example.com")
            self.tracker.renewed(page(path, self.clock.now()))
        return VisitResult(url, 200 if outcome != "failed" else 502, outcome, 0.01)


def bench() -> tuple[ReadTracker, FakeClock, Origin, Refresher]:
    clock = FakeClock()
    tracker = ReadTracker(100, 3600.0, AHEAD)
    origin = Origin(tracker, clock)
    return tracker, clock, origin, Refresher(tracker, origin.visit, clock, user_agent=UA)


async def test_a_tick_refreshes_what_is_due_with_the_headers_of_its_variant() -> None:
    tracker, clock, origin, refresher = bench()
    tracker.read(page("/a", clock.now()), [], clock.now())
    tracker.read(page("/en", clock.now()), [(b"accept-language", b"en")], clock.now())
    assert await refresher.tick() == MAX_TICK  # 570 s away: wait at most a tick
    assert origin.visits == []
    clock.advance(570)
    assert await refresher.tick() == MIN_TICK
    assert sorted(origin.visits) == [
        ("https://example.com/a", ((b"user-agent", UA),)),
        ("https://example.com/en", ((b"user-agent", UA), (b"accept-language", b"en")))]
    assert tracker.refreshes == {"not_modified": 2}
    assert await refresher.tick() == MAX_TICK  # renewed: due again 600 s on
    assert len(origin.visits) == 2


async def test_each_result_is_counted_and_a_failed_refresh_retried_later() -> None:
    tracker, clock, origin, refresher = bench()
    for path in ("/new", "/same", "/down", "/broken"):
        tracker.read(page(path, clock.now()), [], clock.now())
    origin.outcomes = {"https://example.com/new": "warmed",
                       "https://example.com/down": "failed",
                       "https://example.com/broken": "raise"}
    clock.advance(570)
    await refresher.tick()
    assert tracker.refreshes == {"refreshed": 1, "not_modified": 1, "failed": 2}
    origin.visits.clear()
    retry = refresher.reads.due(clock.now(), limit=10).next_at
    assert retry == clock.now() + AHEAD  # the failed ones, a lead later
    clock.advance(AHEAD)
    await refresher.tick()
    assert sorted(url for url, _ in origin.visits) == [
        "https://example.com/broken", "https://example.com/down"]


async def test_reads_no_visitor_renewed_within_the_window_are_left() -> None:
    tracker, clock, origin, refresher = bench()
    tracker.read(page("/a", clock.now()), [], clock.now())
    for _ in range(7):  # seven lifetimes, no visitor: refreshed while read within the hour
        clock.advance(600)
        await refresher.tick()
    assert len(origin.visits) == 6  # at 600 s, 1200 s, ... 3600 s after the read
    assert tracker.get(read_key(page("/a", 0))) is None


async def test_run_ticks_until_stopped() -> None:
    tracker, clock, origin, refresher = bench()
    stop = asyncio.Event()
    tracker.read(page("/a", clock.now() - 600), [], clock.now())  # due now
    running = asyncio.create_task(refresher.run(stop))
    for _ in range(100):
        if origin.visits:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(running, 2)
    assert [url for url, _ in origin.visits] == ["https://example.com/a"]


@given(st.one_of(st.none(), st.floats(-1e6, 1e6)), st.floats(0, 1e6))
def test_the_next_tick_is_bounded(next_at: float | None, now: float) -> None:
    wait = next_tick(next_at, now)
    assert MIN_TICK <= wait <= MAX_TICK
    if next_at is not None and MIN_TICK <= next_at - now <= MAX_TICK:
        assert wait == pytest.approx(next_at - now)


def test_a_refresh_keeps_a_user_agent_its_variant_names() -> None:
    own = ((b"User-Agent", b"Mobile"), (b"accept-language", b"en"))
    assert visit_headers(own, UA) == own
    assert visit_headers((), UA) == ((b"user-agent", UA),)


async def test_while_a_run_fills_the_cache_covered_reads_wait_and_a_failing_check_refreshes_all(
        ) -> None:
    tracker, clock, origin, _ = bench()
    store_down = False

    async def filling() -> bool:
        if store_down:
            raise OSError("store down")
        return True

    refresher = Refresher(tracker, origin.visit, clock, user_agent=UA, filling=filling)
    now = clock.now()
    tracker.read(make_entry("https://example.com/c", now=now, fresh=600.0,
                            stale=600.0 + STALE_COVER, keep=1200.0), [], now)
    tracker.read(page("/a", now), [], now)
    clock.advance(570)
    await refresher.tick()
    assert [url for url, _ in origin.visits] == ["https://example.com/a"]
    store_down = True
    await refresher.tick()
    assert [url for url, _ in origin.visits] == ["https://example.com/a", "https://example.com/c"]
