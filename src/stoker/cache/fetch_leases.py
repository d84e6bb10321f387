"""Fetch leases: which member of a shared cache is fetching a key from the origin.

Requests collapse within a process (:mod:`stoker.cache.collapse`); a lease makes the
processes (or nodes) sharing one persistent tier collapse too: the first to take a
key's lease fetches it, the others wait for its entry to reach the shared tier.

Invariants (every implementation): at most one unexpired lease per key; :meth:`take`
succeeds when the key has none or only an expired one; :meth:`release` removes a lease
only for its owner; a lease of a member that died expires by itself.
"""

from __future__ import annotations

from typing import Protocol


class FetchLeases(Protocol):
    """Where the members of one cache take and give back fetch leases."""

    async def take(self, key: str, owner: str, until: float, now: float) -> bool:
        """Take ``key``'s lease for ``owner`` until ``until`` (wall clock); whether taken."""

    async def held(self, key: str, now: float) -> bool:
        """Whether someone holds an unexpired lease on ``key``."""

    async def release(self, key: str, owner: str) -> None:
        """Give ``owner``'s lease on ``key`` back (nothing when it holds none)."""

    async def close(self) -> None: ...
