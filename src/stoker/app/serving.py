"""Running Stoker as a service: the proxy and admin listeners over one :class:`Stoker`,
with the warmer (its worker and the ticker) beside them; or the warmer alone
(``stoker worker``); or the demo (``stoker demo``): the service with the demo site as
one more listener and a full warm run, its progress shown, once that site answers.

Invariants: stores are closed after the servers stop, whatever stopped them
(SIGTERM/SIGINT, ``stop``, a server failing): queued L2 writes are flushed
first, then background work drained, within ``shutdown_timeout``
(:meth:`Stoker.close`); work run ``alongside`` the servers is cancelled before
the warmer and the stores close; an admin listener reachable beyond loopback
without an ``admin_token`` is refused (``SettingsError``) before anything
is opened or served, and so is a ``listen`` or ``admin_listen`` address
another process already listens on (``AddressInUse``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import httpx

from stoker.adapters.access_log import AccessLogApp, open_stream
from stoker.adapters.asgi_proxy import ProxyApp
from stoker.admin.app import AdminSide, admin_side
from stoker.app import log_relay
from stoker.app.processes import (
    ServingProcess,
    Supervisor,
    default_node_id,
    die_with_supervisor,
    watch_supervisor,
)
from stoker.app.sharing import share_cache, shares_cache
from stoker.app.stoker import Stoker
from stoker.app.warm_service import WarmService
from stoker.asgi import ASGIApp
from stoker.clock import Clock
from stoker.config.settings import (
    Settings,
    SettingsError,
    admin_url,
    require_origin,
    require_safe_admin,
    require_tls_files,
)
from stoker.server.listeners import Tls, ensure_free, run_apps, silence_for, split_address
from stoker.version import VERSION
from stoker.warm.run import Run
from stoker.warm.run_store import not_stored_text
from stoker.warm.warmer import judged

if TYPE_CHECKING:
    import redis.asyncio as aioredis

Announce = Callable[[str], None]
Alongside = Callable[[WarmService], Coroutine[Any, Any, None]]
AdminReady = Callable[[AdminSide], None]
"""Told the admin side once it is built (the demo prints a one-time login link)."""
LoadSettings = Callable[[], Settings]
"""Reads the configuration again, from the sources it was first read from."""
log = logging.getLogger("stoker")

DEMO_REWARM_DELAY: Final = 3.0
"""The demo's ``rewarm_delay``: an edit is seen re-warmed seconds later, not a minute."""
DEMO_REWARM_MAX_WAIT: Final = 10.0
"""The demo's ``rewarm_max_wait``."""
PROGRESS_EVERY: Final = 2.0
"""Seconds between the demo's warm progress lines."""
ORIGIN_PROBES: Final = 200
ORIGIN_PROBE_EVERY: Final = 0.05
"""The demo warms once its site answers: probed this often, at most this many times."""


