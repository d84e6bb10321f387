"""Numbered migration files, shared by the SQLite and PostgreSQL migration runners.

Each backend has one migrations package holding every component's files, named
``NNNN_component_description.sql``: the number is the component's version, the first
word after it the component (``0002_jobs_rerun.sql`` is version 2 of ``jobs``).
Invariants: versions and components are read from the file names only, files are
returned in version order, and anything else in the package is ignored. Which files
were applied is each runner's business (its ``schema_migrations`` ledger, keyed by
component and version).
"""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple


class Migration(NamedTuple):
    """One migration file: its version, file name and SQL text."""

    version: int
    name: str
    sql: str


def migration_files(package: str, component: str) -> list[Migration]:
    """Every ``NNNN_component*.sql`` of ``component`` in ``package``, in version order."""
    found = []
    for item in resources.files(package).iterdir():
        name = item.name
        if name.endswith(".sql") and name[:4].isdigit() and component_of(name) == component:
            found.append(Migration(int(name[:4]), name, item.read_text(encoding="utf-8")))
    return sorted(found)


def component_of(name: str) -> str:
    """The component a migration file belongs to: the first word after its number."""
    return name[5:].removesuffix(".sql").split("_")[0]
