"""The Warm page: the active (or else the latest) warm run live, its progress, pace and
counts, its warning once ended (:mod:`stoker.warm.verdict`), why discovery skipped URLs,
why pages were not stored, a re-warm's URLs by name with each one's result, a map of its
URLs as coloured cells, the origins visitors
arrive on against those warm runs fill (and the warmed entries visitors read), the
recent runs;
start a run (the whole site, or a list of URLs) and cancel one.

Invariants: every figure comes from the functions ``/api/warm`` answers with
(:func:`~stoker.admin.warm_api.runs_listing`, :func:`~stoker.admin.warm_api.run_detail`,
:func:`~stoker.admin.warm_api.url_map_of`); the map shows at most :data:`MAP_CELLS` cells
(the first URLs of each state the store lists) and says so when the run has more; the
forms stay outside the live region, so a refresh never loses what is typed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from starlette.requests import Request

from stoker.admin.views import Sources, View
from stoker.admin.views.html import (
    Markup,
    action,
    esc,
    facts,
    heading,
    link,
    moment,
    no_warmer,
    shown,
    span,
    table,
)
from stoker.admin.warm_api import MAP_MOST, run_detail, runs_listing, url_map_of
from stoker.text import plural
from stoker.warm.run import URL_STATES

MAP_CELLS: Final = MAP_MOST
"""The most cells the map shows, and the most URLs of each state it reads."""

_figure: Final = partial(shown, style="count")
"""A count as the pages write it (for :func:`~stoker.text.plural`)."""
STATE_LABELS: Final[Mapping[str, str]] = {
    "queued": "queued", "stopgap": "stopgap, revisit pending", "warmed": "warmed",
    "not_modified": "not modified (was fresh)", "not_stored": "not stored", "failed": "failed",
    "rewarmed": "warmed on a revisit", "gave_up": "gave up"}
"""How the page names each URL state of :data:`~stoker.warm.run.URL_STATES`."""
PHASE_LABELS: Final[Mapping[str, str]] = {
    "collect": "collecting URLs", "warm": "warming", "done": "done", "failed": "failed",
    "cancelled": "cancelled"}
TAG_OF_PHASE: Final[Mapping[str, str]] = {"collect": "running", "warm": "running",
                                          "done": "ok", "failed": "failed"}
TAG_OF_STATE: Final[Mapping[str, str]] = {
    "queued": "running", "stopgap": "running", "warmed": "ok", "not_modified": "ok",
    "rewarmed": "ok", "failed": "failed", "gave_up": "failed"}
"""The tag's colour of each URL state (``not_stored``: none, grey)."""
LISTED_REASONS: Final = frozenset({"purge", "edit"})
"""The runs whose URLs the page lists by name: the re-warms of what a purge took."""
URLS_LISTED: Final = 20
"""The most URLs of a run the page lists by name."""


def pace(run: Mapping[str, Any], now: float) -> tuple[float | None, float | None]:
    """``(rate, eta)`` of a run (:func:`~stoker.admin.warm_api.run_json`): URLs settled
    per second since it started (till it ended), and the seconds its open URLs need at
    that rate while it warms; ``None`` for what is not known yet.  Pure."""
    counts = run["counts"]
    elapsed = (run["finished_at"] or now) - run["started_at"]
    if elapsed <= 0 or counts["settled"] == 0:
        return None, None
    rate = counts["settled"] / elapsed
    eta = counts["open"] / rate if run["phase"] == "warm" else None
    return rate, eta


def state_counts(counts: Mapping[str, int]) -> dict[str, int]:
    """How many URLs of a run are in each state, from its counts.  Pure."""
    tallied: dict[str, int] = {state: counts.get(state, 0) for state in URL_STATES}
    tallied["stopgap"] = counts["stopgap_pending"]
    tallied["queued"] = counts["open"] - counts["stopgap_pending"]
    return tallied


def phase_tag(run: Mapping[str, Any]) -> Markup:
    """A run's phase as a coloured tag.  Pure."""
    kind = TAG_OF_PHASE.get(run["phase"], "")
    return Markup(f'<span class="tag {kind}">{esc(PHASE_LABELS.get(run["phase"], run["phase"]))}'
                  "</span>")


