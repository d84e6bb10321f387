"""A PostgreSQL server of the test's own, to stop and start under a running Stoker (the
machine's shared server on 5432 serves other tests and stays up).

:func:`private_postgres` (a fixture: import it into the test module) runs ``initdb`` into
a directory of its own, starts the server on a free port (trust auth, its socket in that
directory, no fsync: a test's data need not survive a power cut) and stops it and removes
the directory after the test.  As root the server runs as the ``postgres`` system user
(PostgreSQL refuses root).  ``initdb`` takes about 1 s on the CI box, a start or a stop
about 0.1 s each.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import free_port

USER = "postgres"
DOWN = 2.0
"""Seconds :meth:`PrivatePostgres.restart` keeps the server down."""


def as_postgres(*command: str) -> list[str]:
    """``command`` run as the ``postgres`` user when this process is root, else as is."""
    return ["runuser", "-u", USER, "--", *command] if os.geteuid() == 0 else list(command)


class PrivatePostgres:
    """One PostgreSQL server in ``root`` on ``port`` (see the module docstring)."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.url = f"postgresql://{USER}@127.0.0.1:{port}/postgres"
        """A ``database_url`` on this server."""

    def init(self) -> None:
        """Create the cluster (``initdb``, trust auth)."""
        subprocess.run(as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", USER,
                                   "-E", "UTF8", "--no-sync"),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def ctl(self, *args: str) -> list[str]:
        """A ``pg_ctl`` command line on this cluster, waiting for its action to finish."""
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c max_connections=100")
        return as_postgres("pg_ctl", "-D", str(self.data), "-o", options,
                           "-l", str(self.root / "server.log"), "-w", "-t", "30", *args)

    def start_now(self) -> None:
        subprocess.run(self.ctl("start"), check=True, stdout=subprocess.DEVNULL)

    def stop_now(self) -> None:
        subprocess.run(self.ctl("-m", "fast", "stop"), check=True, stdout=subprocess.DEVNULL)

    async def start(self) -> None:
        """Start the server; return once it accepts connections."""
        await self._ctl("start")

    async def stop(self) -> None:
        """Stop the server (``-m fast``: its sessions are cut, as a crash or a failover
        would); return once it is down."""
        await self._ctl("-m", "fast", "stop")

    async def restart(self, down: float = DOWN) -> None:
        """Stop, stay down ``down`` seconds, start again."""
        await self.stop()
        await asyncio.sleep(down)
        await self.start()

    def log(self) -> str:
        """What the server has logged so far."""
        return (self.root / "server.log").read_text(errors="replace")

    async def _ctl(self, *args: str) -> None:
        proc = await asyncio.create_subprocess_exec(*self.ctl(*args),
                                                    stdout=asyncio.subprocess.DEVNULL)
        assert await proc.wait() == 0, f"pg_ctl {' '.join(args)} failed:\n{self.log()}"


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    """A running :class:`PrivatePostgres`, stopped and removed after the test."""
    root = Path(tempfile.mkdtemp(prefix="stoker-pg-"))  # not tmp_path: postgres must enter it
    if os.geteuid() == 0:
        shutil.chown(root, USER)
    server = PrivatePostgres(root, free_port())
    try:
        server.init()
        server.start_now()
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            server.stop_now()
        shutil.rmtree(root, ignore_errors=True)
