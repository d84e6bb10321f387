"""The origins visitors arrive on, and the ones warm runs fill.

A cache key holds the scheme and Host a visitor used (after ``trusted_proxies``), so a
warm visit fills a visitor's entry only on the same ``scheme://host``.  Stoker learns
them from the hit statistics: each flush adds the visits of this process's visitors per
origin (:func:`tally`) to a small table (:class:`~stoker.cache.hits.SeenOrigin` rows);
a full run's collect then visits each discovered page on the origins visitors use
(:func:`warm_origins`, :func:`spread`; their visits order the site's pages,
:func:`folded`), and :func:`verdict` says in words when the
warmed origins and the visited ones differ.

Invariants:
- Only the site's own hosts and aliases are learned (``known``, the settings'
  :meth:`~stoker.http.site_hosts.SiteHosts.known`); every other Host counts in one row
  without a name, :data:`OTHER`, so a client cannot make the warmer visit a host of its
  choosing; a flush adds at most :data:`MAX_ORIGINS` named rows (most visited).
- An origin is warmed when it is configured (``site_url``), or seen within ``window``
  with at least ``min_share`` of the recent named visits; at most :data:`MAX_WARMED`
  origins, configured first, then most visited.
- A learned origin mirrors the configured site on its host (another scheme), else the
  only configured site; with several sites, one on none of their hosts mirrors none.
- Pure: no I/O; ``now`` is given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from stoker.cache.hits import SeenOrigin
from stoker.http.keys import normalise_host

OTHER: Final = ""
"""The row counting visits on hosts that are neither the site's nor its aliases."""
MAX_ORIGINS: Final = 16
"""Most named origins a flush adds (the store keeps as many, most visited)."""
MAX_WARMED: Final = 4
"""Most origins a warm run visits each page on."""
WINDOW: Final = 7 * 86_400.0
"""Seconds an origin counts for after its last visit."""
MIN_SHARE: Final = 0.05
"""Share of the recent named visits that makes a seen origin worth warming."""
MIN_VISITS: Final = 20
"""Recent visits below which :func:`verdict` says nothing (too few to judge)."""


def origin_of(url: str) -> tuple[str, str]:
    """``(scheme, host[:port])`` of an absolute URL, as keys hold them (lower-cased, the
    scheme's default port dropped)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, normalise_host(scheme, parts.netloc)


_AUTHORITY_END = re.compile(r"[/?#]")


def authority_prefix(url: str) -> str:
    """``url`` up to where its authority ends (``scheme://host:port``, where
    :func:`~urllib.parse.urlsplit` ends the netloc), or all of it: ``origin_of`` of it is
    ``origin_of(url)``, and the URLs of one origin share it."""
    start = url.find("://")
    end = _AUTHORITY_END.search(url, start + 3) if start >= 0 else None
    return url if end is None else url[:end.start()]


def tally(counts: Mapping[str, tuple[int, int]],
          known: Callable[[str, str], bool]) -> dict[str, int]:
    """Visits per ``scheme://host`` in hit ``counts`` (``url -> (hits, misses)``): the
    :data:`MAX_ORIGINS` most visited known origins by name, the rest of the known ones
    dropped, every unknown host's visits under :data:`OTHER`.  Each distinct
    :func:`authority_prefix` is parsed and judged once (a flush of 10,000 URLs parsed
    each: 37 ms in one event-loop step)."""
    visits: Counter[str] = Counter()
    names: dict[str, str] = {}
    for url, (hits, misses) in counts.items():
        prefix = authority_prefix(url)
        name = names.get(prefix)
        if name is None:
            name = names[prefix] = _known_name(prefix, known)
        visits[name] += hits + misses
    other = visits.pop(OTHER, 0)
    found = dict(visits.most_common(MAX_ORIGINS))
    if other:
        found[OTHER] = other
    return found


def _known_name(url: str, known: Callable[[str, str], bool]) -> str:
    """``scheme://host`` of ``url`` when ``known`` knows it, else :data:`OTHER`."""
    scheme, host = origin_of(url)
    if scheme in ("http", "https") and host and known(scheme, host):
        return f"{scheme}://{host}"
    return OTHER


def _recent(seen: Iterable[SeenOrigin], now: float, window: float) -> list[SeenOrigin]:
    return [row for row in seen if row.visits > 0 and now - row.last_seen <= window]


def _origin(url: str) -> str:
    scheme, host = origin_of(url)
    return f"{scheme}://{host}"


