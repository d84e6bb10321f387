"""Running Stoker as a service: the proxy and admin listeners over one :class:`Stoker`,
with the warmer (its worker and the ticker) beside them; or the warmer alone
(``stoker worker``).

Invariants: stores are closed after the servers stop, whatever stopped them
(SIGTERM/SIGINT, ``stop``, a server failing): queued L2 writes are flushed
first, then background work drained, within ``shutdown_timeout``
(:meth:`Stoker.close`); an admin listener reachable beyond loopback
without an ``admin_token`` is refused (``SettingsError``) before anything
is opened or served, and so is a ``listen`` or ``admin_listen`` address
another process already listens on (``AddressInUse``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from stoker.admin.app import build_admin_app
from stoker.asgi import ASGIApp
from stoker.proxy.asgi_proxy import ProxyApp
from stoker.runtime import Stoker
from stoker.server import ensure_free, run_apps
from stoker.settings import Settings
from stoker.warming import WarmService

Announce = Callable[[str], None]
log = logging.getLogger("stoker")


async def run_service(settings: Settings, *, announce: Announce = print,
                      extra: tuple[tuple[ASGIApp, str], ...] = (),
                      stop: asyncio.Event | None = None) -> None:
    """Serve the proxy and the admin API until stopped."""
    settings.require_safe_admin()
    ensure_free(settings.listen, "listen")
    ensure_free(settings.admin_listen, "admin_listen")
    stoker = await Stoker.open(settings, evict_loop=False)
    try:
        warm = await WarmService.open(stoker)
    except BaseException:
        await stoker.close()
        raise
    apps: list[tuple[ASGIApp, str]] = [
        (ProxyApp(stoker.pipeline), settings.listen),
        (build_admin_app(stoker, warm), settings.admin_listen),
        *extra,
    ]
    announce(f"stoker: proxying http://{settings.listen} → {settings.origin} "
             f"(admin on http://{settings.admin_listen}, data in {settings.data_dir}, "
             f"{settings.warm_workers} warm workers)")
    await _run_with_warmer(stoker, warm, stop, lambda stop: run_apps(settings.server, apps,
                                                                      stop))


async def run_worker(settings: Settings, *, announce: Announce = print,
                     stop: asyncio.Event | None = None) -> None:
    """Run warm workers and the ticker without serving (``stoker worker``)."""
    stoker = await Stoker.open(settings, evict_loop=False)
    try:
        warm = await WarmService.open(stoker)
    except BaseException:
        await stoker.close()
        raise
    announce(f"stoker worker: {settings.warm_workers} warm workers for "
             f"{', '.join(settings.site_urls)} (data in {settings.data_dir})")
    await _run_with_warmer(stoker, warm, stop, lambda stop: run_apps(settings.server, [], stop))


async def _run_with_warmer(stoker: Stoker, warm: WarmService, stop: asyncio.Event | None,
                           serve: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``serve`` and the warmer until ``stop`` (or a signal); then close in order:
    the warmer (its worker releases what it holds, hit statistics are flushed), then
    the stores."""
    stop = stop or asyncio.Event()
    warming = asyncio.create_task(warm.run(stop))
    try:
        await serve(stop)
    finally:
        stop.set()
        try:
            await warming
        except Exception:
            log.exception("the warmer stopped with an error")
        await warm.close()
        await stoker.close()


async def run_demo(settings: Settings, origin_listen: str, *, pages: int, delay: float,
                   announce: Announce = print) -> None:
    """Serve the bundled demo origin and Stoker in front of it."""
    from stoker.demo.origin import make_demo_app

    origin = make_demo_app(pages=pages, delay=delay)
    base = f"http://{settings.listen}"
    announce("\n".join([
        f"demo origin: http://{origin_listen} ({pages} pages, {delay * 1000:.0f} ms each)",
        "try:",
        f"  curl -si {base}/page/1          # first: fwd=uri-miss, then: hit",
        f"  curl -si {base}/collection/3    # a list page tagged collection-3",
        f"  curl -si {base}/private         # Cache-Control: private, never stored",
        f"  curl -si {base}/account         # sets a cookie, never stored",
        f"  curl -s  {base}/sitemap.xml     # sitemap index with gzip children",
        f"  curl -s  http://{settings.admin_listen}/api/status",
        "Ctrl-C stops both.",
    ]))
    await run_service(settings, announce=announce, extra=((origin, origin_listen),))
