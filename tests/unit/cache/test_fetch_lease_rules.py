"""The fetch leases' liveness rule (pure): live while renewed within ``node_timeout``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.fetch_leases import (
    RENEWALS,
    Holder,
    Lease,
    judge,
    lease_until,
    new_holder,
    renew_every,
)

T = 1_700_000_000.0
seconds = st.floats(min_value=0.01, max_value=3600, allow_nan=False)


def test_no_holder_is_a_free_lease() -> None:
    assert judge(None, T) is Lease.FREE


@given(node_timeout=seconds, after=st.floats(min_value=0, max_value=7200))
def test_a_lease_is_live_for_node_timeout_after_its_last_renewal(
        node_timeout: float, after: float) -> None:
    holder = Holder("a", lease_until(T, node_timeout))
    expected = Lease.LIVE if T + after <= T + node_timeout else Lease.DEAD
    assert judge(holder, T + after) is expected


@given(node_timeout=seconds, beats=st.integers(min_value=1, max_value=50))
def test_a_holder_renewing_on_time_is_never_dead_and_one_that_stops_dies(
        node_timeout: float, beats: int) -> None:
    every = renew_every(node_timeout)
    holder = Holder("a", lease_until(T, node_timeout))
    for beat in range(1, beats + 1):
        now = T + beat * every
        assert judge(holder, now) is Lease.LIVE
        holder = Holder("a", lease_until(now, node_timeout))
    stopped = T + beats * every
    assert judge(holder, stopped + (RENEWALS - 1) * every) is Lease.LIVE  # two beats missed
    assert judge(holder, stopped + node_timeout * 1.01) is Lease.DEAD


def test_a_lease_expiring_now_is_still_live() -> None:
    assert judge(Holder("a", T), T) is Lease.LIVE
    assert judge(Holder("a", T), T + 0.001) is Lease.DEAD


def test_a_new_holder_is_another_owner_not_a_renewal() -> None:
    assert new_holder(None, Holder("a", T))
    assert new_holder(Holder("a", T), Holder("b", T + 5))
    assert not new_holder(Holder("a", T), Holder("a", T + 5))
    assert not new_holder(Holder("a", T), None)
    assert not new_holder(None, None)
