"""What the access log costs on the hottest path: a fresh L1 hit, in process.

Drives the proxy app directly (no HTTP server, so the figure is Stoker's own work)
with and without :class:`~stoker.adapters.access_log.AccessLogApp` writing combined
lines to /dev/null, interleaved rounds, and prints microseconds per hit and the ratio.

    .venv/bin/python bench/access_log.py --rounds 5 --requests 50000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

from tests.entries import make_entry

from stoker.adapters.access_log import AccessLogApp
from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.asgi import Message
from stoker.config.settings import settings_from

URL = "http://127.0.0.1:8080/page"


async def _noop_receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _noop_send(_: Message) -> None:
    return None


async def _drive(app: Any, requests: int) -> float:
    scope = {"type": "http", "method": "GET", "scheme": "http", "path": "/page",
             "raw_path": b"/page", "query_string": b"", "http_version": "1.1",
             "headers": [(b"host", b"127.0.0.1:8080"), (b"user-agent", b"bench")],
             "client": ("127.0.0.1", 5000)}
    started = time.perf_counter()
    for _ in range(requests):
        await app(dict(scope), _noop_receive, _noop_send)
    return (time.perf_counter() - started) / requests * 1e6


async def main(rounds: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        settings = settings_from({"origin": "http://127.0.0.1:9", "data_dir": data})
        stoker = await Stoker.open(settings)
        try:
            key = stoker.pipeline.keying.key_for_url(URL)
            now = stoker.clock.now()
            entry = make_entry(URL, now=now, fresh=3600, stale=3600, error=3600, keep=3600,
                               primary_key=key, body=b"x" * 20_480, body_size=20_480)
            await stoker.store.put(entry)
            plain = ProxyApp(stoker.pipeline)
            with open(os.devnull, "w", encoding="utf-8") as sink:
                logged = AccessLogApp(plain, sink, stoker.clock, json_format=False,
                                      redact=settings.log_redact_query,
                                      trusted=stoker.pipeline.config.trusted)
                off, on = [], []
                for number in range(1, rounds + 1):
                    off.append(await _drive(plain, requests))
                    on.append(await _drive(logged, requests))
                    print(f"round {number}: off {off[-1]:.2f} µs/hit, on {on[-1]:.2f} µs/hit, "
                          f"load {os.getloadavg()[0]:.2f}")
        finally:
            await stoker.close()
    ratios = [b / a for a, b in zip(off, on, strict=True)]
    median_off, median_on = statistics.median(off), statistics.median(on)
    print(f"median: off {median_off:.2f} µs, on {median_on:.2f} µs, "
          f"on/off {statistics.median(ratios):.2f}x (+{median_on - median_off:.2f} µs per hit)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=50_000)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.requests))