async def run_service(settings: Settings, *, announce: Announce = print,
                      extra: tuple[tuple[ASGIApp, str], ...] = (),
                      stop: asyncio.Event | None = None,
                      alongside: Alongside | None = None,
                      reload: LoadSettings | None = None,
                      process: ServingProcess | None = None,
                      admin_ready: AdminReady | None = None) -> None:
    """Serve the proxy and the admin API until stopped; ``alongside`` (given the
    warmer) runs beside the servers from their start until it returns or they stop.
    With ``reload``, ``SIGHUP`` reloads the configuration it reads (:func:`reload_now`).
    As one ``process`` of several (``processes > 1``, started by
    :mod:`stoker.app.processes`), it shares ``listen`` with the others, follows their
    purges on the bus, and only the first serves the admin API and starts the
    ``warm_on_start`` run, with its status hub running for the dashboard's charts.
    ``admin_ready`` is told the admin side once it is built."""
    require_safe_admin(settings)
    require_tls_files(settings)
    if process is None:  # else the supervisor checked them, and the others share listen
        ensure_free(settings.listen, "listen")
        ensure_free(settings.admin_listen, "admin_listen")
    first = process is None or process.index == 0
    orphaned = _orphan_watch(process)
    member = (process.name if process else settings.node_id or default_node_id()) if (
        shares_cache(settings, process)) else None
    stoker, warm = await _open_with_warmer(settings, member)
    sharing = await share_cache(stoker, member) if member is not None else None
    apps: list[tuple[ASGIApp, str]] = [(proxy_app(stoker), settings.listen)]
    admin = admin_side(stoker, warm) if first else None
    if admin is not None:
        apps += [(admin.app, settings.admin_listen), *extra]
        if admin_ready is not None:
            admin_ready(admin)
    scheme = "https" if settings.tls_cert else "http"
    where = f"{scheme}://{settings.listen} (admin on http://{settings.admin_listen})"
    announce(f"stoker {VERSION}: proxying {where} → {settings.origin} "
             f"(data in {settings.data_dir}, {settings.warm_jobs} warm workers, "
             f"pid {os.getpid()}{process.described() if process else ''})")
    if stoker.backends.redis is not None and first:
        await say_eviction(stoker.backends.redis)
    tls = {settings.listen: Tls(settings.tls_cert, settings.tls_key)} if (
        settings.tls_cert and settings.tls_key) else None
    silence = silence_for(settings.origin_timeout, settings.client_body_timeout)
    shared = frozenset({settings.listen}) if process is not None else frozenset()
    try:
        with _reloading_on_hangup(stoker, warm, reload, _process_name(process)):
            await _run_with_warmer(stoker, warm, stop, lambda stop: run_apps(
                settings.server, apps, stop, tls, grace=settings.shutdown_timeout,
                silence=silence, shared=shared),
                _beside(admin, alongside, orphaned, _log_relay(stoker, process)),
                warm_on_start=first,
                before_close=sharing.leave if sharing else None)
    finally:
        announce(f"stoker {VERSION}: stopped proxying {where}"
                 f"{process.described() if process else ''}")


async def say_eviction(client: aioredis.Redis) -> None:
    """Log what the ``maxmemory-policy`` of the Redis ``client`` talks to (the tier's)
    may evict of Stoker's keys (:mod:`stoker.backends.redis.eviction`): a warning unless
    it is safe."""
    from stoker.backends.redis.eviction import SAFE, client_verdict

    try:
        found = await client_verdict(client)
    except Exception as error:
        log.warning("Redis (l2_url): maxmemory-policy could not be read (%s: %s)",
                    type(error).__name__, error)
        return
    log.log(logging.INFO if found.level == SAFE else logging.WARNING,
            "Redis (l2_url): %s", found.text)


async def supervise(settings: Settings, args: Sequence[str], *,
                    announce: Announce = print) -> int:
    """Run ``settings.processes`` serving processes, each ``stoker ARGS`` as one of them
    (:mod:`stoker.app.processes`), until a stop signal; the exit status."""
    require_safe_admin(settings)
    ensure_free(settings.listen, "listen")
    ensure_free(settings.admin_listen, "admin_listen")
    node = settings.node_id or default_node_id()
    count = settings.processes
    announce(f"stoker {VERSION}: {count} serving processes on {settings.listen} "
             f"(admin on http://{settings.admin_listen}, node {node}, pid {os.getpid()})")
    status = await Supervisor(count, args, node, settings.shutdown_timeout,
                              split_address(settings.admin_listen)).run()
    announce(f"stoker {VERSION}: stopped the {count} serving processes on {settings.listen}")
    return status


def _orphan_watch(process: ServingProcess | None) -> Callable[[], Awaitable[None]] | None:
    """Make a child of a supervisor stop when the supervisor dies: the kernel's signal
    where it gives one (nothing more to run), else the watch to run beside the servers."""
    supervisor = process.supervisor if process is not None else None
    if supervisor is None or die_with_supervisor(supervisor):
        return None
    return lambda: watch_supervisor(supervisor)


