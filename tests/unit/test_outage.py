"""The outage state machine: said at its start, every SAY_EVERY seconds and at its end;
retries 1 s apart, doubling, capped."""

from __future__ import annotations

from stoker.resilience.outage import RETRY_FIRST, SAY_EVERY, Outage, answered, failed, retry_in


def test_an_outage_is_said_at_its_start_then_every_say_every_seconds() -> None:
    state, said = Outage(), []
    for now in (0.0, 1.0, 2.0, SAY_EVERY - 0.5, SAY_EVERY + 0.5, SAY_EVERY + 1):
        state, say = failed(state, now)
        said.append(say)
    assert said == [True, False, False, False, True, False]
    assert state.failures == 6


def test_the_first_answer_after_failures_is_said_once() -> None:
    state, _ = failed(Outage(), 5.0)
    state, back = answered(state)
    assert back and state == Outage()
    assert answered(state) == (Outage(), False)
    again, say = failed(state, 6.0)  # a new outage is said again at once
    assert say and again.failures == 1


def test_retries_double_from_the_first_delay_up_to_the_cap() -> None:
    delays, state = [], Outage()
    for now in range(8):
        state, _ = failed(state, float(now))
        delays.append(retry_in(state, most=10.0))
    assert delays == [RETRY_FIRST, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0]
    assert retry_in(Outage(failures=10_000)) == 30.0  # no overflow, the default cap
