"""The origin's health: who may ask a down origin (one probe at a time), and for how long
the others are turned away."""

from __future__ import annotations

from stoker.clock import FakeClock
from stoker.origin.health import OriginHealth


def down(clock: FakeClock) -> OriginHealth:
    health = OriginHealth(clock, threshold=2, cooldown=5.0)
    for _ in range(2):
        health.report(health.begin(), ok=False)
    return health


def test_an_up_origin_is_asked_by_everyone() -> None:
    health = OriginHealth(FakeClock(), threshold=2, cooldown=5.0)
    health.report(health.begin(), ok=False)
    assert health.may_ask() and not health.is_down()


def test_a_down_origin_is_asked_by_one_probe_at_a_time() -> None:
    clock = FakeClock()
    health = down(clock)
    assert health.is_down() and not health.may_ask()
    assert health.retry_after() == 5
    clock.advance(3.2)
    assert health.retry_after() == 2  # rounded up: never before the probe is due
    clock.advance(1.8)
    assert health.may_ask()
    probe = health.begin()
    assert not health.may_ask()  # the probe is in flight: the others are turned away
    assert health.retry_after() == 5
    health.report(probe, ok=False)  # it timed out: down for another cooldown
    assert not health.may_ask() and health.retry_after() == 5
    clock.advance(5)
    probe = health.begin()
    health.report(probe, ok=True)
    assert health.may_ask() and not health.is_down() and health.down_since is None


def test_an_abandoned_probe_lets_the_next_request_probe_at_once() -> None:
    clock = FakeClock()
    health = down(clock)
    clock.advance(5)
    health.abandon(health.begin())
    assert health.may_ask()


def test_retry_after_is_at_least_a_second() -> None:
    clock = FakeClock()
    health = down(clock)
    clock.advance(4.99)
    assert health.retry_after() == 1


def test_the_listeners_hear_each_recovery_once() -> None:
    clock = FakeClock()
    health = down(clock)
    heard: list[float] = []
    health.on_back.append(lambda: heard.append(clock.now()))
    clock.advance(5)
    health.report(health.begin(), ok=False)  # the probe failed: still down
    assert heard == []
    clock.advance(5)
    health.report(health.begin(), ok=True)
    health.report(health.begin(), ok=True)  # up already: no news
    assert heard == [clock.now()]
    health.report(health.begin(), ok=False)  # one failure does not open it
    health.report(health.begin(), ok=True)
    assert len(heard) == 1


def test_a_good_answer_after_a_run_of_5xx_answers_is_the_origin_back() -> None:
    health = OriginHealth(FakeClock(), threshold=2, cooldown=5.0)
    heard: list[int] = []
    health.on_back.append(lambda: heard.append(1))
    health.answered(502)
    health.answered(200)  # one error is a broken page, not an outage
    assert heard == []
    for status in (502, 503, 500):
        health.answered(status)
    assert not health.is_down()  # an answering origin is up for the breaker
    health.answered(404)
    health.answered(200)
    assert heard == [1]
