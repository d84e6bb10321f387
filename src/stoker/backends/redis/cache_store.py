"""A cache tier on Redis, which several Stoker nodes can share as their L2.

Lifecycle: ``store = await RedisCacheStore.open(url, clock, bodies=…)`` (a client of its
own, checked to answer, closed by ``await store.close()``), or ``RedisCacheStore(client,
clock, …)`` on a client shared with other ports (:func:`stoker.backends.open`'s), which
``close`` leaves open: it belongs to whoever gave it.

Layout, every key under ``prefix`` (``P``), an entry's *ref id* being
``b"<len(primary_key in UTF-8)>:<primary_key><variant>"`` (unambiguous for any text):

- ``P e:<ref id>``: the entry, a hash: ``record`` (:func:`encode_record`, the SQLite
  tier's encoding), ``body``, ``fresh``, ``stale``, ``error``, ``encoded``
  (:func:`encode_codings`, empty when none), ``due``, ``stored_at``, ``stale_ok``, and for
  the scripts ``pk``, ``url``, ``tags`` (MessagePack) and ``keep`` (``keep_until``).
- ``P v:<primary key>``: a set of the ref ids of its variants.
- ``P t:<tag>``: a set of the ref ids of the entries carrying the tag.
- ``P u``: every entry as ``url \\0 ref id \\0 len(url)``, scored 0, read by ZRANGEBYLEX.
- ``P x``: every entry's ref id scored by its ``keep_until``; ``P s``: ref id → size.
- ``P version``: the cache version as earlier releases kept it, only read
  (:mod:`~stoker.backends.redis.version_store`).

Invariants:
- Every operation is ONE Lua script (``put_many``: one per entry in one MULTI/EXEC), so
  each is atomic against every node's: a replaced entry's index members go with it, and
  ``add_codings`` is a compare-and-set on ``stored_at``, the body and ``due``.
- Reads are batched (:mod:`~stoker.backends.redis.read_batch`): the ``get`` calls made
  while a batch is in flight go as the next batch, one :data:`GET` call for up to
  :data:`READ_BATCH` distinct keys (equal keys read once, their entries shared); one
  batch is in flight at a time, its ``now`` the clock's when it is sent, and a ``get``
  is never answered by a batch sent before it was called.  A failed batch fails each of
  its ``get`` calls.
- Times are the injected clock's.  An entry key (and its variant and tag sets, whose
  expiry only grows) expires ``keep_until - now`` after it is written, so Redis drops
  expired entries itself; relative, not PEXPIREAT, because the node's clock, not Redis's,
  decides (a test's clock starts in 2023).  Reads also skip ``keep_until <= now``.
- Index members may outlive their entry (Redis expired it): every read checks each
  member against its entry (exists, live, still carries that tag or URL), and removes,
  in the same script, the members whose entry is gone.  ``P x`` and ``P s`` lose their
  expired members to a sweep in every put (bounded) and in ``stats``.
- Bodies: an entry's body bytes are stored in Redis.  One whose body is in a file
  (``body_file``) is stored with the file's bytes, inline (so it comes back with ``body``
  set and no ``body_file``: any node can serve it), when ``bodies`` is given and its
  size is at most ``max_object_bytes``.  Any entry larger, or in a file without
  ``bodies`` or whose file is gone, is NOT stored: it stays node-local, and the version
  this store had of it is deleted, so no node gets an older one from here.
- Scripts compute the key names they use from ``prefix``: one Redis server (or a
  primary with replicas), not Redis Cluster.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.commands.core import AsyncScript

from stoker.backends.entry_rows import encode_codings, encode_record, entry_from_row
from stoker.backends.redis.read_batch import ReadBatches
from stoker.backends.redis.version_store import earlier_version
from stoker.cache.bodies import BodyStore
from stoker.cache.entry import CacheEntry
from stoker.cache.store import EntryRef, sorted_refs
from stoker.cache.version_file import VersionState
from stoker.clock import Clock
from stoker.http.encoding import Encoded

MAX_OBJECT_BYTES = 8 * 1024 * 1024
"""The largest body stored by default (Redis holds a value whole, in memory)."""
SWEEP_STEP = 20
"""Expired members of ``P x`` a put sweeps at most."""
READ_BATCH = 64
"""Distinct keys one batched read asks for at most."""

LIB = r"""
local P = ARGV[1]
local function ekey(refid) return P .. 'e:' .. refid end
local function umember(url, refid) return url .. '\0' .. refid .. '\0' .. #url end
local function index(key, refid, ttl)
  redis.call('SADD', key, refid)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
