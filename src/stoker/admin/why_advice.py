"""The change that would make what the cache left out cacheable — or why it is right not
to cache it: a pure function from one reason's figures (a
:class:`~stoker.cache.not_cached.NotCachedLog` snapshot entry) to :class:`Advice`.

Invariants:
- Pure and total: any reason, count and detail gives advice (an unknown reason gets a
  general one), none raises.
- What is private by the origin's or the client's word (``set-cookie``, ``private``,
  ``authorization``; a session cookie; a client's ``no-store``) is never advised into
  the cache: its advice is :data:`RIGHT` (it says why not caching is right) or
  :data:`ORIGIN` (what to fix at the origin), with no ``config``.
- A cookie that matches any preset's personal pattern
  (:func:`~stoker.config.platform_cookies.is_personal`) is never advised into a list
  that lets pages be shared across it (``strip_cookies``, ``ignore_cookies``,
  ``vary_ignore_cookies``): a platform's own (``comment_author_*``, ``woocommerce_*``,
  ``django_language``, …) gets its platform's ``preset = "…"`` line, which bypasses the
  cache for it; a session cookie is right not to share.  Another cookie a preset lists
  as harmless (``csrftoken``, ``wp-settings-*``) gets that preset's line too: its lists
  know which such cookies must still reach the origin.
- Only :data:`CHANGE` advice carries ``config``: a ``stoker.toml`` fragment written
  with the project's own keys — a ``[[rule]]`` table (``path``/``host``/``ttl``,
  ``strip_cookies``, ``ignore_cookies``) that :func:`~stoker.config.rules.parse_rules`
  accepts, the lines of such a table to add to the rule that matches the pages (the
  first rule that matches wins, so a new rule after it would never apply), a
  ``preset`` line, or a setting (``max_object_bytes``).
- ``no-freshness`` is grouped by section (a URL's first path segment): a section with
  at least :data:`SECTION_SHARE` of the reason's responses gets a rule for its path
  (at most :data:`SECTIONS_ADVISED`), unless those cover less than half of the
  responses or one is the home page: then one catch-all rule (no ``path``).  Where a
  rule of the site's already matches the path (the first match wins, so a new rule
  after it would never apply), the advice is to add ``ttl`` to that rule instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final
from urllib.parse import urlsplit

from stoker.config.platform_cookies import platform_cookie
from stoker.config.presets import ANALYTICS_COOKIES, CONSENT_COOKIES, SESSION_COOKIES, to_toml
from stoker.config.rules import Rule, match_rule
from stoker.config.units import format_size

CHANGE: Final = "change"
"""A change to Stoker's configuration makes these cacheable (``config`` says it)."""
ORIGIN: Final = "origin"
"""Only the origin can make these cacheable: what it should send instead."""
RIGHT: Final = "right"
"""It is right not to cache these: why."""

SUGGESTED_TTL: Final = "5m"
SECTION_SHARE: Final = 0.1
SECTIONS_ADVISED: Final = 3


@dataclass(frozen=True, slots=True)
class Site:
    """What the advice needs to know of the configuration."""

    rules: tuple[Rule, ...] = ()
    requests: int = 0
    """Requests answered (the base of a cookie's share)."""
    size_setting: str = "max_object_bytes"
    size_limit: int = 1 << 30


@dataclass(frozen=True, slots=True)
class Advice:
    """One piece of advice: its kind (:data:`CHANGE`, :data:`ORIGIN`, :data:`RIGHT`), the
    sentence, and for a change the ``stoker.toml`` fragment that makes it."""

    kind: str
    text: str
    config: str | None = None
    about: Mapping[str, Any] = field(default_factory=dict)
    """What it is about: ``{"path": …}``, ``{"cookie": …}``, ``{"status": …}``."""

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "config": self.config,
                "about": dict(self.about)}


