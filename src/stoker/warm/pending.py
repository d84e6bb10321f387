"""The ``PendingUrls`` port: purged URLs waiting for their debounced re-warm.

A burst of purges adds URLs here while the ``rewarm`` deadline is pushed back;
when it fires, the warmer takes them all and starts one targeted run. Kept in
the database, so URLs purged before a restart are re-warmed after it.
Implemented by the SQLite and PostgreSQL backends; both pass
tests/contract/test_pending_urls.py.

Invariants: a URL is pending at most once (adding it again keeps its first
time); ``take`` removes and returns what it returns in one transaction, oldest
first, so two processes taking at once never both get a URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

TAKE_LIMIT: Final = 100_000


class PendingUrls(Protocol):
    """URLs waiting for a re-warm."""

    async def add(self, urls: Sequence[str], now: float) -> int:
        """Add ``urls``; return how many were not pending yet."""

    async def take(self, limit: int = TAKE_LIMIT) -> list[str]:
        """Remove and return up to ``limit`` URLs, the longest pending first."""

    async def count(self) -> int:
        """How many URLs are pending."""

    async def oldest(self, limit: int) -> list[str]:
        """Up to ``limit`` pending URLs, the longest pending first, left pending (one index
        range read: the overview's "cold now")."""

    async def aclose(self) -> None:
        """Release connections (idempotent)."""
