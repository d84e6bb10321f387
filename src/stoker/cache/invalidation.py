"""Purge requests: what a purge covers, validated from untrusted JSON.  Pure.

A purge scope is one or more of: URLs (every Vary variant of each), URL
prefixes, tags — or everything.  ``soft`` marks entries stale (they keep
their stale windows) instead of deleting them.

URL rules (documented for users in the README):
- An absolute URL must be ``http://`` or ``https://`` with a host; when
  ``allowed_hosts`` (the ``purge_hosts`` setting) is non-empty, its host
  (port included, default port dropped) must be one of them.  Empty means
  any host: purging a host the cache never stored is a harmless no-op.
- A path ``/x`` expands against the request's ``host`` field (else the
  configured default host) for both ``http`` and ``https``, because the
  cache key contains the scheme and the caller rarely knows which was used.
- Fragments are dropped; whitespace and control characters are refused.

Invariants:
- :func:`parse_purge_request` either returns a non-empty, de-duplicated
  :class:`PurgeScope` of normalised absolute URLs/prefixes and exact tags, or
  raises :class:`PurgeRequestError` whose ``field`` names the offending input
  (``urls[2]``, ``tags``, ``all`` …) — it never half-accepts a request.
- A tag is a non-empty string without whitespace or commas (tags are split
  on both when read from response headers, so such a tag can never match).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from stoker.http.keys import normalise_host, url_from_parts

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

    @property
    def kind(self) -> str:
        """``all``, or the scopes present joined by ``+`` (e.g. ``urls+tags``)."""
        if self.everything:
            return "all"
        names = [name for name, items in (("urls", self.urls), ("prefixes", self.prefixes),
                                          ("tags", self.tags)) if items]
        return "+".join(names)

    def as_json(self) -> dict[str, Any]:
        """The scope as the admin API and the audit log show it."""
        return {"urls": list(self.urls), "prefixes": list(self.prefixes),
                "tags": list(self.tags), "all": self.everything, "soft": self.soft}


def parse_purge_request(data: object, *, default_host: str,
                        allowed_hosts: Iterable[str] = ()) -> PurgeScope:
    """Validate a decoded JSON purge request; see the module docstring."""
    if not isinstance(data, Mapping):
        raise PurgeRequestError("body", "expected a JSON object like {\"tags\": [\"post-1\"]}")
    unknown = sorted(str(key) for key in data if key not in FIELDS)
    if unknown:
        raise PurgeRequestError(unknown[0], f"unknown field (known: {', '.join(sorted(FIELDS))})")
    everything = _flag(data, "all")
    soft = _flag(data, "soft")
    host = _host_field(data.get("host"), default_host)
    allowed = frozenset(_normalised_host_or_error(h, "purge_hosts") for h in allowed_hosts)
    urls = _dedupe(url for index, text in enumerate(_strings(data, "urls"))
                   for url in expand_url(text, host, allowed, f"urls[{index}]"))
    prefixes = _dedupe(url for index, text in enumerate(_strings(data, "prefixes"))
                       for url in expand_url(text, host, allowed, f"prefixes[{index}]"))
    tags = _dedupe(_tag(text, f"tags[{index}]")
                   for index, text in enumerate(_strings(data, "tags")))
    if everything and (urls or prefixes or tags):
        raise PurgeRequestError("all", "cannot be combined with urls, prefixes or tags")
    if not (everything or urls or prefixes or tags):
        raise PurgeRequestError(
            "urls", "nothing to purge: give urls, prefixes, tags, or \"all\": true")
    return PurgeScope(urls=urls, prefixes=prefixes, tags=tags, everything=everything, soft=soft)


def expand_url(text: str, host: str, allowed: frozenset[str], field: str) -> list[str]:
    """Normalised absolute URL(s) for ``text`` (a path gives the http and https forms)."""
    if not text or _FORBIDDEN.search(text):
        raise PurgeRequestError(field, "must be a non-empty URL without spaces or control "
                                       "characters")
    if text.startswith("/") and not text.startswith("//"):
        path, _, query = text.partition("#")[0].partition("?")
        return [url_from_parts(scheme, host, path, query) for scheme in ("http", "https")]
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise PurgeRequestError(field, f"{text!r} is neither an http(s) URL nor a path "
                                       "starting with /")
    if "@" in parts.netloc:
        raise PurgeRequestError(field, "URLs with credentials are not accepted")
    scheme = parts.scheme.lower()
    target = _normalised_host_or_error(parts.netloc, field, scheme)
    if allowed and target not in allowed:
        raise PurgeRequestError(field, f"host {target!r} is not served by this proxy "
                                       f"(purge_hosts: {', '.join(sorted(allowed))})")
    return [url_from_parts(scheme, target, parts.path, parts.query)]


def _normalised_host_or_error(host: str, field: str, scheme: str = "http") -> str:
    value = normalise_host(scheme, host.strip())
    if not _HOST.match(value):
        raise PurgeRequestError(field, f"{host!r} is not a valid host")
    return value


def _host_field(value: object, default_host: str) -> str:
    if value is None:
        return normalise_host("http", default_host)
    if not isinstance(value, str) or not value:
        raise PurgeRequestError("host", "expected a host name like \"www.example.com\"")
    return _normalised_host_or_error(value, "host")


def _flag(data: Mapping[Any, Any], name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise PurgeRequestError(name, "expected true or false")
    return value


def _strings(data: Mapping[Any, Any], name: str) -> list[str]:
    value = data.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PurgeRequestError(name, "expected a list of strings")
    if len(value) > MAX_ITEMS:
        raise PurgeRequestError(name, f"at most {MAX_ITEMS} items per request")
    return value


def _tag(text: str, field: str) -> str:
    if not text or _TAG_FORBIDDEN.search(text):
        raise PurgeRequestError(field, f"{text!r} is not a tag: tags are non-empty and contain "
                                       "no whitespace or commas")
    return text


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