def _beside(admin: AdminSide | None, alongside: Alongside | None,
            orphaned: Callable[[], Awaitable[None]] | None = None,
            log_relay: Callable[[], Awaitable[None]] | None = None) -> Alongside | None:
    """What runs beside the servers: ``alongside``, the admin side's status hub, the
    watch of a supervisor the kernel cannot watch and the live request log's relay
    between processes (the purge relay follows the bus in a task of its own,
    :class:`~stoker.app.sharing.Sharing`)."""
    beside = [task for task in (orphaned, log_relay) if task is not None]
    if admin is None and not beside:
        return alongside

    async def all_of(warm: WarmService) -> None:
        await asyncio.gather(*([admin.hub.run()] if admin is not None else []),
                             *(task() for task in beside),
                             *([alongside(warm)] if alongside is not None else []))

    return all_of


def _log_relay(stoker: Stoker, process: ServingProcess | None
               ) -> Callable[[], Awaitable[None]] | None:
    """The live request log's relay of one of several serving processes
    (:mod:`~stoker.app.log_relay`): the first gathers, the others send."""
    if process is None or process.count < 2:
        return None
    tap, data_dir, clock = stoker.pipeline.tap, stoker.settings.data_dir, stoker.clock
    if process.index == 0:
        return lambda: log_relay.gather(tap, data_dir, process.count - 1, clock)
    return lambda: log_relay.send(tap, data_dir, clock)


def _process_name(process: ServingProcess | None) -> str:
    """``pid 123, process 2 of 4``: which process a log line is of."""
    return f"pid {os.getpid()}{process.described() if process else ''}"


def reload_now(stoker: Stoker, warm: WarmService, load: LoadSettings, who: str = "") -> None:
    """Read the configuration again and take what a running process can; log each change
    and what needs a restart, each line naming the process (``who``: with ``--processes``
    every one of them reloads and says so).  A configuration that does not load is
    logged, naming the setting, and the process goes on as it was."""
    running = stoker.settings
    said = f" ({who})" if who else ""
    try:
        wanted = load()
        change = stoker.reload(wanted)
    except SettingsError as error:
        log.error("configuration not reloaded%s, still running as before: %s", said, error)
        return
    warm.reload(change.settings)
    for line in change.describe(running, wanted) or ["reload: nothing changed"]:
        log.info("%s%s", line, said)


@contextlib.contextmanager
def _reloading_on_hangup(stoker: Stoker, warm: WarmService,
                         load: LoadSettings | None, who: str) -> Iterator[None]:
    """``SIGHUP`` calls :func:`reload_now` while the block runs (where signals exist)."""
    hangup = getattr(signal, "SIGHUP", None)
    if load is None or hangup is None:
        yield
        return
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(hangup, reload_now, stoker, warm, load, who)
    try:
        yield
    finally:
        loop.remove_signal_handler(hangup)


async def run_worker(settings: Settings, *, announce: Announce = print,
                     stop: asyncio.Event | None = None) -> None:
    """Run warm workers and the ticker without serving (``stoker worker``)."""
    stoker, warm = await _open_with_warmer(settings)
    announce(f"stoker {VERSION} worker: {settings.warm_jobs} warm workers for "
             f"{', '.join(settings.site_urls)} (data in {settings.data_dir}, "
             f"pid {os.getpid()})")
    try:
        await _run_with_warmer(stoker, warm, stop,
                               lambda stop: run_apps(settings.server, [], stop))
    finally:
        announce(f"stoker {VERSION} worker: stopped")


def proxy_app(stoker: Stoker) -> ASGIApp:
    """The public listener's app: the proxy, behind the access log when one is configured."""
    app = ProxyApp(stoker.pipeline)
    settings = stoker.settings
    if settings.access_log is None:
        return app
    return AccessLogApp(app, open_stream(settings.access_log), stoker.clock,
                        json_format=settings.access_log_format == "json",
                        redact=settings.log_redact_query,
                        trusted=stoker.pipeline.config.trusted)


