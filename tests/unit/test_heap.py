"""A serving process freezes its start-up heap before it serves (``run_async``)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from stoker.server import run_async
seen = []
async def main():
    seen.append(gc.get_freeze_count())
run_async(main())
print(seen[0])
"""


def test_run_async_freezes_the_heap_loaded_before_it() -> None:
    # In a child process: freezing is process-wide, and must not touch the test run's heap.
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True)
    assert int(out.stdout) > 1000  # the modules, classes and functions imported so far
