"""``stoker.Stoker``: one object owning an embedded Stoker's store and services, shared by
the apps it wraps and the functions it caches.

    stoker = Stoker(data_dir=".stoker", site_url="https://www.example.com", warm=True,
                    rules=[Rule(path="/", ttl="5m")])
    app = stoker.asgi(app, admin="/stoker")
    await stoker.purge(tags=["post-1"])

Invariants:
- Settings are validated when the object is made (the ``stoker.toml`` names and parsers;
  ``rules=`` items validated one by one): a bad value raises :class:`SettingsError`
  naming it, a bad ``rules=`` names ``rules`` and the item; nothing is opened then.
- The store opens once, in the app's lifespan (``async with stoker``), at a middleware's
  lifespan startup, or at the first use (a request, a purge, a cached function),
  whichever comes first; concurrent first uses share the one opening.  :meth:`close`
  closes it (again: nothing happens).
- :meth:`purge` and :meth:`warm` validate their arguments as the admin API validates its
  requests (an error names the argument: ``urls[1]``, ``tags``), are audited with actor
  ``python``, and are in force for every request when they return.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from stoker.admin.warm_api import parse_warm_request
from stoker.app.stoker import Stoker as Core
from stoker.asgi import ASGIApp, Message, Receive, Send
from stoker.clock import Clock
from stoker.config.settings import Settings, SettingsError, load_settings, settings_from
from stoker.config.settings.embedded import (
    as_app_settings,
    refuse_server_settings,
    require_site_for_warming,
)
from stoker.embed.middleware import StokerMiddleware
from stoker.embed.page import F, TagsOf, page
from stoker.embed.rules import compiled_rules
from stoker.embed.runtime import Runtime
from stoker.origin.asgi import AsgiOrigin
from stoker.purge.audit import record_safely
from stoker.purge.events import PurgeCallback
from stoker.purge.purger import PurgeResult
from stoker.purge.scope import PurgeRequestError, parse_purge_request
from stoker.warm.run import Run
from stoker.warm.urls import SiteOrigins, normalise, origin_of

ACTOR = "python"
"""The audit log's actor of purges and warm runs asked for through this API."""
DEFAULT_WARM_BUDGET = 4
"""Warm jobs (URLs) one batch after a response runs at most, by default."""
EMBEDDED_DEFAULTS: dict[str, object] = {"refresh_ahead": 0}
"""Settings whose proxy default does not fit an app: refresh ahead needs a warm loop of
its own (given explicitly, it is taken as given)."""
T = TypeVar("T")


