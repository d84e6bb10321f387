"""SIGTERM ends Stoker within ``shutdown_timeout`` (+ 1 s) even while requests are stuck:
one waiting for a body that never comes, one waiting for an origin that never answers.
Stoker used to wait for them: still running 45 s after SIGTERM with a 10 s budget."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from tests.conftest import free_port, wait_listening
from tests.hostile.conftest import address
from tests.integration.conftest import Origin

import stoker

SRC = Path(stoker.__file__).resolve().parents[1]
BUDGET = 2.0


async def test_sigterm_ends_stoker_within_its_budget_with_requests_stuck(
        origin: Origin, tmp_path: Path, mode: str) -> None:
    origin.app.set("/stuck", headers=[("cache-control", "max-age=60")], delay=6)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOKER_")}
    env.update(PYTHONPATH=str(SRC), STOKER_SERVER=mode,
               STOKER_SHUTDOWN_TIMEOUT=f"{BUDGET}s")
    with (tmp_path / "stoker.log").open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stoker", "serve", "--origin", origin.url,
            "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{free_port()}",
            "--data-dir", str(tmp_path / "data"), env=env, stdout=log, stderr=log)
        try:
            await wait_listening(port, timeout=30)
            url = f"http://127.0.0.1:{port}"
            stuck = []
            for head in (b"POST /post HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100000\r\n"
                         b"\r\nabc", b"GET /stuck HTTP/1.1\r\nHost: a.test\r\n\r\n"):
                _, writer = await asyncio.open_connection(*address(url))
                writer.write(head)
                stuck.append(writer)
            await asyncio.sleep(1.0)
            proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            code = await asyncio.wait_for(proc.wait(), BUDGET + 10)
            took = time.monotonic() - started
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    for writer in stuck:
        writer.close()
    assert code == 0, (tmp_path / "stoker.log").read_text()[-2000:]
    assert took < BUDGET + 1.0, took
