"""What Redis's ``maxmemory-policy`` may evict of Stoker's keys, in words for the operator
(``stoker check``'s line, and one log line when ``stoker serve`` starts with ``l2_url``).

The Redis tier's keys (:mod:`stoker.backends.redis.cache_store`) are of two kinds: each
entry (``e:``), its variants' set (``v:``) and its tags' sets (``t:``) expire with the
entry (a TTL); the indexes (``u``, ``x``, ``s``) have none.  So ``volatile-*`` policies
may evict the first kind only, ``allkeys-*`` any key.  The cache version is not among
them (its record is in PostgreSQL: :mod:`stoker.backends.postgres.version_store`).

What an eviction costs: an evicted entry is a miss; an evicted set or index makes a
purge's lookup miss the entries it named, so they stay in Redis until they expire.  The
nodes running at the purge, and those started within the bus's memory of it
(:data:`stoker.purge.relay.KEPT`), still never serve them (their purge bans judge
every read by store time: :mod:`stoker.purge.bans`); a node started later could.

Invariants: :func:`verdict` is pure; only ``noeviction``, or no ``maxmemory`` (Redis then
evicts nothing), is :data:`SAFE`; ``volatile-*`` and ``allkeys-*`` (sets and indexes at
risk, as above) and a policy that could not be read are :data:`WARN`; any other policy,
with a ``maxmemory``, is :data:`UNSAFE`.  :func:`read_policy` asks with ``CONFIG GET`` and
gives ``None`` when the server refuses it (managed services often do): a policy never
read is never said to be safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

SAFE_POLICY: Final = "noeviction"
SAFE, WARN, UNSAFE = "safe", "warn", "unsafe"
WITH_TTL: Final = "the entries (e:) and their variant (v:) and tag (t:) sets"
"""Stoker's keys that carry a TTL: those a ``volatile-*`` policy may evict."""
WITHOUT_TTL: Final = "the indexes (u, x, s)"
"""Stoker's keys without a TTL: kept by ``volatile-*`` policies, not by ``allkeys-*``."""
RISK: Final = ("a purge may then miss entries in Redis: never served by the nodes that "
               "heard of it, readable until they expire by a node started over 10 minutes "
               "later")


@dataclass(frozen=True)
class Verdict:
    """Whether Redis keeps Stoker's keys (:data:`SAFE`, :data:`WARN`, :data:`UNSAFE`),
    and what is at risk (words for one line)."""

    level: str
    text: str


def verdict(policy: str | None, maxmemory: int | None, prefix: str = "stoker:") -> Verdict:
    """What ``policy`` (``None``: could not be read) with ``maxmemory`` bytes (0: no
    limit) may evict of the keys under ``prefix``.  Pure."""
    if policy is None:
        return Verdict(WARN, "maxmemory-policy could not be read (the server refuses "
                       f"CONFIG GET); Stoker's keys are safe only under {SAFE_POLICY}: "
                       "check it where the server is managed")
    said = f"maxmemory-policy {policy}"
    if policy == SAFE_POLICY:
        return Verdict(SAFE, f"{said}: Redis never evicts Stoker's keys (when full it "
                       "refuses writes: pages are served, not stored in Redis)")
    if not maxmemory:
        return Verdict(SAFE, f"{said}, no maxmemory: nothing is evicted; set "
                       f"{SAFE_POLICY} before setting maxmemory")
    limit = f"{said} at maxmemory {maxmemory} bytes"
    if policy.startswith("volatile-"):
        return Verdict(WARN, f"{limit} may evict {WITH_TTL} under {prefix}; {RISK}; "
                       f"{WITHOUT_TTL} stay; {SAFE_POLICY} is safe")
    if policy.startswith("allkeys-"):
        return Verdict(WARN, f"{limit} may evict any of Stoker's keys under {prefix}, "
                       f"{WITH_TTL} and {WITHOUT_TTL}; {RISK}; {SAFE_POLICY} is safe")
    return Verdict(UNSAFE, f"{limit}: an unknown policy; {SAFE_POLICY} is safe")


async def read_policy(client: aioredis.Redis) -> tuple[str, int] | None:
    """``maxmemory-policy`` and ``maxmemory`` of the server ``client`` talks to; ``None``
    when it refuses ``CONFIG GET`` (other failures are raised)."""
    try:
        found: dict[Any, Any] = await client.config_get("maxmemory*")
    except ResponseError:
        return None
    text = {_text(key): _text(value) for key, value in found.items()}
    if "maxmemory-policy" not in text:
        return None
    return text["maxmemory-policy"], int(text.get("maxmemory") or 0)


async def client_verdict(client: aioredis.Redis) -> Verdict:
    """:func:`verdict` for the Redis ``client`` talks to."""
    read = await read_policy(client)
    return verdict(*read) if read is not None else verdict(None, None)


async def eviction_verdict(url: str) -> Verdict:
    """:func:`verdict` for the Redis at ``url`` (one connection, closed)."""
    client = aioredis.Redis.from_url(url)
    try:
        return await client_verdict(client)
    finally:
        await client.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
