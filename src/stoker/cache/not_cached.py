"""What the cache did not keep, and why: the origin's responses that were not stored and
the requests that bypassed the cache, counted by reason, in bounded memory, per process.

The reasons are those the proxy already gives in ``Cache-Status``: a pass's ``detail``
(:func:`~stoker.http.policy.decide_storage`'s ``no-freshness``, ``set-cookie``,
``private``, ``no-store``, ``vary-star``, ``authorization``, ``status``, … and the
fetch's ``too-large``, ``cookie``, ``stopgap``, ``incomplete``, ``purged``, …) and a
bypass's ``fwd`` (``method``, ``bypass`` for a rule, ``request`` for a client's
``no-store``), and ``vary-miss`` for a miss that found only other variants stored.  Each
record may carry details: the cookie names of a ``cookie`` bypass, the cookies a
``set-cookie`` response sets, the status of a ``status`` refusal, the method of a
``method`` bypass, the rule key of a ``bypass``, the names a ``vary-miss``'s variants
vary on.

Invariants (one event loop; every method is synchronous, so atomic for the loop):
- :meth:`NotCachedLog.record` is called only where the cache is left out (a pass, a
  bypass, a miss), never on a hit: the hit path costs nothing.
- A reason's ``count`` is exact (every record counts once under its reason); a detail
  counts once per record that names it (a request with two cookies counts under both).
- Memory is bounded: at most :data:`REASONS_KEPT` reasons and, per reason,
  :data:`DETAILS_KEPT` details (later ones count under :data:`OTHER`), the top
  :data:`URLS_KEPT` URLs and :data:`SECTIONS_KEPT` sections
  (:class:`~stoker.cache.heavy_hitters.SpaceSaving`), and the last reason of
  :data:`LAST_KEPT` URLs (the least recently recorded forgotten first); URLs and
  details are cut to :data:`TEXT_KEPT` characters.
- A section is a URL's scheme, host and first path segment (``/blog/`` for
  ``/blog/2024/post``, ``/about`` for ``/about``): :func:`section_of`.  A section's
  ``pages`` counts the URLs (among the :data:`LAST_KEPT` last) whose last record was
  that reason.
- :meth:`NotCachedLog.snapshot` is plain JSON (it travels on the purge bus with the
  process's figures); :func:`merged` adds snapshots of several processes, reasons'
  counts and details exactly, their URLs and sections as space-saving summaries do.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from stoker.cache.heavy_hitters import Counted, SpaceSaving
from stoker.cache.heavy_hitters import merged as merged_top

REASONS_KEPT: Final = 32
DETAILS_KEPT: Final = 200
URLS_KEPT: Final = 64
SECTIONS_KEPT: Final = 32
LAST_KEPT: Final = 4096
TEXT_KEPT: Final = 512
SHOWN: Final = 10
"""URLs and sections a snapshot lists per reason."""
OTHER: Final = "(other)"
"""The name under which a reason or a detail beyond the bound is counted."""

Snapshot = dict[str, Any]
"""``{"total": N, "reasons": [{"reason", "count", "details": {name: n}, "urls": [[url,
count, error]], "sections": [[section, count, error, pages]]}]}``, reasons most counted
first."""


def cut(text: str) -> str:
    """``text`` within :data:`TEXT_KEPT` characters (longer: cut, ending in ``…``)."""
    return text if len(text) <= TEXT_KEPT else text[:TEXT_KEPT - 1] + "…"


def section_of(url: str) -> str:
    """The section of an absolute ``url``: its scheme, host and first path segment, with
    the slash after it when there is one (``https://h/blog/`` for ``https://h/blog/x``,
    ``https://h/about`` for ``https://h/about?page=2``, ``https://h/`` for the home page).
    Pure."""
    parts = urlsplit(url)
    path = parts.path or "/"
    end = path.find("/", 1)
    return f"{parts.scheme}://{parts.netloc}{path if end < 0 else path[:end + 1]}"


@dataclass(frozen=True, slots=True)
class LastSeen:
    """The last record for one URL."""

    reason: str
    at: float
    status: int | None = None
    details: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "at": self.at, "status": self.status,
                "details": list(self.details)}


class _Tally:
    """One reason's figures."""

    __slots__ = ("count", "details", "sections", "urls")

    def __init__(self) -> None:
        self.count = 0
        self.details: dict[str, int] = {}
        self.urls: SpaceSaving[str] = SpaceSaving(URLS_KEPT)
        self.sections: SpaceSaving[str] = SpaceSaving(SECTIONS_KEPT)

    def add(self, url: str, section: str, details: Iterable[str]) -> list[str]:
        """Count one record; the details it named first (as kept: :data:`OTHER` when the
        bound is reached)."""
        self.count += 1
        self.urls.add(url)
        self.sections.add(section)
        first = []
        for name in dict.fromkeys(cut(name) for name in details):
            kept = name if name in self.details or len(self.details) < DETAILS_KEPT else OTHER
            if kept not in self.details:
                first.append(kept)
                self.details[kept] = 0
            self.details[kept] += 1
        return first


class NotCachedLog:
    """This process's record of what the cache left out (see the module)."""

    def __init__(self) -> None:
        self._tallies: dict[str, _Tally] = {}
        self._last: OrderedDict[str, tuple[LastSeen, str]] = OrderedDict()
        self.total = 0
        self._memo: tuple[int, Snapshot] | None = None

    def record(self, reason: str, url: str, now: float, *, status: int | None = None,
               details: Sequence[str] = ()) -> list[str]:
        """Count one response not stored (or request bypassed) for ``reason``; the
        details this reason has not named before (for a log line once per name)."""
        tallies = self._tallies
        if reason not in tallies and len(tallies) >= REASONS_KEPT:
            reason = OTHER
        tally = tallies.get(reason)
        if tally is None:
            tally = tallies[reason] = _Tally()
        url = cut(url)
        section = cut(section_of(url))
        self.total += 1
        last = self._last
        last[url] = (LastSeen(reason, now, status, tuple(cut(name) for name in details)),
                     section)
        last.move_to_end(url)
        if len(last) > LAST_KEPT:
            last.popitem(last=False)
        return tally.add(url, section, details)

    def details(self, reason: str) -> Mapping[str, int]:
        """The details counted under ``reason`` (empty if it was never recorded)."""
        tally = self._tallies.get(reason)
        return tally.details if tally is not None else {}

    def last(self, url: str) -> LastSeen | None:
        """The last record for ``url``, if it is among the :data:`LAST_KEPT` last."""
        found = self._last.get(cut(url))
        return found[0] if found is not None else None

    def recent_urls(self) -> list[str]:
        """The URLs with a last record (at most :data:`LAST_KEPT`), oldest first."""
        return list(self._last)

    def snapshot(self) -> Snapshot:
        """Every reason's figures now (see :data:`Snapshot`); the same object again while
        nothing was recorded since."""
        if self._memo is not None and self._memo[0] == self.total:
            return self._memo[1]
        pages: Counter[tuple[str, str]] = Counter(
            (seen.reason, section) for seen, section in self._last.values())
        reasons: list[dict[str, Any]] = [{
            "reason": reason, "count": tally.count, "details": dict(tally.details),
            "urls": [[item.key, item.count, item.error] for item in tally.urls.top(SHOWN)],
            "sections": [[item.key, item.count, item.error, pages[reason, item.key]]
                         for item in tally.sections.top(SHOWN)],
        } for reason, tally in self._tallies.items()]
        reasons.sort(key=lambda found: -found["count"])
        snapshot: Snapshot = {"total": self.total, "reasons": reasons}
        self._memo = (self.total, snapshot)
        return snapshot


def merged(snapshots: Iterable[Snapshot]) -> Snapshot:
    """The snapshots of several processes as one: totals, counts, details and section
    pages summed; URLs and sections merged as space-saving summaries (at most
    :data:`SHOWN` each).  Pure."""
    total = 0
    counts: Counter[str] = Counter()
    details: dict[str, Counter[str]] = {}
    urls: dict[str, list[list[Counted[str]]]] = {}
    sections: dict[str, list[list[Counted[str]]]] = {}
    pages: dict[str, Counter[str]] = {}
    for snapshot in snapshots:
        total += snapshot["total"]
        for found in snapshot["reasons"]:
            reason = found["reason"]
            counts[reason] += found["count"]
            details.setdefault(reason, Counter()).update(found["details"])
            urls.setdefault(reason, []).append(
                [Counted(url, count, error) for url, count, error in found["urls"]])
            sections.setdefault(reason, []).append(
                [Counted(section, count, error) for section, count, error, _ in
                 found["sections"]])
            pages.setdefault(reason, Counter()).update(
                {section: seen for section, _, _, seen in found["sections"]})
    reasons = [{
        "reason": reason, "count": count, "details": dict(details[reason]),
        "urls": [[item.key, item.count, item.error]
                 for item in merged_top(urls[reason], SHOWN)],
        "sections": [[item.key, item.count, item.error, pages[reason][item.key]]
                     for item in merged_top(sections[reason], SHOWN)],
    } for reason, count in counts.most_common()]
    return {"total": total, "reasons": reasons}
