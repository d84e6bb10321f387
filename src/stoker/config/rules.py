"""Site-owner cache rules (``[[rule]]`` tables): match a request, say how to cache it.

Pure: parsing and matching take data and return data.

Invariants: rules are tried in order and the first whose host, path and query
match wins; a rule with no ``host`` matches every host, one with no ``path``
every path and one with no ``query_has`` every query; a path containing ``*``,
``?`` or ``[`` is a glob, otherwise a prefix.  ``query_has`` matches when the
query has a parameter whose name (as :func:`query_names` reads it: the origin's
way) matches one of its globs.  Cookie patterns are globs matched against cookie
*names*.
:func:`vary_view` is the request as forwarded, for ``Vary: Cookie``: a cookie
that never reaches the origin (``strip_cookies``) or that the site says does
not change the page (``vary_ignore_cookies``) never splits a URL's variants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import unquote_plus

from stoker.config.presets import expand, get_preset, merge
from stoker.config.units import parse_duration
from stoker.http.headers import get_joined
from stoker.http.policy import RuleTTL

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``[[rule]]`` table."""

    host: str | None = None
    path: str | None = None
    ttl: RuleTTL | None = None
    bypass: bool = False
    ignore_query: tuple[str, ...] = ()
    bypass_cookies: tuple[str, ...] = ()
    strip_cookies: tuple[str, ...] = ()
    vary_ignore_cookies: tuple[str, ...] = ()
    ignore_cookies: tuple[str, ...] = ()
    cache_with_cookies: bool = False
    query_has: tuple[str, ...] = ()

    def matches(self, host: str, path: str, query: str) -> bool:
        """True when this rule applies to a request for ``host`` + ``path`` + ``query``
        (the raw query string, without ``?``)."""
        if self.host is not None and not fnmatchcase(host.lower(), self.host):
            return False
        if self.query_has and not query_has(query, self.query_has):
            return False
        if self.path is None:
            return True
        if _GLOB_CHARS.isdisjoint(self.path):
            return path.startswith(self.path)
        return fnmatchcase(path, self.path)


def match_rule(rules: Sequence[Rule], host: str, path: str, query: str) -> Rule | None:
    """The first rule matching the request, or ``None``."""
    for rule in rules:
        if rule.matches(host, path, query):
            return rule
    return None


def query_names(query: str) -> set[str]:
    """The names of a query string's parameters, as an origin reads them.

    Members are split on ``&`` (empty ones skipped); a name is what comes before the
    first ``=`` (``a=1&unapproved`` names ``a`` and ``unapproved``), ``+`` read as a
    space, percent-decoded as UTF-8 (an invalid sequence replaced, never an error).
    A name is also given as PHP reads it: leading spaces dropped, and an array's
    brackets (``unapproved[]``, ``unapproved[x]``) cut off.
    """
    names: set[str] = set()
    for member in query.split("&"):
        if member:
            name = unquote_plus(member.split("=", 1)[0], errors="replace")
            php = name.lstrip(" ")
            names.update((name, php, php.split("[", 1)[0]))
    return names


def query_has(query: str, patterns: Sequence[str]) -> bool:
    """True when a parameter name of ``query`` (:func:`query_names`) matches a glob."""
    if not query:
        return False
    return any(fnmatchcase(name, pattern) for name in query_names(query) for pattern in patterns)


def cookie_names(cookie_header: str) -> list[str]:
    """Names of the cookies in a ``Cookie`` header value."""
    names = []
    for part in cookie_header.split(";"):
        name = part.split("=", 1)[0].strip()
        if name:
            names.append(name)
    return names


def has_cookie(cookie_header: str | None, patterns: Sequence[str]) -> bool:
    """True when any cookie name matches any glob in ``patterns``."""
    if not cookie_header or not patterns:
        return False
    return any(
        fnmatchcase(name, pattern) for name in cookie_names(cookie_header) for pattern in patterns
    )


def strip_cookies(cookie_header: str, patterns: Sequence[str]) -> str | None:
    """The ``Cookie`` value without cookies matching ``patterns`` (``None`` if none remain)."""
    kept = [
        part.strip()
        for part in cookie_header.split(";")
        if part.strip()
        and not any(
            fnmatchcase(part.split("=", 1)[0].strip(), pattern) for pattern in patterns
        )
    ]
    return "; ".join(kept) or None


def personal_cookies(headers: list[tuple[bytes, bytes]], rule: Rule | None) -> list[str]:
    """Names of the request's cookies that may personalise a page nobody marked shareable.

    Every cookie still on the request after ``strip_cookies`` counts, except those in
    ``ignore_cookies`` or ``vary_ignore_cookies`` (known not to change the page); none
    count under ``cache_with_cookies``.  Order and duplicates are the request's.
    """
    cookie = get_joined(headers, b"cookie")
    if not cookie or (rule is not None and rule.cache_with_cookies):
        return []
    names = cookie_names(cookie)
    if rule is None:
        return names
    known = (*rule.strip_cookies, *rule.ignore_cookies, *rule.vary_ignore_cookies)
    return [name for name in names if not any(fnmatchcase(name, glob) for glob in known)]


