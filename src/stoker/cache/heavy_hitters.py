"""The most frequent keys of a stream in bounded memory: Metwally, Agrawal and El Abbadi's
space-saving counter ("Efficient Computation of Frequent and Top-k Elements in Data
Streams", ICDT 2005).  Pure: no clock, no I/O.

A :class:`SpaceSaving` keeps at most ``capacity`` keys, each with a ``count`` and an
``error``.  A key not kept that arrives takes the place of the key with the smallest
count, and inherits that count (as its ``error``) plus one.

Invariants, for a stream of ``total`` additions (weights summed):
- at most ``capacity`` keys are kept, and the counts of the kept keys sum to ``total``
  (with no key kept while nothing was added);
- a kept key's true frequency ``f`` satisfies ``count - error <= f <= count``;
- every key whose true frequency exceeds ``total / capacity`` is kept;
- while no more than ``capacity`` distinct keys arrived, every count is exact
  (``error == 0``).

:func:`merged` adds summaries (one per process) into one of the same capacity; its
counts are those summed (a key one summary dropped adds nothing from it), so a merged
count is a lower bound wherever a summary had evicted the key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Counted(Generic[K]):
    """One kept key: ``count`` over-estimates its frequency by at most ``error``."""

    key: K
    count: int
    error: int = 0


class SpaceSaving(Generic[K]):
    """The top keys of a stream, in at most ``capacity`` counters (see the module)."""

    __slots__ = ("_counts", "_errors", "capacity", "total")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a space-saving counter needs a capacity of at least 1, "
                             f"got {capacity}")
        self.capacity = capacity
        self.total = 0
        self._counts: dict[K, int] = {}
        self._errors: dict[K, int] = {}

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, key: K, weight: int = 1) -> None:
        """Count ``weight`` (> 0) more arrivals of ``key``."""
        counts = self._counts
        self.total += weight
        if key in counts:
            counts[key] += weight
            return
        if len(counts) < self.capacity:
            counts[key] = weight
            self._errors[key] = 0
            return
        smallest = min(counts, key=counts.__getitem__)
        floor = counts.pop(smallest)
        del self._errors[smallest]
        counts[key] = floor + weight
        self._errors[key] = floor

    def top(self, limit: int | None = None) -> list[Counted[K]]:
        """The kept keys, highest count first (among equals, the smaller error first,
        then the key first added), at most ``limit`` of them."""
        ranked = sorted(self._counts.items(),
                        key=lambda item: (-item[1], self._errors[item[0]]))
        return [Counted(key, count, self._errors[key]) for key, count in ranked[:limit]]


def merged(summaries: Iterable[Iterable[Counted[K]]], capacity: int) -> list[Counted[K]]:
    """The ``capacity`` highest keys of ``summaries`` added together (counts and errors
    summed per key), highest count first.  Pure."""
    counts: dict[K, int] = {}
    errors: dict[K, int] = {}
    for summary in summaries:
        for item in summary:
            counts[item.key] = counts.get(item.key, 0) + item.count
            errors[item.key] = errors.get(item.key, 0) + item.error
    ranked = sorted(counts.items(), key=lambda item: (-item[1], errors[item[0]]))
    return [Counted(key, count, errors[key]) for key, count in ranked[:capacity]]
