"""``@cached``: a function's results in the page cache's tiers, keyed, tagged, collapsed.

The thin shell around the pure cores: :mod:`~stoker.functions.keys` (the key),
:mod:`~stoker.functions.decide` (hit, hit and refresh, or call; falling back on a stale
result), :mod:`~stoker.functions.codecs` (the stored bytes).  A result is a
:class:`~stoker.cache.entry.CacheEntry` (variant ``""``, ``content-type`` its codec, its
tags, its windows) in the runtime's tiered store, under its own key space
(``{version}|fn:…``): purged by the purger's tag purges and purges of everything like
any page, and by :meth:`CachedFunction.invalidate` through the purger's invalidation.

Invariants:
- A fresh L1 hit runs no I/O and awaits nothing but the runtime (an attribute read once
  open); an L1 miss reads L2 (:meth:`~stoker.cache.port.Cache.get`).
- One call per key at a time per process (the :class:`~stoker.cache.collapse.Collapser`);
  the leader of a miss first takes the key's fetch lease
  (:class:`~stoker.proxy.shared_flights.SharedFlights`), so processes and nodes sharing
  the persistent tier make one call: a member holding it live is waited for and its
  stored result served.  A waiter in process waits at most ``collapse_timeout`` and then
  calls alone, as the proxy's followers fetch alone.
- A call notes the purge list's sequence before it starts and its result is judged by the
  marks since before it is stored (:meth:`~stoker.purge.list.PurgeList.check`): a purge
  racing a call is never undone by its store (hard: not stored; soft: stored stale).
- Every caller gets the result as the codec gives it back (the leader too), so a caller's
  changes to it never reach another.
- An exception of a call reaches its leader and every caller waiting on it, unless a
  stored result is still within its windows (:func:`~stoker.functions.decide.falls_back`):
  then that result answers, and the exception is logged.  Cancellation is never cached
  nor shared: the waiters then call alone.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import socket
import uuid
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast

from stoker.app.stoker import Stoker
from stoker.cache.collapse import Collapser, Flight
from stoker.cache.entry import CacheEntry
from stoker.config.units import parse_duration
from stoker.functions.codecs import Codec, JsonCodec, Unreadable
from stoker.functions.decide import Step, Windows, decide, falls_back
from stoker.functions.keys import Parameters, arguments, canonical, function_key, name_of
from stoker.functions.runtime import Runtime, default_runtime, loop_for_plain
from stoker.proxy.shared_flights import SharedFlights
from stoker.purge.scope import is_tag

log = logging.getLogger("stoker.functions")

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")

Tags = Iterable[str] | Callable[..., Iterable[str]] | None
"""A cached function's tags: fixed, or computed from each call's arguments."""
Duration = str | float


class Cached(Protocol[P, R_co]):
    """A ``@cached`` function: called as the function it wraps, plus its cache's handles."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def cache_key(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """The call's key without the cache version (see :meth:`CachedFunction.cache_key`)."""
        ...

    async def invalidate(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """Hard-purge the call's stored result (see :meth:`CachedFunction.invalidate`)."""
        ...

    @property
    def cache(self) -> CachedFunction[P, Any]:
        """The function's cache (:meth:`CachedFunction.bind`, :meth:`~CachedFunction.settle`)."""
        ...


