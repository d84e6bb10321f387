"""``stoker serve --processes N``: N serving processes of one Stoker on one machine.

The supervisor (the process the user started) checks that ``listen`` and
``admin_listen`` are free, then starts N children, each ``stoker serve`` with the same
arguments plus ``--process-index I`` (child 0 first; the others once it accepts
connections on ``admin_listen``, so whoever finds the proxy answering finds the admin
API too): every child binds ``listen`` with
``SO_REUSEPORT`` (the kernel spreads connections over them), keeps its own memory tier
and shares ``data_dir`` (the cache tier, the job queue, the deadlines, the purge bus)
with the others; child 0 also serves the admin API and starts the ``warm_on_start`` run.

Invariants:
- ``SIGTERM``/``SIGINT`` to the supervisor reach every child as ``SIGTERM`` (each then
  stops as a lone Stoker does, within ``shutdown_timeout``); a child still running
  :data:`KILL_AFTER` seconds past that is killed.  ``SIGHUP`` is passed on (each reloads).
- A child that exits while the others serve is started again after
  :data:`RESTART_DELAY` seconds, unless it exited by itself (not killed by a signal)
  within :data:`STARTUP` seconds of starting (it cannot start: a bad setting, a busy
  port), which stops them all and makes the supervisor exit 1.
- Every child is named ``node_id/I`` on the purge bus; ``node_id`` defaults to
  ``hostname-PID`` of the supervisor, the same for all of them.
- A child never outlives its supervisor: killed (even ``kill -9``), it leaves no
  unsupervised children holding ``listen``.  Each child asks the kernel for ``SIGTERM``
  when its parent dies (Linux's ``PR_SET_PDEATHSIG``, :func:`die_with_supervisor`), and
  elsewhere looks at its parent every :data:`ORPHAN_CHECK` seconds
  (:func:`watch_supervisor`); either way it then stops as on a ``SIGTERM`` to the
  supervisor, and a child whose supervisor died before it asked stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

log = logging.getLogger("stoker")

RESTART_DELAY: Final = 1.0
STARTUP: Final = 5.0
KILL_AFTER: Final = 5.0
INDEX_FLAG: Final = "--process-index"
SUPERVISOR_FLAG: Final = "--supervisor-pid"
"""Tells a child its supervisor's pid."""
ORPHAN_CHECK: Final = 1.0
"""Seconds between two looks at the parent where the kernel cannot signal its death."""
PR_SET_PDEATHSIG: Final = 1
"""Linux's ``prctl`` option: the signal this process gets when its parent dies."""


@dataclass(frozen=True)
class ServingProcess:
    """Which of the node's serving processes this one is."""

    index: int
    count: int
    node: str
    supervisor: int | None = None
    """The supervisor's pid (:data:`SUPERVISOR_FLAG`): this child stops when it dies."""

    @property
    def name(self) -> str:
        """Its name on the purge bus."""
        return f"{self.node}/{self.index}"

    def described(self) -> str:
        """``, process 2 of 4`` (for the start and stop lines)."""
        return f", process {self.index + 1} of {self.count}"


def default_node_id() -> str:
    """``hostname-PID``: unique on the machine while this process runs."""
    return f"{socket.gethostname()}-{os.getpid()}"


def die_with_supervisor(supervisor: int) -> bool:
    """Ask the kernel for ``SIGTERM`` when this process's parent dies; whether it took the
    request (Linux).  A parent gone already (this process adopted) gets ``SIGTERM`` now."""
    asked = False
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        asked = bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0)
    if os.getppid() != supervisor:
        os.kill(os.getpid(), signal.SIGTERM)
    return asked


async def watch_supervisor(supervisor: int) -> None:
    """Send this process ``SIGTERM`` once its parent is no longer ``supervisor`` (where
    the kernel cannot be asked to): looked at every :data:`ORPHAN_CHECK` seconds."""
    while os.getppid() == supervisor:
        await asyncio.sleep(ORPHAN_CHECK)
    os.kill(os.getpid(), signal.SIGTERM)


def child_command(args: Sequence[str], index: int) -> list[str]:
    """The command line of child ``index``: ``stoker ARGS --process-index INDEX
    --supervisor-pid PID`` (this process's)."""
    return [sys.executable, "-m", "stoker", *args, INDEX_FLAG, str(index),
            SUPERVISOR_FLAG, str(os.getpid())]


class Supervisor:
    """Runs the children (see the module invariants)."""

    def __init__(self, count: int, args: Sequence[str], node: str,
                 shutdown_timeout: float, admin: tuple[str, int]) -> None:
        self._count = count
        self._admin = admin
        self._args = list(args)
        self._env = {**os.environ, "STOKER_NODE_ID": node}
        self._shutdown_timeout = shutdown_timeout
        self._children: dict[int, asyncio.subprocess.Process] = {}
        self._stopping = asyncio.Event()

    async def run(self) -> int:
        """Start the children and keep them running until a stop signal; the exit status."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stopping.set)
        loop.add_signal_handler(signal.SIGHUP, self._pass_on, signal.SIGHUP)
        try:
            return await self._keep_running()
        finally:
            await self._stop_all()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(signum)

    async def _keep_running(self) -> int:
        started = {0: await self._start(0)}
        if not await self._accepting(self._children[0]):
            if self._stopping.is_set():
                return 0
            log.error("process 0 exited at start; stopping")
            return 1
        started.update({index: await self._start(index) for index in range(1, self._count)})
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            while True:
                waits = {asyncio.ensure_future(child.wait()): index
                         for index, child in self._children.items()}
                done, _ = await asyncio.wait([stopping, *waits], return_when="FIRST_COMPLETED")
                for waiting in waits:
                    waiting.cancel()
                if stopping in done:
                    return 0
                for finished in done:
                    index = waits[finished]
                    status = finished.result()
                    if status >= 0 and loop_time() - started[index] < STARTUP:
                        log.error("process %d exited with status %d at start; stopping",
                                  index, status)
                        return 1
                    log.error("process %d exited with status %d; starting it again in %g s",
                              index, status, RESTART_DELAY)
                    await asyncio.sleep(RESTART_DELAY)
                    started[index] = await self._start(index)
        finally:
            stopping.cancel()

    async def _accepting(self, child: asyncio.subprocess.Process) -> bool:
        """Wait until ``child`` accepts connections on the admin address (True), or exits
        or a stop signal comes (False)."""
        host, port = self._admin
        while child.returncode is None and not self._stopping.is_set():
            try:
                _, writer = await asyncio.open_connection(host or "127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return True
        return False

    async def _start(self, index: int) -> float:
        self._children[index] = await asyncio.create_subprocess_exec(
            *child_command(self._args, index), env=self._env)
        return loop_time()

    def _pass_on(self, signum: int) -> None:
        for child in self._children.values():
            if child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signum)

    async def _stop_all(self) -> None:
        self._pass_on(signal.SIGTERM)
        waiting = [child.wait() for child in self._children.values()]
        try:
            await asyncio.wait_for(asyncio.gather(*waiting),
                                   self._shutdown_timeout + KILL_AFTER)
        except TimeoutError:
            log.error("processes still running %g s after the stop: killed",
                      self._shutdown_timeout + KILL_AFTER)
            self._pass_on(signal.SIGKILL)
            await asyncio.gather(*(child.wait() for child in self._children.values()))


def loop_time() -> float:
    return asyncio.get_running_loop().time()