def warm_origins(site_urls: Sequence[str], seen: Iterable[SeenOrigin], now: float, *,
                 window: float = WINDOW, min_share: float = MIN_SHARE) -> tuple[str, ...]:
    """The origins a full run visits each page on (see the module invariants)."""
    configured = list(dict.fromkeys(_origin(url) for url in site_urls))
    named = [row for row in _recent(seen, now, window) if row.origin != OTHER]
    total = sum(row.visits for row in named)
    learned = [row.origin for row in sorted(named, key=lambda row: (-row.visits, row.origin))
               if row.visits >= min_share * total and row.origin not in configured]
    return tuple([*configured, *learned][:max(MAX_WARMED, len(configured))])


def _mirrored(origin: str, configured: Sequence[str]) -> str | None:
    """The configured origin whose pages ``origin`` mirrors (see the invariants)."""
    host = origin_of(origin)[1]
    for site in configured:
        if origin_of(site)[1] == host:
            return site
    return configured[0] if len(configured) == 1 else None


def spread(urls: Sequence[str], site_urls: Sequence[str],
           origins: Sequence[str]) -> list[str]:
    """``urls`` (discovered, on the configured sites) each followed by the same page on
    every learned origin in ``origins`` that mirrors its site; no repeats."""
    configured = list(dict.fromkeys(_origin(url) for url in site_urls))
    mirrors: dict[str, list[str]] = {}
    for origin in origins:
        site = None if origin in configured else _mirrored(origin, configured)
        if site is not None:
            mirrors.setdefault(site, []).append(origin)
    if not mirrors:  # visitors use the configured sites only: the common case, no parsing
        return list(dict.fromkeys(urls))
    spread_urls: dict[str, None] = {}
    for url in urls:
        spread_urls[url] = None
        site = _origin(url)
        for origin in mirrors.get(site, ()):
            spread_urls[origin + _target(url)] = None
    return list(spread_urls)


def folded(popularity: Mapping[str, int], site_urls: Sequence[str],
           origins: Sequence[str]) -> dict[str, int]:
    """``popularity`` (``url -> visits``) with each learned origin's visits added to the
    same page on the site it mirrors, so discovery orders the site's pages by the visits
    they get on every origin warmed."""
    configured = list(dict.fromkeys(_origin(url) for url in site_urls))
    sites = {origin: site for origin in origins if origin not in configured
             for site in [_mirrored(origin, configured)] if site is not None}
    found = dict(popularity)
    if not sites:  # as in spread: no URL parsing (37 ms per 10,000) in the common case
        return found
    for url, visits in popularity.items():
        site = sites.get(_origin(url))
        if site is not None:
            page = site + _target(url)
            found[page] = found.get(page, 0) + visits
    return found


def _target(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class Finding(NamedTuple):
    """One difference between warmed and visited origins: ``key`` names it without its
    figures (the log says a finding once, until the keys change), ``text`` says it."""

    key: str
    text: str


def verdict(site_urls: Sequence[str], seen: Iterable[SeenOrigin], now: float, *,
            window: float = WINDOW, min_share: float = MIN_SHARE) -> list[Finding]:
    """What an operator should know when warmed entries and visitors' entries differ, one
    finding each (none when they agree, or with fewer than :data:`MIN_VISITS` recent
    visits)."""
    recent = _recent(seen, now, window)
    total = sum(row.visits for row in recent)
    if total < MIN_VISITS:
        return []
    configured = list(dict.fromkeys(_origin(url) for url in site_urls))
    visits = {row.origin: row.visits for row in recent}
    warmed = warm_origins(site_urls, recent, now, window=window, min_share=min_share)
    used = [origin for origin in warmed if origin not in configured]
    said = []
    if used:
        said.append(Finding(
            "learned " + " ".join(used),
            f"visitors arrive on {', '.join(_share(o, visits, total) for o in used)}; "
            f"site_url names {', '.join(configured)}: warm runs fill both; set site_url = "
            f"{_toml_list([*used, *(o for o in configured if visits.get(o))])} to say so"))
    unread = [origin for origin in configured if not visits.get(origin)]
    if unread and (used or visits.get(OTHER)):
        said.append(Finding("unread " + " ".join(unread),
                            f"warm runs fill {', '.join(unread)}, which no visitor read in "
                            f"the last {window / 86_400:g} days"))
    if visits.get(OTHER, 0) >= min_share * total:
        said.append(Finding("other", f"{_share(OTHER, visits, total)} arrive on hosts that "
                            "are not the site's (site_url, purge_hosts, site_aliases, the "
                            "listener): warm runs never fill their entries; add the host "
                            "visitors use to site_url"))
    return said


def _share(origin: str, visits: Mapping[str, int], total: int) -> str:
    count = visits.get(origin, 0)
    return f"{origin} ({count} of {total} visits)" if origin else f"{count} of {total} visits"


def _toml_list(origins: Sequence[str]) -> str:
    return "[" + ", ".join(f'"{origin}"' for origin in origins) + "]"
