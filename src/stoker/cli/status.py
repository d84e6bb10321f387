"""``stoker status``: a running Stoker's counters, live in the terminal, as varnishstat shows
Varnish's.

It reads the admin API's ``GET /api/status`` every ``--interval`` seconds.  What the view
shows is computed by pure functions of two successive samples (:func:`summary`, then
:func:`sections` and :func:`render`); the fetching, sleeping and printing are in
:func:`status` and the few functions after it.

Invariants: a rate is never negative and never made up from one sample (a counter that
went down was reset, Stoker restarted, and counts from zero again, as Prometheus's
``rate`` assumes); the hit ratio is ``None`` while no request has been counted;
``--once --json`` writes exactly one JSON document to stdout and nothing else (errors go
to stderr); into a pipe or a file the view is one plain-text snapshot (no escape
sequence, no redraw) and the command exits; a Stoker that cannot be reached is one
``error:`` line and exit 1, as for every command that talks to a running Stoker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final

import typer
from rich.live import Live
from rich.table import Table
from rich.text import Text

from stoker.admin.hit_ratio import REQUEST_KINDS, hit_ratio, total_requests
from stoker.cli.common import (
    AdminTokenOpt,
    AdminUrlOpt,
    ConfigOpt,
    admin_client,
    fail,
    output,
    usage_error,
)
from stoker.clock import SystemClock
from stoker.text import plural

NONE: Final = "—"
"""What a cell shows for a value that cannot be known yet (a rate from one sample)."""

Row = tuple[str, str, str]
"""One line of the view: name, value, per second ("" where no rate applies)."""

Section = tuple[str, list[Row]]
"""A titled group of rows."""


@dataclass(frozen=True)
class Sample:
    """One ``GET /api/status`` answer and when it arrived: ``monotonic`` (seconds) for
    rates, ``wall`` (epoch seconds, the clock of ``origin_down_since``) for ages."""

    status: Mapping[str, Any]
    monotonic: float
    wall: float


# -- computations (pure) ------------------------------------------------------------------


def rate(before: int, after: int, seconds: float) -> float:
    """Per-second increase of a counter (≥ 0) that read ``before``, then ``after``
    ``seconds`` (> 0) later.  Never negative: a counter that went down was reset, and has
    counted ``after`` since."""
    increase = after - before if after >= before else after
    return increase / seconds


def counter_rates(before: Mapping[str, int], after: Mapping[str, int],
                  seconds: float) -> dict[str, float]:
    """The :func:`rate` of every counter in ``after``; one absent from ``before`` has
    counted from zero."""
    return {name: rate(before.get(name, 0), count, seconds) for name, count in after.items()}


def warm_progress(status: Mapping[str, Any]) -> float | None:
    """The share (0 to 1) of the active warm run's URLs that are settled; ``None`` when no
    run is active (or no warmer runs) or the run has no URLs yet."""
    active = (status.get("warm") or {}).get("active")
    if not active or not active["counts"]["total"]:
        return None
    counts = active["counts"]
    return float(counts["settled"] / counts["total"])


def summary(after: Sample, before: Sample | None = None) -> dict[str, Any]:
    """``after``'s status as fetched, plus what the view computes: ``requests_total``,
    ``hit_ratio`` (visitors only: :func:`stoker.admin.hit_ratio.hit_ratio` of the
    status's ``served_by``), ``warm_visits``, the :func:`rates_between` the samples,
    ``origin_down_for`` (seconds,
    ``None`` while the origin is up) and ``warm_progress``."""
    requests: Mapping[str, int] = after.status.get("requests", {})
    down_since = after.status.get("origin_down_since")
    return {
        **after.status,
        "requests_total": total_requests(requests),
        "hit_ratio": hit_ratio(after.status.get("served_by", {})),
        "warm_visits": after.status.get("served_by", {}).get("warm"),
        **rates_between(before, after),
        "origin_down_for": None if down_since is None else round(
            max(after.wall - down_since, 0.0), 1),
        "warm_progress": _rounded(warm_progress(after.status), 4),
    }


def rates_between(before: Sample | None, after: Sample) -> dict[str, Any]:
    """``sampled_over`` (seconds from ``before`` to ``after``), ``requests_per_second`` and
    ``request_rates`` (per counter, the four kinds always); all three ``None`` without an
    earlier sample."""
    seconds = after.monotonic - before.monotonic if before is not None else 0.0
    if before is None or seconds <= 0:
        return dict.fromkeys(("sampled_over", "requests_per_second", "request_rates"))
    earlier: Mapping[str, int] = before.status.get("requests", {})
    later = {**dict.fromkeys(REQUEST_KINDS, 0), **after.status.get("requests", {})}
    return {
        "sampled_over": round(seconds, 3),
        "requests_per_second": round(
            rate(total_requests(earlier), total_requests(later), seconds), 2),
        "request_rates": {name: round(value, 2) for name, value in
                          counter_rates(earlier, later, seconds).items()},
    }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def sections(view: Mapping[str, Any]) -> list[Section]:
    """The view's rows, by section, from a :func:`summary`: requests, origin, cache, warm
    (the run while one is active, the last one that ended, refresh ahead while on), and
    the processes and nodes
    sharing the cache."""
    found = [("requests", request_rows(view)), ("origin", origin_rows(view)),
             ("cache", cache_rows(view)), ("warm", warm_rows(view)),
             ("sharing", member_rows(view))]
    return [(title, rows) for title, rows in found if rows]


def request_rows(view: Mapping[str, Any]) -> list[Row]:
    """A row per request counter (the four kinds always, first), then all of them, the
    hit ratio (visitors only), the uncacheable requests and the warm visits (when any);
    the counters that count requests among the kinds come last, said so."""
    requests: Mapping[str, int] = view.get("requests", {})
    rates: Mapping[str, float] | None = view.get("request_rates")
    kinds = REQUEST_KINDS
    extra = sorted(set(requests) - set(kinds))

    def row(name: str, label: str) -> Row:
        return label, _count(requests.get(name, 0)), _per_second(
            None if rates is None else rates.get(name, 0.0))

    return [*(row(kind, kind) for kind in kinds),
            ("all", _count(view["requests_total"]), _per_second(view["requests_per_second"])),
            ("hit ratio", _percent(view["hit_ratio"]), ""),
            *([("uncacheable (pass, bypass)", _count(view["served_by"]["uncacheable"]), "")]
              if view.get("served_by", {}).get("uncacheable") else []),
            *([("warm visits (not in the ratio)", _count(view["warm_visits"]), "")]
              if view.get("warm_visits") else []),
            *(row(name, f"{name} (among the above)") for name in extra)]


def member_rows(view: Mapping[str, Any]) -> list[Row]:
    """A row per process or node sharing the cache (``members``): live or gone, its hit
    ratio and L1 fill as its heartbeat said them (when it did), and the newest purge it
    has in force, with its release; none when the cache is this process's alone."""
    return [(member["name"], _member_state(member),
             " ".join(filter(None, (f"purge {member['confirmed']}", member.get("release")))))
            for member in view.get("members", ())]


def _member_state(member: Mapping[str, Any]) -> str:
    parts = ["live" if member["live"] else "gone"]
    if member.get("hit_ratio") is not None:
        parts.append(f"hits {_percent(member['hit_ratio'])}")
    if member.get("l1_entries") is not None:
        parts.append(f"L1 {_fill(member['l1_entries'], member.get('l1_bytes'))}")
    return ", ".join(parts)


def origin_rows(view: Mapping[str, Any]) -> list[Row]:
    """The origin, whether it answers (``origin_down_since``), and the fetches of cacheable
    pages in flight to it."""
    down_for = view.get("origin_down_for")
    state = "up" if down_for is None else f"down for {_age(down_for)}"
    return [("url", str(view.get("origin", NONE)), ""), ("state", state, ""),
            ("in flight", _count(view.get("in_flight", 0)), "")]


def cache_rows(view: Mapping[str, Any]) -> list[Row]:
    """How full each tier is, and the writes still queued for (or dropped before) L2."""
    store: Mapping[str, int] = view.get("store", {})
    rows = [("L1 memory", _fill(store.get("l1_entries"), store.get("l1_bytes")), ""),
            (f"L2 {view.get('l2_tier', 'SQLite')}", _fill(store.get("entries"),
                                                          store.get("bytes")), ""),
            ("pending L2 writes", _count(view.get("pending_l2_writes", 0)), "")]
    if store.get("l2_dropped"):
        rows.append(("L2 writes dropped", _count(store["l2_dropped"]), ""))
    return rows


def warm_reads_row(view: Mapping[str, Any]) -> list[Row]:
    """Responses warm visits stored, and how many a visitor then read (with the share);
    no row before a warm visit stored one."""
    reads = view.get("warm_reads") or {}
    stored = reads.get("stored", 0)
    if not stored:
        return []
    read = reads.get("read", 0)
    return [("warmed entries read", f"{_count(read)} of {_count(stored)} stored "
             f"({_percent(read / stored)})", "")]


def refresh_row(view: Mapping[str, Any]) -> list[Row]:
    """Refresh ahead's figures (this process's): reads tracked, refreshes by result; no row
    while it is off."""
    refresh = view.get("refresh_ahead")
    if not refresh:
        return []
    return [("refresh ahead", f"{_count(refresh['tracked'])} read, "
                              f"{_count(refresh['refreshed'])} refreshed, "
                              f"{_count(refresh['not_modified'])} not modified, "
                              f"{_count(refresh['failed'])} failed", "")]


def warm_rows(view: Mapping[str, Any]) -> list[Row]:
    """The active warm run (what it is, how far it got, how its settled visits went, why
    discovery skipped URLs), then the last run that ended and its warning, then the warmed
    entries visitors read (:func:`warm_reads_row`) and refresh ahead (:func:`refresh_row`);
    no rows when there is none of them."""
    warm = view.get("warm") or {}
    active, last = warm.get("active"), warm.get("last")
    rows = _active_rows(active, view.get("warm_progress")) if active else []
    if last:
        counts = last["counts"]
        urls = plural(counts["total"], "URL", figure=_count)
        rows.append(("last run", f"{last['id']} ({last['reason']}, {last['scope']}): "
                                 f"{last['phase']}, {urls}, "
                                 f"{_count(counts['warmed'] + counts['rewarmed'])} warmed", ""))
        rows += _skipped_rows(last, "last run skipped")
        if last.get("warning"):
            rows.append(("last run warning", last["warning"], ""))
    return rows + warm_reads_row(view) + refresh_row(view)


def _active_rows(active: Mapping[str, Any], progress: float | None) -> list[Row]:
    counts = active["counts"]
    done = f"{_count(counts['settled'])}/{_count(counts['total'])}" + (
        f" ({_percent(progress)})" if progress is not None else "")
    return [("run", f"{active['id']} ({active['reason']}, {active['scope']}): "
                    f"{active['phase']}", ""),
            ("settled", done, ""),
            *((name.replace("_", " "), _count(counts.get(name, 0)), "")
              for name in ("warmed", "not_modified", "not_stored", "failed")),
            *_skipped_rows(active, "skipped")]


def _skipped_rows(run: Mapping[str, Any], name: str) -> list[Row]:
    """One row saying why discovery skipped URLs, when it skipped some."""
    skipped = run["counts"].get("skipped", 0)
    if not skipped:
        return []
    reasons = ", ".join(f"{reason}: {_count(n)}"
                        for reason, n in (run.get("skipped_reasons") or {}).items())
    return [(name, _count(skipped) + (f" ({reasons})" if reasons else ""), "")]


def render(view: Mapping[str, Any], *, title: str, caption: str | None = None) -> Table:
    """The view as one table: a section per :func:`sections` entry, its title in the first
    column of its first row.  Every cell is plain text, never read as markup."""
    table = Table(title=Text(title, style="table.title"), show_edge=False,
                  caption=Text(caption, style="table.caption") if caption else None)
    table.add_column()
    table.add_column()
    table.add_column("value", justify="right")
    table.add_column("/s", justify="right", min_width=7)  # a redraw keeps its width
    for index, (name, rows) in enumerate(sections(view)):
        if index:
            table.add_section()
        for number, row in enumerate(rows):
            table.add_row(Text(name if not number else "", style="bold"),
                          *(Text(cell) for cell in row))
    return table


def plain(view: Mapping[str, Any], *, title: str, caption: str | None = None) -> str:
    """The view as plain text, for a pipe or a file: the title, then a line per row (section,
    name, value, per second) in aligned columns, then the caption.  No escape sequence, no
    box drawing, no wrapping: every line is whole, ready for ``grep`` and ``awk``, and the
    section is repeated on each of its rows."""
    lines = [(name, *row) for name, rows in sections(view) for row in rows]
    widths = [max((len(line[column]) for line in lines), default=0) for column in range(3)]
    table = [f"{section:<{widths[0]}}  {name:<{widths[1]}}  {value:>{widths[2]}}"
             + (f"  {per_second}/s" if per_second else "")
             for section, name, value, per_second in lines]
    return "\n".join([title, *table, *([caption] if caption else [])])


def _count(value: int) -> str:
    return f"{value:,}"


def _per_second(value: float | None) -> str:
    return NONE if value is None else f"{value:,.1f}"


def _percent(share: float | None) -> str:
    return NONE if share is None else f"{share:.1%}"


def _fill(entries: int | None, size: int | None) -> str:
    if entries is None or size is None:
        return NONE
    return f"{plural(entries, 'entry', 'entries', figure=_count)}, {_bytes(size)}"


def _bytes(size: int) -> str:
    """``size`` in the largest binary unit it reaches: ``"512 B"``, ``"12.3 MiB"``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _age(seconds: float) -> str:
    """``"42s"``, ``"3m 12s"``, ``"2h 05m"``: the two largest units."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


# -- the command (I/O) --------------------------------------------------------------------


def status(
    interval: Annotated[float, typer.Option(
        "--interval", min=0.1,
        help="Seconds between two samples: the view refreshes this often, and every rate "
             "is the increase over the last interval")] = 1.0,
    once: Annotated[bool, typer.Option(
        "--once", help="Print the view once and exit. It takes two samples --interval "
                       "apart, so that req/s is known. Implied when stdout is not a "
                       "terminal")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="With --once: print one JSON document instead of the table: "
                       "GET /api/status as fetched (the second sample), plus requests_total, "
                       "hit_ratio, requests_per_second, request_rates (per counter), "
                       "sampled_over (seconds), origin_down_for (seconds) and "
                       "warm_progress (0-1); null where there is nothing to show")] = False,
    config: ConfigOpt = None, admin_url_: AdminUrlOpt = None, admin_token: AdminTokenOpt = None,
) -> None:
    """Show a running Stoker's counters live, like varnishstat, until Ctrl-C: requests per
    second and by outcome (hit, stale, miss, bypass, ...), the hit ratio (hits and stale
    answers, of all requests), the origin's state and fetches in flight, the fill of L1
    and L2, the pending L2 writes, and the warm run's progress while one is active.

    Into a pipe or a file (stdout not a terminal) it prints one snapshot as plain text
    and exits, as varnishstat -1 does: a line per counter, no colours, no redrawing; run
    it again (or under watch) for another.  NO_COLOR=1 turns colours and styles off on a
    terminal too."""
    from stoker.admin.client import AdminClientError

    if as_json and not once:
        raise usage_error("--json prints one document: add --once")
    try:
        with admin_client(config, admin_url_, admin_token) as client:
            if once:
                _print_once(client, interval, as_json)
            else:
                _watch(client, interval)
    except AdminClientError as error:
        raise fail(error) from None


