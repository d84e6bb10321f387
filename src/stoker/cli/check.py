"""``stoker check``: could ``stoker serve`` run with this configuration? (as ``nginx -t``)

The settings are read as ``stoker serve`` reads them, with its flags; a configuration
error (a bad value, an unknown key, no origin, an admin API open without a token) is one
``error:`` line naming the setting, exit 2.  Then each :class:`Check` tries one thing
serving needs from the machine, reading only (:mod:`stoker.cli.check_readonly`): the
drivers of PostgreSQL and Redis are installed when the settings ask for them, the
origin answers (a warning when it does not: serving stale copies through an outage is
what Stoker is for), ``data_dir`` is writable (or can be created), the databases and
Redis answer (and whether their migrations are applied), Redis's ``maxmemory-policy``
keeps Stoker's keys (with ``l2_url``), the listeners can be bound; and what the stores
say of warming (when they exist and are migrated): the last
warm run that ended did its job (:mod:`stoker.warm.verdict`) and the warmed origins are
those visitors use (:mod:`stoker.warm.origins`) — each a warning on its line, never a
failure.

Invariants: every check runs, whatever the ones before it found (but one whose failure
would only repeat another's: :attr:`Check.needs`), and prints one line (``ok``, ``FAIL``
``warn`` or ``skip``, what it checked, what it found) on stdout, then one summary line;
the exit status is 0 when no check failed (warnings included), else 1.  No line shows
the password of ``database_url``.  Nothing is left bound, and nothing is created or
changed: no ``data_dir``, no SQLite file, no table or schema in PostgreSQL, no Redis key
(``stoker migrate`` and ``stoker serve`` create them); an existing ``data_dir`` other
users may enter is warned about on its line, its mode left as it is (``stoker serve``
tightens it).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

import typer
from rich.text import Text

from stoker import backends
from stoker.backends.choice import choose
from stoker.backends.drivers import installed, missing, needed, require_drivers
from stoker.cache.hits import SeenOrigin
from stoker.cli import check_readonly as readonly
from stoker.cli.check_readonly import Unusable
from stoker.cli.common import (
    AdminListenOpt,
    ConfigOpt,
    DatabaseUrlOpt,
    DataDirOpt,
    ListenOpt,
    OriginOpt,
    ServerOpt,
    TokenFileOpt,
    TokenOpt,
    output,
    settings_or_exit,
    usage_error,
)
from stoker.clock import SystemClock
from stoker.config.settings import (
    Settings,
    SettingsError,
    find_config,
    looser_data_dir,
    read_error_page,
    require_data_dir,
    require_origin,
    require_safe_admin,
    require_tls_files,
)
from stoker.server.listeners import AddressInUse, ensure_free
from stoker.text import plural
from stoker.warm.origins import verdict, warm_origins
from stoker.warm.verdict import warmed_count
from stoker.warm.warmer import judged

RECENT_RUNS: Final = 20
"""The newest warm runs looked at for the last one that ended."""
ORIGIN_TIMEOUT: Final = 5.0
"""Seconds the origin has to answer (connecting included)."""
PASSED: Final = "ok"
FAILED: Final = "FAIL"
NOT_TRIED: Final = "skip"
WARNED: Final = "warn"
COLOURS: Final = {PASSED: "green", FAILED: "red", NOT_TRIED: "yellow", WARNED: "yellow"}
USABLE: Final = (PASSED, WARNED)
DRIVERS: Final = "drivers"
"""The check of PostgreSQL's and Redis's drivers, which their stores' checks need."""


@dataclass(frozen=True)
class Check:
    """One thing to try: ``probe`` returns what it found when ``target`` (of ``subject``)
    is usable, and raises (any exception: its text is the reason) when it is not.  A check
    that ``needs`` another (by its subject, checked before) is not tried when that one
    did not pass: its failure would only repeat the other's.  One that ``warns`` is
    marked :data:`WARNED`, not :data:`FAILED`, when ``probe`` raises."""

    subject: str
    target: str
    probe: Callable[[], Awaitable[str]]
    needs: str | None = None
    warns: bool = False


