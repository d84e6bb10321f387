"""Where cached functions find their cache: runtimes, the default one, and event loops.

A *runtime* is an async callable returning an opened :class:`~stoker.app.stoker.Stoker`
(its tiered store, purger, cache version, clock and fetch leases).  An opened Stoker
belongs to the event loop it was opened on.  :func:`default_runtime` is the one a
``@cached`` function uses when given none: configured as ``stoker serve`` is
(:func:`default_settings`; with no configuration, memory + SQLite in ``./.stoker``),
opened on first use, with no origin (:class:`NoOrigin`: function-only use never asks
one; ``Stoker.open`` is unchanged), on the purge bus of its store
(:func:`stoker.app.sharing.open_embedded`: a purge in one worker process reaches the
memory tier of the others on the same ``data_dir`` or ``database_url``).

Invariants:
- The default runtime is opened once per event loop that uses it, and only one at a time:
  awaited concurrently on its loop, one open runs and every awaiter gets its result.
  Awaited from another loop while its own still runs (in another thread) it raises a
  :class:`RuntimeError`; once its loop has stopped or closed, it opens anew on the loop
  asking (a loop per test, ``asyncio.run`` twice).
- It is closed (queued L2 writes flushed) when its loop shuts its tasks down (the end of
  ``asyncio.run``: a keeper task's ``finally``), or at interpreter exit when it runs on
  the private loop (:class:`LoopThread`).
- Plain (non-async) functions run their cache on a loop: the runtime's own when it runs
  in another thread, else one private daemon thread's loop (:func:`private_loop`),
  started on first use and stopped at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from stoker.app.sharing import Sharing, open_embedded
from stoker.app.stoker import Stoker
from stoker.config.settings import Settings, load_settings
from stoker.origin.context import RequestContext
from stoker.origin.port import Body, Headers, OriginError, OriginResponse

log = logging.getLogger("stoker.functions")

Runtime = Callable[[], Awaitable[Stoker]]
"""What a ``@cached`` function takes its opened Stoker from."""


def default_settings() -> Settings:
    """The default runtime's settings, read as ``stoker serve`` reads its own:
    ``./stoker.toml`` (or ``STOKER_CONFIG``), then ``STOKER_*`` variables; with neither,
    memory + SQLite in ``./.stoker`` (``STOKER_L2_URL``, ``STOKER_DATABASE_URL``: a store
    shared by nodes)."""
    return load_settings()


class NoOrigin:
    """The origin of a Stoker that caches functions only: never asked."""

    async def fetch(self, method: str, target: str, headers: Headers, body: Body | None,
                    context: RequestContext | None = None) -> OriginResponse:
        raise OriginError(f"no origin: this Stoker caches function results only "
                          f"({method} {target} asked)")

    async def close(self) -> None:
        return None


@dataclass
class _Opened:
    stoker: Stoker
    sharing: Sharing
    loop: asyncio.AbstractEventLoop


class DefaultRuntime:
    """The default runtime's state (see the module invariants); :data:`DEFAULT` is it."""

    def __init__(self, settings: Callable[[], Settings] = default_settings) -> None:
        self._settings = settings
        self._opened: _Opened | None = None
        self._opening: asyncio.Future[Stoker] | None = None
        self._lock = threading.Lock()
        self._keeper: asyncio.Task[None] | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the open runtime belongs to (``None``: not open)."""
        opened = self._opened
        return opened.loop if opened is not None else None

    async def __call__(self) -> Stoker:
        loop = asyncio.get_running_loop()
        opened = self._opened
        if opened is not None and opened.loop is loop:
            return opened.stoker
        opening = self._opening
        if opening is not None and opening.get_loop() is loop:
            return await asyncio.shield(opening)
        return await self._open(loop)

    async def _open(self, loop: asyncio.AbstractEventLoop) -> Stoker:
        with self._lock:
            opened = self._opened
            if opened is not None and opened.loop is not loop and _alive(opened.loop):
                raise RuntimeError(
                    "the default function cache is open on another event loop, running in "
                    "another thread; call cached functions from that loop (plain functions "
                    "may be called from any thread) or pass runtime= to @cached")
            self._opened = None  # its loop is gone: its keeper closed it, or nothing can
            self._opening = opening = loop.create_future()
        try:
            stoker, sharing = await open_embedded(self._settings(), origin=NoOrigin())
        except BaseException as error:
            opening.set_exception(error)
            opening.exception()  # retrieved: the awaiters that come get it raised
            self._opening = None
            raise
        self._opened = _Opened(stoker, sharing, loop)
        self._opening = None
        opening.set_result(stoker)
        self._keeper = loop.create_task(self._keep(stoker), name="stoker-functions-keeper")
        return stoker

    async def _keep(self, stoker: Stoker) -> None:
        """Hold ``stoker`` open until its loop cancels this task, then close it."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.close(stoker)

    async def shutdown(self) -> None:
        """Close the runtime by ending its keeper (call on its loop)."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            await asyncio.wait([keeper])

    async def close(self, stoker: Stoker | None = None) -> None:
        """Close the runtime (``stoker``: only if it is still that one)."""
        opened = self._opened
        if opened is None or (stoker is not None and opened.stoker is not stoker):
            return
        self._opened = None
        try:
            await opened.sharing.leave()
        finally:
            await opened.stoker.close()


def _alive(loop: asyncio.AbstractEventLoop) -> bool:
    return loop.is_running() and not loop.is_closed()


DEFAULT = DefaultRuntime()


async def default_runtime() -> Stoker:
    """The default store, opened once on first use (see the module invariants)."""
    return await DEFAULT()


class LoopThread:
    """An event loop of its own in a daemon thread, for plain functions called where no
    runtime's loop runs; stopped (the default runtime closed first) at interpreter exit."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever,
                                        name="stoker-functions", daemon=True)
        self._thread.start()
        _at_exit(self.stop)

    def stop(self) -> None:
        """Close the default runtime if it runs here, then stop the loop."""
        if self.loop.is_closed():
            return
        if DEFAULT.loop is self.loop:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(DEFAULT.shutdown(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


def _at_exit(stop: Callable[[], None]) -> None:
    """Run ``stop`` at interpreter exit while thread pools still take work: before
    :mod:`concurrent.futures` refuses new work (its hook runs from
    ``threading._register_atexit``, before :mod:`atexit`'s; registered later, this one
    runs first), where that hook exists, else at :mod:`atexit` (the SQLite stores then
    cannot close: their queued writes are lost, as at a kill)."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(stop)
    else:
        register(stop)


_PRIVATE: LoopThread | None = None
_PRIVATE_LOCK = threading.Lock()


def private_loop() -> asyncio.AbstractEventLoop:
    """The private functions loop, started on first use."""
    global _PRIVATE
    with _PRIVATE_LOCK:
        if _PRIVATE is None:
            _PRIVATE = LoopThread()
        return _PRIVATE.loop


def loop_for_plain(bound: asyncio.AbstractEventLoop | None,
                   runtime: Runtime) -> asyncio.AbstractEventLoop:
    """The loop a plain function's cache runs on, called outside any running loop: the
    loop of its runtime (``bound``: the one it last used; the default runtime's, when it
    is ``runtime``) while that loop runs, else the private one."""
    for loop in (bound, DEFAULT.loop if runtime is default_runtime else None):
        if loop is not None and _alive(loop):
            return loop
    return private_loop()