def advise(found: Mapping[str, Any], site: Site) -> list[Advice]:
    """The advice for one reason's figures (``{"reason", "count", "details", "sections"}``
    as a snapshot has them), most important first.  Pure."""
    reason: str = found["reason"]
    figures = _Figures(reason, found["count"], found.get("details") or {},
                       found.get("sections") or [])
    advised = _BY_REASON.get(reason)
    if advised is not None:
        return advised(figures, site)
    kind, text = FIXED.get(reason, (ORIGIN, _UNKNOWN))
    counted = _requests(figures.count) if reason in REQUEST_REASONS else _responses(
        figures.count)
    return [Advice(kind, f"{counted}: {text.format(reason=reason)}")]


@dataclass(frozen=True, slots=True)
class _Figures:
    reason: str
    count: int
    details: Mapping[str, int]
    sections: Sequence[Sequence[Any]]

    def ranked(self) -> list[tuple[str, int]]:
        """The details, most counted first (then by name)."""
        return sorted(self.details.items(), key=lambda item: (-item[1], item[0]))


REQUEST_REASONS: Final = frozenset({"method", "bypass", "request"})
"""Reasons that count requests which bypassed the cache (the others count responses)."""

_UNKNOWN = "not cached for the reason `{reason}` (as its `Cache-Status` says)"

FIXED: Final[Mapping[str, tuple[str, str]]] = {
    "private": (RIGHT, "the origin marks them `private` (for one visitor): right not to "
                "share them. If a page is the same for everyone, have the origin send "
                "`Cache-Control: public, max-age=…` instead"),
    "authorization": (RIGHT, "requests with `Authorization` get a user's own answer: right "
                      "not to share them (RFC 9111 §3.5). A response that is the same for "
                      "every user can say so at the origin with `Cache-Control: public` or "
                      "`s-maxage`"),
    "no-store": (ORIGIN, "the origin says `no-store`, which no rule overrides. If these "
                 "pages are the same for everyone, have the origin send "
                 "`CDN-Cache-Control: max-age=…` (Stoker's lifetime; browsers still get "
                 "its `Cache-Control`)"),
    "vary-star": (ORIGIN, "the origin sends `Vary: *`, which no request ever matches "
                  "(RFC 9111 §4.1): have it name the request headers the page depends on "
                  "(`Vary: Accept-Language`), or send no Vary"),
    "must-understand": (ORIGIN, "the origin says `must-understand` for a status whose "
                        "caching rules Stoker does not know: send a lifetime without it"),
    "partial": (RIGHT, "the origin answered part of a body (206): Stoker stores whole "
                "responses only"),
    "method": (RIGHT, "these requests' methods (POST, PUT, …) change state or are not "
               "cacheable: always sent to the origin"),
    "request": (RIGHT, "clients sent `Cache-Control: no-store`: Stoker lets such "
                "requests through to the origin"),
    "stopgap": (RIGHT, "the origin answered a placeholder (the `stopgap_header`, 202 or "
                "503): never stored; the warmer visits such pages again"),
    "incomplete": (ORIGIN, "the origin broke off the body: see the origin's logs"),
    "corrupt-coding": (ORIGIN, "the origin's compressed body did not decode: see the "
                       "origin's compression"),
    "disk-error": (CHANGE, "writing the body to `data_dir` failed: see the log and the "
                   "disk's free space"),
    "purged": (RIGHT, "a purge came while they were being fetched: the old copy is never "
               "stored"),
}


def _responses(count: int) -> str:
    return f"{count} response{'s' if count != 1 else ''}"


def _requests(count: int) -> str:
    return f"{count} request{'s' if count != 1 else ''}"


def _rule(table: Mapping[str, Any]) -> str:
    return to_toml([dict(table)])


def _inline(config: str) -> str:
    """A ``stoker.toml`` fragment on one line, for a sentence."""
    return " ".join(line for line in config.splitlines() if line)


# -- no freshness ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Section:
    host: str
    path: str
    count: int
    pages: int