def check(
    config: ConfigOpt = None, origin: OriginOpt = None, listen: ListenOpt = None,
    admin_listen: AdminListenOpt = None, data_dir: DataDirOpt = None,
    admin_token: TokenOpt = None, admin_token_file: TokenFileOpt = None,
    server: ServerOpt = None,
) -> None:
    """Check the setup without serving (as nginx -t).

    Reads the settings as `stoker serve` does (the same flags, stoker.toml and STOKER_*
    variables), then checks that the origin answers (a warning, not a failure, when it
    does not: Stoker serves stale copies through an outage), that data_dir is writable
    (or can be created), that its databases (and database_url's, and Redis's) can be
    read, that Redis (l2_url) will not evict Stoker's keys (maxmemory-policy), that listen
    and admin_listen can be bound, and how the last warm run went (a warning when it
    found or warmed too few URLs); one line per check. It creates and changes nothing.
    Exit status: 0 when no check failed (warnings included), 1 when a check failed, 2
    for a configuration error."""
    settings = settings_or_exit(config, origin=origin, listen=listen, admin_listen=admin_listen,
                                data_dir=data_dir, admin_token=admin_token,
                                admin_token_file=admin_token_file, server=server)
    try:
        require_origin(settings)
        require_safe_admin(settings)
        choose(settings)  # a backend setting it cannot use
    except SettingsError as error:
        raise usage_error(error) from None
    checks = checks_for(settings, find_config(config, os.environ))
    marks = asyncio.run(run_checks(checks, secrets_of(settings)))
    output().print(f"stoker check: {summary(marks)}", highlight=False)
    if FAILED in marks:
        raise typer.Exit(1)


def store_checks(settings: Settings) -> list[Check]:
    """Opening (and so migrating) every store ``stoker serve`` with ``settings`` opens."""
    data_dir = settings.data_dir
    shared_db = None if settings.database_url else "data_dir"
    return [
        Check("data_dir", str(data_dir), partial(data_dir_writable, settings)),
        Check("cache tier", place(settings.l2_url, settings.cache_path),
              partial(cache_tier_opens, settings), needs="data_dir"),
        Check("job queue", place(settings.database_url, settings.sqlite_path),
              partial(job_queue_opens, settings), needs=shared_db),
        Check("audit log", place(settings.database_url, settings.sqlite_path),
              partial(audit_log_opens, settings), needs=shared_db),
        Check("purge bus", place(settings.database_url, settings.cache_path),
              partial(purge_bus_opens, settings), needs=shared_db),
    ]


def read_only_store_checks(settings: Settings) -> list[Check]:
    """Every store ``stoker serve`` with ``settings`` opens, looked at without creating or
    migrating anything (:mod:`stoker.cli.check_readonly`); PostgreSQL's and Redis's
    after their drivers (:func:`driver_checks`)."""
    shared_db = DRIVERS if settings.database_url else "data_dir"
    database = place(settings.database_url, settings.sqlite_path)
    on_cache = place(settings.database_url, settings.cache_path)
    if settings.l2_url:
        tier = Check("cache tier", place(settings.l2_url, settings.cache_path),
                     partial(readonly.redis_answers, settings.l2_url), needs=DRIVERS)
    else:
        tier = Check("cache tier", str(settings.cache_path),
                     partial(stored, settings, settings.cache_path, ("cache",)),
                     needs="data_dir")
    return [
        Check("data_dir", str(settings.data_dir), partial(data_dir_usable, settings)),
        tier,
        Check("job queue", database,
              partial(stored, settings, settings.sqlite_path, readonly.WARM_COMPONENTS),
              needs=shared_db),
        Check("audit log", database, partial(stored, settings, settings.sqlite_path, ("audit",)),
              needs=shared_db),
        Check("purge bus", on_cache, partial(stored, settings, settings.cache_path, ("bus",)),
              needs=shared_db),
    ]


async def data_dir_usable(settings: Settings) -> str:
    """:func:`stoker.cli.check_readonly.data_dir_usable`, as a probe."""
    return readonly.data_dir_usable(settings)


async def stored(settings: Settings, path: Path, components: Sequence[str]) -> str:
    """:func:`stoker.cli.check_readonly.store_state`, as a probe."""
    return await readonly.store_state(settings, path, components)


def driver_checks(settings: Settings) -> list[Check]:
    """The drivers the chosen backends need are installed (none for SQLite alone: no
    check): a missing one fails naming the setting and the fix
    (:mod:`stoker.backends.drivers`)."""
    wanted = needed(settings, choose(settings))
    if not wanted:
        return []
    modules = ", ".join(driver.module for driver, _ in wanted)
    return [Check(DRIVERS, modules, partial(drivers_installed, settings))]


async def drivers_installed(settings: Settings) -> str:
    """:func:`stoker.backends.drivers.missing`, as a probe."""
    found = missing(settings, choose(settings), installed)
    if found is not None:
        raise Unusable(found)
    return "installed"