class Stoker:
    """An embedded Stoker (see the module)."""

    def __init__(self, settings: Settings | None = None, *, rules: object = (),
                 warm: bool = False, warm_budget: int = DEFAULT_WARM_BUDGET,
                 clock: Clock | None = None, **overrides: object) -> None:
        """``settings``: made already (else the keyword arguments, ``stoker.toml``'s names);
        ``rules``: :class:`~stoker.embed.rules.Rule` objects or dicts; ``warm``: warm on the
        app's own traffic, at most ``warm_budget`` warm jobs a batch (needs ``site_url``);
        ``clock``: injected time (tests)."""
        refuse_server_settings(overrides)
        if settings is None:
            settings = settings_from({**EMBEDDED_DEFAULTS, **overrides},
                                     compiled_rules(rules))
        elif overrides or rules:
            raise SettingsError("give either settings= or keyword settings and rules=, "
                                "not both")
        self.settings = as_app_settings(settings)
        if isinstance(warm_budget, bool) or not isinstance(warm_budget, int) or warm_budget < 1:
            raise SettingsError(f"warm_budget must be a whole number of at least 1 (warm jobs "
                                f"a batch), got {warm_budget!r}")
        if warm:
            require_site_for_warming(self.settings)
        self._warm_budget = warm_budget if warm else None
        self._clock = clock
        self.origin = AsgiOrigin()
        """The wrapped apps, the request core's origin."""
        self._runtime_now: Runtime | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_toml(cls, path: str | Path, *, warm: bool = False,
                  warm_budget: int = DEFAULT_WARM_BUDGET, clock: Clock | None = None) -> Stoker:
        """A Stoker configured by the ``stoker.toml`` at ``path`` (and ``STOKER_*``
        variables), as the proxy reads it; its listener settings are left unused."""
        return cls(load_settings(config_path=Path(path)), warm=warm, warm_budget=warm_budget,
                   clock=clock)

    # -- opening and closing ---------------------------------------------------------

    async def opening(self) -> tuple[bool, Runtime]:
        """Open the store unless it is open; ``(whether this call opened it, runtime)``."""
        if self._runtime_now is not None:
            return False, self._runtime_now
        async with self._lock:
            if self._runtime_now is not None:
                return False, self._runtime_now
            self._runtime_now = await Runtime.open(self.settings, self._clock, self.origin,
                                                   self._warm_budget)
            return True, self._runtime_now

    async def runtime(self) -> Runtime:
        """The opened runtime (opened now if it was not)."""
        return (await self.opening())[1]

    async def core(self) -> Core:
        """The request core's Stoker (its store, purger, keying and clock), opened: what a
        cached function (:meth:`cached`) uses."""
        return (await self.runtime()).core

    async def open(self) -> None:
        """Open the store (see the module invariants)."""
        await self.opening()

    async def close(self) -> None:
        """Flush and close everything (within ``shutdown_timeout``)."""
        async with self._lock:
            runtime, self._runtime_now = self._runtime_now, None
            if runtime is not None:
                await runtime.close()

    async def __aenter__(self) -> Stoker:
        await self.open()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.close()

    # -- apps ------------------------------------------------------------------------

    def asgi(self, app: ASGIApp, *, admin: str | None = None) -> ASGIApp:
        """``app`` behind the cache; ``admin="/stoker"``: the admin API, dashboard and
        ``/metrics`` served at that path (never cached)."""
        return StokerMiddleware(app, stoker=self, admin=admin)

    def admin_app(self) -> ASGIApp:
        """The admin API, dashboard and ``/metrics`` as one ASGI app (token and session
        rules as on the admin listener), to mount where the cache does not see it (behind
        the cache, use ``asgi(app, admin="/path")``)."""

        async def admin(scope: Message, receive: Receive, send: Send) -> None:
            await (await self.runtime()).admin().app(scope, receive, send)

        return admin

    # -- purge, warm, status -----------------------------------------------------------

    async def purge(self, *, urls: Iterable[str] = (), tags: Iterable[str] = (),
                    prefixes: Iterable[str] = (), everything: bool = False,
                    soft: bool | None = None, host: str | None = None) -> PurgeResult:
        """Purge ``urls`` (absolute, or paths on ``site_url``/``host``: every variant),
        ``prefixes``, ``tags`` or ``everything``; ``soft``: mark stale instead of delete
        (``None``: as ``purge_mode`` says).  Raises :class:`PurgeRequestError` (a
        ``ValueError``) naming the argument."""
        request = {"urls": _strings(urls, "urls"), "tags": _strings(tags, "tags"),
                   "prefixes": _strings(prefixes, "prefixes"), "all": everything,
                   "soft": soft, "host": host}
        settings = self.settings
        _refuse_paths_without_site(settings, request)
        scope = parse_purge_request({k: v for k, v in request.items() if v is not None},
                                    sites=settings.site_hosts,
                                    allowed_hosts=settings.purge_hosts,
                                    purge_mode=settings.purge_mode)
        core = await self.core()
        result = await core.purger.purge(scope)
        await record_safely(core.audit, actor=ACTOR, action="purge", target=scope.as_json(),
                            count=result.purged, outcome="ok")
        return result

    async def warm(self, *, urls: Iterable[str] | None = None) -> Run:
        """Warm ``urls`` (absolute, or paths on ``site_url``), or the whole site (its
        sitemap, then its home page's links); the run, whose visits run after the app's
        next responses.  Needs ``warm=True``."""
        runtime = await self.runtime()
        if runtime.warm is None:
            raise SettingsError("warm() needs Stoker(warm=True, site_url=...): this Stoker "
                                "does not warm")
        site_urls = [normalise(url) or url for url in self.settings.site_urls]
        home = origin_of(site_urls[0])
        listed = None if urls is None else [home + url if url.startswith("/") else url
                                            for url in _strings(urls, "urls")]
        asked = {"urls": listed, "replace": True} if listed is not None else {"replace": True}
        chosen, _ = parse_warm_request(asked, SiteOrigins(site_urls, self.settings.aliases),
                                       home)
        created = await runtime.warm.warmer.start("manual", chosen, replace=True)
        await record_safely(runtime.core.audit, actor=ACTOR, action="warm",
                            target={"urls": len(chosen) if chosen else "site"}, count=None,
                            outcome="ok")
        return created.run

    async def status(self) -> dict[str, Any]:
        """What ``GET /api/status`` answers: requests by outcome, the cache's figures, the
        warm run, the job queue, the deadlines."""
        return await (await self.runtime()).status.compose()

    async def on_purge(self, callback: PurgeCallback) -> Callable[[], None]:
        """Call ``async callback(scope, keys, urls)`` after every purge took effect (the
        API's, ``PURGE``'s, the admin side's, an unsafe request's invalidation, another
        node's relayed here); the function returned unsubscribes."""
        return (await self.core()).events.subscribe(callback)

    # -- decorators -------------------------------------------------------------------

    def page(self, *, ttl: str | float, swr: str | float = 0, sie: str | float = 0,
             tags: TagsOf | None = None) -> Callable[[F], F]:
        """Cache one view ``ttl`` long (stale windows ``swr``, ``sie``), tagged
        ``tags(**path_params)``: see :mod:`stoker.embed.page`."""
        return page(ttl=ttl, swr=swr, sie=sie, tags=tags,
                    tag_header=self.settings.tag_headers[0] if self.settings.tag_headers
                    else "surrogate-key")

    def cached(self, **options: Any) -> Callable[[Callable[..., Awaitable[T]]],
                                                 Callable[..., Awaitable[T]]]:
        """Cache an async function's results in this Stoker's store
        (:func:`stoker.functions.cached`: ``ttl``, ``swr``, ``sie``, ``tags``, ``key``,
        ``codec``); purged by tag like pages."""
        from stoker.functions import cached

        decorator: Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]] = (
            cached(self.core, **options))
        return decorator


def _strings(value: Iterable[str], name: str) -> list[str]:
    """A list of strings from an argument; a lone string is refused, naming it."""
    items = None if isinstance(value, str | bytes) else list(value)
    if items is None or not all(isinstance(item, str) for item in items):
        raise TypeError(f"{name} must be a list of strings, e.g. {name}=[\"…\"], "
                        f"got {value!r}")
    return items


def _refuse_paths_without_site(settings: Settings, request: dict[str, Any]) -> None:
    """A path names no host when the site has none: refuse it, naming the item."""
    if request["host"] is not None or not settings.site_hosts.any_host:
        return
    for name in ("urls", "prefixes"):
        for index, item in enumerate(request[name]):
            if item.startswith("/") and not item.startswith("//"):
                raise PurgeRequestError(f"{name}[{index}]", f"{item!r} is a path: give the "
                                        "site's URL (site_url=...), host=, or absolute URLs")
