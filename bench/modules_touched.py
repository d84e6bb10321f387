"""How many of Stoker's modules one fresh hit and one miss run code in, on the front.

The front's connections are fed in process as ``bench/front_cpu.py`` feeds them; a
profile hook (``sys.setprofile``) notes the source file of every Python function called
from the moment the request's bytes arrive until its reply is written (the miss: and
until the pipeline has drained what it stores behind the reply, the L2 write included).
Counted are the modules under ``src/stoker``; printed are their number and names.  A
timer of the event loop that fires inside the window is counted too: each case is
measured ``--rounds`` times and the smallest set printed.

    PYTHONPATH=src .venv/bin/python bench/modules_touched.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.front_cpu import Transport, fill, front  # noqa: E402

import stoker  # noqa: E402
from stoker.app.stoker import Stoker  # noqa: E402
from stoker.server.front.connection import Connection  # noqa: E402
from stoker.server.front.listener import Listener  # noqa: E402

ROOT = str(Path(stoker.__file__).resolve().parent)
HEAD = (b"GET /p/%d HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Mozilla/5.0\r\n"
        b"Accept: text/html\r\nAccept-Encoding: gzip, br\r\nAccept-Language: en\r\n\r\n")


async def traced(action: Callable[[], Awaitable[None]]) -> set[str]:
    """The Stoker modules (dotted names) whose functions ran while ``action`` was awaited."""
    seen: set[str] = set()

    def note(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen.add(frame.f_code.co_filename)

    sys.setprofile(note)
    try:
        await action()
    finally:
        sys.setprofile(None)
    return {module_name(path) for path in seen if path.startswith(ROOT)}


def module_name(path: str) -> str:
    relative = Path(path).relative_to(ROOT).with_suffix("")
    return ".".join(("stoker", *relative.parts)).removesuffix(".__init__")


async def answer(connection: Connection, transport: Transport, head: bytes) -> None:
    """Feed ``head`` and wait for its reply to be written whole."""
    before = transport.written
    connection.data_received(head)
    while transport.written == before or connection._active is not None:
        await asyncio.sleep(0)


async def main(args: argparse.Namespace) -> None:
    async with front("stoker-modules-") as (stoker, listener):
        await count(stoker, listener, args.rounds)


async def count(stoker: Stoker, listener: Listener, rounds: int) -> None:
    transport = Transport()
    connection = Connection(listener)
    connection.connection_made(transport)
    await fill(connection, transport, 1)  # the connection and origin pool opened
    await stoker.pipeline.drain()
    hits, misses = [], []
    for round_ in range(rounds):
        page = 10 + round_

        async def miss(page: int = page) -> None:
            await answer(connection, transport, HEAD % page)
            await stoker.pipeline.drain()

        misses.append(await traced(miss))
        hits.append(await traced(lambda page=page: answer(connection, transport, HEAD % page)))
    for name, sets in (("fresh hit", hits), ("miss", misses)):
        fewest = min(sets, key=len)
        print(f"{name}: {len(fewest)} modules")
        print("  " + "\n  ".join(sorted(fewest)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
