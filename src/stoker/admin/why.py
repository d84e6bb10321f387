"""``GET /api/why``: what the cache left out, why, and what would change it.

Routes (behind :class:`~stoker.admin.guard.AdminGuard`, ``Cache-Control: no-store`` as
every admin response):
- ``GET /api/why`` → every reason responses were not stored or requests bypassed the
  cache, most counted first: its count and share of all requests, a description, its
  details (cookie names, statuses, …), top URLs and sections, and the advice
  (:func:`~stoker.admin.why_advice.advise`).
- ``GET /api/why?url=…`` (``&host=`` for a path) → for each URL it stands for that was
  seen (:func:`seen_only`: stored, or with a last record; all of them when none was):
  what the cache holds for it (as ``GET /api/entry``), the last record for it (why its
  last response was not stored, or its request bypassed), a verdict and the advice for
  that reason.  The URLs looked up are the site's hosts' (a bounded set of keys, read
  from the store one key each), never a scan of the store.

Invariants:
- The figures are those of every process serving from this cache: this one's, plus what
  each other live process last told the purge bus with its heartbeat (at most a
  heartbeat old), merged (:func:`~stoker.cache.not_cached.merged`); ``processes`` names
  them.  The last record of one URL is this process's (the one serving the admin API):
  the others keep theirs; ``seen_by`` says whose it is.
- The report is a pure function of the figures and the configuration (:func:`report`,
  :func:`url_report`); only the routes read the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin.api import asked_urls, error_response, stored_keys
from stoker.admin.hit_ratio import total_requests
from stoker.admin.metrics import named_others_said
from stoker.admin.why_advice import Site, advise
from stoker.cache.not_cached import LastSeen, Snapshot, merged, section_of
from stoker.purge.scope import PurgeRequestError

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker

DESCRIPTIONS: Final[Mapping[str, str]] = {
    "no-freshness": "no lifetime (max-age, s-maxage, Expires) and no validator",
    "set-cookie": "the response sets a cookie",
    "private": "Cache-Control: private",
    "no-store": "Cache-Control: no-store",
    "vary-star": "Vary: *",
    "authorization": "the request has Authorization; the response does not allow sharing",
    "status": "a status not cacheable without an explicit lifetime",
    "must-understand": "must-understand for a status Stoker does not know",
    "partial": "a partial response (206)",
    "too-large": "larger than the largest response stored",
    "cookie": "the request carries cookies; the origin did not mark the page shareable",
    "stopgap": "the origin's placeholder page",
    "incomplete": "the body broke off",
    "corrupt-coding": "the compressed body did not decode",
    "disk-error": "the body could not be written to disk",
    "purged": "purged while being fetched",
    "method": "the method is not cached (POST, PUT, …)",
    "bypass": "a rule bypasses the cache (bypass, bypass_cookies)",
    "request": "the request said Cache-Control: no-store",
    "vary-miss": "only copies for other variants were stored (Vary)",
}
"""What each reason means, in a few words."""
NOT_REQUESTED: Final = ("not requested yet: nothing stored and no record of it since this "
                        "process started (or forgotten among many others); request it, "
                        "then ask again")
"""The verdict on a URL the cache knows nothing of: no fault, just nothing to tell yet."""
HOSTS_SEEN: Final = 16
"""Most other hosts a path's lookup adds from the memory tier, and from the records."""
SCAN_CHUNK: Final = 4096
"""Memory-tier keys a path's lookup reads between two yields to the event loop."""


def cookie_bypass_report(bypasses: Mapping[str, int],
                         stats: Mapping[str, int]) -> list[dict[str, Any]]:
    """Cookie names that made requests skip the cache, most frequent first, with the
    share of all requests each one caused (``0.42`` = 42 %).  Pure."""
    total = total_requests(stats)
    return [{"cookie": name, "requests": count,
             "share": round(count / total, 4) if total else 0.0}
            for name, count in sorted(bypasses.items(), key=lambda item: (-item[1], item[0]))]


def describe(reason: str) -> str:
    """A few words on ``reason`` (its own name when it is not one Stoker gives)."""
    return DESCRIPTIONS.get(reason, reason)


