"""The SQLite :class:`~stoker.purge.bus.PurgeBus`: purges relayed between the
processes of one machine through the file they share (``data_dir/cache.db``).

Lifecycle: ``bus = await SqlitePurgeBus.open(path)``; ``await bus.close()``.

Invariants (beyond the port's): one thread of its own owns the connection, at the
loop's priority (a purge call waits on it); numbers are SQLite's ``AUTOINCREMENT`` row
ids, so they only grow, across processes too; every statement is one transaction; the
schema comes from the ``bus`` migrations, a row's values from
:mod:`stoker.backends.bus_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from stoker.backends.bus_rows import publish_values, relayed
from stoker.backends.sqlite.connection import SqliteThread
from stoker.purge.bus import Member, Relayed
from stoker.purge.list import PurgeMark

COMPONENT: Final = "bus"
_PUBLISH: Final = """
INSERT INTO purge_bus (sender, published_at, purged_at, soft, keys, prefixes, tags,
                       everything, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING number
"""
_SINCE: Final = """
SELECT number, sender, purged_at, soft, keys, prefixes, tags, everything, version
FROM purge_bus WHERE number > ? ORDER BY number
"""
_LATEST: Final = "SELECT coalesce(max(number), 0) FROM purge_bus"
_CONFIRM: Final = """
INSERT INTO purge_members (name, confirmed, seen_at, figures) VALUES (?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET confirmed = max(confirmed, excluded.confirmed),
                                 figures = coalesce(excluded.figures, figures),
                                 seen_at = excluded.seen_at
"""
_MEMBERS: Final = "SELECT name, confirmed, seen_at, figures FROM purge_members ORDER BY name"
_LEAVE: Final = "DELETE FROM purge_members WHERE name = ?"
_TRIM: Final = """
DELETE FROM purge_bus WHERE published_at < ?
AND number < (SELECT max(number) FROM purge_bus)
"""
"""The newest row stays: AUTOINCREMENT then keeps numbering above it, and a member
joining reads it as the number to start from."""


class SqlitePurgeBus:
    """The purge bus on a SQLite file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteThread(path, COMPONENT, (COMPONENT,), background=False)

    @classmethod
    async def open(cls, path: Path) -> SqlitePurgeBus:
        """Connect and migrate."""
        bus = cls(path)
        await bus._db.start()
        return bus

    async def publish(self, sender: str, mark: PurgeMark, version: str | None) -> int:
        row = publish_values(sender, mark, version)
        number: int = await self._db.run(lambda conn: conn.execute(_PUBLISH, row).fetchone()[0])
        return number

    async def since(self, number: int) -> Sequence[Relayed]:
        rows = await self._db.run(lambda conn: conn.execute(_SINCE, (number,)).fetchall())
        return [relayed(row) for row in rows]

    async def latest(self) -> int:
        latest: int = await self._db.run(lambda conn: conn.execute(_LATEST).fetchone()[0])
        return latest

    async def confirm(self, member: str, number: int, now: float,
                      figures: str | None = None) -> None:
        await self._db.run(lambda conn: conn.execute(_CONFIRM, (member, number, now, figures)))

    async def members(self) -> Sequence[Member]:
        rows = await self._db.run(lambda conn: conn.execute(_MEMBERS).fetchall())
        return [Member(*row) for row in rows]

    async def leave(self, member: str) -> None:
        await self._db.run(lambda conn: conn.execute(_LEAVE, (member,)))

    async def trim(self, before: float) -> None:
        await self._db.run(lambda conn: conn.execute(_TRIM, (before,)))

    async def close(self) -> None:
        await self._db.close()
