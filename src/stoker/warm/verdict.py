"""Whether a finished warm run did its job: the warning ``stoker warm --wait``, ``stoker
check``, the admin API and the dashboard show.

A run can end ``done`` with nothing failed and still leave the site cold: discovery found
only the home page (its links name another host, its sitemap is elsewhere), or most pages
it found were not stored.  This module says so, in words that name the cause.

Invariants:
- :func:`warning` is ``None`` for a run that has not ended, was cancelled, or ended
  ``done`` having found at least :data:`MIN_URLS` URLs (a full run) and warmed at least
  :data:`MIN_WARMED_SHARE` of them; otherwise it is one line saying which:
  ``found only N URL(s)`` (a full run below :data:`MIN_URLS`), ``warmed only W of N URLs``
  (below the share), or ``failed: <error>``.  Both ``done`` conditions may be said at once.
- A URL counts as warmed when it is in the cache after the run: ``warmed``,
  ``not_modified`` (still fresh or refreshed) or ``rewarmed``.
- The line lists the ``skipped`` reasons (most first) when the run found too few URLs
  (with a hint at ``site_aliases`` when other hosts come first), and the ``not_stored``
  reasons and the failures when it warmed too few.
- Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from stoker.text import plural
from stoker.warm.run import Run
from stoker.warm.run_store import most_first, not_stored_text, skipped_text

MIN_URLS: Final = 2
"""A full run that found fewer URLs than this found almost nothing (the home page)."""
MIN_WARMED_SHARE: Final = 0.5
"""A run that warmed less than this share of the URLs it found is a warning."""

OTHER_HOSTS: Final = frozenset({"other_host", "sitemap_other_host"})
"""Skip reasons for URLs on other hosts: the site's own under another name, often."""
_EMPTY: Final[Mapping[str, int]] = {}


def warmed_count(run: Run) -> int:
    """The URLs of ``run`` that are in the cache after it."""
    counts = run.counts
    return counts.warmed + counts.not_modified + counts.rewarmed


def warning(run: Run, skipped: Mapping[str, int] = _EMPTY,
            not_stored: Mapping[str, int] = _EMPTY) -> str | None:
    """What is wrong with the ended ``run``, or ``None``; ``skipped`` and ``not_stored``
    are its reasons (reason → count).  See the module invariants."""
    if run.phase == "failed":
        return f"failed: {run.error or 'no reason given'}"
    if run.phase != "done":
        return None
    said = [*_found_too_few(run, skipped), *_warmed_too_few(run, not_stored)]
    return "; ".join(said) or None


def _found_too_few(run: Run, skipped: Mapping[str, int]) -> list[str]:
    total = run.counts.total
    if run.scope != "site" or total >= MIN_URLS:
        return []
    reasons = most_first(skipped)
    hint = "; if a host they name is the site's, add it to site_aliases" \
        if next(iter(reasons), "") in OTHER_HOSTS else ""
    return [f"found only {plural(total, 'URL')} "
            f"({skipped_text(sum(reasons.values()), reasons)}{hint})"]


def _warmed_too_few(run: Run, not_stored: Mapping[str, int]) -> list[str]:
    counts = run.counts
    warmed = warmed_count(run)
    if not counts.total or warmed >= MIN_WARMED_SHARE * counts.total:
        return []
    why = [not_stored_text(counts.not_stored, most_first(not_stored))] \
        if counts.not_stored else []
    why += [f"{getattr(counts, name)} {name.replace('_', ' ')}"
            for name in ("failed", "gave_up") if getattr(counts, name)]
    return [f"warmed only {warmed} of {plural(counts.total, 'URL')}"
            + (f" ({', '.join(why)})" if why else "")]
