"""What a configuration reload (``SIGHUP``) may change in a running Stoker.

A running process takes the new value of a setting declared ``reload=True`` (the cache
rules and presets, the lifetimes and stale windows Stoker adds, what it stores, the
re-warm's delays: what the request core and the warmer read per request or per purge) and
of the ``[[rules]]`` tables; any other changed setting (listeners, stores, memory
bounds, the origin, the admin token, ...) needs a restart, and is reported as such.

Invariants: :func:`plan` is pure; every setting that differs between the two is in
exactly one of :attr:`Reload.applied` and :attr:`Reload.restart`, in declaration order;
:attr:`Reload.settings` is the running settings with the applied ones replaced (so what
needs a restart keeps the value the process runs with).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from stoker.config.settings import FIELDS, Settings

RULES = "rules"
"""The ``[[rules]]`` tables: a field of :class:`Settings` without a declared setting."""


@dataclass(frozen=True)
class Reload:
    """A reload's plan: which changed settings apply now, which need a restart."""

    settings: Settings
    applied: tuple[str, ...]
    restart: tuple[str, ...]

    def describe(self, running: Settings, wanted: Settings) -> list[str]:
        """One line per changed setting, for the log."""
        lines = [f"reloaded {name}: {_shown(running, name)} -> {_shown(wanted, name)}"
                 for name in self.applied]
        lines += [f"not reloaded {name} (needs a restart): {_shown(running, name)} -> "
                  f"{_shown(wanted, name)}" for name in self.restart]
        return lines


def reloadable(name: str) -> bool:
    """Whether a running Stoker takes a new value of ``name`` on reload."""
    return name == RULES or FIELDS[name].reload


def plan(running: Settings, wanted: Settings) -> Reload:
    """What reloading ``wanted`` into a process running ``running`` does."""
    changed = [name for name in (*FIELDS, RULES)
               if getattr(running, name) != getattr(wanted, name)]
    applied = tuple(name for name in changed if reloadable(name))
    restart = tuple(name for name in changed if not reloadable(name))
    merged = dataclasses.replace(running, **{name: getattr(wanted, name) for name in applied})
    return Reload(merged, applied, restart)


SECRETS = frozenset({"admin_token", "database_url"})
"""Settings whose values are never logged."""


def _shown(settings: Settings, name: str) -> Any:
    value = getattr(settings, name)
    if name == RULES:
        return f"{len(value)} rules"
    if name in SECRETS and value:
        return "(hidden)"
    return value
