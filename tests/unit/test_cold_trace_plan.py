"""The cold-trace benchmark's pure parts: site layout, Zipf draws, trace and events."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from bench.cold_trace_plan import Site, Zipf, events, popularity, trace
from hypothesis import given
from hypothesis import strategies as st


@given(st.integers(3, 3000), st.integers(1, 80))
def test_every_item_sits_on_a_list_and_the_site_has_its_pages(pages: int, per_list: int) -> None:
    site = Site(pages, per_list)
    paths = site.paths()
    assert len(paths) == len(set(paths)) == pages
    listed = [i for j in range(site.lists) for i in site.items_of(j)]
    assert listed == list(range(site.items))
    assert all(site.list_of(i) < site.lists for i in range(site.items))


def test_a_site_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 3 pages"):
        Site(2)


def test_zipf_draws_are_deterministic_by_seed() -> None:
    zipf = Zipf(1000, 1.0)

    def draws(seed: int) -> list[int]:
        rng = random.Random(seed)
        return [zipf.draw(rng) for _ in range(50)]

    assert draws(7) == draws(7) != draws(8)


def test_zipf_with_s_1_gives_rank_1_twice_rank_2_and_ten_times_rank_10() -> None:
    zipf, rng = Zipf(100, 1.0), random.Random(1)
    counts = Counter(zipf.draw(rng) for _ in range(200_000))
    assert counts[0] / counts[1] == pytest.approx(2.0, rel=0.05)
    assert counts[0] / counts[9] == pytest.approx(10.0, rel=0.1)
    assert set(counts) <= set(range(100))


def test_popularity_puts_the_home_page_first_and_depends_on_the_seed() -> None:
    site = Site(200)
    assert popularity(site, 1)[0] == "/"
    assert sorted(popularity(site, 1)) == sorted(site.paths())
    assert popularity(site, 1) == popularity(site, 1) != popularity(site, 2)


def test_the_trace_is_the_same_for_a_seed_and_has_its_rate_and_bot_share() -> None:
    site = Site(500)
    one = trace(site, seed=3, rate=200, duration=60, bot_share=0.1)
    assert one == trace(site, seed=3, rate=200, duration=60, bot_share=0.1)
    assert one != trace(site, seed=4, rate=200, duration=60, bot_share=0.1)
    assert len(one) == pytest.approx(12_000, rel=0.05)
    assert sum(r.bot for r in one) / len(one) == pytest.approx(0.1, abs=0.01)
    assert all(0 <= a.at < 60 and a.at <= b.at for a, b in itertools.pairwise(one))


def test_bots_walk_the_sitemap_in_order_and_humans_use_a_browser_head() -> None:
    site = Site(50)
    requests = trace(site, seed=1, rate=100, duration=10, bot_share=0.3)
    walked = [r.path for r in requests if r.bot]
    assert walked == (site.paths() * 10)[: len(walked)]
    assert all(r.head >= 0 for r in requests if not r.bot)


def test_a_trace_starting_later_is_offset() -> None:
    later = trace(Site(50), seed=1, rate=50, duration=5, bot_share=0, start=90)
    assert later and all(90 <= r.at < 95 for r in later)


def test_events_edit_once_a_second_and_deploy_on_schedule() -> None:
    site = Site(1000)
    planned = events(site, seed=5, duration=130, edits_per_s=1, deploy_every=60)
    assert planned == events(site, seed=5, duration=130, edits_per_s=1, deploy_every=60)
    assert [e.at for e in planned if e.kind == "deploy"] == [60, 120]
    edits = [e for e in planned if e.kind == "edit"]
    assert [e.at for e in edits] == list(range(1, 130))
    assert all(0 <= e.item < site.items for e in edits)
    at_60 = [e.kind for e in planned if e.at == 60]
    assert at_60 == ["deploy", "edit"]


def test_edited_items_follow_popularity() -> None:
    site = Site(1000)
    order = [p for p in popularity(site, 5) if p.startswith("/item/")]
    edits = events(site, seed=5, duration=5000, edits_per_s=1, deploy_every=0)
    counts = Counter(f"/item/{e.item}" for e in edits)
    assert counts[order[0]] > counts[order[50]] > 0