async def _open_with_warmer(settings: Settings, member: str | None = None
                            ) -> tuple[Stoker, WarmService]:
    """A :class:`Stoker` (its L2 eviction left to the warmer's ticker; ``member``: its name
    among those sharing the cache, if any) and its warmer."""
    stoker = await Stoker.open(settings, evict_loop=False, member=member)
    try:
        return stoker, await WarmService.open(stoker)
    except BaseException:
        await stoker.close()
        raise


async def _run_with_warmer(stoker: Stoker, warm: WarmService, stop: asyncio.Event | None,
                           serve: Callable[[asyncio.Event], Awaitable[None]],
                           alongside: Alongside | None = None, *,
                           warm_on_start: bool = True,
                           before_close: Callable[[], Awaitable[None]] | None = None) -> None:
    """Run ``serve``, the warmer and ``alongside`` until ``stop`` (or a signal); then
    close in order: ``alongside`` (cancelled), the warmer (its worker releases what it
    holds, hit statistics are flushed), ``before_close`` (leaving the processes sharing
    the cache), then the stores.  The shutdown's one budget
    starts when ``stop`` is set (:meth:`Stoker.begin_shutdown`): the servers' requests,
    the warm worker's visits and every closing step share it."""
    stop = stop or asyncio.Event()
    warming = asyncio.create_task(warm.run(stop, warm_on_start=warm_on_start))
    beside = asyncio.create_task(alongside(warm)) if alongside is not None else None
    begin = asyncio.create_task(_begin_shutdown_on(stop, stoker))
    try:
        await serve(stop)
    finally:
        stop.set()
        budget = stoker.begin_shutdown()
        begin.cancel()
        if beside is not None:
            await _cancel(beside)
        try:
            await warming
        except Exception:
            log.exception("the warmer stopped with an error")
        await warm.close(budget.left())
        if before_close is not None:  # what uses the stores' connections, before they close
            try:
                await before_close()
            except Exception:
                log.exception("leaving the processes sharing the cache failed")
        await stoker.close()


async def _begin_shutdown_on(stop: asyncio.Event, stoker: Stoker) -> None:
    await stop.wait()
    stoker.begin_shutdown()


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it; an error it ended with is logged, not raised."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception:
        log.exception("work run beside the servers failed")