def _sections(rows: Sequence[Sequence[Any]]) -> list[_Section]:
    found = []
    for section, count, _error, pages in rows:
        parts = urlsplit(section)
        found.append(_Section(parts.netloc, parts.path or "/", count, pages))
    return found


def chosen_sections(count: int, rows: Sequence[Sequence[Any]]) -> list[_Section] | None:
    """The sections that get a rule each, or None for one catch-all rule (see the module
    invariants).  Pure."""
    sections = _sections(rows)
    chosen = [section for section in sections if count and section.count / count >= (
        SECTION_SHARE)][:SECTIONS_ADVISED]
    covered = sum(section.count for section in chosen)
    if not chosen or covered * 2 < count or any(s.path == "/" for s in chosen):
        return None
    return chosen


def _no_freshness(count: int, rows: Sequence[Sequence[Any]],
                  rules: Sequence[Rule]) -> list[Advice]:
    chosen = chosen_sections(count, rows)
    if chosen is None:
        return [_catch_all(count, rules)]
    hosts = {section.host for section in _sections(rows)}
    return [_section_rule(section, rules, len(hosts) > 1) for section in chosen]


def _pages(section: _Section) -> str:
    pages = f"{section.pages} page{'s' if section.pages != 1 else ''}"
    return f"{pages} ({_responses(section.count)})" if section.pages else _responses(
        section.count)


def _section_rule(section: _Section, rules: Sequence[Rule], named_host: bool) -> Advice:
    where = f"{section.host}{section.path}" if named_host else section.path
    under = "under" if section.path.endswith("/") else "for"
    said = f"{_pages(section)} {under} {where} had no freshness"
    about = {"path": section.path, "host": section.host}
    matched = match_rule(rules, section.host, section.path, "")
    if matched is not None and matched.ttl is not None and matched.ttl.ttl is not None:
        return Advice(CHANGE, f"{said}: the `[[rule]]` that matches them "
                      f"({_describe(matched)}) sets `ttl` now; these figures are older",
                      None, about)
    if matched is not None and not matched.bypass:
        return Advice(CHANGE, f"{said}: add `ttl = \"{SUGGESTED_TTL}\"` to the `[[rule]]` "
                      f"that matches them ({_describe(matched)}): the first rule that "
                      "matches wins, so a new rule after it would not apply",
                      f'ttl = "{SUGGESTED_TTL}"\n', about)
    table = {**({"host": section.host} if named_host else {}), "path": section.path,
             "ttl": SUGGESTED_TTL}
    config = _rule(table)
    return Advice(CHANGE, f"{said}: add `{_inline(config)}`", config, about)


def _catch_all(count: int, rules: Sequence[Rule]) -> Advice:
    config = _rule({"ttl": SUGGESTED_TTL})
    said = f"{_responses(count)} across the site had no freshness"
    catch_all = next((rule for rule in rules if rule.host is None and rule.path is None
                      and not rule.query_has and not rule.bypass), None)
    if catch_all is not None:
        return Advice(CHANGE, f"{said}: add `ttl = \"{SUGGESTED_TTL}\"` to your `[[rule]]` "
                      "with no path (it matches every page, so a new rule after it would "
                      "not apply)", f'ttl = "{SUGGESTED_TTL}"\n', {"path": None})
    if not rules:
        return Advice(CHANGE, f"{said}: add `{_inline(config)}` (no path: every page), "
                      "or a `preset` for your platform", config, {"path": None})
    return Advice(CHANGE, f"{said}: add `{_inline(config)}` after your rules (no path: "
                  "the pages no rule of yours matches), and `ttl` to those of your rules "
                  "that match such pages", config, {"path": None})


def _describe(rule: Rule) -> str:
    parts = [f'host = "{rule.host}"'] if rule.host else []
    parts.append(f'path = "{rule.path}"' if rule.path else "no path")
    return ", ".join(parts)


# -- cookies ---------------------------------------------------------------------------


def _matches(name: str, globs: Sequence[str]) -> bool:
    return any(fnmatchcase(name, glob) for glob in globs)