def vary_view(headers: list[tuple[bytes, bytes]], rule: Rule | None) -> list[tuple[bytes, bytes]]:
    """``headers`` with Cookie as forwarded, less ``vary_ignore_cookies`` (for Vary).

    Returns ``headers`` itself when the rule changes nothing.
    """
    if rule is None or not (rule.strip_cookies or rule.vary_ignore_cookies):
        return headers
    cookie = get_joined(headers, b"cookie")
    if cookie is None:
        return headers
    kept = strip_cookies(cookie, (*rule.strip_cookies, *rule.vary_ignore_cookies))
    view = [(name, value) for name, value in headers if name != b"cookie"]
    if kept is not None:
        view.append((b"cookie", kept.encode("latin-1")))
    return view


_KEYS = {
    "host", "path", "ttl", "swr", "sie", "override", "bypass", "ignore_query",
    "bypass_cookies", "strip_cookies", "strip_set_cookie", "vary_ignore_cookies",
    "ignore_cookies", "cache_with_cookies", "preset", "query_has",
}


def _strings(raw: Any, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"{where}: {key} must be a list of strings, got {raw!r}")
    return tuple(raw)


def _names(raw: Any, where: str, key: str) -> tuple[str, ...]:
    names = _strings(raw, where, key)
    if not all(names):
        raise ValueError(f"{where}: {key} must not hold an empty name, got {raw!r}")
    return names


def _flag(raw: Any, where: str, key: str) -> bool:
    if not isinstance(raw, bool):
        raise ValueError(f"{where}: {key} must be true or false, got {raw!r}")
    return raw


def _seconds(table: dict[str, Any], key: str, where: str) -> float | None:
    if key not in table:
        return None
    try:
        return parse_duration(table[key])
    except ValueError as error:
        raise ValueError(f"{where}: {key}: {error}") from None


def _optional_text(table: dict[str, Any], key: str, where: str) -> str | None:
    raw = table.get(key)
    if raw is not None and (not isinstance(raw, str) or not raw):
        raise ValueError(f"{where}: {key} must be a non-empty string, got {raw!r}")
    return raw


def parse_rule(table: Any, index: int, where: str | None = None) -> Rule:
    """Validate one ``[[rule]]`` table (``index`` counts from 1 for messages; ``where``
    names it in them instead, e.g. ``rules[0]`` for a rule given in code)."""
    where = where or f"[[rule]] #{index}"
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    preset = _optional_text(table, "preset", where)
    if preset is not None:
        try:
            table = merge(table, get_preset(preset))
        except ValueError as error:
            raise ValueError(f"{where}: preset: {error}") from None
    ttl = RuleTTL(
        ttl=_seconds(table, "ttl", where),
        swr=_seconds(table, "swr", where),
        sie=_seconds(table, "sie", where),
        override=_flag(table.get("override", False), where, "override"),
        strip_set_cookie=_flag(table.get("strip_set_cookie", False), where, "strip_set_cookie"),
    )
    host = _optional_text(table, "host", where)
    return Rule(
        host=host.lower() if host else None,
        path=_optional_text(table, "path", where),
        ttl=ttl,
        bypass=_flag(table.get("bypass", False), where, "bypass"),
        ignore_query=_strings(table.get("ignore_query", []), where, "ignore_query"),
        bypass_cookies=_strings(table.get("bypass_cookies", []), where, "bypass_cookies"),
        strip_cookies=_strings(table.get("strip_cookies", []), where, "strip_cookies"),
        vary_ignore_cookies=_strings(table.get("vary_ignore_cookies", []), where,
                                     "vary_ignore_cookies"),
        ignore_cookies=_strings(table.get("ignore_cookies", []), where, "ignore_cookies"),
        cache_with_cookies=_flag(table.get("cache_with_cookies", False), where,
                                 "cache_with_cookies"),
        query_has=_names(table.get("query_has", []), where, "query_has"),
    )


def rules_from(value: object, argument: str = "rules") -> tuple[Rule, ...]:
    """Rules as code gives them: a list (or tuple) of :class:`Rule` objects and rule
    tables (mappings, validated as ``[[rule]]`` tables are).  Anything else raises
    :class:`ValueError` naming ``argument`` and the item (``rules[2]``).  Pure."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ValueError(f"{argument} must be a list of rules (Rule objects or dicts like "
                         f"{{'path': '/', 'ttl': '5m'}}), got {type(value).__name__}")
    found = []
    for index, item in enumerate(value):
        where = f"{argument}[{index}]"
        if isinstance(item, Rule):
            found.append(item)
        elif isinstance(item, Mapping):
            found.append(parse_rule(dict(item), index + 1, where))
        else:
            raise ValueError(f"{where} must be a Rule or a dict like {{'path': '/', "
                             f"'ttl': '5m'}}, got {type(item).__name__}")
    return tuple(found)


def parse_rules(tables: Any, preset: str | None = None) -> tuple[Rule, ...]:
    """Validate the ``rule`` array of ``stoker.toml``, expanded by a top-level ``preset``.

    The tables are validated as written first, so messages number the user's rules.
    """
    if not isinstance(tables, list):
        raise ValueError("'rule' must be an array of tables: write [[rule]]")
    rules = tuple(parse_rule(table, number) for number, table in enumerate(tables, start=1))
    if preset is None:
        return rules
    return tuple(parse_rule(table, number)
                 for number, table in enumerate(expand(tables, preset), start=1))