def warm_checks(settings: Settings) -> list[Check]:
    """What the stores say about warming: the last warm run that ended, and the origins
    warm runs fill against those visitors arrive on."""
    return [Check("last warm run", place(settings.database_url, settings.sqlite_path),
                  partial(last_warm_run, settings), needs="job queue"),
            Check("warmed origins", ", ".join(settings.site_urls),
                  partial(warmed_origins, settings), needs="job queue")]


def migrate(
    config: ConfigOpt = None, data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Create or upgrade every store's schema, then exit (stoker serve also does at start).

    The stores are those stoker serve opens with this configuration: SQLite files in
    data_dir, or PostgreSQL with database_url (and Redis with l2_url), so that an upgrade
    can run once, before the nodes start. Exit status: 0 when every store is migrated, 1
    when one could not be opened, 2 for a configuration error."""
    settings = settings_or_exit(config, data_dir=data_dir, database_url=database_url)
    try:
        require_drivers(settings)  # a backend setting it cannot use, or its driver missing
    except SettingsError as error:
        raise usage_error(error) from None
    marks = asyncio.run(run_checks(store_checks(settings), secrets_of(settings)))
    output().print(f"stoker migrate: {summary(marks)}", highlight=False)
    if FAILED in marks:
        raise typer.Exit(1)


def place(url: str | None, path: Path) -> str:
    """Where a store lives: the URL it is given (without a password), else its file."""
    from stoker.backends.postgres.connection import describe

    return describe(url) if url else str(path)


def summary(marks: Sequence[str]) -> str:
    """``all 8 checks passed`` (and how many with a warning), or how many failed (and
    were not tried)."""
    failed, not_tried, warned = marks.count(FAILED), marks.count(NOT_TRIED), marks.count(WARNED)
    if not failed:
        return f"all {len(marks)} checks passed" + (
            f", {warned} with a warning" if warned else "")
    return f"{failed} of {len(marks)} checks failed" + (
        f", {not_tried} not tried" if not_tried else "")


def checks_for(settings: Settings, config_file: Path | None) -> list[Check]:
    """What ``stoker serve`` with ``settings`` needs, in the order it needs it."""
    checks = [
        Check("configuration", str(config_file or "(defaults, STOKER_* variables, flags)"),
              partial(configuration, settings)),
        *driver_checks(settings),
        Check("origin", require_origin(settings), partial(origin_answers, settings),
              warns=True),
        *read_only_store_checks(settings),
        *([Check("Redis eviction", place(settings.l2_url, settings.cache_path),
                 partial(redis_keeps_keys, settings.l2_url), needs="cache tier")]
          if settings.l2_url else []),
        *notifier_checks(settings),
        *warm_checks(settings),
    ]
    if settings.tls_cert is not None:
        checks.append(Check("tls_cert, tls_key", f"{settings.tls_cert}, {settings.tls_key}",
                            partial(tls_files_readable, settings)))
    if settings.error_page is not None:
        checks.append(Check("error_page", str(settings.error_page),
                            partial(error_page_readable, settings)))
    return [*checks, *(Check(name, address, partial(bindable, name, address))
                       for name, address in (("listen", settings.listen),
                                             ("admin_listen", settings.admin_listen)))]


async def run_checks(checks: Sequence[Check], secrets: Sequence[str]) -> list[str]:
    """Run (or, see :attr:`Check.needs`, pass over) every check in order, printing one
    line each (``secrets`` masked); return their marks (:data:`PASSED`, ...), in order."""
    out = output()
    marks: dict[str, str] = {}
    for one in checks:
        if one.needs is not None and marks[one.needs] not in USABLE:
            mark, found = NOT_TRIED, f"not tried: {one.needs} is not usable"
        else:
            mark, found = await outcome(one)
        marks[one.subject] = mark
        line = mask(f"{one.subject} {one.target}: {found}", secrets)
        out.print(Text.assemble((f"{mark:<4}", COLOURS[mark]), f"  {line}"))
    return list(marks.values())


async def outcome(one: Check) -> tuple[str, str]:
    """``one``'s mark (:data:`PASSED`, or :data:`FAILED` or, when it ``warns``,
    :data:`WARNED`) and what it found (else the reason)."""
    try:
        return PASSED, await one.probe()
    except Exception as error:  # whatever goes wrong is this check's finding, never the end
        reason = str(error) or type(error).__name__
        return (WARNED, f"{reason} (stoker serve starts, and serves stale copies)") \
            if one.warns else (FAILED, reason)


def secrets_of(settings: Settings) -> tuple[str, ...]:
    """What no line may show: the password in ``database_url`` (the targets name it by
    :func:`~stoker.backends.postgres.connection.describe`; this masks it in the reasons
    third-party errors give too).  The admin token is never part of a line."""
    if not settings.database_url:
        return ()
    _, _, rest = settings.database_url.partition("://")
    credentials, at, _ = rest.rpartition("@")
    password = credentials.partition(":")[2] if at else ""
    return (password,) if password else ()


def mask(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


async def configuration(settings: Settings) -> str:
    """The settings loaded (so every value and the rules parsed): say how many rules."""
    preset = f" (preset {settings.preset})" if settings.preset else ""
    return f"valid; {len(settings.rules)} cache rules{preset}"


async def origin_answers(settings: Settings) -> str:
    """Any HTTP answer from the origin's root, whatever its status, as the origin breaker
    counts answers (docs/decisions/0029): no answer at all is the failure."""
    import httpx

    headers = {"Host": settings.origin_host} if settings.origin_host else {}
    try:
        async with httpx.AsyncClient(timeout=ORIGIN_TIMEOUT, trust_env=False) as client:
            response = await client.head(require_origin(settings), headers=headers)
    except httpx.TimeoutException:
        raise Unusable(f"no answer within {ORIGIN_TIMEOUT:g} s") from None
    except httpx.HTTPError as error:
        raise Unusable(f"no answer ({root_cause(error)})") from None
    return f"answered {response.status_code} {response.reason_phrase}".rstrip()


def root_cause(error: BaseException) -> str:
    """The words of what ``error`` began with: ``Connection refused``, not httpx's ``All
    connection attempts failed``; a DNS failure's own words."""
    while (inner := error.__cause__ or error.__context__) is not None:
        error = inner
    if isinstance(error, socket.gaierror):
        return str(error.strerror)
    if isinstance(error, OSError) and error.errno and error.errno > 0:
        return os.strerror(error.errno)
    return str(error) or type(error).__name__


