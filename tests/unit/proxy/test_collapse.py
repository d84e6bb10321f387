"""Collapsing: one leader per key, followers share or time out."""

from __future__ import annotations

import asyncio

from tests.entries import make_entry

from stoker.cache.collapse import Collapser


async def test_one_leader_per_key_and_followers_share() -> None:
    collapser = Collapser()
    flight, leader = collapser.join("k")
    again, second_leader = collapser.join("k")
    assert leader and not second_leader and again is flight
    entry = make_entry()
    waiter = asyncio.create_task(again.wait(1))
    await asyncio.sleep(0)
    collapser.land("k", flight, entry)
    assert await waiter is entry
    assert not collapser.busy("k")


async def test_unshareable_flight_releases_followers_with_none() -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k")
    waiter = asyncio.create_task(flight.wait(1))
    await asyncio.sleep(0)
    flight.share(None)
    assert await waiter is None


async def test_follower_times_out() -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k")
    assert await flight.wait(0.01) is None
    assert collapser.busy("k")  # the leader still owns it until it lands


async def test_followers_learn_whether_the_flight_stored_what_it_shares() -> None:
    collapser = Collapser()
    fetched, _ = collapser.join("fetched")
    fetched.share(make_entry(), stored=True)
    collapser.land("fetched", fetched, None)  # the first share wins, flag and all
    assert fetched.stored and await fetched.wait(1) is not None
    fallback, _ = collapser.join("fallback")
    collapser.land("fallback", fallback, make_entry())  # e.g. a stale copy served on error
    assert not fallback.stored
    nothing, _ = collapser.join("nothing")
    nothing.share(None, stored=True)
    assert not nothing.stored
