"""Thread scheduling priorities, for tests of which SQLite threads run below the loop."""

from __future__ import annotations

import os
import sys
import threading

import pytest

linux_only = pytest.mark.skipif(sys.platform != "linux",
                                reason="per-thread priorities are Linux's")
"""Marks a test that reads per-thread priorities (Linux, where a thread is a task)."""


def thread_priority() -> int:
    """The calling thread's nice value."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