class Binding:
    """What a cached function uses of one opened runtime, on the loop it belongs to."""

    def __init__(self, stoker: Stoker, loop: asyncio.AbstractEventLoop) -> None:
        settings = stoker.settings
        self.stoker = stoker
        self.loop = loop
        self.store = stoker.store
        self.clock = stoker.clock
        self.keying = stoker.pipeline.keying
        self.purges = stoker.store.purges
        self.timeout = settings.collapse_timeout
        self.collapser = Collapser()
        member = f"fn-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.flights = SharedFlights(stoker.backends.leases, stoker.store, stoker.clock,
                                     member, settings.collapse_timeout,
                                     settings.node_timeout)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.releasing: dict[str, asyncio.Task[None]] = {}
        """Leases being given back (once their result reached the shared tier), by key."""

    def release(self, key: str) -> None:
        """Give ``key``'s lease back in the background, if this process holds it."""
        if not self.flights.holds(key):
            return
        task = self.loop.create_task(self.flights.release(key))
        self.releasing[key] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._released(key, done))

    def _released(self, key: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self.releasing.get(key) is task:
            del self.releasing[key]

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` in the background, held until it ends."""
        task = self.loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the background work (refreshes, lease releases) begun so far."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


class CachedFunction(Generic[P, R]):
    """The cache of one decorated function (see the module invariants)."""

    def __init__(self, function: Callable[P, Any], runtime: Runtime, windows: Windows,
                 tags: Tags, key: Callable[..., Any] | None, codec: Codec) -> None:
        self.function = function
        self.name = name_of(function)
        self.windows = windows
        self.codec = codec
        self.is_async = inspect.iscoroutinefunction(function)
        self._runtime = runtime
        self._parameters = Parameters.of(function)
        self._key = key
        self._fixed_tags = _checked_tags(tags) if tags is not None and not callable(
            tags) else ()
        self._tags = tags if callable(tags) else None
        self._binding: Binding | None = None
        self._media = ((b"content-type", codec.media_type),)

    # -- the handles -----------------------------------------------------------

    def cache_key(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """The call's key as every process computes it, without the cache version:
        ``fn:module.qualname(canonical arguments)``; its primary key in the store is
        ``{version}|`` and this (:mod:`stoker.functions.keys`)."""
        return function_key("", self.name, self._arguments(args, kwargs))[1:]

    async def invalidate(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """Hard-purge the stored result of this call, through the purger (in force in
        both tiers, relayed to the processes sharing the cache); how many entries it
        removed.  Run on the runtime's loop (from any loop)."""
        return await self._on_runtime_loop(self._invalidate(args, kwargs))

    async def _invalidate(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        binding = await self.bind()
        key = function_key(binding.keying.version, self.name, self._arguments(args, kwargs))
        return (await binding.stoker.purger.invalidate([key])).purged

    async def bind(self) -> Binding:
        """The runtime opened (its :class:`Binding`, made anew when the runtime gives
        another Stoker than last time)."""
        stoker = await self._runtime()
        binding = self._binding
        if binding is None or binding.stoker is not stoker:
            binding = self._binding = Binding(stoker, asyncio.get_running_loop())
        return binding

    async def settle(self) -> None:
        """Wait for this function's background refreshes and lease releases (tests)."""
        if self._binding is not None:
            await self._binding.settle()

    # -- a call ------------------------------------------------------------------

    async def call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call ``function(*args, **kwargs)`` through the cache."""
        binding = await self.bind()
        key = function_key(binding.keying.version, self.name, self._arguments(args, kwargs))
        store = binding.store
        entries = store.get_l1(key)
        if entries is None:
            entries = await store.get(key)
        entry = self._ours(entries)
        step = decide(entry, binding.clock.now(), in_flight=binding.collapser.busy(key))
        if step is not Step.CALL:
            assert entry is not None
            try:
                value = self.codec.decode(entry.body or b"")
            except Unreadable as error:
                log.warning("%s: a stored result was unreadable (%s); calling it", key, error)
                return await self._shared(binding, key, None, args, kwargs)
            if step is Step.HIT_REFRESH:
                flight, leader = binding.collapser.join(key)
                if leader:
                    binding.spawn(self._refresh(binding, key, flight, entry, args, kwargs))
            return value
        return await self._shared(binding, key, entry, args, kwargs)

    async def _shared(self, binding: Binding, key: str, held: CacheEntry | None,
                      args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The key's one call in this process: led, or waited for."""
        flight, leader = binding.collapser.join(key)
        if leader:
            return await self._lead(binding, key, flight, held, args, kwargs)
        shared = await flight.wait(binding.timeout)
        if flight.error is not None:
            return self._fall_back(binding, key, held, flight.error)
        if shared is not None:
            return self.codec.decode(shared.body or b"")
        return (await self._produce(binding, key, args, kwargs)).value  # it timed out

    async def _lead(self, binding: Binding, key: str, flight: Flight,
                    held: CacheEntry | None, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """Lead ``flight``: the result another member stores meanwhile, else the call's;
        land it (exactly once) with the result or the exception."""
        try:
            found = await self._elsewhere(binding, key, flight)
            made = _Made(self.codec.decode(found.body or b""), found) if found else (
                await self._produce(binding, key, args, kwargs))
        except Exception as error:
            binding.collapser.land(key, flight, None, error=error)
            return self._fall_back(binding, key, held, error)
        except BaseException:
            binding.collapser.land(key, flight, None)
            raise
        finally:
            binding.release(key)
        binding.collapser.land(key, flight, made.entry)
        return made.value

    async def _refresh(self, binding: Binding, key: str, flight: Flight, held: CacheEntry,
                       args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Refresh ``held`` in the background, leading ``flight``; a failure keeps it."""
        try:
            await self._lead(binding, key, flight, held, args, kwargs)
        except Exception as error:  # held was past its windows by then: nothing to keep
            log.warning("%s: refreshing it failed: %s: %s", key, type(error).__name__, error)

    async def _elsewhere(self, binding: Binding, key: str,
                         flight: Flight) -> CacheEntry | None:
        """Take ``key``'s fetch lease; held by another member, its stored result (``None``:
        call here, holding the lease if it was taken or taken over)."""
        flights = binding.flights
        releasing = binding.releasing.get(key)
        if releasing is not None:  # this process's last call of key: given back first
            await releasing
        if await flights.take(key):
            return None
        clock = binding.clock

        def usable(entries: list[CacheEntry]) -> CacheEntry | None:
            entry = self._ours(entries)
            return entry if entry is not None and clock.now() < entry.fresh_until else None

        return await flights.wait(key, usable, flight.began)

    async def _produce(self, binding: Binding, key: str, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> _Made:
        """Call the function and store its result, judged by the purges since the call
        began; the result as the codec gives it back."""
        since = binding.purges.seq
        if self.is_async:
            value = await self.function(*args, **kwargs)
        else:
            value = await asyncio.to_thread(self.function, *args, **kwargs)
        body = self.codec.encode(value)
        entry = self._entry(key, body, binding.clock.now(), args, kwargs)
        verdict = binding.purges.check(since, entry)
        if verdict is None:
            await binding.store.put(entry)
        elif not verdict.hard:
            await binding.store.put(entry.softened(verdict.stale_from))
        else:
            log.info("%s: not stored: purged while it was being called", key)
        return _Made(self.codec.decode(body), entry)

    def _fall_back(self, binding: Binding, key: str, held: CacheEntry | None,
                   error: BaseException) -> Any:
        """The stored result ``held`` if still within its windows, else ``error`` raised."""
        if held is not None and falls_back(held, binding.clock.now()):
            try:
                value = self.codec.decode(held.body or b"")
            except Unreadable:
                raise error from None
            log.warning("%s raised %s: %s; answering with its stored result (within its "
                        "windows)", key, type(error).__name__, error)
            return value
        raise error

    # -- parts -------------------------------------------------------------------

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        """The canonical JSON the key names the call by: its arguments', or ``key=``'s."""
        if self._key is not None:
            return canonical(self._key(*args, **kwargs))
        return canonical(arguments(self._parameters, args, kwargs))

    def _entry(self, key: str, body: bytes, now: float, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> CacheEntry:
        times = self.windows.times(now)
        tags = self._fixed_tags if self._tags is None else _checked_tags(
            self._tags(*args, **kwargs))
        return CacheEntry(
            primary_key=key, variant="", url=key.split("|", 1)[1], status=200,
            headers=self._media, body=body, body_file=None, body_size=len(body),
            response_time=now, initial_age=0.0, fresh_until=times.fresh_until,
            stale_until=times.stale_until, error_until=times.error_until,
            keep_until=times.keep_until, tags=tags, stored_at=now, stale_ok=True)

    def _ours(self, entries: list[CacheEntry]) -> CacheEntry | None:
        """The stored result among ``entries`` this function's codec wrote."""
        for entry in entries:
            if entry.variant == "" and entry.headers == self._media:
                return entry
        return None

    async def _on_runtime_loop(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` on the loop of the runtime last used, when that one runs in
        another thread (a plain function's private loop), else on this one."""
        binding = self._binding
        here = asyncio.get_running_loop()
        if binding is None or binding.loop is here or not binding.loop.is_running():
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, binding.loop))

    def call_plain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A plain function's call: the cache runs on a loop of its own, this thread waits
        (refused inside a running event loop, which it would block)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                f"{self.name} is a plain function with @cached, called inside a running "
                "event loop, which its cache would block: make it async, or call it "
                "through asyncio.to_thread()")
        bound = self._binding.loop if self._binding is not None else None
        loop = loop_for_plain(bound, self._runtime)
        return asyncio.run_coroutine_threadsafe(self.call(args, kwargs), loop).result()