def progress_html(run: Mapping[str, Any], now: float) -> Markup:
    """The run's progress bar, its figures, pace and counts.  Pure."""
    counts = run["counts"]
    total, settled = counts["total"], counts["settled"]
    rate, eta = pace(run, now)
    if total:
        bar = f'<progress id="warm-progress" value="{settled}" max="{total}"></progress>'
        said = f"{shown(settled, 'count')} of {plural(total, 'URL', figure=_figure)} settled " \
               f"({shown(settled / total, 'percent')})"
    else:
        bar, said = '<progress id="warm-progress"></progress>', "finding the site's URLs…"
    ended = run["finished_at"]
    timing: list[tuple[str, Any]] = [
        ("Rate", "—" if rate is None else f"{rate:.1f} URLs/s"),
        ("ETA", "—" if eta is None else span(eta)) if ended is None
        else ("Took", span(ended - run["started_at"])),
        ("Started", moment(run["started_at"], now))]
    figures = [("Warmed", counts["warmed"] + counts["rewarmed"]),
               ("Not modified", counts["not_modified"]), ("Not stored", counts["not_stored"]),
               ("Failed", counts["failed"]), ("Gave up", counts["gave_up"]),
               ("Stopgap, revisit pending", counts["stopgap_pending"]),
               ("Skipped by discovery", counts["skipped"])]
    error = f'<p class="error">{esc(run["error"])}</p>' if run["error"] and \
        run["phase"] in ("failed", "collect") else ""  # collect: why discovery waits
    return Markup(f'<div class="meter">{bar}<p class="detail" id="warm-said">{esc(said)}</p>'
                  f"</div>{error}"
                  '<div class="cards figures"><div class="card">'
                  + facts(timing) + '</div><div class="card">'
                  + facts((name, shown(n, "count")) for name, n in figures) + "</div></div>")


def reasons_html(reasons: Mapping[str, int], urls: Mapping[str, Sequence[str]]) -> Markup:
    """Why pages were not stored: each reason, how many URLs, a few of them.  Pure."""
    if not reasons:
        return Markup("")
    items = []
    for reason, count in reasons.items():
        some = urls.get(reason, [])
        more = f" and {shown(count - len(some), 'count')} more" if count > len(some) else ""
        listed = "".join(f"<li>{esc(url)}</li>" for url in some)
        items.append(f"<li><strong>{esc(reason or 'no reason given')}</strong>: "
                     f"{plural(count, 'URL', figure=_figure)}{esc(more)}"
                     f'<ul class="detail">{listed}</ul></li>')
    return Markup('<h2>Not stored, by reason</h2><ul class="reasons">' + "".join(items)
                  + "</ul>")


def skipped_html(reasons: Mapping[str, int]) -> Markup:
    """Why discovery left URLs out of the run: each reason and how many.  Pure."""
    if not reasons:
        return Markup("")
    items = "".join(f"<li><strong>{esc(reason)}</strong>: {shown(count, 'count')}</li>"
                    for reason, count in reasons.items())
    return Markup('<h2>Skipped by discovery, by reason</h2><ul class="reasons" '
                  f'id="warm-skipped">{items}</ul>')


def warning_html(detail: Mapping[str, Any]) -> Markup:
    """The warning on a run that ended ``done`` (a failed one shows its error).  Pure."""
    said = detail.get("warning")
    if not said or detail["phase"] != "done":
        return Markup("")
    return Markup(f'<p class="notice" id="warm-warning"><strong>Warning:</strong> this run '
                  f"{esc(said)}</p>")


