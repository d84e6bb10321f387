"""``stoker jobs``: inspect the job queue and revive dead jobs.

Reads the same configuration as ``stoker serve`` (``--config``/``stoker.toml``,
``STOKER_*``, ``--data-dir``, ``--database-url``). Invariant: ``requeue
--all`` does nothing without ``--confirm``; exactly one requeue scope is given.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.table import Table

from stoker.backends import open_database
from stoker.cli.common import (
    DEMO_DATA_DIR,
    ConfigOpt,
    DatabaseUrlOpt,
    DataDirOpt,
    console,
    fail,
    output,
    settings_or_exit,
    usage_error,
)
from stoker.clock import SystemClock
from stoker.config.settings import Settings, SettingsError, refuse_data_dir_under_a_file
from stoker.jobs.model import JOB_STATES, JobState, RequeueScope
from stoker.jobs.queue import JobQueue
from stoker.warm.warmer import RUN_FIELD

T = TypeVar("T")

jobs_app = typer.Typer(
    help="Inspect the durable job queue: counts, dead letters, requeue.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None)
out = output()



def _settings(config: Path | None, data_dir: Path | None, database_url: str | None) -> Settings:
    """The settings the command reads the queue of (a ``data_dir`` that is a file is an
    error, exit 2)."""
    settings = settings_or_exit(config, data_dir=data_dir, database_url=database_url)
    try:
        refuse_data_dir_under_a_file(settings)
    except SettingsError as error:
        raise usage_error(error) from None
    return settings


def _with_queue(settings: Settings, action: Callable[[JobQueue], Awaitable[T]]) -> T:
    """``action`` on the queue ``settings`` name.  A ``data_dir`` with no database yet is
    an empty queue, said so on stderr and read from a throwaway file: nothing is made
    up in the ``data_dir`` (the demo's, say, is elsewhere)."""
    async def run(settings: Settings) -> T:
        stores = await open_database(settings, SystemClock())
        try:
            return await action(stores.queue)
        finally:
            await stores.aclose()

    try:
        if settings.database_url is None and not settings.sqlite_path.is_file():
            _say_empty(settings.data_dir)
            with tempfile.TemporaryDirectory(prefix="stoker-empty-") as empty:
                return asyncio.run(run(replace(settings, data_dir=Path(empty))))
        return asyncio.run(run(settings))
    except ConnectionError as error:
        raise fail(error) from None
    except SettingsError as error:
        raise usage_error(error) from None


@jobs_app.command()
def counts(config: ConfigOpt = None, data_dir: DataDirOpt = None,
           database_url: DatabaseUrlOpt = None) -> None:
    """Jobs per queue and state."""
    rows = _with_queue(_settings(config, data_dir, database_url), lambda q: q.counts())
    table = Table("queue", *JOB_STATES, title="jobs")
    by_queue: dict[str, dict[str, int]] = {}
    for row in rows:
        by_queue.setdefault(row.queue, {})[row.state] = row.count
    for queue, states in sorted(by_queue.items()):
        table.add_row(queue, *(str(states.get(state, 0)) for state in JOB_STATES))
    out.print(table)


@jobs_app.command("list")
def list_jobs(
    state: Annotated[str, typer.Option(help="pending, running, done or dead")] = "dead",
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    config: ConfigOpt = None, data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None,
) -> None:
    """Jobs in one state, most recently updated first."""
    if state not in JOB_STATES:
        raise usage_error(f"--state must be one of {', '.join(JOB_STATES)}, got {state!r}")
    chosen: JobState = state
    jobs = _with_queue(_settings(config, data_dir, database_url),
                       lambda q: q.list(chosen, limit, offset))
    table = Table("id", "queue", "key", "attempts", "updated (UTC)", "last error",
                  title=f"{state} jobs")
    for job in jobs:
        table.add_row(str(job.id), job.queue, job.dedupe_key or "",
                      f"{job.attempts}/{job.max_attempts}", _utc(job.updated_at),
                      (job.last_error or "")[:80])
    out.print(table)


@jobs_app.command()
def requeue(
    job_id: Annotated[list[int] | None, typer.Option("--id", help="Dead job id (repeatable)")]
    = None,
    key: Annotated[str | None, typer.Option("--key", help="Dedupe key of dead jobs")] = None,
    run: Annotated[str | None, typer.Option(
        "--run", help="Dead jobs of this warm run (their payload's run)")] = None,
    all_dead: Annotated[bool, typer.Option("--all", help="Every dead job (needs --confirm)")]
    = False,
    confirm: Annotated[bool, typer.Option("--confirm", help="Confirm --all")] = False,
    config: ConfigOpt = None, data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None,
) -> None:
    """Send dead jobs back to pending (one dedupe key is requeued once).  An --id that is
    no dead job is an error (exit 1), and nothing is requeued."""
    scope = _scope(job_id or [], key, run, all_dead, confirm)

    async def action(queue: JobQueue) -> int:
        for missing in [await _not_dead(queue, one) for one in scope.job_ids]:
            if missing:
                raise fail(ValueError(missing))
        return await queue.requeue(scope)

    revived = _with_queue(_settings(config, data_dir, database_url), action)
    out.print(f"requeued {revived} dead job{'s' if revived != 1 else ''}")


async def _not_dead(queue: JobQueue, job_id: int) -> str:
    """Why job ``job_id`` cannot be requeued ("" when it is dead)."""
    job = await queue.get(job_id)
    if job is None:
        return f"--id {job_id}: there is no job {job_id} (stoker jobs list --state dead lists them)"
    if job.state != "dead":
        return f"--id {job_id}: job {job_id} is {job.state}, not dead: nothing to requeue"
    return ""


def _say_empty(data_dir: Path) -> None:
    demo = "; `stoker demo` keeps its own: add --data-dir .stoker/demo" if (
        data_dir != DEMO_DATA_DIR and (DEMO_DATA_DIR / "stoker.db").is_file()) else ""
    console.print(f"note: no Stoker has run with data_dir {data_dir} yet: its queue is "
                  f"empty (--data-dir names another){demo}")


def _utc(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _scope(ids: list[int], key: str | None, run: str | None, all_dead: bool,
           confirm: bool) -> RequeueScope:
    given = sum((bool(ids), key is not None, run is not None, all_dead))
    if given != 1:
        raise usage_error("give exactly one of --id, --key, --run or --all")
    if all_dead and not confirm:
        raise usage_error("--all requeues every dead job: add --confirm to do it")
    if ids:
        return RequeueScope.by_ids(*ids)
    if key is not None:
        return RequeueScope.by_key(key)
    if run is not None:
        return RequeueScope.by_payload(RUN_FIELD, run)
    return RequeueScope.all(confirm=True)
