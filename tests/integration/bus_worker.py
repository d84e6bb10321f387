"""A worker process of an app embedding Stoker, for tests/integration/test_embed_bus.py:
it caches one function's result and takes commands, one a line, on its standard input.

    python bus_worker.py embed DATA_DIR   # stoker.Stoker(data_dir=DATA_DIR), Stoker.cached
    python bus_worker.py default          # @cached on the default runtime (STOKER_DATA_DIR)

Commands: ``get`` (call the function; prints ``{"value": ..., "calls": N}``, ``calls``
counting this process's runs of the function), ``purge`` (purge the tag ``bus``; prints
``{"unconfirmed": [...]}``), ``invalidate`` (the function's ``invalidate``; prints
``{"dropped": N}``), ``quit``.  ``ready`` is printed once the cache is open.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import stoker
from stoker.functions import cached
from stoker.functions.runtime import default_runtime
from stoker.purge.scope import PurgeScope

calls = 0


def say(message: dict[str, Any] | str) -> None:
    print(message if isinstance(message, str) else json.dumps(message), flush=True)


async def value() -> dict[str, int]:
    global calls
    calls += 1
    return {"pid": os.getpid(), "call": calls}


async def serve(get: Callable[[], Awaitable[dict[str, int]]],
                purge: Callable[[], Awaitable[list[str]]],
                invalidate: Callable[[], Awaitable[int]]) -> None:
    say("ready")
    while True:
        command = (await asyncio.to_thread(sys.stdin.readline)).strip()
        if command == "get":
            say({"value": await get(), "calls": calls})
        elif command == "purge":
            say({"unconfirmed": await purge()})
        elif command == "invalidate":
            say({"dropped": await invalidate()})
        else:
            return


async def embedded(data_dir: str) -> None:
    app = stoker.Stoker(data_dir=data_dir)
    function = app.cached(ttl="1h", tags=["bus"])(value)

    async def purge() -> list[str]:
        return list((await app.purge(tags=["bus"])).unconfirmed)

    async with app:
        await serve(function, purge, function.invalidate)


async def default() -> None:
    function = cached(ttl="1h", tags=["bus"])(value)

    async def purge() -> list[str]:
        core = await default_runtime()
        return list((await core.purger.purge(PurgeScope(tags=("bus",)))).unconfirmed)

    await default_runtime()  # opened (on the bus) before "ready"
    await serve(function, purge, function.invalidate)


if __name__ == "__main__":
    asyncio.run(embedded(sys.argv[2]) if sys.argv[1] == "embed" else default())
