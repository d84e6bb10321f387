"""``@cached`` across processes on one shared SQLite ``data_dir`` (the default runtime:
``./.stoker`` in the working directory): keys equal in every process, concurrent misses
collapsed into one call, results read back by a later process (the default runtime
closed, its writes flushed, at the end of ``asyncio.run`` and at interpreter exit)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from stoker.functions.keys import Parameters, arguments, canonical, function_key

WORKER = Path(__file__).with_name("functions_worker.py")


def run(cwd: Path, *args: str, seed: str = "0",
        env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The worker in ``cwd`` (its ``./.stoker``), with ``env`` added to this one's less
    any ``STOKER_*`` variable."""
    inherited = {name: value for name, value in os.environ.items()
                 if not name.startswith("STOKER_")}
    environment = {**inherited, **(env or {}), "PYTHONHASHSEED": seed}
    return subprocess.Popen([sys.executable, str(WORKER), *args], cwd=cwd, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results(processes: list[subprocess.Popen[str]]) -> list[Any]:
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        outputs.append(json.loads(out))
    return outputs


def test_keys_are_equal_across_processes(tmp_path: Path) -> None:
    [one], [two] = results([run(tmp_path, "key", seed="1")]), results(
        [run(tmp_path, "key", seed="2")])
    assert one == two
    assert one[0] == one[1] == 'fn:__main__.slow([7])'
    assert one[2] == 'fn:__main__.slow([{"a":"é","b":[1,2.5,null]}])'

    def slow(x: Any) -> None: ...
    assert one[0] == function_key("", "__main__.slow", canonical(
        arguments(Parameters.of(slow), (7,), {})))[1:]


@pytest.mark.parametrize("mode", ["async", "plain"])
def test_concurrent_misses_in_two_processes_make_one_call(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "calls.log"
    start = f"{time.time() + 3:.3f}"  # both processes import and wait, then call at once
    first = results([run(tmp_path, mode, start, str(log)) for _ in range(2)])
    assert len(log.read_text().split()) == 1, "one call between the two processes"
    assert first[0] == first[1]
    assert (tmp_path / ".stoker" / "cache.db").exists()
    [later] = results([run(tmp_path, mode, "0", str(log))])
    assert later == first[0] and len(log.read_text().split()) == 1  # read from L2


async def test_a_tag_purge_reaches_a_result_stored_by_another_process(
        tmp_path: Path) -> None:
    """A result another process stored is dropped by this process's tag purge."""
    log = tmp_path / "calls.log"
    results([run(tmp_path, "async", "0", str(log))])
    from stoker.app.stoker import Stoker
    from stoker.config.settings import settings_from
    from stoker.functions.runtime import NoOrigin
    from stoker.purge.scope import PurgeScope
    stoker = await Stoker.open(settings_from({"data_dir": str(tmp_path / ".stoker")}),
                               origin=NoOrigin(), evict_loop=False)
    try:
        purged = await stoker.purger.purge(PurgeScope(tags=("slow",)))
        assert purged.purged == 1
    finally:
        await stoker.close()
    await asyncio.to_thread(lambda: results([run(tmp_path, "async", "0", str(log))]))
    assert len(log.read_text().split()) == 2
