"""Purge requests: what a purge covers, validated from untrusted JSON.  Pure.

A purge scope is one or more of: URLs (every Vary variant of each), URL
prefixes, tags — or everything.  ``soft`` marks entries stale (they keep
their stale windows) instead of deleting them.  A request that does not say
``soft`` follows the ``purge_mode`` setting (:func:`purge_is_soft`): CMS purge
clients cannot ask for a soft purge, so ``purge_mode = "soft"`` makes theirs soft.

URL rules (documented for users in docs/admin.md):
- An absolute URL must be ``http://`` or ``https://`` with a host; when
  ``allowed_hosts`` (the ``purge_hosts`` setting) is non-empty, its host
  (port included, default port dropped) must be one of them or an alias.  Empty
  means any host.
- A host in ``site_aliases`` or ``origin_host`` (a CMS names the site by its own
  address) stands for the site: it covers every one of the site's own hosts
  (:class:`~stoker.http.site_hosts.SiteHosts`), in both schemes, as the warmer maps it.
- A path ``/x`` expands against the request's ``host`` field (an alias standing for
  the site, as above), else against every one of the site's own hosts (``site_url``,
  ``purge_hosts``, the listener; never ``origin_host``), for both ``http`` and
  ``https``, because the cache key contains the scheme and the caller rarely knows
  which was used.
- A host that is neither the site's own nor an alias is purged as named and listed
  in ``unknown_hosts``: such a purge usually names the wrong host and purges nothing.
- Fragments are dropped; whitespace and control characters are refused.

Invariants:
- :func:`parse_purge_request` either returns a non-empty, de-duplicated
  :class:`PurgeScope` of normalised absolute URLs/prefixes and exact tags, or
  raises :class:`PurgeRequestError` whose ``field`` names the offending input
  (``urls[2]``, ``tags``, ``all`` …) — it never half-accepts a request.
- A tag is a non-empty string without whitespace or commas (tags are split
  on both when read from response headers, so such a tag can never match).
- An explicit ``soft`` (true or false) always wins over ``purge_mode``.
- :func:`with_also` adds the ``rewarm_also`` URLs to every purge but one of
  everything, and adds nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from stoker.http.keys import normalise_host, url_from_parts
from stoker.http.site_hosts import SiteHosts

FIELDS = frozenset({"urls", "prefixes", "tags", "all", "soft", "host"})
MAX_ITEMS = 10_000
_HOST = re.compile(r"^(?:[a-z0-9.\-_~]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$")
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f]")
_TAG_FORBIDDEN = re.compile(r"[\s,]")


class PurgeRequestError(ValueError):
    """A purge request that must be refused; ``field`` names the bad input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class PurgeScope:
    """What one purge covers (see the module docstring)."""

    urls: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    everything: bool = False
    soft: bool = False
    unknown_hosts: tuple[str, ...] = ()
    """Hosts named that are neither the site's own nor aliases (purged as named)."""

    @property
    def kind(self) -> str:
        """``all``, or the scopes present joined by ``+`` (e.g. ``urls+tags``)."""
        if self.everything:
            return "all"
        names = [name for name, items in (("urls", self.urls), ("prefixes", self.prefixes),
                                          ("tags", self.tags)) if items]
        return "+".join(names)

    def as_json(self) -> dict[str, Any]:
        """The scope as the admin API and the audit log show it (``unknown_hosts`` only
        when there are some)."""
        shown: dict[str, Any] = {"urls": list(self.urls), "prefixes": list(self.prefixes),
                                 "tags": list(self.tags), "all": self.everything,
                                 "soft": self.soft}
        if self.unknown_hosts:
            shown["unknown_hosts"] = list(self.unknown_hosts)
        return shown


@dataclass(frozen=True, slots=True)
class Expanded:
    """The normalised absolute URLs one purge URL or path stands for."""

    urls: tuple[str, ...]
    unknown_host: str | None = None
    """The host named, when it is neither the site's own nor an alias."""


def purge_is_soft(asked: bool | None, mode: str) -> bool:
    """Whether a purge is soft: as its caller asked (``asked`` true or false), else as
    ``purge_mode`` (``mode``) says.  Pure."""
    return mode == "soft" if asked is None else asked


def with_also(scope: PurgeScope, also: Iterable[str]) -> PurgeScope:
    """``scope`` with the ``rewarm_also`` URLs ``also`` added (soft or hard as the scope
    is), unless it purges everything.  Pure."""
    if scope.everything:
        return scope
    urls = _dedupe((*scope.urls, *also))
    return scope if urls == scope.urls else replace(scope, urls=urls)


def also_urls(paths: Iterable[str], sites: SiteHosts) -> tuple[str, ...]:
    """The absolute URLs the ``rewarm_also`` ``paths`` stand for: each on every one of the
    site's own hosts, in both schemes, as a purged path is.  Pure."""
    return _dedupe(url for path in paths
                   for url in expand_url(path, None, sites, frozenset(), "rewarm_also").urls)


