"""What ``stoker check`` looks at without changing anything (issue 39): ``data_dir``'s
writability by :func:`os.access` (of its nearest existing parent when it does not exist
yet), SQLite files opened read-only and only when they exist, PostgreSQL and Redis by
connecting and one trivial query each.

Invariants: nothing here creates, writes or migrates a file, a directory, a table, a
schema or a Redis key; a store not created yet is fine (``stoker serve`` creates and
migrates it at start, ``stoker migrate`` ahead of it); one whose migrations are behind
says so, as a note, not a failure.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from stoker.backends.migrations import component_of
from stoker.config.settings import Settings, SettingsError, looser_data_dir
from stoker.config.settings.checks import refuse_data_dir_under_a_file

SQLITE_MIGRATIONS = "stoker.backends.sqlite.migrations"
POSTGRES_MIGRATIONS = "stoker.backends.postgres.migrations"
WARM_COMPONENTS = ("jobs", "runs", "hits", "pending_urls", "deadlines", "credentials")
"""What the warmer's stores (:func:`stoker.backends.open_database`) migrate when opened."""
CONNECT_TIMEOUT = 5.0


class Unusable(Exception):
    """What a check found wrong, in words for the user."""


def latest_versions(package: str) -> dict[str, int]:
    """Each component's newest migration version in ``package``."""
    from importlib import resources

    latest: dict[str, int] = {}
    for item in resources.files(package).iterdir():
        name = item.name
        if name.endswith(".sql") and name[:4].isdigit():
            component = component_of(name)
            latest[component] = max(latest.get(component, 0), int(name[:4]))
    return latest


def behind(applied: dict[str, int], components: Sequence[str], package: str) -> list[str]:
    """Those of ``components`` whose applied version is older than the newest.  Pure but
    for reading the package's file names."""
    latest = latest_versions(package)
    return [name for name in components if applied.get(name, 0) < latest.get(name, 0)]


def data_dir_usable(settings: Settings) -> str:
    """``data_dir`` is a writable directory, or (missing) its nearest existing parent is
    one ``stoker serve`` can create it in; read only (:func:`os.access`)."""
    path = settings.data_dir
    try:
        refuse_data_dir_under_a_file(settings)
    except SettingsError as error:
        raise Unusable(str(error).removeprefix("data_dir: ")) from None
    if path.exists():
        if not path.is_dir():
            raise Unusable(f"{path} is not a directory; point data_dir (or --data-dir) at one")
        if not os.access(path, os.W_OK | os.X_OK):
            raise Unusable(f"{path} is not writable by this user; make it a directory "
                           "Stoker may write to, or point data_dir elsewhere")
        wrong = looser_data_dir(path)
        if wrong is not None:
            return f"a writable directory; warning: {wrong} (stoker serve makes it so)"
        return "a writable directory"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise Unusable(f"{path} does not exist and {parent} is not writable by this user, so "
                       "stoker serve cannot create it; create it, or point data_dir elsewhere")
    return f"not created yet; stoker serve creates it (in {parent}, writable)"


def sqlite_ledger(path: Path) -> dict[str, int] | None:
    """The applied migrations (component: newest version) of an existing SQLite file,
    opened read-only; ``None`` when it does not exist.  Raises when it is not a database."""
    if not path.exists():
        return None
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_migrations" not in tables:
            return {}
        return dict(conn.execute("SELECT component, max(version) FROM schema_migrations "
                                 "GROUP BY component").fetchall())
    except sqlite3.DatabaseError as error:
        raise Unusable(f"cannot be read as a SQLite database ({error})") from None
    finally:
        conn.close()


async def postgres_ledger(url: str) -> dict[str, int]:
    """Connect to PostgreSQL and read the applied migrations (none when the schema has no
    ledger yet); one connection, closed, and only ``SELECT``s."""
    import asyncpg

    from stoker.backends.postgres.connection import describe

    try:
        conn = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT)
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        raise Unusable(f"cannot connect to PostgreSQL ({describe(url)}): {error}") from None
    try:
        if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
            return {}
        rows = await conn.fetch("SELECT component, max(version) AS version "
                                "FROM schema_migrations GROUP BY component")
        return {row["component"]: row["version"] for row in rows}
    finally:
        await conn.close()


async def ledger(settings: Settings, path: Path) -> tuple[dict[str, int] | None, str]:
    """The applied migrations of the store at ``database_url`` (else SQLite ``path``) and
    the package of its migrations."""
    if settings.database_url:
        return await postgres_ledger(settings.database_url), POSTGRES_MIGRATIONS
    return sqlite_ledger(path), SQLITE_MIGRATIONS


async def store_state(settings: Settings, path: Path, components: Sequence[str]) -> str:
    """What a store is (read only): reachable, and created and migrated or not yet."""
    applied, package = await ledger(settings, path)
    opened = "connected" if settings.database_url else "readable"
    if applied is None:
        return "not created yet; stoker serve creates it"
    if not applied:
        return f"{opened}; no tables yet (stoker serve or stoker migrate creates them)"
    pending = behind(applied, components, package)
    if pending:
        return (f"{opened}; migrations pending for {', '.join(pending)} (stoker serve or "
                "stoker migrate applies them)")
    return f"{opened}; migrated"


async def warm_stores_ready(settings: Settings) -> bool:
    """Whether the warmer's stores are created and migrated, so that opening them
    (:func:`stoker.backends.open_database`) changes nothing."""
    applied, package = await ledger(settings, settings.sqlite_path)
    return bool(applied) and not behind(applied or {}, WARM_COMPONENTS, package)


async def redis_answers(url: str) -> str:
    """Redis at ``url`` answers ``PING`` (one connection, closed; no key touched)."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT)
    try:
        await client.ping()
    finally:
        await client.aclose()
    return "answered PING"


async def postgres_listens(url: str) -> str:
    """PostgreSQL at ``url`` takes a ``LISTEN`` (as the notifier subscribes; nothing
    is stored)."""
    import asyncpg

    from stoker.backends.postgres.connection import describe

    try:
        conn = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT)
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        raise Unusable(f"cannot connect to PostgreSQL ({describe(url)}): {error}") from None
    try:
        await conn.add_listener("stoker_check", lambda *_: None)
    finally:
        await conn.close()
    return "subscribed"
