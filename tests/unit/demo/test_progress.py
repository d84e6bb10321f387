"""The demo's warm progress and summary lines (pure functions of a run)."""

from __future__ import annotations

import pytest

from stoker.app.serving import progress_line, summary_line
from stoker.warm.run import Counts, Run

WARMING = Counts(total=2001, warmed=800, not_modified=10, failed=2)


@pytest.mark.parametrize(("run", "line"), [
    (Run(1, "manual", "site", "collect", 100.0),
     "warming: finding the pages (robots.txt, sitemaps, home page links)"),
    (Run(1, "manual", "site", "warm", 100.0, WARMING), "warming: 812/2001 pages, 2 failed"),
    (Run(2, "purge", "urls", "warm", 100.0, Counts(total=1)), "warming: 0/1 pages, 0 failed"),
])
def test_progress_line(run: Run, line: str) -> None:
    assert progress_line(run) == line


@pytest.mark.parametrize(("run", "line"), [
    (Run(1, "manual", "site", "done", 100.0, Counts(total=3, warmed=1, not_modified=1,
                                                     gave_up=1), finished_at=112.25),
     "warmed 3 pages in 12.2 s: 1 warmed, 1 not modified, 0 not stored, 0 failed, 1 gave up"),
    (Run(2, "manual", "site", "done", 100.0, Counts(total=5, warmed=1, not_stored=3, failed=1),
         finished_at=101.0),
     "warmed 5 pages in 1.0 s: 1 warmed, 0 not modified, 3 not stored (set-cookie: 2, "
     "private: 1), 1 failed, 0 gave up"),
    (Run(1, "manual", "site", "failed", 100.0, error="sitemap too large"),
     "warm run 1 failed: sitemap too large"),
    (Run(4, "manual", "site", "cancelled", 100.0, finished_at=101.0),
     "warm run 4 was cancelled (a newer run replaced it)"),
])
def test_summary_line(run: Run, line: str) -> None:
    assert summary_line(run, {"set-cookie": 2, "private": 1} if run.id == 2 else {}) == line