def _sample(client: Any, clock: SystemClock) -> Sample:
    fetched: dict[str, Any] = client.status()
    return Sample(fetched, clock.monotonic(), clock.now())


def _title(client: Any) -> str:
    return f"stoker at {client.base_url}"


def _print_once(client: Any, interval: float, as_json: bool) -> None:
    """Two samples ``interval`` apart, then the view of the second: JSON, a table on a
    terminal, plain text (:func:`plain`) into a pipe or a file."""
    clock = SystemClock()
    before = _sample(client, clock)
    time.sleep(interval)  # a synchronous CLI: blocking is what it should do here
    view = summary(_sample(client, clock), before)
    if as_json:
        print(json.dumps(view, indent=2))
        return
    caption = f"rates over {view['sampled_over']:.1f} s"
    out = output()
    if out.is_terminal:
        out.print(render(view, title=_title(client), caption=caption))
    else:
        print(plain(view, title=_title(client), caption=caption))


def _watch(client: Any, interval: float) -> None:
    """A new view every ``interval`` seconds, redrawn in place on the terminal, until
    Ctrl-C (exit 0); into a pipe or a file, one plain snapshot (:func:`_print_once`)."""
    out = output()
    if not out.is_terminal:
        _print_once(client, interval, as_json=False)
        return
    try:
        with Live(console=out, auto_refresh=False) as live:
            for frame in _frames(client, interval, SystemClock()):
                live.update(frame, refresh=True)
    except KeyboardInterrupt:
        return


def _frames(client: Any, interval: float, clock: SystemClock) -> Iterator[Table]:
    """The views, one per sample, a sample every ``interval`` seconds; the first has no
    rates (one sample), each later one the rates since the sample before."""
    caption = f"every {interval:g} s, Ctrl-C to stop"
    before: Sample | None = None
    while True:
        after = _sample(client, clock)
        yield render(summary(after, before), title=_title(client), caption=caption)
        before = after
        time.sleep(interval)


def mount(app: typer.Typer) -> None:
    """Add ``status`` to the ``stoker`` command."""
    app.command("status")(status)
