"""The fair share of visitors' origin slots: the pure policy of who is granted next."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.origin.fair_share import ANONYMOUS, Claim, FairShare, client_key


def queued(share: FairShare[str], *items: tuple[str, str, str]) -> None:
    """Queue ``(name, client, url)`` requests in that order."""
    for name, client, url in items:
        share.enqueue(name, Claim(client, url))


def grants(share: FairShare[str], count: int, *, beyond_cap: bool = False) -> list[str]:
    granted = [share.grant(beyond_cap=beyond_cap) for _ in range(count)]
    return [entry[0] for entry in granted if entry is not None]


@pytest.mark.parametrize(("address", "key"), [
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("::ffff:198.51.100.9", "198.51.100.9"),
    ("/run/stoker.sock", "/run/stoker.sock"),
    (None, ""),
    ("", ""),
])
def test_a_client_is_its_address_and_an_ipv6_client_its_64(address: str | None,
                                                            key: str) -> None:
    assert client_key(address) == key


def test_clients_take_turns_whoever_queued_more() -> None:
    share: FairShare[str] = FairShare(per_client=8)
    queued(share, ("a1", "a", "/1"), ("a2", "a", "/2"), ("a3", "a", "/3"),
           ("b1", "b", "/4"), ("c1", "c", "/5"), ("b2", "b", "/6"))
    assert grants(share, 6) == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert share.waiting() == 0
    assert [share.holding(client) for client in "abc"] == [3, 2, 1]


def test_the_client_holding_fewest_slots_goes_first() -> None:
    share: FairShare[str] = FairShare(per_client=8)
    for _ in range(3):
        share.take(Claim("hog", "/slow"))
    queued(share, ("h", "hog", "/slow/2"), ("v", "victim", "/page"))
    assert grants(share, 1) == ["v"]


def test_a_url_holding_slots_queues_behind_urls_holding_none() -> None:
    share: FairShare[str] = FairShare(per_client=8)
    share.take(Claim("x", "/hang"))
    share.take(Claim("y", "/hang"))
    queued(share, ("a", "a", "/hang"), ("b", "b", "/hang"), ("c", "c", "/page"))
    assert grants(share, 3) == ["c", "a", "b"]
    assert share.url_holding("/hang") == 4


def test_requests_of_one_client_are_granted_in_arrival_order() -> None:
    share: FairShare[str] = FairShare(per_client=8)
    share.take(Claim("z", "/late"))
    share.take(Claim("z", "/late"))
    queued(share, ("first", "a", "/late"), ("second", "a", "/fresh"))
    assert grants(share, 2) == ["first", "second"]  # never the less-held URL ahead of it


def test_a_client_at_its_cap_waits_unless_it_may_go_beyond() -> None:
    share: FairShare[str] = FairShare(per_client=2)
    queued(share, ("a1", "a", "/1"), ("a2", "a", "/2"), ("a3", "a", "/3"))
    assert grants(share, 3) == ["a1", "a2"]
    assert share.grant() is None
    assert share.waiting() == 1
    assert grants(share, 1, beyond_cap=True) == ["a3"]
    assert share.holding("a") == 3


def test_a_withdrawn_request_leaves_no_trace() -> None:
    share: FairShare[str] = FairShare(per_client=2)
    queued(share, ("a1", "a", "/1"), ("a2", "a", "/2"))
    assert share.withdraw("a1", Claim("a", "/1"))
    assert not share.withdraw("a1", Claim("a", "/1"))
    assert not share.withdraw("nobody", Claim("b", "/1"))
    assert grants(share, 2) == ["a2"]
    share.release(Claim("a", "/2"))
    assert (share.holding("a"), share.url_holding("/2"), share.waiting()) == (0, 0, 0)


def test_a_share_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="origin_max_per_client"):
        FairShare(per_client=0)


def test_the_anonymous_claim_is_one_client() -> None:
    share: FairShare[str] = FairShare(per_client=1)
    queued(share, ("x", ANONYMOUS.client, ANONYMOUS.url), ("y", "", ""))
    assert grants(share, 2) == ["x"]


operations = st.lists(st.one_of(
    st.tuples(st.just("arrive"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("release"), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("withdraw"), st.integers(0, 50), st.just(0)),
), max_size=60)


@settings(max_examples=200)
@given(per_client=st.integers(1, 3), slots=st.integers(2, 6), reserve=st.integers(0, 1),
       steps=operations)
def test_grants_stay_fair_in_any_interleaving(per_client: int, slots: int, reserve: int,
                                              steps: list[tuple[str, int, int]]) -> None:
    """A limiter's loop over the policy: grant within the cap while slots are free, then
    beyond it while more than ``reserve`` stay free; every grant goes to a least-holding
    client, in arrival order within a client, and every request is granted in the end."""
    share: FairShare[int] = FairShare(per_client)
    claims: dict[int, Claim] = {}
    holders: list[int] = []
    waiting: list[int] = []
    granted: list[int] = []

    def dispatch() -> None:
        for beyond, limit in ((False, slots), (True, slots - reserve)):
            while len(holders) < limit:
                candidates = {claims[n].client for n in waiting
                              if beyond or share.holding(claims[n].client) < per_client}
                fewest = min((share.holding(c) for c in candidates), default=None)
                entry = share.grant(beyond_cap=beyond)
                if entry is None:
                    assert not candidates
                    break
                number, claim = entry
                assert share.holding(claim.client) - 1 == fewest
                assert beyond or share.holding(claim.client) <= per_client
                assert number == min(n for n in waiting if claims[n].client == claim.client)
                waiting.remove(number)
                holders.append(number)
                granted.append(number)

    for n, (action, a, b) in enumerate(steps):
        if action == "arrive":
            claims[n] = Claim(f"c{a}", f"/u{b}")
            share.enqueue(n, claims[n])
            waiting.append(n)
        elif action == "release" and holders:
            share.release(claims[holders.pop(a % len(holders))])
        elif action == "withdraw" and waiting:
            gone = waiting.pop(a % len(waiting))
            assert share.withdraw(gone, claims[gone])
        dispatch()
        assert share.waiting() == len(waiting)
        assert len(holders) <= slots
    while holders:
        share.release(claims[holders.pop(0)])
        dispatch()
    assert not waiting
    assert share.waiting() == 0
    assert all(share.holding(claim.client) == 0 for claim in claims.values())
