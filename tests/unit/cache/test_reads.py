"""Refresh ahead's read tracker: what visitors read, the bound, and which reads are due."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.reads import (
    MIN_LIFETIME,
    MIN_RETRY,
    STALE_COVER,
    ReadTracker,
    lead,
    read_key,
    retry_after,
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
    tracker = ReadTracker(10, WINDOW, AHEAD)
    tracker.read(page("/a"), [], NOW)
    tracker.read(page("/a", fresh=900.0), [], NOW + 5)
    tracker.read(page("/a", fresh=100.0), [], NOW + 7)  # an older copy does not lower it
    read = tracker.get(read_key(page("/a")))
    assert read is not None
    assert (read.count, read.last_read, read.fresh_until) == (3, NOW + 7, NOW + 900.0)


def test_each_variant_is_a_read_of_its_own_with_the_headers_its_vary_names() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
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
    tracker = ReadTracker(10, WINDOW, AHEAD)
    tracker.read(page("/a", variant="x", vary=vary), [(b"cookie", b"s=1")], NOW)
    assert len(tracker) == 0
    assert vary_headers(vary, [(b"cookie", b"s=1")]) is None


def test_a_renewal_moves_the_refresh_time_and_releases_a_claim() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
    tracker.read(page("/a"), [], NOW)
    key = read_key(page("/a"))
    assert tracker.due(NOW + 570, limit=10).keys == [key]  # handed out: claimed
    tracker.renewed(page("/a", at=NOW + 575))
    read = tracker.get(key)
    assert read is not None
    assert (read.fresh_until, read.not_before, read.count) == (NOW + 1175, 0.0, 1)
    assert tracker.due(NOW + 1144, limit=10).next_at == NOW + 1145
    assert tracker.due(NOW + 1145, limit=10).keys == [key]
    tracker.renewed(page("/b"))  # not read by a visitor: not tracked
    assert len(tracker) == 1


def test_a_read_is_due_its_lead_before_it_goes_stale() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
    tracker.read(page("/a"), [], NOW)
    early = tracker.due(NOW + 569, limit=10)
    assert (early.keys, early.next_at) == ([], NOW + 570)
    assert tracker.due(NOW + 570, limit=10).keys == [
        read_key(page("/a"))]


def test_the_most_requested_come_first_within_the_limit() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
    for path, requests in (("/a", 1), ("/b", 3), ("/c", 2)):
        for _ in range(requests):
            tracker.read(page(path), [], NOW)
    picked = tracker.due(NOW + 600, limit=2)
    assert picked.keys == [read_key(page("/b")), read_key(page("/c"))]
    assert picked.next_at == NOW + 600  # more are due: the next tick comes at once
    assert tracker.due(NOW + 600, limit=2).keys == [read_key(page("/a"))]  # the others claimed


def test_reads_outside_the_window_are_forgotten_and_short_lifetimes_skipped() -> None:
    tracker = ReadTracker(10, 100.0, AHEAD)
    tracker.read(page("/old"), [], NOW)
    tracker.read(page("/new"), [], NOW + 550)
    tracker.read(page("/brief", fresh=MIN_LIFETIME / 2, at=NOW + 599), [], NOW + 599)
    assert tracker.due(NOW + 600, limit=10).keys == [
        read_key(page("/new"))]
    assert len(tracker) == 2  # /old forgotten, /brief kept (it is read) but never due


def test_a_read_handed_out_and_not_renewed_is_due_again_when_its_claim_ends() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
    tracker.read(page("/a"), [], NOW)
    tracker.read(page("/b", fresh=2.0), [], NOW)
    key_a, key_b = read_key(page("/a")), read_key(page("/b"))
    assert sorted(tracker.due(NOW + 600, limit=10).keys) == [key_a, key_b]
    read_a, read_b = tracker.get(key_a), tracker.get(key_b)
    assert read_a is not None and read_b is not None
    assert (retry_after(read_a, AHEAD), retry_after(read_b, AHEAD)) == (AHEAD, MIN_RETRY)
    assert tracker.due(NOW + 600.5, limit=10).keys == []
    assert tracker.due(NOW + 601, limit=10).keys == [key_b]
    assert sorted(tracker.due(NOW + 630, limit=10).keys) == [key_a, key_b]  # b again: 1 s claims


def test_a_full_tracker_drops_the_quarter_least_worth_refreshing() -> None:
    tracker = ReadTracker(8, 100.0, AHEAD)
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
        ReadTracker(0, WINDOW, AHEAD)


operations = st.lists(st.one_of(
    st.tuples(st.just("read"), st.sampled_from("abcdef"), st.floats(0.5, 900)),
    st.tuples(st.just("renew"), st.sampled_from("abcdef"), st.floats(0.5, 900)),
    st.tuples(st.just("due"), st.tuples(st.integers(0, 4), st.booleans()),
              st.floats(0, 400))), max_size=40)


def maybe_covered(path: str, fresh: float, at: float) -> CacheEntry:
    """``/a``, ``/b`` and ``/c`` may be served stale for long (covered), the others not."""
    stale = fresh + (STALE_COVER if path in "abc" else 0.0)
    return make_entry(f"https://example.com/{path}", now=at, fresh=fresh, stale=stale,
                      error=fresh, keep=stale)


@given(operations)
def test_due_hands_out_exactly_the_due_reads_most_requested_first(
        steps: list[tuple[str, object, float]]) -> None:
    """Whatever happened before, each call of ``due`` hands out the reads a scan of the
    whole table finds due (with ``covered`` False: of the reads not covered), the most
    requested first, at most ``limit``."""
    tracker = ReadTracker(100, 600.0, AHEAD)
    now = NOW
    for action, what, amount in steps:
        if action == "read":
            tracker.read(maybe_covered(str(what), amount, now), [], now)
        elif action == "renew":
            tracker.renewed(maybe_covered(str(what), amount, now))
        else:
            now += amount
            limit, covered = what  # type: ignore[misc]
            kept = {key: read for key in map(lambda p: read_key(page(f"/{p}")), "abcdef")
                    if (read := tracker.get(key)) is not None}
            ready = {key: read.count for key, read in kept.items()
                     if read.last_read >= now - 600.0 and read.lifetime >= MIN_LIFETIME
                     and max(read.refresh_at(AHEAD), read.not_before) <= now
                     and (covered or not read.covered)}
            picked = tracker.due(now, limit=limit, covered=covered)
            counts = [ready[key] for key in picked.keys]  # every one handed out was due
            assert len(counts) == min(limit, len(ready))
            assert counts == sorted(counts, reverse=True)
            assert all(count <= min(counts) for key, count in ready.items()
                       if key not in picked.keys) if counts else True
            if len(ready) > limit:
                assert picked.next_at == now


def test_covered_reads_wait_while_told_and_are_handed_out_after() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
    covered = make_entry("https://example.com/c", now=NOW, fresh=600.0,
                         stale=600.0 + STALE_COVER, error=600.0, keep=600.0 + STALE_COVER)
    short = make_entry("https://example.com/s", now=NOW, fresh=600.0,
                       stale=600.0 + STALE_COVER - 1, error=600.0, keep=2000.0)
    for entry in (covered, short, covered):
        tracker.read(entry, [], NOW)
    assert [tracker.get(read_key(e)).covered for e in (covered, short)] == [  # type: ignore[union-attr]
        True, False]
    held = tracker.due(NOW + 570, limit=10, covered=False)
    assert held.keys == [read_key(short)]  # the covered one waits, though more requested
    assert held.next_at is not None and held.next_at > NOW + 570  # no busy ticks for it
    assert tracker.due(NOW + 571, limit=10, covered=False).keys == []
    assert tracker.due(NOW + 572, limit=10).keys == [read_key(covered)]  # waited, not lost


def test_expired_counts_the_reads_gone_stale_unrenewed_most_requested_first() -> None:
    tracker = ReadTracker(10, WINDOW, AHEAD)
    tracker.read(page("/short", fresh=60.0), [], NOW)
    for _ in range(3):
        tracker.read(page("/often", fresh=60.0), [], NOW)
    tracker.read(page("/long", fresh=6000.0), [], NOW)
    assert tracker.expired(NOW + 59, limit=5) == (0, [])
    assert tracker.expired(NOW + 60, limit=1) == (2, ["https://example.com/often"])
    tracker.renewed(page("/often", fresh=60.0, at=NOW + 61))
    assert tracker.expired(NOW + 100, limit=5) == (1, ["https://example.com/short"])
    assert tracker.expired(NOW + 60 + WINDOW + 1, limit=5) == (0, [])  # nobody read it since
