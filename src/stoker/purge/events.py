"""Purge events: an in-process publish/subscribe hook.

The warmer subscribes to re-warm exactly what a purge made cold; a
multi-node setup subscribes to broadcast L1 drops.

Invariants:
- Subscribers are called in subscription order with ``(scope, keys, urls)``:
  the :class:`~stoker.purge.scope.PurgeScope`, the primary keys the
  purge touched (empty for a purge of everything) and their URLs.
- A subscriber that raises is logged on ``stoker.purge`` and skipped; it
  never fails the purge or stops later subscribers.  Subscribers are awaited,
  so they should schedule work rather than do it.
- Unsubscribing is idempotent, and safe during a publish (the publish works
  on a snapshot of the subscribers).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from stoker.purge.scope import PurgeScope

log = logging.getLogger("stoker.purge")

PurgeCallback = Callable[[PurgeScope, Sequence[str], Sequence[str]], Awaitable[None]]


class PurgeEvents:
    """The subscribers to purges in this process."""

    def __init__(self) -> None:
        self._subscribers: list[PurgeCallback] = []

    def subscribe(self, callback: PurgeCallback) -> Callable[[], None]:
        """Call ``callback`` after every purge; return a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def publish(self, scope: PurgeScope, keys: Sequence[str], urls: Sequence[str]) -> None:
        """Tell every subscriber about one purge (see the module invariants)."""
        for callback in list(self._subscribers):
            try:
                await callback(scope, keys, urls)
            except Exception:
                log.exception("purge subscriber %r failed; the purge itself succeeded", callback)

    def __len__(self) -> int:
        return len(self._subscribers)
