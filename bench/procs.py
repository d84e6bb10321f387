"""Processes shared by bench/miss_path.py and bench/memory.py.

The slow origin (``bench/origin_app.py`` on granian) and ``stoker serve`` run as
subprocesses, each in its own session; :func:`serving` stops them (their process
groups signalled) when it exits, on errors and on Ctrl-C too.  Stoker gets a
``stoker.toml`` in a temporary data directory holding the settings a benchmark asks
for plus ``warm_workers = 0``, so nothing but the benchmark's own requests reaches the
origin and the origin's ``/__hits`` counter proves every cold request was a miss.
Memory figures come from ``/proc/PID/status`` (``VmRSS``; ``VmHWM`` is the peak,
reset through ``/proc/PID/clear_refs``).  Run from the repository root with the
worktree's ``src`` first on ``PYTHONPATH`` (``stoker`` runs as ``python -m stoker``, or
as another module given by ``serving``'s ``module``).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.hit_path.run import (
    REPO,
    VENV_BIN,
    System,
    free_port,
    granian_loop,
    start,
    stop,
)

START_TIMEOUT = 60.0


@dataclass
class Stack:
    """A running origin and Stoker in front of it."""

    origin: System
    stoker: System
    admin_port: int

    def origin_hits(self) -> int:
        """Pages the origin has served so far."""
        return int(fetch(self.origin.port, "/__hits"))

    def status(self) -> dict[str, Any]:
        """Stoker's admin ``/api/status`` document."""
        status: dict[str, Any] = json.loads(fetch(self.admin_port, "/api/status"))
        return status

    @property
    def pid(self) -> int:
        assert self.stoker.proc is not None
        return self.stoker.proc.pid


def fetch(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        body: bytes = response.read()
        return body


ORIGIN_APP = "bench.origin_app:app"


def origin_system(tmp: Path, latency_ms: float, app: str = ORIGIN_APP) -> System:
    """granian serving ``app`` (``module:attribute``, default the slow origin)."""
    port = free_port()
    argv = [
        "env", f"BENCH_ORIGIN_LATENCY_MS={latency_ms:g}",
        str(VENV_BIN / "granian"), "--interface", "asgi", "--host", "127.0.0.1",
        "--port", str(port), "--workers", "1", *granian_loop(), "--no-access-log",
        "--log-level", "warning", app,
    ]  # fmt: skip
    return System("origin", argv, port, None, tmp / "origin.log")


def stoker_system(
    tmp: Path, origin_port: int, settings: Mapping[str, Any], env: Sequence[str], module: str
) -> tuple[System, int]:
    data = tmp / "stoker-data"
    data.mkdir()
    config = tmp / "stoker.toml"
    lines = [
        f"{key} = {json.dumps(value)}"
        for key, value in {"warm_workers": 0, "warm_on_start": "never", **settings}.items()
    ]
    config.write_text("\n".join(lines) + "\n")
    port, admin_port = free_port(), free_port()
    argv = [
        "env", *env, sys.executable, "-m", module, "serve", "--config", str(config),
        "--origin", f"http://127.0.0.1:{origin_port}", "--listen", f"127.0.0.1:{port}",
        "--admin-listen", f"127.0.0.1:{admin_port}", "--data-dir", str(data),
    ]  # fmt: skip
    return System("stoker", argv, port, None, tmp / "stoker.log"), admin_port


@contextlib.contextmanager
def serving(
    settings: Mapping[str, Any],
    *,
    latency_ms: float,
    stoker_core: int | None,
    origin_core: int | None,
    env: Sequence[str] = (),
    module: str = "stoker",
    origin_app: str = ORIGIN_APP,
) -> Iterator[Stack]:
    """Start the origin (``origin_app`` on granian), then Stoker in front of it
    (``settings`` into its stoker.toml, ``env`` as ``NAME=VALUE`` strings into its
    environment, ``python -m module serve``)."""
    tmp = Path(tempfile.mkdtemp(prefix="stoker-bench-"))
    started: list[System] = []
    try:
        origin = origin_system(tmp, latency_ms, origin_app)
        started.append(origin)
        start(origin, origin_core, START_TIMEOUT)
        stoker, admin_port = stoker_system(tmp, origin.port, settings, env, module)
        started.append(stoker)
        start(stoker, stoker_core, START_TIMEOUT)
        yield Stack(origin, stoker, admin_port)
    finally:
        for system in reversed(started):
            stop(system)
        shutil.rmtree(tmp, ignore_errors=True)


def status_kib(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` memory field (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def reset_peak(pid: int) -> None:
    """Make ``VmHWM`` restart from the current RSS (Linux ``clear_refs`` value 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def stop_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt so every ``serving`` block cleans up."""

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)


__all__ = ["REPO", "Stack", "fetch", "reset_peak", "serving", "status_kib", "stop_on_sigterm"]
