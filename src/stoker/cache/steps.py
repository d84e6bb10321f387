"""Work proportional to the cache's size, split into event-loop steps by time.

A purge or a reclaim walks thousands of entries on the event loop.  Walking them in
one go stalls every request for that long; yielding after every few entries lets
requests through, but each yield also waits for one round of them, so the walk takes
as many rounds as it has chunks.  :class:`Steps` yields once a step has used its
time ``budget``: a request waits at most one step, and the walk takes as few rounds
as its CPU time allows.

Invariants: a step runs whole chunks and no more of them than fit the budget, plus
the one that crossed it (so a step lasts at most ``budget`` plus one chunk's work,
garbage collection aside); every item is handed out exactly once, in order; the
first chunk comes without a yield (a caller that starts a walk has just been
scheduled); a ``budget`` of 0 yields before every chunk but the first.  With a
``pause``, each yield sleeps that long, so background work that has no deadline
leaves the loop to requests most of the time.  An ``after_step`` callback runs at the
end of every step, before its yield, and after the last one.

:class:`Pacer` is the same rule for work that is not a sequence (a sitemap parsed as it
arrives): called between units of work, it yields once the step has used its budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

STEP_BUDGET = 0.002
"""Seconds of event-loop time one step of a purge or reclaim may use."""


class Pacer:
    """Yields to the event loop, between units of work, once a step has used its budget.

    The first step begins when the pacer is made (its maker has just been scheduled).
    """

    def __init__(self, timer: Callable[[], float], budget: float = STEP_BUDGET,
                 pause: float = 0.0) -> None:
        self.budget = budget
        self.pause = pause
        self._timer = timer  # seconds, monotonic: the injected clock's ``monotonic``
        self._started = timer()

    async def __call__(self, after_step: Callable[[], None] | None = None) -> None:
        """Go on while the step is within budget; else end it (calling ``after_step``),
        yield to the loop (for ``pause`` seconds) and return when the next step begins."""
        if self._timer() - self._started < self.budget:
            return
        if after_step is not None:
            after_step()
        await asyncio.sleep(self.pause)
        self._started = self._timer()


class Steps:
    """Hands out chunks of a sequence, yielding to the event loop between steps."""

    def __init__(self, timer: Callable[[], float], budget: float = STEP_BUDGET,
                 pause: float = 0.0) -> None:
        self.budget = budget
        self.pause = pause
        self._timer = timer  # seconds, monotonic: the injected clock's ``monotonic``

    async def chunks(self, items: Sequence[T], size: int,
                     after_step: Callable[[], None] | None = None
                     ) -> AsyncIterator[Sequence[T]]:
        """``items`` in chunks of ``size``; the time a caller spends on the chunks it
        was handed counts toward the step that handed them out."""
        pace = Pacer(self._timer, self.budget, self.pause)
        for start in range(0, len(items), size):
            if start:
                await pace(after_step)
            yield items[start:start + size]
        if after_step is not None and items:
            after_step()
