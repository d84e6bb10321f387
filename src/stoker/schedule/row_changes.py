"""The writes of a ``DeadlineStore`` expressed once, as changes of one locked row.

Both backends inherit :class:`RowChanges` and supply only ``_change`` and ``list``; what each
write does is decided by the pure functions of :mod:`stoker.schedule.deadlines`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeVar

from stoker.schedule import deadlines
from stoker.schedule.store import ArmMode, Deadline

R = TypeVar("R", bound="Deadline | None")


class RowChanges(ABC):
    """The writes of a :class:`DeadlineStore` as changes of one locked row: a backend
    supplies :meth:`_change` (lock ``name``'s row — inserting it first with ``create`` —,
    apply ``change`` to it, write the result unless ``None``) and gets the rest; the
    decisions are :mod:`stoker.schedule.deadlines`'s."""

    @abstractmethod
    async def _change(self, name: str, change: Callable[[Deadline | None], R], *,
                      create: bool = False) -> R:
        """Lock ``name``'s row (insert it first with ``create``), apply ``change``, write
        the result unless ``None``; return it."""

    @abstractmethod
    async def list(self) -> Sequence[Deadline]:
        """Every row, by name."""

    async def next_due(self) -> float | None:
        return deadlines.next_wake(await self.list())

    async def arm(self, name: str, mode: ArmMode, now: float, delay: float,
                  max_wait: float | None = None) -> Deadline:
        return await self._change(
            name, lambda row: deadlines.armed(row, name, mode, now, delay, max_wait),
            create=True)

    async def claim(self, name: str, owner: str, now: float, lease: float, *,
                    force: bool = False) -> Deadline | None:
        return await self._change(
            name, lambda row: deadlines.claimed(row, owner, now, lease, force=force))

    async def complete(self, name: str, owner: str, now: float) -> bool:
        done = await self._change(name, lambda row: deadlines.completed(row, owner, now))
        return done is not None

    async def fail(self, name: str, owner: str, now: float, retry_delay: float,
                   error: str) -> bool:
        failed = await self._change(
            name, lambda row: deadlines.failed(row, owner, now, retry_delay, error))
        return failed is not None

