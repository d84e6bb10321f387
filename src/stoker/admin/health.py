"""``/healthz`` and ``/readyz``: whether the process is up, and whether it can serve.

``/healthz`` answers 200 whenever the process answers at all (a liveness probe: restart
it when this fails).  ``/readyz`` answers 200 only while every store it serves from is
reachable and, with a warmer, its deadline ticker runs; otherwise 503, naming what is
not (a readiness probe: send it no traffic meanwhile).  Both are open (no token): load
balancers and Kubernetes probe them without one, and neither body holds a secret.

Invariants: each check gets at most :data:`CHECK_TIMEOUT` seconds, so a hung store makes
``/readyz`` fail rather than hang; :func:`verdict` is pure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.app.stoker import Stoker
    from stoker.app.warm_service import WarmService

CHECK_TIMEOUT = 2.0
"""Seconds one readiness check may take."""
OK = "ok"


async def readiness(stoker: Stoker, warm: WarmService | None) -> dict[str, str]:
    """Each check's result: :data:`OK` or why it failed."""
    checks: dict[str, Awaitable[Any]] = {"l2": stoker.l2.count(),
                                         "audit": stoker.audit.recent(1)}
    if warm is not None:
        checks["queue"] = warm.stores.queue.counts()
    found = {name: await _check(reading) for name, reading in checks.items()}
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


def verdict(checks: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
    """The status and body of ``/readyz`` for ``checks``.  Pure."""
    ready = all(result == OK for result in checks.values())
    return (200 if ready else 503), {"ready": ready, "checks": dict(checks)}