async def data_dir_writable(settings: Settings) -> str:
    """``data_dir`` is a directory (created, private, if missing) a file can be written in;
    a warning when other users may enter it (its mode is left as it is)."""
    wrong = looser_data_dir(settings.data_dir)
    try:
        require_data_dir(settings)
    except SettingsError as error:
        raise Unusable(str(error).removeprefix("data_dir: ")) from None
    if wrong is not None:
        return f"a writable directory; warning: {wrong} (stoker serve makes it so)"
    return "a writable directory"


@asynccontextmanager
async def every_port(settings: Settings) -> AsyncIterator[backends.Backends]:
    """Every port, opened (and migrated) as :meth:`~stoker.app.stoker.Stoker.open` opens
    them (:func:`stoker.backends.open`), closed at the end."""
    from stoker.cache.bodies import BodyStore

    opened = await backends.open(settings, SystemClock(),
                                 BodyStore(settings.data_dir / "bodies"))
    try:
        yield opened
    finally:
        await opened.close()


async def cache_tier_opens(settings: Settings) -> str:
    """The persistent tier opens (and migrates), and the cache version reads (its record
    in PostgreSQL with ``database_url``), as :meth:`~stoker.app.stoker.Stoker.open`
    opens them."""
    async with every_port(settings) as opened:
        state = await opened.versions.load()
    where = " (its record in PostgreSQL)" if opened.pool is not None else ""
    return f"opened and migrated; cache version {state.version}{where}"


async def redis_keeps_keys(url: str) -> str:
    """Redis's ``maxmemory-policy`` keeps Stoker's keys
    (:mod:`stoker.backends.redis.eviction`): an ``allkeys-*`` one with a ``maxmemory``
    fails, a ``volatile-*`` one, or one the server will not say, is a warning."""
    from stoker.backends.redis.eviction import SAFE, UNSAFE, eviction_verdict

    found = await eviction_verdict(url)
    if found.level == UNSAFE:
        raise Unusable(found.text)
    return found.text if found.level == SAFE else f"warning: {found.text}"


async def job_queue_opens(settings: Settings) -> str:
    """The job queue and the warmer's other stores open and migrate (PostgreSQL with
    ``database_url``, else SQLite in ``data_dir``), as the warmer opens them."""
    stores = await backends.open_database(settings, SystemClock())
    await stores.aclose()
    return "opened and migrated"