local function drop(refid, now)  -- delete one entry and its index members; true if live
  local key = ekey(refid)
  local f = redis.call('HMGET', key, 'pk', 'url', 'tags', 'keep')
  redis.call('ZREM', P .. 'x', refid)
  redis.call('HDEL', P .. 's', refid)
  if not f[1] then return false end
  redis.call('DEL', key)
  redis.call('SREM', P .. 'v:' .. f[1], refid)
  redis.call('ZREM', P .. 'u', umember(f[2], refid))
  for _, tag in ipairs(cmsgpack.unpack(f[3])) do redis.call('SREM', P .. 't:' .. tag, refid) end
  return tonumber(f[4]) > now
end
local function sweep(at, limit)  -- at: the time as given (a Lua number prints 14 digits)
  local expired = redis.call('ZRANGEBYSCORE', P .. 'x', '-inf', at, 'LIMIT', 0, limit)
  for _, refid in ipairs(expired) do drop(refid, tonumber(at)) end
  return #expired
end
local function carries(packed, tag)
  for _, each in ipairs(cmsgpack.unpack(packed)) do if each == tag then return true end end
  return false
end
"""

PUT = LIB + """
local refid, pk, url, ttl, now = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
drop(refid, now)
local tags = {}
for i = 18, #ARGV do tags[#tags + 1] = ARGV[i] end
local key = ekey(refid)
redis.call('HSET', key, 'pk', pk, 'url', url, 'tags', cmsgpack.pack(tags), 'keep', ARGV[8],
  'record', ARGV[9], 'body', ARGV[10], 'fresh', ARGV[11], 'stale', ARGV[12],
  'error', ARGV[13], 'encoded', ARGV[14], 'due', ARGV[15], 'stored_at', ARGV[16],
  'stale_ok', ARGV[17])
