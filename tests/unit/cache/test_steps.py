"""Steps: chunks handed out in order, a yield exactly when a step has used its budget."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from hypothesis import given
from hypothesis import strategies as st

from stoker.cache.steps import Pacer, Steps


class Timer:
    """A fake timer; the walk advances it by each chunk's cost."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def walk(steps: Steps, timer: Timer, items: list[int], size: int, costs: list[float],
               ended: list[int] | None = None) -> tuple[list[int], list[int]]:
    """Walk ``items``; return what was handed out and the step number of each chunk (and
    record in ``ended`` how many chunks had been handed out whenever a step ended)."""
    yields = 0
    stop = asyncio.Event()

    async def count_yields() -> None:
        nonlocal yields
        while not stop.is_set():
            yields += 1
            await asyncio.sleep(0)

    counter = asyncio.get_running_loop().create_task(count_yields())
    await asyncio.sleep(0)
    handed: list[int] = []
    step_of: list[int] = []
    base = yields
    after_step = None if ended is None else lambda: ended.append(len(step_of))
    async for index, chunk in aenumerate(steps.chunks(items, size, after_step)):
        step_of.append(yields - base)
        handed.extend(chunk)
        timer.now += costs[index % len(costs)]
    stop.set()
    await counter
    return handed, step_of


async def aenumerate(chunks: AsyncIterator[Sequence[int]]
                     ) -> AsyncIterator[tuple[int, Sequence[int]]]:
    index = 0
    async for chunk in chunks:
        yield index, chunk
        index += 1


TICKS = st.integers(0, 6).map(lambda n: n / 2048)  # binary fractions: sums stay exact


@given(st.lists(st.integers(), max_size=60), st.integers(1, 7),
       st.lists(TICKS, min_size=1, max_size=5), st.sampled_from([0.0, 4 / 2048]))
def test_every_item_once_in_order_and_a_yield_exactly_when_the_budget_is_used(
        items: list[int], size: int, costs: list[float], budget: float) -> None:
    timer, ended = Timer(), list[int]()
    handed, step_of = asyncio.run(walk(Steps(timer, budget), timer, items, size, costs, ended))
    assert handed == items
    # replay: chunk k starts a new step iff the time since the last yield reached the budget
    spent, step, expected = 0.0, 0, []
    for index in range(len(step_of)):
        if index and spent >= budget:
            step, spent = step + 1, 0.0
        expected.append(step)
        spent += costs[index % len(costs)]
    assert [s - step_of[0] for s in step_of] == expected
    # after_step ran where each step ended (before its yield) and after the last chunk
    assert ended == [k for k in range(1, len(expected)) if expected[k] != expected[k - 1]] + (
        [len(expected)] if expected else [])


def test_a_fast_walk_is_one_step_and_a_zero_budget_yields_between_chunks() -> None:
    timer = Timer()
    _, fast = asyncio.run(walk(Steps(timer, 1.0), timer, list(range(100)), 10, [0.001]))
    assert len(set(fast)) == 1
    _, each = asyncio.run(walk(Steps(timer, 0.0), timer, list(range(100)), 10, [0.0]))
    assert len(set(each)) == 10


def test_a_pacer_yields_once_a_step_has_used_its_budget() -> None:
    async def run() -> list[int]:
        timer = Timer()
        pace = Pacer(timer, budget=0.002)
        loop_turns: list[int] = []
        turns = 0

        async def count() -> None:
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        counter = asyncio.get_running_loop().create_task(count())
        await asyncio.sleep(0)
        for _ in range(6):  # units of 1 ms: a step takes two
            timer.now += 0.001
            before = turns
            await pace()
            loop_turns.append(turns - before)
        counter.cancel()
        return loop_turns

    assert asyncio.run(run()) == [0, 1, 0, 1, 0, 1]