async def run_demo(settings: Settings, origin_listen: str, *, pages: int, delay: float,
                   announce: Announce = print, stop: asyncio.Event | None = None) -> None:
    """Serve the bundled demo origin and Stoker in front of it; warm the demo site once
    it answers, showing the progress (so not by ``warm_on_start``).  The re-warm
    debounce is shortened to :data:`DEMO_REWARM_DELAY` / :data:`DEMO_REWARM_MAX_WAIT` so
    an edit is seen re-warmed within seconds.  Without an ``admin_token`` the demo makes
    one up for the run, so its dashboard shows the login; the dashboard's address and a
    one-time login link are announced."""
    from stoker.demo.origin import make_demo_app

    settings = replace(settings, rewarm_delay=DEMO_REWARM_DELAY,
                       rewarm_max_wait=DEMO_REWARM_MAX_WAIT,
                       warm_on_start="never",  # the demo warms once its origin answers
                       admin_token=settings.admin_token or secrets.token_urlsafe(18))
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per probe and purge
    origin = make_demo_app(pages=pages, delay=delay, admin_url=admin_url(settings, {}),
                           admin_token=settings.admin_token)
    base = f"http://{settings.listen}"
    announce("\n".join([
        f"demo origin: http://{origin_listen} ({pages} pages, {delay * 1000:.0f} ms each)",
        "try:",
        f"  curl -si {base}/page/1          # warmed at start: a hit, kept fresh while read",
        f"  curl -si {base}/collection/3    # a list page tagged collection-3",
        f"  curl -si {base}/private         # Cache-Control: private, never stored",
        f"  curl -si {base}/account         # sets a cookie, never stored",
        f"  curl -s  {base}/sitemap.xml     # sitemap index with gzip children",
        f"  curl -s -H 'authorization: Bearer {settings.admin_token}' "
        f"{admin_url(settings, {})}/api/status",
        f"edit: open {base}/page/7 and press \"Edit this page\";",
        "  the site purges tag page-7, Stoker re-warms that page alone at once",
        "  (a purge of fewer than rewarm_now_max URLs skips the re-warm's debounce),",
        "  then page 7 is a hit showing revision 2 (the log shows the re-warm;",
        "  the dashboard's Audit and Warm pages show the purge and the re-warm as they happen)",
        "Ctrl-C stops both.",
    ]))

    async def warm_at_start(warm: WarmService) -> None:
        if await _answers(f"{require_origin(settings)}/health", warm.stoker.clock):
            await follow_warm_run(warm, announce)
        else:
            announce("warming: skipped, the demo origin did not answer")

    def dashboard(admin: AdminSide) -> None:
        url = admin_url(settings, {})
        announce(f"dashboard: {url}/ (log in once with {url}/login?once={admin.sessions.once()}"
                 f", or with the admin token)")

    await run_service(settings, announce=announce, extra=((origin, origin_listen),),
                      stop=stop, alongside=warm_at_start, admin_ready=dashboard)


async def _answers(url: str, clock: Clock) -> bool:
    """Whether ``url`` answers 200 within :data:`ORIGIN_PROBES` tries."""
    async with httpx.AsyncClient(timeout=1.0) as client:
        for _ in range(ORIGIN_PROBES):
            with contextlib.suppress(httpx.TransportError):
                if (await client.get(url)).status_code == 200:
                    return True
            await clock.sleep(ORIGIN_PROBE_EVERY)
    return False


async def follow_warm_run(warm: WarmService, announce: Announce) -> None:
    """Start a full warm run and announce its progress every :data:`PROGRESS_EVERY`
    seconds until it ends, then a summary (and its warning, if it has one)."""
    if warm.stoker.settings.warm_jobs == 0:
        announce("warming: off here (warm_workers = 0); a stoker worker can do it")
        return
    run: Run | None = (await warm.warmer.start("manual")).run
    while run is not None and run.active:
        announce(progress_line(run))
        await warm.stoker.clock.sleep(PROGRESS_EVERY)
        run = await warm.stores.runs.get(run.id)
    if run is not None:
        announce(summary_line(run, await warm.stores.runs.not_stored_reasons(run.id)))
        said = await judged(warm.stores.runs, run)
        if said is not None and run.phase == "done":
            announce(f"warning: warm run {run.id} {said}")


def progress_line(run: Run) -> str:
    """``warming: 812/2001 pages, 0 failed`` (or the collect phase)."""
    if run.phase == "collect":
        return "warming: finding the pages (robots.txt, sitemaps, home page links)"
    counts = run.counts
    return f"warming: {counts.settled}/{counts.total} pages, {counts.failed} failed"


def summary_line(run: Run, reasons: Mapping[str, int]) -> str:
    """One line for a run that ended, with its ``reasons`` for pages not stored."""
    counts = run.counts
    if run.phase == "failed":
        return f"warm run {run.id} failed: {run.error}"
    if run.phase == "cancelled":
        return f"warm run {run.id} was cancelled (a newer run replaced it)"
    took = (run.finished_at or run.started_at) - run.started_at
    return (f"warmed {counts.total} pages in {took:.1f} s: {counts.warmed} warmed, "
            f"{counts.not_modified} not modified, "
            f"{not_stored_text(counts.not_stored, reasons)}, {counts.failed} failed, "
            f"{counts.gave_up} gave up")
