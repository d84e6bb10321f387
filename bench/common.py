"""Helpers the benchmarks share: free loopback ports and pinning to a core."""

from __future__ import annotations

import contextlib
import os
import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pin(core: int) -> None:
    """Run this process on ``core`` when the machine has it (no-op elsewhere)."""
    with contextlib.suppress(AttributeError, OSError):
        if os.cpu_count() and os.cpu_count() > core:  # type: ignore[operator]
            os.sched_setaffinity(0, {core})


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by rank (NaN for no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
