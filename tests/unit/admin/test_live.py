"""The live stream's pure parts: the poke debounce and the latest-wins slot (property
tests against simple models; time is an argument)."""

from __future__ import annotations

import asyncio
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.live import Debounce, Latest

DELAY = 0.25
steps = st.lists(st.tuples(st.sampled_from(["poke", "fire"]),
                           st.floats(min_value=0.0, max_value=2.0)), max_size=60)


@given(steps)
def test_debounce_fires_once_per_window_opened_by_a_poke(script: list[tuple[str, float]]) -> None:
    debounce, now, window_start, fired = Debounce(DELAY), 0.0, None, []
    for action, gap in script:
        now += gap
        if action == "poke":
            debounce = debounce.poke(now)
            window_start = now if window_start is None else window_start
            assert debounce.due == window_start + DELAY
        else:
            debounce, due = debounce.fire(now)
            expected = window_start is not None and now >= window_start + DELAY
            assert due is expected
            if due:
                fired.append(now)
                window_start = None
            assert debounce.due == (None if window_start is None else window_start + DELAY)
    assert all(b - a >= DELAY for a, b in pairwise(fired))


def test_a_burst_shorter_than_the_delay_gives_one_event_delay_after_its_first_poke() -> None:
    debounce = Debounce(DELAY)
    for at in (10.0, 10.05, 10.1, 10.2, 10.24):
        debounce = debounce.poke(at)
        debounce, due = debounce.fire(at)
        assert not due
    debounce, due = debounce.fire(10.25)
    assert due and debounce.due is None
    assert debounce.fire(11.0) == (debounce, False)  # nothing poked since: nothing due


@given(st.lists(st.one_of(st.integers(), st.none()), max_size=50))
def test_latest_holds_only_the_newest_item_and_counts_the_skipped(script: list[int | None]) -> None:
    """``int``: a put; ``None``: a take."""
    slot: Latest[int] = Latest()
    held: int | None = None
    skipped = 0
    for step in script:
        if step is None:
            assert slot.take() == held
            held = None
        else:
            skipped += held is not None
            slot.put(step)
            held = step
    assert slot.skipped == skipped
    assert slot.take() == held


async def test_latest_get_waits_for_a_put_or_times_out() -> None:
    slot: Latest[str] = Latest()
    assert await slot.get(0.01) is None
    waiting = asyncio.create_task(slot.get(5.0))
    await asyncio.sleep(0)
    slot.put("a")
    assert await waiting == "a"
    slot.put("b")
    slot.put("c")  # the reader was slow: it gets the newest
    assert await slot.get(5.0) == "c" and slot.skipped == 1
