"""``GET /api/why``: what the cache left out, why, and what would change it.

Routes (behind :class:`~stoker.admin.guard.AdminGuard`, ``Cache-Control: no-store`` as
every admin response):
- ``GET /api/why`` → every reason responses were not stored or requests bypassed the
  cache, most counted first: its count and share of all requests, a description, its
  details (cookie names, statuses, …), top URLs and sections, and the advice
  (:func:`~stoker.admin.why_advice.advise`).
- ``GET /api/why?url=…`` (``&host=`` for a path) → for each URL it stands for: what the
  cache holds for it (as ``GET /api/entry``), the last record for it (why its last
  response was not stored, or its request bypassed), a verdict and the advice for that
  reason.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stoker.admin.api import asked_urls, error_response, stored_keys
from stoker.admin.metrics import REQUEST_KINDS, named_others_said
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


def total_requests(stats: Mapping[str, int]) -> int:
    """Requests answered: the sum of the kinds that count each request once."""
    return sum(stats.get(kind, 0) for kind in REQUEST_KINDS)


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
        verdict = "not cached, and no record of why: not requested since this process " \
                  "started (or forgotten among many others); request it, then ask again"
    advice = [] if cached or last is None else [item.as_json() for item in advise({
        "reason": last.reason, "count": 1, "details": dict.fromkeys(last.details, 1),
        "sections": [[section_of(url), 1, 0, 1]]}, Site(site.rules, 0, site.size_setting,
                                                       site.size_limit))]
    return {"url": url, "cached": cached, "verdict": verdict,
            "last": None if last is None else {**last.as_json(),
                                               "description": describe(last.reason),
                                               "seen_by": seen_by},
            "key": key["key"], "variants": variants, "advice": advice}


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


async def urls_report(stoker: RunningStoker, urls: tuple[str, ...]) -> dict[str, Any]:
    """What the report says of each of the absolute ``urls`` (:func:`url_report`)."""
    figures, site = await gathered(stoker)
    now = stoker.clock.now()
    log = stoker.pipeline.not_cached
    me = figures.processes[0]
    return {"now": now, "processes": figures.processes, "urls": [
        url_report(key["url"], key, log.last(key["url"]), me, site)
        for key in await stored_keys(stoker, urls, now)]}


def why_routes(stoker: RunningStoker) -> list[Route]:
    """``GET /api/why`` for one running Stoker process."""

    async def why(request: Request) -> Response:
        if "url" not in request.query_params:
            return JSONResponse(await site_report(stoker))
        try:
            urls = asked_urls(request, stoker)
        except PurgeRequestError as error:
            return error_response(400, error.field, str(error))
        return JSONResponse(await urls_report(stoker, urls))

    return [Route("/api/why", why, methods=["GET"])]
