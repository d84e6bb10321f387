"""Numbered migration files, shared by the SQLite and PostgreSQL migration runners.

A migrations package holds files named ``NNNN_description.sql``; the number is
the version. Invariants: versions are read from the file names only, files are
returned in version order, and anything else in the package is ignored. Which
files were applied is each runner's business (its ``schema_migrations`` ledger).
"""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple


class Migration(NamedTuple):
    """One migration file: its version, file name and SQL text."""

    version: int
    name: str
    sql: str


def migration_files(package: str) -> list[Migration]:
    """Every ``NNNN_*.sql`` in ``package``, in version order."""
    found = []
    for item in resources.files(package).iterdir():
        name = item.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append(Migration(int(name[:4]), name, item.read_text(encoding="utf-8")))
    return sorted(found)
