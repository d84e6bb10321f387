"""Outcome.reason: the label /metrics counts a request's outcome by."""

from __future__ import annotations

import pytest

from stoker.cache.outcome import Kind, Outcome


@pytest.mark.parametrize(("outcome", "reason"), [
    (Outcome(Kind.BYPASS, fwd="bypass", fwd_status=200, detail="cookie"), "cookie"),
    (Outcome(Kind.BYPASS, fwd="bypass", fwd_status=200), "bypass"),
    (Outcome(Kind.BYPASS, fwd="method", fwd_status=201), "method"),
    (Outcome(Kind.PASS, fwd="miss", detail="no-freshness"), "no-freshness"),
    (Outcome(Kind.HIT), ""),
])
def test_reason_labels_a_cookie_bypass_cookie(outcome: Outcome, reason: str) -> None:
    assert outcome.reason == reason
    assert outcome.counted[0] == (outcome.kind.value, reason, False)
