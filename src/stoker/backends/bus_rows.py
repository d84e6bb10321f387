"""A relayed purge as a row of the ``purge_bus`` table, the same on every backend.

SQLite and PostgreSQL keep the same columns: ``number, sender, published_at, purged_at,
soft, keys, prefixes, tags, everything, version``.

Invariants: a row holds the mark's scope as JSON arrays of strings (keys and tags sorted,
prefixes in their order), its softness, its wall-clock time (``published_at`` and
``purged_at`` both) and the version a purge of everything switched to; reading the row
back gives the :class:`~stoker.purge.bus.Relayed` that was published, its mark's
``seq`` and ``at`` zero (the sender's own, meaningless to the others).  Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from stoker.purge.bus import Relayed
from stoker.purge.list import PurgeMark


def publish_values(sender: str, mark: PurgeMark, version: str | None) -> tuple[Any, ...]:
    """The values of a published row, in column order from ``sender`` to ``version``."""
    return (sender, mark.now, mark.now, mark.soft, json.dumps(sorted(mark.keys)),
            json.dumps(list(mark.prefixes)), json.dumps(sorted(mark.tags)), mark.everything,
            version)


def relayed(row: Sequence[Any]) -> Relayed:
    """The purge a row read as ``number, sender, purged_at, soft, keys, prefixes, tags,
    everything, version`` carries."""
    number, sender, purged_at, soft, keys, prefixes, tags, everything, version = row
    mark = PurgeMark(0, 0.0, float(purged_at), bool(soft), frozenset(json.loads(keys)),
                     tuple(json.loads(prefixes)), frozenset(json.loads(tags)), bool(everything))
    return Relayed(int(number), str(sender), mark, None if version is None else str(version))
