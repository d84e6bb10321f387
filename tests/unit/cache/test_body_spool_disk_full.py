"""BodySpool on a disk that refuses writes: nothing is left behind, abort never raises.

The "full disk" is real: a child process with a file-size limit (RLIMIT_FSIZE),
where writes past the limit fail with EFBIG — including the flush Python does
when the temp file is closed.
"""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import asyncio, resource, signal, sys
from pathlib import Path
from stoker.cache.bodies import BodyStore

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))

async def main(sizes):
    store = BodyStore(Path(sys.argv[1]))
    spool = store.spool(threshold=1000)
    try:
        for size in sizes:
            await spool.write(b"x" * size)
    except OSError as error:
        print("failed", error.errno)
        await spool.abort()
    else:
        try:
            await spool.finish()  # when it raises, it has removed the temp file itself
        except OSError as error:
            print("failed", error.errno)
    print(sorted(path.name for path in store.directory.iterdir()))

asyncio.run(main([int(size) for size in sys.argv[2:]]))
"""


@pytest.mark.parametrize("sizes", [
    ["6000"] * 5,  # a write fails
    ["9000", "2000"],  # the writes fit the buffer; the flush in finish() fails
], ids=["in-write", "in-finish"])
def test_a_refused_write_leaves_no_file_and_abort_does_not_raise(sizes: list[str],
                                                                 tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "bodies"), *sizes],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"failed {errno.EFBIG}", "[]"]
