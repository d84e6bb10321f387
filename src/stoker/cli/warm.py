"""``stoker warm`` (start a warm run, optionally wait for it) and ``stoker worker``.

Invariants: ``stoker warm --wait`` exits 0 only when the run it waited for
ended ``done`` with no failed URL (and, with ``--strict``, no warning), and 1 otherwise,
listing the failures (pages the cache does not store are no failure: their reasons are
listed, as are the reasons discovery skipped URLs); a run's warning
(:mod:`stoker.warm.verdict`: it found almost nothing, or warmed under half) is printed;
without ``--wait`` it exits 0 once the run was accepted.  A manual full run going
(409) is an error unless ``--replace`` is given; an automatic one (``warm_on_start``,
the daily refresh) is joined and, with ``--wait``, followed.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Final

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from stoker.cli.common import (
    AdminTokenOpt,
    AdminUrlOpt,
    ConfigOpt,
    DatabaseUrlOpt,
    DataDirOpt,
    LogFormatOpt,
    admin_client,
    announcer,
    console,
    fail,
    output,
    print_error,
    serve_or_exit,
    settings_or_exit,
)
from stoker.cli.log_lines import setup_logging
from stoker.clock import SystemClock
from stoker.warm.run_store import not_stored_text, skipped_text

ENDED: Final = frozenset({"done", "failed", "cancelled"})
POLL: Final = 0.5
LINE_EVERY: Final = 2.0
"""Seconds between progress lines when the output is not a terminal."""


def warm(
    url: Annotated[list[str] | None, typer.Option(
        "--url", help="Warm this absolute URL (repeatable); none: the whole site")] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Supersede a full run that is going")] = False,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Show progress and wait for the run to end")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="With --wait: exit 1 when the run ended with a warning (it found "
                         "fewer than 2 URLs, or warmed under half of them)")] = False,
    config: ConfigOpt = None, admin_url_: AdminUrlOpt = None, admin_token: AdminTokenOpt = None,
) -> None:
    """Warm the site (or --url pages) through a running Stoker's cache."""
    from stoker.admin.client import AdminClientError

    body: dict[str, Any] = {"replace": replace}
    if url:
        body["urls"] = url
    try:
        with admin_client(config, admin_url_, admin_token) as client:
            started = client.warm(body)
            run = started["run"]
            output().print(f"warm run {run['id']} ({run['reason']}, {run['scope']}): "
                           f"{started['outcome']}", highlight=False)
            if wait:
                run = _follow(client, int(run["id"]))
    except AdminClientError as error:
        raise fail(error) from None
    if wait:
        _summary(run)
        if run["phase"] != "done" or run["counts"]["failed"] or (strict and run.get("warning")):
            raise typer.Exit(1)


def _follow(client: Any, run_id: int) -> dict[str, Any]:
    """Poll the run until it ends, showing its progress (a bar on a terminal, else a line
    every :data:`LINE_EVERY` seconds); return its last state."""
    if not console.is_terminal:
        return _follow_in_lines(client, run_id)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]:.1f}/s  failed {task.fields[failed]}"
                          "  not stored {task.fields[not_stored]}"),
               TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"run {run_id}", total=None, rate=0.0, failed=0,
                                 not_stored=0)
        clock = SystemClock()
        started = clock.monotonic()
        while True:
            run: dict[str, Any] = client.warm_run(run_id)
            counts = run["counts"]
            elapsed = max(clock.monotonic() - started, 1e-6)
            progress.update(task, total=counts["total"] or None, completed=counts["settled"],
                            description=f"run {run_id} {run['phase']}",
                            rate=counts["settled"] / elapsed, failed=counts["failed"],
                            not_stored=counts.get("not_stored", 0))
            if run["phase"] in ENDED:
                return run
            time.sleep(POLL)  # a synchronous CLI: blocking is what it should do here


def _follow_in_lines(client: Any, run_id: int) -> dict[str, Any]:
    """:func:`_follow` for a log or a pipe: one progress line per :data:`LINE_EVERY`
    seconds, and one when the run ends."""
    clock = SystemClock()
    started = last = clock.monotonic()
    while True:
        run: dict[str, Any] = client.warm_run(run_id)
        now = clock.monotonic()
        if run["phase"] in ENDED or now - last >= LINE_EVERY:
            console.print(progress_text(run, now - started))
            last = now
        if run["phase"] in ENDED:
            return run
        time.sleep(POLL)


def progress_text(run: dict[str, Any], elapsed: float) -> str:
    """One progress line of a run as the admin API shows it."""
    counts = run["counts"]
    rate = counts["settled"] / max(elapsed, 1e-6)
    return (f"warm run {run['id']} {run['phase']}: {counts['settled']}/{counts['total']} "
            f"settled, {counts['warmed']} warmed, {counts.get('not_stored', 0)} not stored, "
            f"{counts['failed']} failed, {rate:.1f}/s")


def _summary(run: dict[str, Any]) -> None:
    out = output()
    table = Table(title=f"warm run {run['id']}: {run['phase']}")
    table.add_column("count")
    table.add_column("URLs", justify="right")
    for name, value in run["counts"].items():
        table.add_row(name, str(value))
    out.print(table)
    if run.get("error"):
        print_error(run["error"], out)
    skipped = run["counts"]["skipped"]
    if skipped:
        out.print(skipped_text(skipped, run.get("skipped_reasons", {})), highlight=False)
    not_stored = run["counts"].get("not_stored", 0)  # 0 from a Stoker that predates it
    if not_stored:
        out.print(not_stored_text(not_stored, run.get("not_stored_reasons", {})),
                  highlight=False)
    for failed in run.get("failed_urls", []):
        out.print(f"  failed: {failed}", highlight=False)
    if run.get("warning") and run["phase"] == "done":
        out.print(f"warning: warm run {run['id']} {run['warning']}", style="yellow",
                  highlight=False)


def worker(
    config: ConfigOpt = None, data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None, log_format: LogFormatOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging")] = False,
) -> None:
    """Run warm workers and the deadline ticker without serving (same configuration)."""
    from stoker.app.serving import run_worker

    settings = settings_or_exit(config, data_dir=data_dir, database_url=database_url,
                                log_format=log_format)
    setup_logging(verbose, settings.log_format)
    serve_or_exit(run_worker(settings, announce=announcer(settings)))


def mount(app: typer.Typer) -> None:
    """Add ``warm`` and ``worker`` to the ``stoker`` command."""
    app.command("warm")(warm)
    app.command("worker")(worker)