def _first_rule(rows: Sequence[Sequence[Any]], rules: Sequence[Rule]) -> Rule | None:
    """The rule that matches the most counted section (None: no section, or no rule)."""
    sections = _sections(rows[:1])
    return match_rule(rules, sections[0].host, sections[0].path, "") if sections else None


def _cookie_list(key: str, name: str, rule: Rule | None) -> tuple[str, str]:
    """Where to list cookie ``name`` under ``key``: the words, and the config."""
    if rule is None:
        config = _rule({key: [name]})
        return f"(`{_inline(config)}`)", config
    return (f"in the `[[rule]]` that matches these pages ({_describe(rule)})",
            f"{key} = {json.dumps([*getattr(rule, key), name])}\n")


def _cookie(name: str, seen: int, requests: int, rule: Rule | None = None) -> Advice:
    share = min(seen / requests, 1.0) if requests else 0.0
    said = f"{share:.0%} of requests ({seen}) carried cookie `{name}`" if requests else (
        f"{_requests(seen)} carried cookie `{name}`")
    about = {"cookie": name, "requests": seen, "share": round(share, 4)}
    platform = platform_cookie(name)
    if platform is not None and platform.personal:
        pattern = f" (`{platform.pattern}`)" if platform.pattern != name else ""
        return Advice(CHANGE, f"{said}: this looks like {platform.title}'s personal cookie "
                      f"`{name}`{pattern}: the pages it opens belong to one visitor, so it "
                      "must never be stripped or ignored. Use "
                      f"`{_inline(platform.config)}`, which sends requests carrying it to "
                      "the origin and caches the others' pages", platform.config,
                      {**about, "preset": platform.preset})
    if _matches(name, SESSION_COOKIES):
        return Advice(RIGHT, f"{said}, a session cookie: right not to share the pages it "
                      "opens. Pages the same for everyone can say so at the origin with "
                      "`Cache-Control: public, max-age=…`", None, about)
    if _matches(name, ANALYTICS_COOKIES):
        where, config = _cookie_list("strip_cookies", name, rule)
        return Advice(CHANGE, f"{said}, read by analytics scripts only: add it to "
                      f"`strip_cookies` {where}", config, about)
    if _matches(name, CONSENT_COOKIES):
        where, config = _cookie_list("ignore_cookies", name, rule)
        return Advice(CHANGE, f"{said}, a consent tool's: add it to `ignore_cookies` "
                      f"{where}", config, about)
    if platform is not None:
        return Advice(CHANGE, f"{said}, {platform.title}'s cookie `{name}`, which never "
                      f"changes a page: use `{_inline(platform.config)}`, which keeps it on "
                      f"requests and lists it under `{platform.key}`", platform.config,
                      {**about, "preset": platform.preset})
    return Advice(CHANGE, f"{said}: if it never changes a page, add it to `strip_cookies` "
                  "(it no longer reaches the origin) or `ignore_cookies` (it still does); "
                  "if it opens a session, it is right not to share those pages", None, about)


# -- the others ------------------------------------------------------------------------


def _status(code: str, seen: int) -> Advice:
    about = {"status": int(code)} if code.isdigit() else {}
    said = f"{_responses(seen)} with status {code or 'other'} had no explicit lifetime"
    if code.isdigit() and int(code) >= 500:
        return Advice(RIGHT, f"{said}: right not to keep errors; the origin can send "
                      "`Cache-Control: max-age=…` on those it wants kept", None, about)
    return Advice(ORIGIN, f"{said}, and their status is not cacheable by default "
                  "(RFC 9110 §15.1), so a rule's `ttl` does not reach them: have the origin "
                  "send `Cache-Control: max-age=…` (or `public`) on them", None, about)


def _too_large(count: int, site: Site) -> Advice:
    limit = format_size(site.size_limit)
    config = f'{site.size_setting} = "{format_size(site.size_limit * 4)}"\n'
    return Advice(CHANGE, f"{_responses(count)} larger than `{site.size_setting}` "
                  f"({limit}): raise it if they should be cached (`{_inline(config)}`)",
                  config, {"setting": site.size_setting})