def reason_json(found: Mapping[str, Any], site: Site) -> dict[str, Any]:
    """One reason of a snapshot as the report shows it.  Pure."""
    count = found["count"]
    return {
        "reason": found["reason"], "description": describe(found["reason"]),
        "count": count, "share": round(count / site.requests, 4) if site.requests else 0.0,
        "details": [{"name": name, "count": seen} for name, seen in sorted(
            found["details"].items(), key=lambda item: (-item[1], item[0]))],
        "urls": [{"url": url, "count": seen, "error": error}
                 for url, seen, error in found["urls"]],
        "sections": [{"section": section, "count": seen, "error": error, "pages": pages}
                     for section, seen, error, pages in found["sections"]],
        "advice": [advice.as_json() for advice in advise(found, site)],
    }


def report(snapshot: Snapshot, site: Site, processes: Sequence[str]) -> dict[str, Any]:
    """The whole report for the merged ``snapshot``.  Pure."""
    return {"requests": site.requests, "not_cached": snapshot["total"],
            "processes": list(processes),
            "reasons": [reason_json(found, site) for found in snapshot["reasons"]]}


def url_report(url: str, key: Mapping[str, Any], last: LastSeen | None, seen_by: str,
               site: Site) -> dict[str, Any]:
    """What the report says of one absolute ``url``: ``key`` is what the cache holds
    for it (as :func:`~stoker.admin.api.stored_keys` gives it), ``last`` the last record
    for it.  Pure."""
    variants = key["variants"]
    newest = max((variant["stored_at"] for variant in variants), default=None)
    cached = newest is not None and (last is None or newest >= last.at)
    if cached:
        verdict = f"cached: {len(variants)} variant{'s' if len(variants) != 1 else ''}"
    elif last is not None:
        verdict = f"not cached: {describe(last.reason)} ({last.reason})"
    elif variants:
        verdict = "not cached now: stored variants, none stored since the last refusal"
    else:
        verdict = NOT_REQUESTED
    advice = [] if cached or last is None else [item.as_json() for item in advise({
        "reason": last.reason, "count": 1, "details": dict.fromkeys(last.details, 1),
        "sections": [[section_of(url), 1, 0, 1]]}, Site(site.rules, 0, site.size_setting,
                                                       site.size_limit))]
    return {"url": url, "cached": cached, "seen": bool(variants) or last is not None,
            "verdict": verdict,
            "last": None if last is None else {**last.as_json(),
                                               "description": describe(last.reason),
                                               "seen_by": seen_by},
            "key": key["key"], "variants": variants, "advice": advice}


def split_origin(url: str) -> tuple[str, str]:
    """``(scheme://host, /path?query)`` of an absolute URL as keys and records hold it."""
    at = url.find("/", url.find("://") + 3)
    return (url, "/") if at < 0 else (url[:at], url[at:])


def origins_seen(urls: Iterable[str], target: str, limit: int) -> list[str]:
    """The ``scheme://host`` of each of ``urls`` whose path and query are ``target``,
    first seen first, at most ``limit`` of them.  Pure."""
    found: dict[str, None] = {}
    for url in urls:
        if url.endswith(target):
            origin, rest = split_origin(url)
            if rest == target:
                found[origin] = None
                if len(found) == limit:
                    break
    return list(found)


def stored_urls(keys: Iterable[str], version: str) -> Iterator[str]:
    """The absolute URL of each of the primary ``keys`` of cache ``version``.  Pure."""
    prefix = f"{version}|"
    return (key[len(prefix):] for key in keys if key.startswith(prefix))


