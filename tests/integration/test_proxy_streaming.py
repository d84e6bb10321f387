"""A 100 MB response streams through ``stoker serve`` (a real subprocess) in bounded memory."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx
from tests.conftest import free_port, serving, wait_listening

from stoker.demo.origin import make_demo_app

MB = 1024 * 1024


def peak_rss_kb(pid: int) -> int:
    """The process's peak resident set size (VmHWM) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


async def test_100mb_response_streams_with_bounded_memory(tmp_path: Path) -> None:
    origin = make_demo_app(pages=10, delay=0)
    port, admin = free_port(), free_port()
    async with serving(origin) as origin_url:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stoker", "serve", "--origin", origin_url,
            "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}",
            "--data-dir", str(tmp_path / "data"),
            env={**os.environ, "STOKER_BODY_FILE_THRESHOLD": "1MiB"},
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await wait_listening(port, timeout=20)
            async with httpx.AsyncClient(timeout=60) as client:
                await client.get(f"http://127.0.0.1:{port}/page/1")
                baseline = peak_rss_kb(process.pid)
                received = 0
                async with client.stream("GET", f"http://127.0.0.1:{port}/big?mb=100") as reply:
                    assert reply.status_code == 200
                    async for chunk in reply.aiter_raw():
                        received += len(chunk)
                peak = peak_rss_kb(process.pid)
                again = await client.get(f"http://127.0.0.1:{port}/big?mb=100")
                stats = (await client.get(f"{origin_url}/__stats")).json()
        finally:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 20)
    assert received == 100 * MB
    assert len(again.content) == 100 * MB
    # served from the stored body file (or from the leader's flight while it fsyncs)
    status = again.headers["cache-status"]
    assert "hit" in status or "collapsed" in status
    assert stats["paths"]["/big"] == 1
    growth_mb = (peak - baseline) / 1024
    assert growth_mb < 40, f"proxy grew {growth_mb:.0f} MB while streaming 100 MB"
    assert process.returncode == 0