def _set_cookie(count: int, names: Sequence[str]) -> Advice:
    cookies = ", ".join(f"`{name}`" for name in names[:5])
    sets = f" (setting {cookies})" if cookies else ""
    return Advice(RIGHT, f"{_responses(count)} set a cookie{sets}: right not to store them, "
                  "a stored Set-Cookie would hand one visitor's cookie to every other. If "
                  "these pages are the same for everyone, have the origin set the cookie "
                  "only where it is needed (login, cart)", None, {"cookies": list(names)})


def _vary_miss(name: str, seen: int) -> Advice:
    field_name = "-".join(part.capitalize() for part in name.split("-")) or "…"
    said = (f"{_requests(seen)} found only copies for other values of "
            f"`Vary: {field_name}` (each is stored once asked for)")
    about = {"vary": name}
    if name == "cookie":
        return Advice(CHANGE, f"{said}: cookies that never change a page go in "
                      "`vary_ignore_cookies` (kept out of the variant) or `strip_cookies`",
                      None, about)
    if name == "user-agent":
        return Advice(ORIGIN, f"{said}: that is a copy per browser version (at most "
                      "`max_variants` per URL): have the origin vary on something coarser, "
                      "or not at all", None, about)
    return Advice(RIGHT, f"{said}: right where pages differ by it", None, about)


def _bypass(kind: str, seen: int) -> Advice:
    if kind == "bypass_cookies":
        return Advice(RIGHT, f"{_requests(seen)} carried a cookie "
                      "in `bypass_cookies` (a login, a cart): right to send them to the "
                      "origin", None, {"key": kind})
    return Advice(RIGHT, f"{_requests(seen)} matched a `[[rule]]` "
                  "with `bypass = true`: right for admin, login and account pages; remove "
                  "`bypass` from that rule if these pages are the same for everyone",
                  None, {"key": kind})


# -- by reason ---------------------------------------------------------------------------


def _advise_no_freshness(figures: _Figures, site: Site) -> list[Advice]:
    return _no_freshness(figures.count, figures.sections, site.rules)


def _advise_cookie(figures: _Figures, site: Site) -> list[Advice]:
    rule = _first_rule(figures.sections, site.rules)
    return [_cookie(name, seen, site.requests, rule) for name, seen in figures.ranked()] or [
        Advice(CHANGE, f"{_requests(figures.count)} carried cookies the origin did not say "
               "are shareable: those that never change a page go in `strip_cookies` or "
               "`ignore_cookies`")]


def _advise_status(figures: _Figures, site: Site) -> list[Advice]:
    return [_status(code, seen) for code, seen in figures.ranked()] or [
        _status("", figures.count)]


def _advise_too_large(figures: _Figures, site: Site) -> list[Advice]:
    return [_too_large(figures.count, site)]


def _advise_set_cookie(figures: _Figures, site: Site) -> list[Advice]:
    return [_set_cookie(figures.count, [name for name, _ in figures.ranked()])]


def _advise_vary_miss(figures: _Figures, site: Site) -> list[Advice]:
    return [_vary_miss(name, seen) for name, seen in figures.ranked()] or [
        _vary_miss("", figures.count)]


def _advise_bypass(figures: _Figures, site: Site) -> list[Advice]:
    return [_bypass(kind, seen) for kind, seen in figures.ranked()] or [
        _bypass("bypass = true", figures.count)]


_BY_REASON: Final[Mapping[str, Callable[[_Figures, Site], list[Advice]]]] = {
    "no-freshness": _advise_no_freshness, "cookie": _advise_cookie,
    "status": _advise_status, "too-large": _advise_too_large,
    "set-cookie": _advise_set_cookie, "vary-miss": _advise_vary_miss,
    "bypass": _advise_bypass,
}
"""The reasons whose advice depends on their figures (the others': :data:`FIXED`)."""