def parse_purge_request(data: object, *, sites: SiteHosts, allowed_hosts: Iterable[str] = (),
                        purge_mode: str = "hard") -> PurgeScope:
    """Validate a decoded JSON purge request; see the module docstring."""
    if not isinstance(data, Mapping):
        raise PurgeRequestError("body", "expected a JSON object like {\"tags\": [\"post-1\"]}")
    strange = sorted(str(key) for key in data if key not in FIELDS)
    if strange:
        raise PurgeRequestError(strange[0], f"unknown field (known: {', '.join(sorted(FIELDS))})")
    everything = _flag(data, "all")
    soft = purge_is_soft(_optional_flag(data, "soft"), purge_mode)
    host = _host_field(data.get("host"))
    allowed = frozenset(_normalised_host_or_error(h, "purge_hosts") for h in allowed_hosts)
    expanded = {field: [expand_url(text, host, sites, allowed, f"{field}[{index}]")
                        for index, text in enumerate(_strings(data, field))]
                for field in ("urls", "prefixes")}
    urls, prefixes = (_dedupe(url for item in expanded[field] for url in item.urls)
                      for field in ("urls", "prefixes"))
    unknown = _dedupe(item.unknown_host for items in expanded.values() for item in items
                      if item.unknown_host is not None)
    tags = _dedupe(check_tag(text, f"tags[{index}]")
                   for index, text in enumerate(_strings(data, "tags")))
    if everything and (urls or prefixes or tags):
        raise PurgeRequestError("all", "cannot be combined with urls, prefixes or tags")
    if not (everything or urls or prefixes or tags):
        raise PurgeRequestError(
            "urls", "nothing to purge: give urls, prefixes, tags, or \"all\": true")
    return PurgeScope(urls=urls, prefixes=prefixes, tags=tags, everything=everything, soft=soft,
                      unknown_hosts=unknown)


def expand_url(text: str, host: str | None, sites: SiteHosts, allowed: frozenset[str],
               field: str) -> Expanded:
    """The URLs ``text`` (an absolute URL, or a path on ``host``, else on the site) stands
    for; see the module docstring."""
    if not text or _FORBIDDEN.search(text):
        raise PurgeRequestError(field, "must be a non-empty URL without spaces or control "
                                       "characters")
    if text.startswith("/") and not text.startswith("//"):
        path, _, query = text.partition("#")[0].partition("?")
        if host is not None:
            _refuse_unlisted(host, "http", sites, allowed, "host")
        return Expanded(tuple(url_from_parts(scheme, name, path, query)
                              for scheme, name in sites.covered_by_path(host)),
                        _unknown(host, "http", sites))
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise PurgeRequestError(field, f"{text!r} is neither an http(s) URL nor a path "
                                       "starting with /")
    if "@" in parts.netloc:
        raise PurgeRequestError(field, "URLs with credentials are not accepted")
    scheme = parts.scheme.lower()
    target = _normalised_host_or_error(parts.netloc, field, scheme)
    _refuse_unlisted(target, scheme, sites, allowed, field)
    return Expanded(tuple(url_from_parts(name_scheme, name, parts.path, parts.query)
                          for name_scheme, name in sites.covered(scheme, target)),
                    _unknown(target, scheme, sites))


def _refuse_unlisted(host: str, scheme: str, sites: SiteHosts, allowed: frozenset[str],
                     field: str) -> None:
    if allowed and host not in allowed and not sites.aliases.match(scheme, host):
        raise PurgeRequestError(field, f"host {host!r} is not served by this proxy "
                                       f"(purge_hosts: {', '.join(sorted(allowed))})")


def _unknown(host: str | None, scheme: str, sites: SiteHosts) -> str | None:
    return None if host is None or sites.known(scheme, host) else host


def _normalised_host_or_error(host: str, field: str, scheme: str = "http") -> str:
    value = normalise_host(scheme, host.strip())
    if not _HOST.match(value):
        raise PurgeRequestError(field, f"{host!r} is not a valid host")
    return value


def _host_field(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise PurgeRequestError("host", "expected a host name like \"www.example.com\"")
    return _normalised_host_or_error(value, "host")


def _flag(data: Mapping[Any, Any], name: str) -> bool:
    return _optional_flag(data, name) or False


def _optional_flag(data: Mapping[Any, Any], name: str) -> bool | None:
    value = data.get(name)
    if value is not None and not isinstance(value, bool):
        raise PurgeRequestError(name, "expected true or false")
    return value


def _strings(data: Mapping[Any, Any], name: str) -> list[str]:
    value = data.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PurgeRequestError(name, "expected a list of strings")
    if len(value) > MAX_ITEMS:
        raise PurgeRequestError(name, f"at most {MAX_ITEMS} items per request")
    return value


def is_tag(text: str) -> bool:
    """Whether ``text`` can be a tag: non-empty, no whitespace or commas.  Pure."""
    return bool(text) and _TAG_FORBIDDEN.search(text) is None


def check_tag(text: str, field: str) -> str:
    """``text`` if it can be a tag; else :class:`PurgeRequestError` naming ``field``."""
    if not is_tag(text):
        raise PurgeRequestError(field, f"{text!r} is not a tag: tags are non-empty and contain "
                                       "no whitespace or commas")
    return text


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
