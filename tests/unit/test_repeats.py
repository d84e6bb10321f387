"""A repeated failure said as the outage rule says: when it starts, every ``SAY_EVERY``
seconds with a count and the time it began, when it ends; its cause, not its wrapper."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.clock import FakeClock
from stoker.resilience.outage import SAY_EVERY
from stoker.resilience.repeats import Repeats, cause

START = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC


def wrapped() -> ConnectionError:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as inner:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:1") from inner
    except ConnectionError as error:
        return error


def test_the_cause_names_the_wrapped_error() -> None:
    assert cause(ValueError("bad")) == "ValueError: bad"
    assert cause(wrapped()) == ("ConnectionError: Error 111 connecting to 127.0.0.1:1 (cause: "
                                "ConnectionRefusedError: [Errno 111] Connection refused)")


@given(st.lists(st.floats(min_value=0.0, max_value=5.0), min_size=1, max_size=400))
def test_an_outage_is_two_lines_and_one_per_say_every(gaps: list[float]) -> None:
    log = logging.getLogger("test.repeats")
    clock = FakeClock(START)
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    handler = Keep()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        repeats = Repeats(log, "L2 cache read", "serving it as a miss", clock)
        for gap in gaps:
            clock.advance(gap)
            repeats.failed(wrapped())
        repeats.answered()
        repeats.answered()
    finally:
        log.removeHandler(handler)
    lasted = sum(gaps) - gaps[0]
    assert 2 <= len(said) <= 2 + lasted // SAY_EVERY + 1
    assert said[0].startswith("L2 cache read failed (ConnectionError: ")
    assert "serving it as a miss" in said[0]
    assert all("since 2026-05-28 20:26:4" in line for line in said[1:])
    assert said[-1].startswith(f"L2 cache read works again after {len(gaps)} failures")


def test_a_repeat_says_how_many_and_the_operation(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(START)
    repeats = Repeats(logging.getLogger("test.repeats"), "L2 cache write",
                      lambda: "3 operations queued", clock)
    with caplog.at_level(logging.INFO, logger="test.repeats"):
        for _ in range(40):
            repeats.failed(OSError("down"), "put")
            clock.advance(1.0)
    assert [record.getMessage() for record in caplog.records] == [
        "L2 cache write failed (put: OSError: down); 3 operations queued; said again every "
        "30 s while it fails",
        "L2 cache write still failing since 2026-05-28 20:26:40 UTC: 31 failures in 30 s, "
        "the last put: OSError: down; 3 operations queued"]
    assert all(record.exc_info is None for record in caplog.records)
