"""Refresh ahead's read tracker: what visitors read, the bound, and which reads are due."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.reads import (
    MIN_LIFETIME,
    Read,
    ReadTracker,
    due,
    lead,
    read_key,
    vary_headers,
)

NOW = 1_700_000_000.0
WINDOW = 3600.0
AHEAD = 30.0


def page(path: str, *, fresh: float = 600.0, at: float = NOW, **fields: object) -> CacheEntry:
    return make_entry(f"https://example.com{path}", now=at, fresh=fresh,
                      stale=fresh, error=fresh, keep=fresh, **fields)


@pytest.mark.parametrize(("lifetime", "ahead", "expected"), [
    (600.0, 30.0, 30.0),   # a long lifetime: refresh_ahead before it ends
    (60.0, 30.0, 12.0),    # a short one: when 80 % of it has passed
    (4.0, 30.0, 0.8),
    (600.0, 5.0, 5.0),
])
def test_lead_is_refresh_ahead_or_a_share_of_a_short_lifetime(
        lifetime: float, ahead: float, expected: float) -> None:
    assert lead(lifetime, ahead) == pytest.approx(expected)


def test_a_read_counts_requests_and_keeps_the_latest_freshness() -> None:
    tracker = ReadTracker(10, WINDOW)
    tracker.read(page("/a"), [], NOW)
    tracker.read(page("/a", fresh=900.0), [], NOW + 5)
    tracker.read(page("/a", fresh=100.0), [], NOW + 7)  # an older copy does not lower it
    read = tracker.get(read_key(page("/a")))
    assert read is not None
    assert (read.count, read.last_read, read.fresh_until) == (3, NOW + 7, NOW + 900.0)


def test_each_variant_is_a_read_of_its_own_with_the_headers_its_vary_names() -> None:
    tracker = ReadTracker(10, WINDOW)
    french = page("/a", variant="fr", vary=("accept-language",))
    headers = [(b"accept-language", b"fr"), (b"user-agent", b"x"), (b"Accept-Language", b"de")]
    tracker.read(french, headers, NOW)
    tracker.read(page("/a"), headers, NOW)
    assert len(tracker) == 2
    kept = tracker.get(read_key(french))
    assert kept is not None and kept.url == "https://example.com/a"
    assert kept.headers == ((b"accept-language", b"fr"), (b"Accept-Language", b"de"))
    plain = tracker.get(read_key(page("/a")))
    assert plain is not None and plain.headers == ()


@pytest.mark.parametrize("vary", [("cookie",), ("Authorization",), ("*",),
                                  ("accept-language", "Cookie")])
def test_entries_varying_on_credentials_are_not_tracked(vary: tuple[str, ...]) -> None:
    tracker = ReadTracker(10, WINDOW)
    tracker.read(page("/a", variant="x", vary=vary), [(b"cookie", b"s=1")], NOW)
    assert len(tracker) == 0
    assert vary_headers(vary, [(b"cookie", b"s=1")]) is None


def test_a_renewal_moves_the_refresh_time_and_releases_a_claim() -> None:
    tracker = ReadTracker(10, WINDOW)
    tracker.read(page("/a"), [], NOW)
    key = read_key(page("/a"))
    tracker.claim(key, NOW + 1000)
    tracker.renewed(page("/a", at=NOW + 580))
    read = tracker.get(key)
    assert read is not None
    assert (read.fresh_until, read.not_before, read.count) == (NOW + 1180, 0.0, 1)
    tracker.renewed(page("/b"))  # not read by a visitor: not tracked
    assert len(tracker) == 1


def test_a_read_is_due_its_lead_before_it_goes_stale() -> None:
    tracker = ReadTracker(10, WINDOW)
    tracker.read(page("/a"), [], NOW)
    early = tracker.due(NOW + 569, refresh_ahead=AHEAD, limit=10)
    assert (early.keys, early.next_at) == ([], NOW + 570)
    assert tracker.due(NOW + 570, refresh_ahead=AHEAD, limit=10).keys == [
        read_key(page("/a"))]


def test_the_most_requested_come_first_within_the_limit() -> None:
    tracker = ReadTracker(10, WINDOW)
    for path, requests in (("/a", 1), ("/b", 3), ("/c", 2)):
        for _ in range(requests):
            tracker.read(page(path), [], NOW)
    picked = tracker.due(NOW + 600, refresh_ahead=AHEAD, limit=2)
    assert picked.keys == [read_key(page("/b")), read_key(page("/c"))]
    assert picked.next_at == NOW + 600  # more are due: the next tick comes at once


def test_reads_outside_the_window_are_forgotten_and_short_lifetimes_skipped() -> None:
    tracker = ReadTracker(10, 100.0)
    tracker.read(page("/old"), [], NOW)
    tracker.read(page("/new"), [], NOW + 550)
    tracker.read(page("/brief", fresh=MIN_LIFETIME / 2, at=NOW + 599), [], NOW + 599)
    assert tracker.due(NOW + 600, refresh_ahead=AHEAD, limit=10).keys == [
        read_key(page("/new"))]
    assert len(tracker) == 2  # /old forgotten, /brief kept (it is read) but never due


def test_a_claimed_read_waits_until_its_claim_ends() -> None:
    tracker = ReadTracker(10, WINDOW)
    tracker.read(page("/a"), [], NOW)
    key = read_key(page("/a"))
    tracker.claim(key, NOW + 650)
    assert tracker.due(NOW + 600, refresh_ahead=AHEAD, limit=10).next_at == NOW + 650
    assert tracker.due(NOW + 650, refresh_ahead=AHEAD, limit=10).keys == [key]


def test_a_full_tracker_drops_the_quarter_least_worth_refreshing() -> None:
    tracker = ReadTracker(8, 100.0)
    tracker.read(page("/stale-read"), [], NOW - 200)  # outside the window: first to go
    for n in range(7):
        for _ in range(n + 2):
            tracker.read(page(f"/u{n}"), [], NOW)
    tracker.read(page("/new"), [], NOW)
    kept = {name for name in ("stale-read", *(f"u{n}" for n in range(7)), "new")
            if tracker.get(read_key(page("/" + name))) is not None}
    assert kept == {"u1", "u2", "u3", "u4", "u5", "u6", "new"}


def test_a_tracker_needs_room() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        ReadTracker(0, WINDOW)


reads_strategy = st.dictionaries(
    st.text("abc", min_size=1, max_size=3),
    st.tuples(st.integers(1, 50), st.floats(0, 200), st.floats(-100, 700),
              st.floats(0, 50), st.floats(0, 700)),
    max_size=20)


def reads_from(spec: dict[str, tuple[int, float, float, float, float]]) -> dict[str, Read]:
    found = {}
    for key, (count, read_ago, fresh, age, claimed) in spec.items():
        entry = page("/" + key, fresh=fresh + age, at=NOW - age)
        read = Read(entry.url, (), entry, NOW - read_ago)
        read.count, read.not_before = count, NOW - 300 + claimed
        found[key] = read
    return found


@given(reads_strategy, st.integers(0, 25))
def test_due_picks_exactly_the_ready_reads_most_requested_first(
        spec: dict[str, tuple[int, float, float, float, float]], limit: int) -> None:
    reads = reads_from(spec)
    picked = due(reads, NOW, refresh_ahead=AHEAD, window=100.0, limit=limit)

    def ready(read: Read) -> bool:
        return (read.last_read >= NOW - 100.0 and read.lifetime >= MIN_LIFETIME
                and max(read.refresh_at(AHEAD), read.not_before) <= NOW)

    everything = [key for key, read in reads.items() if ready(read)]
    assert len(picked.keys) == min(limit, len(everything))
    assert set(picked.keys) <= set(everything)
    counts = [reads[key].count for key in picked.keys]
    assert counts == sorted(counts, reverse=True)
    left = [reads[key].count for key in everything if key not in picked.keys]
    assert all(count <= min(counts) for count in left) if counts else True
    if len(everything) > limit:
        assert picked.next_at == NOW
    elif picked.next_at is not None:
        assert picked.next_at > NOW
