"""``decide_retry``: exponential backoff with full jitter, capped, then dead."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.jobs.policy import MAX_DELAY_SECONDS, backoff_ceiling, decide_retry

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("attempts", "rng_value", "delay"),
    [
        (1, 0.0, 0.0),
        (1, 0.5, 1.0),
        (2, 0.5, 2.0),
        (3, 0.25, 2.0),
        (11, 0.5, 1_024.0),  # ceiling 2 * 2**10 = 2048, under the cap
        (12, 0.5, 1_800.0),  # ceiling 4096, capped to 3600
        (1_000, 0.5, 1_800.0),
    ],
)
def test_delay_table(attempts: int, rng_value: float, delay: float) -> None:
    decision = decide_retry(attempts, 10_000, "boom", NOW, rng_value)
    assert not decision.dead
    assert decision.delay == pytest.approx(delay)
    assert decision.run_at == pytest.approx(NOW + delay)


@pytest.mark.parametrize(("attempts", "max_attempts", "dead"),
                         [(1, 1, True), (1, 2, False), (4, 5, False), (5, 5, True), (9, 5, True)])
def test_dead_after_max_attempts(attempts: int, max_attempts: int, dead: bool) -> None:
    decision = decide_retry(attempts, max_attempts, "boom", NOW, 0.3)
    assert decision.dead is dead
    assert decision.error == "boom"


def test_error_is_truncated() -> None:
    assert len(decide_retry(1, 3, "x" * 5_000, NOW, 0.1).error) == 2_000


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0])
def test_rng_value_must_be_a_unit_draw(bad: float) -> None:
    with pytest.raises(ValueError, match="rng_value"):
        decide_retry(1, 3, "boom", NOW, bad)


@given(
    attempts=st.integers(min_value=1, max_value=10_000),
    rng_value=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    now=st.floats(min_value=0.0, max_value=4e9),
)
def test_backoff_stays_within_full_jitter_bounds(attempts: int, rng_value: float,
                                                 now: float) -> None:
    decision = decide_retry(attempts, attempts + 1, "boom", now, rng_value)
    assert not decision.dead
    assert 0.0 <= decision.delay <= backoff_ceiling(attempts) <= MAX_DELAY_SECONDS
    assert decision.run_at == now + decision.delay


@given(attempts=st.integers(min_value=1, max_value=100))
def test_ceiling_never_shrinks(attempts: int) -> None:
    assert backoff_ceiling(attempts) <= backoff_ceiling(attempts + 1)


@given(st.integers(min_value=1, max_value=50), st.integers(min_value=1, max_value=50),
       st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_same_inputs_same_decision(attempts: int, max_attempts: int, rng_value: float) -> None:
    assert decide_retry(attempts, max_attempts, "e", NOW, rng_value) == decide_retry(
        attempts, max_attempts, "e", NOW, rng_value)
