"""``stoker.Rule``: one cache rule written in Python, validated when it is made.

    Rule(path="/blog/", ttl="5m", swr="30s")

The fields are the keys of a ``[[rule]]`` table in ``stoker.toml`` (docs/configuration.md, "Cache
rules"), with the same meaning and the same parser.

Invariants: a :class:`Rule` that exists is valid (its construction parses it as a
``[[rule]]`` table would be, and a bad field raises :class:`SettingsError` naming it);
:func:`compiled_rules` turns what ``rules=`` was given into the request core's rules, or
raises :class:`SettingsError` naming ``rules`` and the item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from stoker.config import rules as core
from stoker.config.settings import SettingsError


@dataclass(frozen=True)
class Rule:
    """One cache rule (the fields of a ``[[rule]]`` table; see the module)."""

    path: str | None = None
    """A path prefix (``/blog/``) or a glob (``/blog/*.html``); none: every path."""
    ttl: str | float | None = None
    """How long the page is fresh (``"5m"``, ``300``), when the app says nothing."""
    swr: str | float | None = None
    """stale-while-revalidate window."""
    sie: str | float | None = None
    """stale-if-error window."""
    host: str | None = None
    override: bool = False
    """The rule's lifetimes win over the app's own ``Cache-Control``."""
    bypass: bool = False
    ignore_query: Sequence[str] = ()
    bypass_cookies: Sequence[str] = ()
    strip_cookies: Sequence[str] = ()
    strip_set_cookie: bool = False
    vary_ignore_cookies: Sequence[str] = ()
    ignore_cookies: Sequence[str] = ()
    cache_with_cookies: bool = False
    query_has: Sequence[str] = ()
    preset: str | None = None
    _compiled: core.Rule = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            compiled = core.parse_rule(self.table(), 1, "Rule")
        except ValueError as error:
            raise SettingsError(str(error)) from None
        object.__setattr__(self, "_compiled", compiled)

    def table(self) -> dict[str, Any]:
        """The rule as a ``[[rule]]`` table: the fields given (sequences as lists)."""
        table: dict[str, Any] = {}
        for each in fields(self):
            value = getattr(self, each.name) if each.init else None
            if value is None or value is False or value == ():
                continue
            is_list = isinstance(value, Sequence) and not isinstance(value, str)
            table[each.name] = list(value) if is_list else value
        return table

    def compiled(self) -> core.Rule:
        """The request core's rule."""
        return self._compiled


def compiled_rules(given: object) -> object:
    """``rules=`` with every :class:`Rule` compiled; other items (the core's rules, dicts)
    are left for :func:`~stoker.config.settings.settings_from` to validate, and so is a
    value that is not a list or tuple (it refuses it, naming ``rules``)."""
    if not isinstance(given, list | tuple):
        return given
    return [item.compiled() if isinstance(item, Rule) else item for item in given]