def natural(url: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders the numbers in ``url`` by value (``/page/2`` before
    ``/page/10``).  Pure."""
    return tuple((1, int(part)) if part.isdigit() else (0, part)
                 for part in re.split(r"(\d+)", url))


def map_html(states: Mapping[str, Sequence[str]], counts: Mapping[str, int],
             most: int = MAP_CELLS) -> Markup:
    """The run's URLs as cells coloured by state, the URL and state on hover, at most
    ``most`` (``/page/2`` before ``/page/10``); a legend with every state's count.  Pure."""
    cells = sorted(((url, state) for state, urls in states.items() for url in urls),
                   key=lambda cell: natural(cell[0]))
    total = counts["total"]
    tallied = state_counts(counts)
    legend = "".join(f'<li><span class="cell s-{esc(state)}"></span>'
                     f"{esc(STATE_LABELS[state])} <strong>{shown(tallied[state], 'count')}"
                     "</strong></li>" for state in URL_STATES)
    grid = "".join(f'<span class="cell s-{esc(state)}" title="{esc(url)} — '
                   f'{esc(STATE_LABELS.get(state, state))}"></span>'
                   for url, state in cells[:most])
    urls = plural(total, "URL", figure=_figure)
    note = f"{shown(most, 'count')} of {urls} shown" if total > most else urls
    return Markup(f'<h2>Map of the run <span class="detail">{esc(note)}</span></h2>'
                  f'<ul class="legend">{legend}</ul>'
                  f'<div class="warm-map" role="img" aria-label="One cell per URL, coloured by '
                  f'state">{grid}</div>')


def listed(run: Mapping[str, Any]) -> bool:
    """Whether the page names ``run``'s URLs one by one: a re-warm after a purge or an
    edit, or a run of a list of URLs (a handful, where counts alone say too little).
    Pure."""
    return run["reason"] in LISTED_REASONS or run["scope"] == "urls"


def urls_html(states: Mapping[str, Sequence[str]], counts: Mapping[str, int],
              most: int = URLS_LISTED) -> Markup:
    """The run's URLs one a row with each one's result (``/page/2`` before ``/page/10``),
    the first ``most`` of them, then how many more the run has.  Pure."""
    rows = sorted(((url, state) for state, urls in states.items() for url in urls),
                  key=lambda row: natural(row[0]))[:most]
    more = counts["total"] - len(rows)
    note = f"and {plural(more, 'more URL', figure=_figure)}" if more > 0 else ""
    return Markup(
        '<h2 id="warm-urls">URLs of the run</h2>'
        + table(("URL", "Result"),
                [(Markup(f'<span class="detail">{esc(url)}</span>'),
                  Markup(f'<span class="tag {TAG_OF_STATE.get(state, "")}">'
                         f"{esc(STATE_LABELS.get(state, state))}</span>"))
                 for url, state in rows],
                empty="no URL yet", label="URLs of the run")
        + (f'<p class="detail">{esc(note)}</p>' if note else ""))


def counts_text(counts: Mapping[str, int]) -> str:
    """A run's counts in a few words.  Pure."""
    parts = [f"{shown(counts['warmed'] + counts['rewarmed'], 'count')} warmed"]
    parts += [f"{shown(counts[key], 'count')} {name}" for key, name in (
        ("not_modified", "not modified"), ("not_stored", "not stored"), ("failed", "failed"),
        ("gave_up", "gave up")) if counts[key]]
    return f"{plural(counts['total'], 'URL', figure=_figure)}: " + ", ".join(parts)


def recent_html(runs: Sequence[Mapping[str, Any]], now: float) -> Markup:
    """The recent runs' table.  Pure."""
    rows = [(f"#{run['id']}", run["reason"], run["scope"], phase_tag(run),
             moment(run["started_at"], now),
             Markup(f"{moment(run['finished_at'], now)}<br><span class=\"detail\">took "
                    f"{esc(span(run['finished_at'] - run['started_at']))}</span>")
             if run["finished_at"] is not None else "—", counts_text(run["counts"]))
            for run in runs]
    return Markup("<h2>Recent runs</h2>" + table(
        ("Run", "Reason", "Scope", "Phase", "Started", "Finished", "Counts"), rows,
        empty="no warm run yet", label="Recent warm runs"))


def run_html(detail: Mapping[str, Any], url_map: Mapping[str, Any], now: float) -> Markup:
    """The shown run: heading, cancel while it is active, progress, reasons, its URLs by
    name with their results (a re-warm's, a list's: :func:`listed`), map.  Pure."""
    active = detail["finished_at"] is None
    which = "Current run" if active else "Latest run"
    cancel = action("Cancel run", f"/api/warm/{detail['id']}/cancel", danger=True,
                    confirm=f"Cancel warm run #{detail['id']}? Its queued visits will do "
                            "nothing.", confirm_label="Stop the run",
                    done=f"Run #{detail['id']} cancelled.") if active else ""
    return Markup(f'<section class="run"><h2 id="warm-run">{which} #{esc(detail["id"])} '
                  f'<span class="detail">{esc(detail["reason"])}, {esc(detail["scope"])}</span> '
                  f"{phase_tag(detail)} {cancel}</h2>"
                  + warning_html(detail) + progress_html(detail, now)
                  + skipped_html(detail["skipped_reasons"])
                  + reasons_html(detail["not_stored_reasons"], detail["not_stored_urls"])
                  + (urls_html(url_map["states"], detail["counts"]) if listed(detail) else "")
                  + map_html(url_map["states"], detail["counts"]) + "</section>")


def controls() -> Markup:
    """Start a run: the whole site, or a list of URLs (merged into a run that is going)."""
    return Markup(
        '<div class="controls">'
        + action("Warm the whole site", "/api/warm", body={}, replace=True,
                 done="Warm run started.")
        + f'</div><form class="tool warm-urls" data-api="{link("/api/warm")}" '
        'data-done="URLs queued." data-reset><label>URLs to warm (one a line, on this site)'
        '<textarea name="urls" rows="2" '
        'data-list required placeholder="https://www.example.com/page"></textarea></label>'
        '<button type="submit">Warm these URLs</button></form>')


def origins_html(listing: Mapping[str, Any], now: float) -> Markup:
    """The origins visitors arrived on against those warm runs fill, the findings when
    they differ (as notices), and the warmed entries visitors then read.  Pure."""
    warmed = set(listing["warmed_origins"])
    rows = [(row["origin"] or "other hosts (not the site's)", shown(row["visits"], "count"),
             moment(row["last_seen"], now), "yes" if row["origin"] in warmed else "no")
            for row in listing["seen_origins"]]
    reads = listing["warm_reads"]
    read_share = (f"{shown(reads['read'], 'count')} of {shown(reads['stored'], 'count')} "
                  f"({shown(reads['read'] / reads['stored'], 'percent')})"
                  if reads["stored"] else "none stored yet")
    return Markup(
        '<section class="origins"><h2>Where visitors arrive</h2>'
        + "".join(f'<p class="notice">{esc(text)}</p>' for text in listing["origin_findings"])
        + facts([("Warm runs fill", ", ".join(listing["warmed_origins"])),
                 ("Warmed entries later read by visitors", read_share)])
        + table(("Origin", "Visits", "Last seen", "Warmed"), rows, numeric=(1,),
                empty="no visitor counted yet", label="Origins visitors arrive on")
        + "</section>")


def warm_html(listing: Mapping[str, Any], detail: Mapping[str, Any] | None,
              url_map: Mapping[str, Any] | None, now: float) -> str:
    """The page's content: ``listing`` from :func:`runs_listing`, the shown run's
    ``detail`` and ``url_map`` (``None``: no run yet).  Pure."""
    shown_run = (run_html(detail, url_map, now) if detail is not None and url_map is not None
                 else Markup('<p class="notice">No warm run yet: start one above.</p>'))
    return (heading("Warm") + '<p class="lead">The warmer visits the site\'s URLs '
            "through the cache so visitors find them warm.</p>" + controls() + "<div data-live>"
            + shown_run + origins_html(listing, now) + recent_html(listing["recent"], now)
            + "</div>")


async def content(_: Request, sources: Sources) -> str:
    """The Warm page for the running process."""
    service = sources.warm
    if service is None:
        return "<h1>Warm</h1>" + no_warmer()
    listing = await runs_listing(service)
    latest = listing["active"] or next(iter(listing["recent"]), None)
    run = await service.stores.runs.get(latest["id"]) if latest is not None else None
    detail = await run_detail(service, run) if run is not None else None
    url_map = await url_map_of(service, run, MAP_CELLS) if run is not None else None
    return warm_html(listing, detail, url_map, sources.stoker.clock.now())


VIEW: Final = View("Warm", "/warm", content)