redis.call('PEXPIRE', key, ttl)
index(P .. 'v:' .. pk, refid, ttl)
for _, tag in ipairs(tags) do index(P .. 't:' .. tag, refid, ttl) end
redis.call('ZADD', P .. 'u', 0, umember(url, refid))
redis.call('ZADD', P .. 'x', ARGV[8], refid)
redis.call('HSET', P .. 's', refid, ARGV[7])
sweep(ARGV[6], """ + str(SWEEP_STEP) + ")"

GET = LIB + """
local now, out = tonumber(ARGV[2]), {}
for i = 3, #ARGV do
  local vkey, rows = P .. 'v:' .. ARGV[i], {}
  for _, refid in ipairs(redis.call('SMEMBERS', vkey)) do
    local f = redis.call('HMGET', ekey(refid), 'keep', 'record', 'body', 'fresh', 'stale',
      'error', 'encoded', 'due')
    if not f[1] then redis.call('SREM', vkey, refid)
    elseif tonumber(f[1]) > now then rows[#rows + 1] = f end
  end
  out[i - 2] = rows
end
return out
"""

DELETE = LIB + """
local now, live = tonumber(ARGV[2]), 0
for i = 3, #ARGV do if drop(ARGV[i], now) then live = live + 1 end end
return live
"""

DELETE_PRIMARY = LIB + """
local now, live = tonumber(ARGV[2]), 0
for i = 3, #ARGV do
  local vkey = P .. 'v:' .. ARGV[i]
  for _, refid in ipairs(redis.call('SMEMBERS', vkey)) do
    if drop(refid, now) then live = live + 1 end
  end
  redis.call('DEL', vkey)
end
return live
"""

TAGGED = LIB + """
local now, out = tonumber(ARGV[2]), {}
for i = 3, #ARGV do
  local tkey = P .. 't:' .. ARGV[i]
  for _, refid in ipairs(redis.call('SMEMBERS', tkey)) do
    local f = redis.call('HMGET', ekey(refid), 'keep', 'tags')
    if not f[1] or not carries(f[2], ARGV[i]) then redis.call('SREM', tkey, refid)
    elseif tonumber(f[1]) > now then out[#out + 1] = refid end
  end
end
return out
"""

URL_RANGE = LIB + """
local now, out = tonumber(ARGV[2]), {}
for _, member in ipairs(redis.call('ZRANGEBYLEX', P .. 'u', ARGV[3], ARGV[4])) do
  local n = string.match(member, '(%d+)$')
  local url = string.sub(member, 1, tonumber(n))
  local refid = string.sub(member, tonumber(n) + 2, #member - #n - 1)
  local f = redis.call('HMGET', ekey(refid), 'keep', 'url')
  if not f[1] or f[2] ~= url then redis.call('ZREM', P .. 'u', member)
  elseif tonumber(f[1]) > now then out[#out + 1] = refid end
end
return out
"""

SOFTEN = LIB + """
local at, now, changed = tonumber(ARGV[2]), tonumber(ARGV[3]), 0
for i = 4, #ARGV do
  local key = ekey(ARGV[i])
  local f = redis.call('HMGET', key, 'keep', 'fresh', 'stale', 'error', 'stale_ok')
  if f[1] and tonumber(f[1]) > now and tonumber(f[2]) > at then
    redis.call('HSET', key, 'fresh', ARGV[2])
    if f[5] ~= '1' then
      if tonumber(f[3]) > at then redis.call('HSET', key, 'stale', ARGV[2]) end
      if tonumber(f[4]) > at then redis.call('HSET', key, 'error', ARGV[2]) end
    end
    changed = changed + 1
  end
end
return changed
"""

ADD_CODINGS = LIB + """
local key = ekey(ARGV[2])
local f = redis.call('HMGET', key, 'keep', 'due', 'stored_at', 'body')
if f[1] and tonumber(f[1]) > tonumber(ARGV[3]) and f[2] == '1'
    and tonumber(f[3]) == tonumber(ARGV[4]) and f[4] == ARGV[5] then
  redis.call('HSET', key, 'encoded', ARGV[6], 'due', '0')
  redis.call('HINCRBY', P .. 's', ARGV[2], #ARGV[6])
  return 1
end
return 0
"""

ALL_REFS = LIB + "return redis.call('ZRANGE', P .. 'x', 0, -1)"

STATS = LIB + """
while sweep(ARGV[2], 1000) > 0 do end
local bytes = 0
for _, size in ipairs(redis.call('HVALS', P .. 's')) do bytes = bytes + tonumber(size) end
return {redis.call('ZCARD', P .. 'x'), bytes}
"""

COUNT = LIB + "return redis.call('ZCOUNT', P .. 'x', '(' .. ARGV[2], '+inf')"


def ref_id(primary_key: str, variant: str) -> bytes:
    """The ref id of ``(primary_key, variant)`` (see the module docstring)."""
    key = primary_key.encode()
    return b"%d:%s%s" % (len(key), key, variant.encode())


def ref_of(refid: bytes) -> EntryRef:
    """The ref a :func:`ref_id` names (its inverse)."""
    colon = refid.index(b":")
    end = colon + 1 + int(refid[:colon])
    return EntryRef(refid[colon + 1:end].decode(), refid[end:].decode())


def prefix_range(prefix: str) -> tuple[bytes, bytes]:
    """ZRANGEBYLEX bounds of the ``P u`` members whose URL starts with ``prefix``: no UTF-8
    byte is 0xFF, so ``prefix + 0xFF`` is above every one and below every other."""
    start = prefix.encode()
    return b"[" + start, b"(" + start + b"\xff"


def put_args(entry: CacheEntry, ttl_ms: int, now: float) -> list[Any]:
    """The :data:`PUT` arguments after the prefix for ``entry`` (its body inline)."""
    record = encode_record(entry)
    encoded = encode_codings(entry.encoded) or b""
    size = len(record) + entry.body_size + len(encoded)
    return [ref_id(entry.primary_key, entry.variant), entry.primary_key, entry.url, ttl_ms, now,
            size, entry.keep_until, record, entry.body, entry.fresh_until, entry.stale_until,
            entry.error_until, encoded, int(entry.codings_due), entry.stored_at,
            int(entry.stale_ok), *entry.tags]


def entry_of(primary_key: str, fields: Sequence[bytes]) -> CacheEntry:
    """The entry a :data:`GET` row of ``primary_key`` holds."""
    _, record, body, fresh, stale, error, encoded, due = fields
    return entry_from_row(primary_key, (record, body, float(fresh), float(stale),
                                        float(error), encoded or None, int(due)))


class RedisCacheStore:
    """The Redis cache tier.  See the module docstring for layout and invariants."""

    def __init__(self, client: aioredis.Redis, clock: Clock, *, prefix: str = "stoker:",
                 max_object_bytes: int = MAX_OBJECT_BYTES,
                 bodies: BodyStore | None = None, owns_client: bool = False) -> None:
        self._client = client
        self._owns_client = owns_client
        """Whether :meth:`close` closes ``client`` (else it belongs to whoever gave it)."""
        self._clock = clock
        self._prefix = prefix.encode()
        self._max_object_bytes = max_object_bytes
        self._bodies = bodies
        self._reads: ReadBatches[str, asyncio.Future[list[CacheEntry]]] = ReadBatches(
            READ_BATCH)
        self._reader: asyncio.Task[None] | None = None
        """The task sending the read batches, while there are any."""
        scripts = (PUT, GET, DELETE, DELETE_PRIMARY, TAGGED, URL_RANGE, SOFTEN, ADD_CODINGS,
                   ALL_REFS, STATS, COUNT)
        (self._put, self._get, self._delete, self._delete_primary, self._tagged,
         self._url_range, self._soften, self._add_codings, self._all_refs, self._stats,
         self._count) = (client.register_script(source) for source in scripts)

    @classmethod
    async def open(cls, url: str, clock: Clock, *, prefix: str = "stoker:",
                   max_object_bytes: int = MAX_OBJECT_BYTES,
                   bodies: BodyStore | None = None) -> RedisCacheStore:
        """Connect to ``url`` (``redis://host:port/db``) and check the server answers; the
        store owns that client."""
        client = aioredis.Redis.from_url(url)
        await client.ping()
        return cls(client, clock, prefix=prefix, max_object_bytes=max_object_bytes,
                   bodies=bodies, owns_client=True)

    async def earlier_version(self) -> VersionState:
        """The cache version an earlier release kept beside these entries
        (:mod:`stoker.backends.redis.version_store`)."""
        return await earlier_version(self._client, self._prefix.decode())

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        for waiter in self._reads.drop():
            waiter.cancel()
        if self._owns_client:
            await self._client.aclose()

    # -- CacheStore ----------------------------------------------------------

    async def get(self, primary_key: str) -> list[CacheEntry]:
        """The live variants of ``primary_key``, by variant (read in the next batch)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[list[CacheEntry]] = loop.create_future()
        if self._reads.want(primary_key, waiter):  # its first step runs after this
            self._reader = loop.create_task(self._read_batches())  # iteration's calls
        return list(await waiter)

    def read_now(self, primary_key: str) -> None:
        """Never: every read is a round trip."""
        return None

    async def put(self, entry: CacheEntry) -> None:
        await self.put_many([entry])

    async def put_many(self, entries: Sequence[CacheEntry]) -> None:
        """Each entry's :data:`PUT` (or, not storable, its :data:`DELETE`), in one
        MULTI/EXEC."""
        inline = [await self._inline(entry) for entry in entries]
        now = self._clock.now()
        async with self._client.pipeline(transaction=True) as pipe:
            for entry, stored in zip(entries, inline, strict=True):
                ttl_ms = math.ceil((entry.keep_until - now) * 1000)
                if stored is None or ttl_ms <= 0:
                    await self._run(self._delete, now, ref_id(entry.primary_key, entry.variant),
                                    client=pipe)
                else:
                    await self._run(self._put, *put_args(stored, ttl_ms, now), client=pipe)
            await pipe.execute()

    async def add_codings(self, entry: CacheEntry, encoded: Encoded) -> None:
        if entry.body is None:  # a body kept in a file never has codings due
            return
        await self._run(self._add_codings, ref_id(entry.primary_key, entry.variant),
                        self._clock.now(), entry.stored_at, entry.body,
                        encode_codings(encoded) or b"")

    async def delete(self, refs: Iterable[EntryRef]) -> int:
        return int(await self._run(self._delete, self._clock.now(), *_ref_ids(refs)))

    async def delete_primary(self, primary_keys: Iterable[str]) -> int:
        return int(await self._run(self._delete_primary, self._clock.now(), *primary_keys))

    async def delete_except_version(self, version: str) -> int:
        """Delete the entries listed when called that are not under ``f"{version}|"``."""
        refs = map(ref_of, await self._run(self._all_refs))
        return await self.delete(ref for ref in refs
                                 if not ref.primary_key.startswith(f"{version}|"))

    async def soften(self, refs: Iterable[EntryRef], now: float) -> int:
        return int(await self._run(self._soften, now, self._clock.now(), *_ref_ids(refs)))

    async def refs_for_tags(self, tags: Sequence[str]) -> list[EntryRef]:
        found = await self._run(self._tagged, self._clock.now(), *tags)
        return sorted_refs(set(map(ref_of, found)))

    async def refs_for_url_prefix(self, prefix: str) -> list[EntryRef]:
        found = await self._run(self._url_range, self._clock.now(), *prefix_range(prefix))
        return sorted_refs(map(ref_of, found))

    async def stats(self) -> dict[str, int]:
        """Live entries and their record, body and forms' bytes (expired ones swept)."""
        entries, size = await self._run(self._stats, self._clock.now())
        return {"entries": int(entries), "bytes": int(size)}

    async def count(self) -> int:
        return int(await self._run(self._count, self._clock.now()))

    # -- helpers -------------------------------------------------------------

    async def _read_batches(self) -> None:
        """Send the read batches, one at a time, until none waits."""
        reads = self._reads
        try:
            while keys := reads.take():
                try:
                    rows = await self._run(self._get, self._clock.now(), *keys)
                    answers: list[list[CacheEntry]] | Exception = [
                        sorted((entry_of(key, row) for row in found),
                               key=lambda entry: entry.variant)
                        for key, found in zip(keys, rows, strict=True)]
                except Exception as error:
                    answers = error
                for at, waiters in enumerate(reads.finish().values()):
                    _tell(waiters, answers if isinstance(answers, Exception) else answers[at])
        finally:
            self._reader = None

    async def _run(self, script: AsyncScript, *args: Any, client: Pipeline | None = None) -> Any:
        """Run ``script`` with the prefix and ``args`` as ARGV (queued on ``client``, a
        pipeline, when given)."""
        return await script(keys=[], args=[self._prefix, *args], client=client)

    async def _inline(self, entry: CacheEntry) -> CacheEntry | None:
        """``entry`` with its body inline, or None when it is not stored here (see the
        module docstring)."""
        if entry.body_size > self._max_object_bytes:
            return None
        if entry.body_file is None:
            return entry
        if self._bodies is None:
            return None
        try:
            body = b"".join([chunk async for chunk in self._bodies.open(entry.body_file)])
        except FileNotFoundError:
            return None
        return replace(entry, body=body, body_file=None)


def _tell(waiters: list[asyncio.Future[list[CacheEntry]]],
          answer: list[CacheEntry] | Exception) -> None:
    """Answer the ``get`` calls still waiting on ``waiters``."""
    for waiter in waiters:
        if waiter.done():  # its caller was cancelled
            continue
        if isinstance(answer, Exception):
            waiter.set_exception(answer)
        else:
            waiter.set_result(answer)


def _ref_ids(refs: Iterable[EntryRef]) -> list[bytes]:
    return [ref_id(primary_key, variant) for primary_key, variant in refs]
