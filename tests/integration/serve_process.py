"""``stoker serve`` in a child process, its output in a file, for tests of the process
as an operator runs it (signals, log lines)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.conftest import free_port, wait_listening
from tests.integration.conftest import Origin
from tests.integration.warm_site import stoker_command

DEADLINE = 30.0


class Serve:
    """``stoker serve`` in a child process, its log in a file."""

    def __init__(self, origin: Origin, tmp_path: Path, *flags: str) -> None:
        self.config = tmp_path / "stoker.toml"
        self.log = tmp_path / "serve.log"
        self.port, self.admin_port = free_port(), free_port()
        self.args = ("serve", "--origin", origin.url, "--listen", f"127.0.0.1:{self.port}",
                     "--admin-listen", f"127.0.0.1:{self.admin_port}",
                     "--data-dir", str(tmp_path / "data"), "--config", str(self.config),
                     *flags)

    async def __aenter__(self) -> Serve:
        self.output = self.log.open("wb")
        self.proc = await stoker_command(*self.args, log=self.output)
        await wait_listening(self.port, timeout=DEADLINE)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.proc.returncode is None:  # else a test killed it
            self.proc.terminate()
        await asyncio.wait_for(self.proc.wait(), DEADLINE)
        self.output.close()

    async def reload(self, config: str, expect: str) -> str:
        """Write ``config``, send ``SIGHUP``, return the log once it says ``expect``."""
        self.config.write_text(config)
        self.proc.send_signal(signal.SIGHUP)
        for _ in range(int(DEADLINE / 0.05)):
            text = self.log.read_text()
            if expect in text:
                return text
            await asyncio.sleep(0.05)
        raise AssertionError(f"no {expect!r} in the log:\n{self.log.read_text()}")

    def lines(self) -> list[str]:
        """What the process has written so far, line by line."""
        return self.log.read_text().splitlines()



def serving_pids(serve: Serve) -> set[int]:
    """The children's pids, read from their start lines."""
    return {int(line.rsplit("pid ", 1)[1].split(",")[0]) for line in serve.lines()
            if ": proxying " in line}


async def eventually_two(serve: Serve) -> set[int]:
    """The pids of ``serve``'s two children, once both have started."""
    for _ in range(int(DEADLINE / 0.05)):
        pids = serving_pids(serve)
        if len(pids) >= 2:
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError(f"two processes did not start:\n{serve.log.read_text()}")
