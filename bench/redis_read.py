"""Where a Redis L2 read's time goes: the Redis tier's batched read alone, in process.

A redis-server of its own (free port, ``--save ''``) holds ``--pages`` entries of
``--size`` bytes (a 20 KB page by default, no variants, as bench/hit_path's); batches of
``--batch`` distinct random keys (the ~22 a batch held under bench/hit_path's browser
load) are read ``--batches`` times per way, and per key read are reported: the wall time,
this process's CPU and redis-server's CPU (``/proc/PID/stat``; CPU, so a loaded machine
moves it less than the wall time), and the CPU of decoding the rows into entries.

- ``script``: the :data:`~stoker.backends.redis.cache_store.GET` script (one EVALSHA per
  batch; Redis copies each body into Lua and out again), as the tier reads.
- ``multi``: the other alternative tried and not kept (:func:`multi`): one MULTI/EXEC of a
  script returning every field but the body (:data:`HEADS`) and an ``HGET`` of each key's
  body: Redis spends half the CPU, Stoker a third more.
- ``pipeline``: the alternative tried and not kept (:func:`pipelined`): ``SMEMBERS`` +
  ``HMGET`` per key in one pipelined round trip, no script: Redis spends a third of the
  CPU, redis-py's per-command packing and parsing add more than that to Stoker's.

    PYTHONPATH=src:. .venv/bin/python bench/redis_read.py     # --pages 2000 --batch 22
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster_harness import OwnRedis
from bench.hit_path.page import build_page

from stoker.backends.redis.cache_store import (
    LIB,
    RedisCacheStore,
    entry_of,
    ref_id,
)
from stoker.cache.entry import CacheEntry
from stoker.clock import FakeClock

NOW = 1_700_000_000.0
ROW_FIELDS = (b"keep", b"record", b"body", b"fresh", b"stale", b"error", b"encoded", b"due")
"""The fields of an entry's hash the GET script returns, in its order."""


HEADS = LIB + """
local now, out = tonumber(ARGV[2]), {}
for i = 3, #ARGV do
  local rows = {}
  for _, refid in ipairs(redis.call('SMEMBERS', P .. 'v:' .. ARGV[i])) do
    local f = redis.call('HMGET', ekey(refid), 'keep', 'record', 'fresh', 'stale', 'error',
      'encoded', 'due')
    if f[1] and tonumber(f[1]) > now then f[1] = refid; rows[#rows + 1] = f end
  end
  out[i - 2] = rows
end
return out
"""
"""GET without the body, each row's first field its ref id (index clean-up left out)."""


async def multi(client: Any, heads: Any, keys: list[str]) -> list[list[Any]]:
    """Each key's live variant-less row: :data:`HEADS` and each body's ``HGET`` in one
    MULTI/EXEC (so each body is the one of the fields it goes with)."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.evalsha(heads.sha, 0, b"stoker:", NOW, *keys)
        for key in keys:
            pipe.hget(b"stoker:e:" + ref_id(key, ""), "body")
        found, *bodies = await pipe.execute()
    return [[(head[0], head[1], body, *head[2:]) for head in rows]
            for rows, body in zip(found, bodies, strict=True)]


async def pipelined(client: Any, keys: list[str]) -> list[list[Any]]:
    """Each key's live variant-less row, read without a script (keys with other
    variants would need the script: none here)."""
    async with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.smembers(b"stoker:v:" + key.encode())
            pipe.hmget(b"stoker:e:" + ref_id(key, ""), ROW_FIELDS)
        replies = await pipe.execute()
    rows: list[list[Any]] = []
    for at, key in enumerate(keys):
        members, fields = replies[2 * at], replies[2 * at + 1]
        assert members == {ref_id(key, "")}, "no variants in this benchmark"
        rows.append([fields] if fields[0] is not None and float(fields[0]) > NOW else [])
    return rows


def entry(n: int, body: bytes) -> CacheEntry:
    url = f"https://www.example.test/page/{n}"
    return CacheEntry(f"v1|GET|{url}", "", url, 200,
                      ((b"content-type", b"text/html; charset=utf-8"),
                       (b"cache-control", b"public, max-age=3600")),
                      body, None, len(body), NOW, 0.0, NOW + 3600, NOW + 3600, NOW + 3600,
                      NOW + 7200, (), (f"page-{n}",), None, None, NOW, True, False)


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(read: Callable[[list[str]], Awaitable[list[Any]]], keys: Sequence[str],
                  args: argparse.Namespace, redis_pid: int) -> dict[str, float]:
    rng = random.Random(1)
    batches = [rng.sample(list(keys), args.batch) for _ in range(args.batches)]
    rows: list[tuple[str, list[Any]]] = []
    wall, cpu, server = time.perf_counter(), time.process_time(), cpu_of(redis_pid)
    for batch in batches:
        rows.extend(zip(batch, await read(batch), strict=True))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server = cpu_of(redis_pid) - server
    decode = time.process_time()
    for key, found in rows:
        for row in found:
            entry_of(key, row)
    decode = time.process_time() - decode
    reads = len(rows)
    assert all(len(found) == 1 for _, found in rows), "every key has one live entry"
    return {"wall_us": 1e6 * wall / reads, "client_cpu_us": 1e6 * cpu / reads,
            "redis_cpu_us": 1e6 * server / reads, "decode_cpu_us": 1e6 * decode / reads}


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="stoker-redis-read-"))
    redis = OwnRedis(tmp)
    redis.start()
    try:
        assert redis.proc is not None
        store = await RedisCacheStore.open(redis.url, FakeClock(NOW))
        body = build_page(args.size)
        entries = [entry(n, body) for n in range(args.pages)]
        for start in range(0, len(entries), 100):
            await store.put_many(entries[start:start + 100])
        keys = [each.primary_key for each in entries]

        async def script(batch: list[str]) -> list[Any]:
            return list(await store._run(store._get, NOW, *batch))

        async def pipeline(batch: list[str]) -> list[Any]:
            return await pipelined(store._client, batch)

        heads = store._client.register_script(HEADS)
        await store._client.script_load(HEADS)

        async def transaction(batch: list[str]) -> list[Any]:
            return await multi(store._client, heads, batch)

        ways = {"script": script, "pipeline": pipeline, "multi": transaction}
        for _ in range(args.rounds):
            for name, read in ways.items():
                found = await measure(read, keys, args, redis.proc.pid)
                print(f"{name:9} per key read: wall {found['wall_us']:6.1f} µs, this "
                      f"process {found['client_cpu_us']:6.1f} µs CPU (+ decode "
                      f"{found['decode_cpu_us']:4.1f}), redis-server "
                      f"{found['redis_cpu_us']:6.1f} µs CPU", flush=True)
        await store.close()
    finally:
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=22)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
