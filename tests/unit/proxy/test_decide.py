"""The per-request decision (stoker.proxy.decide), over every window and health."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.entry import CacheEntry, Freshness
from stoker.cache.outcome import Kind
from stoker.proxy.decide import Action, decide, may_take

NOW = 1_000_000.0


@dataclass
class Health:
    down: bool = False
    due: bool = False

    def is_down(self) -> bool:
        return self.down

    def probe_due(self) -> bool:
        return self.due


def entry(fresh: float, swr: float = 0.0, sie: float = 0.0) -> CacheEntry:
    """An entry fresh for ``fresh`` more seconds (negative: stale that long), with
    stale-while-revalidate and stale-if-error windows of ``swr`` and ``sie`` seconds."""
    fresh_until = NOW + fresh
    return CacheEntry(
        primary_key="1|http://a.test/", variant="", url="http://a.test/", status=200,
        headers=(), body=b"x", body_file=None, body_size=1, response_time=NOW - 10,
        initial_age=0, fresh_until=fresh_until, stale_until=fresh_until + swr,
        error_until=fresh_until + sie, keep_until=fresh_until + max(swr, sie) + 60)


def act(stored: CacheEntry | None, *, other: bool = False, no_cache: bool = False,
        warm: bool = False, health: Health | None = None) -> Action:
    return decide(stored, NOW, other_variants=other, client_no_cache=no_cache, warm=warm,
                  origin=health or Health())


@pytest.mark.parametrize(("stored", "health", "expected"), [
    (entry(60), Health(), Action(Kind.HIT, "stale")),
    (entry(60), Health(down=True), Action(Kind.HIT, "stale")),
    (entry(-5, swr=30), Health(), Action(Kind.STALE_SWR, "stale", revalidate=True)),
    (entry(-5, swr=30), Health(down=True), Action(Kind.STALE_SWR, "stale", revalidate=True)),
    (entry(-5, sie=30), Health(), Action(None, "stale")),  # the origin is up: ask it
    (entry(-5, sie=30), Health(down=True), Action(Kind.STALE_ERROR, "stale")),
    (entry(-5, sie=30), Health(down=True, due=True),
     Action(Kind.STALE_ERROR, "stale", revalidate=True)),
    (entry(-50, sie=30), Health(down=True), Action(None, "stale")),  # past stale-if-error
    (entry(-5), Health(), Action(None, "stale")),
])
def test_what_is_stored_decides(stored: CacheEntry, health: Health, expected: Action) -> None:
    assert act(stored, health=health) == expected


def test_nothing_stored_is_a_uri_or_vary_miss() -> None:
    assert act(None) == Action(None, "uri-miss")
    assert act(None, other=True) == Action(None, "vary-miss")


@pytest.mark.parametrize("stored", [entry(60), entry(-5, swr=30), entry(-5, sie=30)])
def test_a_client_no_cache_forces_a_request(stored: CacheEntry) -> None:
    assert act(stored, no_cache=True, health=Health(down=True)) == Action(None, "request")


def test_a_warm_visit_never_takes_a_stale_entry() -> None:
    assert act(entry(60), warm=True) == Action(Kind.HIT, "stale")
    assert act(entry(-5, swr=30), warm=True) == Action(None, "request")
    assert act(entry(-5, sie=30), warm=True, health=Health(down=True)) == Action(None, "request")


@given(st.floats(-100, 100), st.floats(0, 100), st.floats(0, 100), st.booleans(),
       st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_invariants(fresh: float, swr: float, sie: float, other: bool, no_cache: bool,
                    warm: bool, down: bool, due: bool) -> None:
    stored = entry(fresh, swr, sie)
    action = act(stored, other=other, no_cache=no_cache, warm=warm,
                 health=Health(down=down, due=due))
    state = stored.freshness(NOW)
    forced = no_cache or (warm and state is not Freshness.FRESH)
    assert (action.fwd == "request") is forced
    if forced:
        assert action.serve is None
    if action.serve is Kind.HIT:
        assert state is Freshness.FRESH
    if action.serve is Kind.STALE_ERROR:
        assert down and stored.error_until > NOW and state is not Freshness.STALE_SWR
    if action.serve is None and not forced:
        assert state is not Freshness.FRESH and state is not Freshness.STALE_SWR
        assert not (down and stored.error_until > NOW)
    assert action.revalidate is (action.serve is Kind.STALE_SWR or (
        action.serve is Kind.STALE_ERROR and due))


@pytest.mark.parametrize(("offered", "fetched", "fell_back", "no_cache", "taken"), [
    (entry(60), True, False, False, True),  # fresh, just stored: the usual collapse
    (entry(60), False, False, False, True),  # fresh, found stored meanwhile
    (entry(0), True, False, False, False),  # stored already stale (no-cache, max-age=0)
    (entry(-1), True, False, False, False),
    (entry(-5, swr=30), True, False, False, False),  # stale: its own request decides
    (entry(60), True, False, True, True),  # no-cache: a response fetched meanwhile
    (entry(60), False, False, True, False),  # no-cache: not an older copy
    (entry(-5, sie=30), False, True, False, True),  # stale-if-error in place of the origin
    (entry(-5, sie=30), False, True, True, True),
    (entry(-50, sie=30), False, True, False, False),  # past its stale-if-error window
])
def test_a_follower_takes_only_what_it_could_reuse(offered: CacheEntry, fetched: bool,
                                                   fell_back: bool, no_cache: bool,
                                                   taken: bool) -> None:
    assert may_take(offered, NOW, fetched=fetched, fell_back=fell_back,
                    client_no_cache=no_cache) is taken


@given(fresh=st.floats(-1000, 1000), swr=st.floats(0, 1000), sie=st.floats(0, 1000),
       fetched=st.booleans(), no_cache=st.booleans())
def test_a_follower_never_takes_a_stale_answer_from_a_working_origin(
        fresh: float, swr: float, sie: float, fetched: bool, no_cache: bool) -> None:
    offered = entry(fresh, swr, sie)
    taken = may_take(offered, NOW, fetched=fetched, fell_back=False, client_no_cache=no_cache)
    assert not taken or offered.freshness(NOW) is Freshness.FRESH


@pytest.mark.parametrize("stored", [entry(60), entry(-5, swr=30), entry(-5, sie=30), entry(-50)])
def test_a_refresh_visit_revalidates_whatever_is_stored(stored: CacheEntry) -> None:
    action = decide(stored, NOW, other_variants=False, client_no_cache=False, warm=True,
                    origin=Health(), refresh=True)
    assert action == Action(None, "request")


@pytest.mark.parametrize(("other", "fwd"), [(False, "uri-miss"), (True, "vary-miss")])
def test_a_refresh_visit_with_nothing_stored_fetches(other: bool, fwd: str) -> None:
    assert decide(None, NOW, other_variants=other, client_no_cache=False, warm=True,
                  origin=Health(), refresh=True) == Action(None, fwd)