def seen_only(found: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Of the :func:`url_report` of each URL a lookup stands for (a path on each of the
    site's hosts), those seen (``seen``: a stored variant or a last record), in order;
    every one of them when none was seen (the path was not requested yet on any host).
    Pure."""
    return [item for item in found if item["seen"]] or list(found)


# -- reading the process (I/O) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Figures:
    """The merged figures and who they come from."""

    snapshot: Snapshot
    processes: list[str]


def site_of(stoker: RunningStoker) -> Site:
    """What the advice needs of ``stoker``'s configuration and counters now."""
    settings = stoker.settings
    redis_bound = bool(settings.l2_url) and (
        settings.l2_max_object_bytes < settings.max_object_bytes)
    return Site(rules=settings.rules, requests=total_requests(stoker.pipeline.stats),
                size_setting="l2_max_object_bytes" if redis_bound else "max_object_bytes",
                size_limit=settings.l2_max_object_bytes if redis_bound else (
                    settings.max_object_bytes))


async def gathered(stoker: RunningStoker) -> tuple[Figures, Site]:
    """This process's figures and the other live processes' (as they last told the bus),
    merged; and the site with the requests they all answered."""
    own = stoker.pipeline.not_cached.snapshot()
    base = site_of(stoker)
    relay = stoker.purger.relay
    if relay is None:
        return Figures(own, [stoker.settings.node_id or "this process"]), base
    others = [(name, said) for name, said in named_others_said(
        await relay.members(), relay.me, stoker.clock.now(), stoker.settings.node_timeout)
        if "not_cached" in said]  # one that has not told its figures yet is left out
    requests = base.requests + sum(said["requests"] for _, said in others)
    return Figures(merged([own, *(said["not_cached"] for _, said in others)]),
                   [relay.me, *(name for name, _ in others)]), replace(base, requests=requests)


async def site_report(stoker: RunningStoker) -> dict[str, Any]:
    """The whole report (:func:`report`) over every process serving from this cache."""
    figures, site = await gathered(stoker)
    return {"now": stoker.clock.now(), **report(figures.snapshot, site, figures.processes)}


async def hosts_seen(stoker: RunningStoker, model: Mapping[str, Any], asked: str) -> list[str]:
    """The URLs of the path that ``model`` (the key of the path on one of the site's
    hosts, as :func:`~stoker.admin.api.stored_keys` gives it) stands for, on the other
    hosts it was seen on: those the memory tier holds it for (its keys scanned
    :data:`SCAN_CHUNK` at a time, the loop free in between), and those this process's
    last records name (``asked``, the path as asked); at most :data:`HOSTS_SEEN` of each."""
    version, _, url = model["key"].partition("|")
    target = split_origin(url)[1]
    keys = stoker.store.l1.primary_keys_nowait()
    stored: dict[str, None] = {}
    for start in range(0, len(keys), SCAN_CHUNK):
        if start:
            await asyncio.sleep(0)
        chunk = stored_urls(keys[start:start + SCAN_CHUNK], version)
        stored.update(dict.fromkeys(origins_seen(chunk, target, HOSTS_SEEN - len(stored))))
        if len(stored) == HOSTS_SEEN:
            break
    recorded = origins_seen(stoker.pipeline.not_cached.recent_urls(), asked, HOSTS_SEEN)
    return [*(origin + target for origin in stored), *(origin + asked for origin in recorded)]


async def urls_report(stoker: RunningStoker, urls: tuple[str, ...],
                      path: str | None = None) -> dict[str, Any]:
    """What the report says of each of the absolute ``urls`` (:func:`url_report`), and,
    for a ``path`` asked without a host, of that path on every host it was seen on
    (:func:`hosts_seen`); only those seen, unless none was (:func:`seen_only`)."""
    figures, site = await gathered(stoker)
    now = stoker.clock.now()
    keys = await stored_keys(stoker, urls, now)
    if path is not None and keys:
        more = [url for url in await hosts_seen(stoker, keys[0], path) if url not in urls]
        keys += await stored_keys(stoker, tuple(dict.fromkeys(more)), now)
    log = stoker.pipeline.not_cached
    me = figures.processes[0]
    unique = {key["key"]: key for key in reversed(keys)}  # the first of each key kept
    return {"now": now, "processes": figures.processes, "urls": seen_only([
        url_report(key["url"], key, log.last(key["url"]), me, site)
        for key in keys if unique[key["key"]] is key])}


async def url_lookup(stoker: RunningStoker, request: Request) -> dict[str, Any]:
    """:func:`urls_report` for ``?url=`` (and ``&host=``); ``PurgeRequestError`` naming
    the field when they stand for no URL."""
    asked = request.query_params.get("url", "")
    path = asked.partition("#")[0] if asked.startswith("/") and not asked.startswith(
        "//") and "host" not in request.query_params else None
    return await urls_report(stoker, asked_urls(request, stoker), path)


def why_routes(stoker: RunningStoker) -> list[Route]:
    """``GET /api/why`` for one running Stoker process."""

    async def why(request: Request) -> Response:
        if "url" not in request.query_params:
            return JSONResponse(await site_report(stoker))
        try:
            return JSONResponse(await url_lookup(stoker, request))
        except PurgeRequestError as error:
            return error_response(400, error.field, str(error))

    return [Route("/api/why", why, methods=["GET"])]
