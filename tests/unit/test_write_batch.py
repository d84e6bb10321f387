"""WriteBatch: the hit bytes of one loop iteration are written together at its end."""

from __future__ import annotations

import asyncio

from stoker.server.front.batch import WriteBatch


class Holder:
    def __init__(self, name: str, written: list[str]) -> None:
        self.loop = asyncio.get_running_loop()
        self.name = name
        self.written = written

    def release(self) -> None:
        self.written.append(self.name)


async def test_holders_are_released_once_at_the_end_of_the_iteration_in_order() -> None:
    written: list[str] = []
    batch = WriteBatch()
    first, second = Holder("first", written), Holder("second", written)
    batch.hold(first)
    batch.hold(second)
    assert written == []  # nothing leaves while the iteration's callbacks run
    await asyncio.sleep(0)
    assert written == ["first", "second"]
    batch.hold(second)  # the next iteration is a new batch
    await asyncio.sleep(0)
    assert written == ["first", "second", "second"]


async def test_a_later_task_runs_after_the_batch_it_followed() -> None:
    """An ASGI response to a later request starts in a task: after the held bytes."""
    written: list[str] = []
    batch = WriteBatch()
    batch.hold(Holder("hit", written))

    async def later_response() -> None:
        written.append("asgi")

    await asyncio.get_running_loop().create_task(later_response())
    assert written == ["hit", "asgi"]
