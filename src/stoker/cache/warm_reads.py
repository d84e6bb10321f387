"""Whether warming pays: entries a warm visit stored, and how many a visitor then read.

A warm visit that stores a response calls :meth:`WarmReads.note_stored` with its URL; a
visitor's hit calls :meth:`WarmReads.note_read`.  ``stored`` counts the warm stores,
``read`` the URLs a warm visit stored that a visitor then read from the cache: their
ratio is the share of warm work visitors used (an origin warmed that no visitor uses
shows as stores without reads).

Invariants (one event loop; every method synchronous):
- a URL counts in ``read`` at most once per warm store: its first visitor hit after the
  store counts, later hits do not, until a warm visit stores it again;
- at most ``max_urls`` URLs wait for their first read, the oldest stores forgotten first
  (a URL forgotten, then read, is not counted: ``read`` never over-counts);
- counts are this process's (warm visits and hits of other processes are theirs).
"""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_URLS: Final = 100_000


class WarmReads:
    """The warm stores and their first visitor reads (see the module docstring)."""

    __slots__ = ("_max_urls", "_waiting", "read", "stored")

    def __init__(self, max_urls: int = DEFAULT_MAX_URLS) -> None:
        if max_urls < 1:
            raise ValueError(f"WarmReads needs max_urls of at least 1, got {max_urls}")
        self._max_urls = max_urls
        self._waiting: dict[str, None] = {}
        self.stored = 0
        """Responses warm visits stored."""
        self.read = 0
        """URLs a warm visit stored that a visitor then read (once per store)."""

    def note_stored(self, url: str) -> None:
        """A warm visit stored ``url``'s response."""
        self.stored += 1
        waiting = self._waiting
        waiting.pop(url, None)
        if len(waiting) >= self._max_urls:
            del waiting[next(iter(waiting))]
        waiting[url] = None

    def note_read(self, url: str) -> None:
        """A visitor read ``url`` from the cache."""
        if self._waiting and self._waiting.pop(url, 0) is None:
            self.read += 1
