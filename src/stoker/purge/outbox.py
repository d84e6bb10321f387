"""The purges this process put in force but could not relay yet: what the relay keeps
while the purge bus does not answer, and the one rule for keeping them bounded.

Each purge the relay takes is numbered by a *ticket* of this process (1, 2, ...); an
:class:`Outgoing` is what is published for one or more of them, and ``upto`` the
highest ticket it stands for (0: none on its own), so once it is on the bus every ticket
up to ``upto`` is relayed.  The relay publishes the outbox oldest first.

Invariants (:func:`kept` and :func:`folded` are pure):

- The outbox is in the order the purges were taken; publishing it in order relays each
  purge, or a purge that covers it, and the ``upto`` of what was published only grows.
- It holds at most ``most`` items.  A hard purge of everything replaces the whole outbox
  (what it held is purged by the new cache version anyway); past ``most``, the outbox is
  folded into at most three: the hard purge of everything it starts with (if any), then
  one soft purge of every scope purged soft after it, then one hard purge of every scope
  purged hard after it.  Soft stays soft and hard stays hard: once applied, an entry any
  of them covered hard is gone, and one covered only soft is stale from the earliest soft
  purge's time, as when they are applied one by one.  The marks stay bounded in number;
  a folded mark holds the union of the scopes it folds (no more than they held).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from stoker.purge.list import PurgeMark

MOST: Final = 1000
"""Most items kept while the bus does not answer."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One purge to publish: its mark, the cache version a hard purge of everything
    switched to, and the highest ticket it stands for."""

    mark: PurgeMark
    version: str | None
    upto: int


def kept(outbox: tuple[Outgoing, ...], item: Outgoing,
         most: int = MOST) -> tuple[Outgoing, ...]:
    """``outbox`` with ``item`` taken after what it holds (see the module invariants)."""
    if item.version is not None:
        return (item,)
    grown = (*outbox, item)
    return grown if len(grown) <= most else folded(grown)


def folded(outbox: Sequence[Outgoing]) -> tuple[Outgoing, ...]:
    """``outbox`` as at most three items: its leading hard purge of everything, the soft
    scopes after it in one mark, then the hard ones; the last carries the highest
    ticket."""
    lead = tuple(outbox[:1]) if outbox and outbox[0].version is not None else ()
    rest = outbox[len(lead):]
    marks = [merged([one.mark for one in rest if one.mark.soft == soft])
             for soft in (True, False)]
    tail = [Outgoing(mark, None, 0) for mark in marks if mark is not None]
    if not tail:
        return lead
    tail[-1] = replace(tail[-1], upto=max(one.upto for one in outbox))
    return (*lead, *tail)


def merged(marks: Sequence[PurgeMark]) -> PurgeMark | None:
    """One mark covering what each of ``marks`` (all soft or all hard) covers, at the
    earliest of their times; None for none."""
    if not marks:
        return None
    return replace(marks[0], now=min(mark.now for mark in marks),
                   keys=frozenset().union(*(mark.keys for mark in marks)),
                   prefixes=tuple(dict.fromkeys(p for mark in marks for p in mark.prefixes)),
                   tags=frozenset().union(*(mark.tags for mark in marks)),
                   everything=any(mark.everything for mark in marks))
