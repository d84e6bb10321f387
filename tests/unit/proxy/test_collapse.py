"""Collapsing: one leader per key, followers share or time out."""

from __future__ import annotations

import asyncio

import pytest
from tests.entries import make_entry

from stoker.cache.collapse import Collapser
from stoker.cache.entry import CacheEntry


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


async def test_followers_are_counted_while_their_flight_is_in_progress() -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k")
    collapser.join("other")
    assert collapser.followers() == 0
    collapser.join("k")
    collapser.join("k")
    assert (flight.followers, collapser.followers()) == (2, 2)
    collapser.land("k", flight, make_entry())
    assert collapser.followers() == 0


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


def _answer(control: bytes) -> CacheEntry:
    return make_entry(headers=((b"cache-control", control),))


@pytest.mark.parametrize(("control", "shared"), [
    (b"no-cache, must-revalidate, max-age=0", False),  # WordPress's authenticated REST
    (b"must-revalidate, max-age=60", False),  # storable (RFC 9111 §3.5), not for everyone
    (b"private, max-age=60", False),
    (b"max-age=60", False),
    (b"public, max-age=60", True),
    (b"s-maxage=60", True),
])
async def test_a_credentialed_flight_shares_only_answers_for_everyone(
        control: bytes, shared: bool) -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k", credentialed=True)
    waiter = asyncio.create_task(flight.wait(1))
    await asyncio.sleep(0)
    flight.share(_answer(control), stored=True)
    got = await waiter
    assert (got is not None) is shared and flight.withheld is not shared
    assert flight.stored is shared


async def test_a_credentialed_flight_with_nothing_to_share_sends_followers_anew() -> None:
    flight, _ = Collapser().join("k", credentialed=True)
    flight.share(None)
    assert flight.withheld
    anonymous, _ = Collapser().join("k")
    anonymous.share(None)
    assert not anonymous.withheld


async def test_an_anonymous_flight_shares_what_it_stored() -> None:
    flight, _ = Collapser().join("k")
    flight.share(_answer(b"must-revalidate, max-age=60"), stored=True)
    assert await flight.wait(1) is not None and not flight.withheld


async def test_a_flight_that_shared_takes_no_more_followers() -> None:
    collapser = Collapser()
    first, _ = collapser.join("k")
    first.share(None)
    second, leader = collapser.join("k")
    assert leader and second is not first
    collapser.land("k", first, None)  # the old leader lands: the new flight stays
    assert collapser.busy("k")
    assert collapser.join("k") == (second, False)


async def test_a_fallback_is_marked_as_one() -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k")
    collapser.land("k", flight, make_entry(), fell_back=True)
    assert flight.fell_back and not flight.stored


async def test_a_new_fetch_begun_gives_followers_their_timeout_again() -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k")
    waiter = asyncio.create_task(flight.wait(0.2))
    await asyncio.sleep(0.15)
    flight.began()  # e.g. the leader took a dead member's fetch lease over
    await asyncio.sleep(0.15)  # past the first timeout, within the second
    assert not waiter.done()
    entry = make_entry()
    collapser.land("k", flight, entry)
    assert await waiter is entry
    assert await flight.wait(0) is entry  # landed: no timeout hides the answer


async def test_a_fetch_begun_before_a_follower_joined_does_not_shorten_its_wait() -> None:
    collapser = Collapser()
    flight, _ = collapser.join("k")
    flight.began()
    await asyncio.sleep(0.1)
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await flight.wait(0.1) is None
    assert loop.time() - start >= 0.1
