"""Worker processes of an app embedding Stoker over one ``data_dir`` (``gunicorn --workers
2``), each holding a cached result in its memory tier: a purge in one answers once the
other has it in force (both on the purge bus of ``cache.db``), so the other's next read
is a miss, not its memory tier's old copy.  Both directions: the first process was alone
on the bus (polling it every ``LONE_POLL`` seconds) until the second joined."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stoker.purge.relay import HEARTBEAT, LONE_POLL

WORKER = Path(__file__).with_name("bus_worker.py")
ANSWER_WITHIN = 30.0
"""Seconds a worker has to answer a command (its first: to open the cache)."""


class Worker:
    """One worker process (:mod:`tests.integration.bus_worker`), spoken to line by line."""

    def __init__(self, mode: str, data_dir: Path) -> None:
        environment = {name: value for name, value in os.environ.items()
                       if not name.startswith("STOKER_")}
        environment["STOKER_DATA_DIR"] = str(data_dir)
        args = ["embed", str(data_dir)] if mode == "embed" else ["default"]
        self.process = subprocess.Popen([sys.executable, str(WORKER), *args],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=environment)
        assert self._line() == "ready"

    def _line(self) -> str:
        out = self.process.stdout
        assert out is not None
        with selectors.DefaultSelector() as selector:
            selector.register(out, selectors.EVENT_READ)
            if not selector.select(ANSWER_WITHIN):
                raise AssertionError(f"worker {self.process.pid} did not answer")
        line = out.readline()
        if not line:
            raise AssertionError(f"worker stopped: {self.stderr()}")
        return line.strip()

    def ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self._line())
        return answer

    def stderr(self) -> str:
        self.process.kill()
        return self.process.communicate()[1]

    def quit(self) -> str:
        """Stop (leaving the bus); what it wrote to its standard error."""
        _, err = self.process.communicate("quit\n", timeout=ANSWER_WITHIN)
        assert self.process.returncode == 0, err
        return err


@pytest.fixture
def workers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Worker, Worker]]:
    first = Worker(request.param, tmp_path)
    try:
        second = Worker(request.param, tmp_path)
    except BaseException:
        first.stderr()
        raise
    try:
        yield first, second
    finally:
        for worker in (first, second):
            if worker.process.poll() is None:
                worker.quit()


def missed_after(worker: Worker, calls: int, bound: float) -> float:
    """Seconds until ``worker``'s read is a miss (its function runs again), polled for
    at most ``bound`` seconds."""
    started = time.monotonic()
    while True:
        if worker.ask("get")["calls"] > calls:
            return time.monotonic() - started
        assert time.monotonic() - started < bound, "still served its memory tier's copy"
        time.sleep(0.01)


def held(worker: Worker) -> tuple[int, Any]:
    """Cache the result in ``worker`` (its memory tier), and check it is read back;
    how many times it ran the function, and the result."""
    first = worker.ask("get")
    assert worker.ask("get") == first, "read back from the cache"
    return first["calls"], first["value"]


@pytest.mark.parametrize(("workers", "purge"), [
    ("embed", "purge"), ("default", "purge"), ("default", "invalidate")],
    indirect=["workers"])
def test_a_purge_in_one_worker_reaches_the_others_memory_tier(
        workers: tuple[Worker, Worker], purge: str) -> None:
    first, second = workers
    for purger, other in ((first, second), (second, first)):
        (calls, old), (other_calls, _) = held(purger), held(other)
        answer = purger.ask(purge)
        if purge == "purge":
            assert answer["unconfirmed"] == [], "the other process confirmed it in force"
        else:
            assert answer["dropped"] >= 1
        # in force there before the purge answered: its next read is a miss (the bound is
        # for an invalidation, which does not wait: the other's next poll of the bus)
        assert missed_after(other, other_calls, HEARTBEAT + LONE_POLL) < LONE_POLL + 0.5
        again = purger.ask("get")  # a miss too: its own run, or the other's (in L2)
        assert again["value"] != old and again["calls"] in (calls, calls + 1)