async def last_warm_run(settings: Settings) -> str:
    """The newest warm run that ended ``done`` or ``failed`` and how it went; a warning
    (never a failure: the next run may do better) when :mod:`stoker.warm.verdict` has one;
    not looked at while the stores are not created and migrated (opening them would)."""
    if not await readonly.warm_stores_ready(settings):
        return "no warm run recorded (the database is not created or migrated yet)"
    stores = await backends.open_database(settings, SystemClock())
    try:
        ended = [run for run in await stores.runs.recent(RECENT_RUNS)
                 if run.phase in ("done", "failed")]
        if not ended:
            return f"none ended among the last {RECENT_RUNS} runs"
        last = ended[0]
        said = await judged(stores.runs, last)
    finally:
        await stores.aclose()
    counts = last.counts
    which = f"run {last.id} ({last.reason}, {last.scope}) {last.phase}"
    if said is not None:
        return f"warning: {which}: {said}"
    return f"{which}: {plural(counts.total, 'URL')}, {warmed_count(last)} warmed"


async def warmed_origins(settings: Settings) -> str:
    """The origins warm runs fill, against those visitors arrive on (the hit statistics'
    table, :mod:`stoker.warm.origins`): a difference is a warning."""
    if not await readonly.warm_stores_ready(settings):
        return origins_verdict(settings, [], SystemClock().now())
    stores = await backends.open_database(settings, SystemClock())
    try:
        seen = await stores.hits.origins()
    finally:
        await stores.aclose()
    return origins_verdict(settings, seen, SystemClock().now())


def origins_verdict(settings: Settings, seen: Sequence[SeenOrigin], now: float) -> str:
    """What :func:`warmed_origins` says of ``seen`` (pure): the origins a full run warms,
    then each finding as a warning; with ``tls_cert`` an ``http://`` site_url is one."""
    warmed = warm_origins(settings.site_urls, seen, now)
    findings = [finding.text for finding in verdict(settings.site_urls, seen, now)]
    plain = [url for url in settings.site_url if url.startswith("http://")]
    if settings.tls_cert is not None and plain:
        findings.insert(0, f"tls_cert is set, so visitors arrive on https, but site_url "
                           f"names {', '.join(plain)}: set it to https://")
    said = f"warm runs fill {', '.join(warmed)}"
    return "; ".join([said, *(f"warning: {text}" for text in findings)]) if findings \
        else said + ("" if seen else " (no visitor seen yet)")


async def audit_log_opens(settings: Settings) -> str:
    """The audit log opens and migrates (PostgreSQL with ``database_url``, else SQLite in
    ``data_dir``), as the serving process opens it."""
    async with every_port(settings):
        return "opened and migrated"


async def purge_bus_opens(settings: Settings) -> str:
    """The purge bus and the fetch leases of the processes and nodes sharing the cache
    open and migrate (PostgreSQL with ``database_url``, else ``cache.db``)."""
    async with every_port(settings):
        return "opened and migrated"


def notifier_checks(settings: Settings) -> list[Check]:
    """Subscribing the notifier, when ``settings`` choose one that crosses processes
    (Redis pub/sub or PostgreSQL LISTEN/NOTIFY; in one process there is nothing to try)."""
    kind = choose(settings).notifier
    if kind == "local":
        return []
    where = (f"Redis pub/sub {place(settings.l2_url, settings.cache_path)}" if kind == "redis"
             else f"LISTEN/NOTIFY {place(settings.database_url, settings.cache_path)}")
    return [Check("notifier", where, partial(notifier_subscribes, settings, kind),
                  needs=DRIVERS)]


async def notifier_subscribes(settings: Settings, kind: str) -> str:
    """The notifier's server takes a subscription (Redis answers, PostgreSQL takes a
    ``LISTEN``), storing nothing."""
    if kind == "redis":
        assert settings.l2_url is not None
        await readonly.redis_answers(settings.l2_url)
        return "subscribed"
    assert settings.database_url is not None
    return await readonly.postgres_listens(settings.database_url)


async def error_page_readable(settings: Settings) -> str:
    """``error_page`` is a readable file of at most 1 MiB: its size."""
    return f"readable, {plural(len(read_error_page(settings) or b''), 'byte')}"


async def tls_files_readable(settings: Settings) -> str:
    """``tls_cert`` and ``tls_key`` are readable files."""
    require_tls_files(settings)
    return "readable"


async def bindable(name: str, address: str) -> str:
    """``address`` can be bound now, as the listener ``name`` binds it (``SO_REUSEADDR``,
    never ``SO_REUSEPORT``); the socket is closed before this returns."""
    try:
        ensure_free(address, name)
    except AddressInUse:
        raise Unusable("in use by another process") from None
    except OSError as error:
        raise Unusable(f"cannot be bound ({error.strerror or error})") from None
    return "can be bound"
