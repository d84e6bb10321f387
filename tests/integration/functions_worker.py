"""A process using ``@cached`` on the default runtime (``./.stoker`` in its working
directory), for tests/integration/test_functions*.py.

    python functions_worker.py async START LOG   # at wall time START, call slow(7) once
    python functions_worker.py plain START LOG   # the same through a plain function
    python functions_worker.py key               # print the keys of a few calls

Each call of the function appends a line to LOG; the process prints its result as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from stoker.functions import cached

LOG = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(os.devnull)


def record() -> None:
    with LOG.open("a") as log:
        log.write(f"{os.getpid()}\n")


@cached(ttl="1h", tags=["slow"])
async def slow(x: int) -> dict[str, int]:
    record()
    await asyncio.sleep(1.0)
    return {"x": x, "pid": os.getpid()}


@cached(ttl="1h", tags=["slow"])
def slow_plain(x: int) -> dict[str, int]:
    record()
    time.sleep(1.0)
    return {"x": x, "pid": os.getpid()}


def main() -> None:
    mode = sys.argv[1]
    if mode == "key":
        print(json.dumps([slow.cache_key(7), slow.cache_key(x=7),
                          slow.cache_key({"b": [1, 2.5, None], "a": "é"})]))
        return
    start = float(sys.argv[2])
    time.sleep(max(0.0, start - time.time()))
    if mode == "async":
        print(json.dumps(asyncio.run(slow(7))))
    else:
        print(json.dumps(slow_plain(7)))


if __name__ == "__main__":
    main()