class _Made:
    """A call's result as callers get it, and its entry."""

    __slots__ = ("entry", "value")

    def __init__(self, value: Any, entry: CacheEntry) -> None:
        self.value = value
        self.entry = entry


def _checked_tags(tags: Iterable[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise TypeError(f"tags must be an iterable of tags, not the str {tags!r}")
    checked = tuple(dict.fromkeys(tags))
    for tag in checked:
        if not isinstance(tag, str) or not is_tag(tag):
            raise ValueError(f"{tag!r} is not a tag: tags are non-empty strings without "
                             "whitespace or commas")
    return checked


def cached(runtime: Runtime | None = None, *, ttl: Duration = "1m", swr: Duration = "0s",
           sie: Duration = "0s", tags: Tags = None, key: Callable[..., Any] | None = None,
           codec: Codec | None = None) -> Callable[[Callable[P, R]], Cached[P, R]]:
    """Cache a function's results (async or plain; see :mod:`stoker.functions`).

    ``runtime``: the opened Stoker to cache in (default: :func:`default_runtime`);
    ``ttl``, ``swr``, ``sie``: fresh for, then served stale while refreshed for, and
    standing in for a failing call for (past freshness), as ``"1m"`` or seconds;
    ``tags``: tags of every result, or a function of the call's arguments giving them;
    ``key``: a function of the call's arguments giving the JSON value to key it by
    (needed for arguments that are not JSON values); ``codec``: how results are stored
    (default :class:`~stoker.functions.codecs.JsonCodec`)."""
    windows = Windows(parse_duration(ttl), parse_duration(swr), parse_duration(sie))
    chosen = runtime if runtime is not None else default_runtime

    def decorate(function: Callable[P, R]) -> Cached[P, R]:
        cache: CachedFunction[P, R] = CachedFunction(function, chosen, windows, tags, key,
                                                     codec if codec is not None else
                                                     JsonCodec())
        if cache.is_async:
            async def call_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await cache.call(args, kwargs)

            wrapper: Callable[..., Any] = call_async
        else:
            def call_plain(*args: P.args, **kwargs: P.kwargs) -> Any:
                return cache.call_plain(args, kwargs)

            wrapper = call_plain
        functools.update_wrapper(wrapper, function)
        wrapper.__dict__.update(cache_key=cache.cache_key, invalidate=cache.invalidate,
                                cache=cache)
        return cast("Cached[P, R]", wrapper)

    return decorate
