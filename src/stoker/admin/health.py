"""``/healthz`` and ``/readyz``: whether the process is up, and whether it can serve.

``/healthz`` answers 200 whenever the process answers at all (a liveness probe: restart
it when this fails).  ``/readyz`` answers 200 only while every store it serves from is
reachable, the process serves the cache version its record holds (``version``:
:mod:`stoker.cache.version_watch`, which adopts a newer one at once and raises a record
found behind, so it names a record it cannot read or keep), ``data_dir`` takes a write
(:class:`WriteProbe`: a full or read-only data volume fails the cache's and the audit
log's writes, which reads alone never show) and, with a warmer, its deadline ticker
runs; otherwise 503, naming what is not (a readiness probe: send it no traffic
meanwhile).  Both are open (no token): load balancers and
Kubernetes probe them without one, and neither body holds a secret.

Invariants: each check gets at most :data:`CHECK_TIMEOUT` seconds, so a hung store makes
``/readyz`` fail rather than hang; the write probe writes at most once every
:data:`PROBE_EVERY` seconds however often ``/readyz`` is asked (an open route must not
become a disk-write amplifier), reusing its last finding meanwhile, and never starts a
write while its last one has not returned; :func:`verdict` is pure.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from stoker.clock import Clock

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker, RunningWarmer

CHECK_TIMEOUT = 2.0
"""Seconds one readiness check may take."""
OK = "ok"
PROBE_EVERY: Final = 5.0
"""Seconds between two writes of the :class:`WriteProbe`."""
PROBE_FILE: Final = ".readyz-probe"
"""The file in ``data_dir`` the probe writes (and writes over)."""
NOT_YET: Final = "not probed yet"


def write_probe_file(path: Path) -> None:
    """Write a few bytes to ``path`` (private, replaced in place) and fsync them."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(descriptor, b"stoker readiness probe\n")
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class WriteProbe:
    """Whether ``directory`` takes a write, found at most once every ``every`` seconds
    (see the module invariants); ``write`` does the writing (a fault can be injected)."""

    def __init__(self, directory: Path, clock: Clock, *, every: float = PROBE_EVERY,
                 write: Callable[[Path], None] = write_probe_file) -> None:
        self._path = directory / PROBE_FILE
        self._clock = clock
        self._every = every
        self._write = write
        self._tried: float | None = None
        self._found = NOT_YET
        self._writing: asyncio.Future[None] | None = None

    async def result(self) -> str:
        """:data:`OK`, or why the last write failed."""
        now = self._clock.monotonic()
        if self._tried is not None and now - self._tried < self._every:
            return self._found
        if self._writing is not None and not self._writing.done():
            return self._found  # a write still hung: its timeout's finding stands
        self._tried = now
        self._writing = asyncio.ensure_future(asyncio.to_thread(self._write, self._path))
        self._writing.add_done_callback(_consume)
        try:
            await asyncio.wait_for(asyncio.shield(self._writing), CHECK_TIMEOUT)
            self._found = OK
        except TimeoutError:
            self._found = f"data_dir: no write returned within {CHECK_TIMEOUT:g} s"
        except OSError as error:
            self._found = f"data_dir refuses writes: {type(error).__name__}: {error}"
        return self._found


def _consume(done: asyncio.Future[None]) -> None:
    """Retrieve the outcome of a write nobody awaits any more (it timed out)."""
    if not done.cancelled():
        done.exception()


async def readiness(stoker: RunningStoker, warm: RunningWarmer | None,
                    probe: WriteProbe | None = None) -> dict[str, str]:
    """Each check's result: :data:`OK` or why it failed (``data_dir`` with ``probe``)."""
    checks: dict[str, Awaitable[Any]] = {"l2": stoker.l2.count(),
                                         "audit": stoker.audit.recent(1)}
    if warm is not None:
        checks["queue"] = warm.stores.queue.counts()
    found = {name: await _check(reading) for name, reading in checks.items()}
    found["version"] = await _finding(stoker.version_watch.check())
    if probe is not None:
        found["data_dir"] = await probe.result()
    if warm is not None:
        found["ticker"] = OK if warm.ticker.alive else "not running"
    return found


async def _check(reading: Awaitable[Any]) -> str:
    try:
        await asyncio.wait_for(reading, CHECK_TIMEOUT)
    except TimeoutError:
        return f"no answer within {CHECK_TIMEOUT:g} s"
    except Exception as error:  # what a store raises when unreachable varies by backend
        return f"{type(error).__name__}: {error}"
    return OK


async def _finding(finding: Awaitable[str]) -> str:
    """What ``finding`` says (:data:`OK` or why not), within :data:`CHECK_TIMEOUT`."""
    try:
        return await asyncio.wait_for(finding, CHECK_TIMEOUT)
    except TimeoutError:
        return f"no answer within {CHECK_TIMEOUT:g} s"


def verdict(checks: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
    """The status and body of ``/readyz`` for ``checks``.  Pure."""
    ready = all(result == OK for result in checks.values())
    return (200 if ready else 503), {"ready": ready, "checks": dict(checks)}
