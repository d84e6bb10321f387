"""The README's quick start, run as written (issue 39): the shell commands of the fenced
``sh`` blocks between ``<!-- quickstart -->`` and ``<!-- /quickstart -->``, in order, in a
copy of the checkout, with pipx (installed into a venv of its own; its home and bin in
the test's directory) and a shell environment without this test run's venv.

What the test maps, and nothing else: the README's example origin
(``http://127.0.0.1:8000``) is a test origin's URL, and Stoker's default addresses
(``127.0.0.1:8080``, ``127.0.0.1:8081``) are free ports (in the commands, and as
``STOKER_LISTEN`` / ``STOKER_ADMIN_LISTEN`` for the commands that use the defaults): other
test runs on this machine may hold them.  A ``stoker serve`` or ``stoker demo`` line runs in
the background until the test ends, once it listens; every other line must exit 0.  Then a
page goes through the proxy: a miss, then a hit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from tests.integration.fresh_install import (
    INSTALL_TIMEOUT,
    ROOT,
    background,
    checkout_copy,
    free_port,
    fresh_venv,
    miss_then_hit,
    origin,
    run,
    succeeded,
    user_env,
)

pytestmark = pytest.mark.slow

BEGIN, END = "<!-- quickstart -->", "<!-- /quickstart -->"
EXAMPLE_ORIGIN = "http://127.0.0.1:8000"
LISTEN, ADMIN_LISTEN = "127.0.0.1:8080", "127.0.0.1:8081"
LONG_RUNNING = re.compile(r"^stoker (serve|demo)\b")
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def quickstart_commands(readme: str) -> list[str]:
    """The commands of the ``sh`` blocks between the markers: one per line (a line ending
    in ``\\`` joined to the next), blank and comment lines left out.  Pure."""
    begin, end = readme.find(BEGIN), readme.find(END)
    assert 0 <= begin < end, f"README.md has no {BEGIN} … {END} section"
    commands: list[str] = []
    for block in SH_BLOCK.findall(readme[begin:end]):
        for line in re.sub(r"\s*\\\n\s*", " ", block).splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(line.strip())
    return commands


def test_commands_are_read_from_the_marked_blocks_only() -> None:
    readme = ("```sh\nnot me\n```\n" + BEGIN + "\ntext\n```sh\n# a comment\npipx install .\n"
              "stoker serve \\\n  --origin http://x\n```\n```python\nnot python\n```\n"
              "```sh\ncurl -sI http://127.0.0.1:8080/\n```\n" + END + "\n```sh\nnor me\n```\n")
    assert quickstart_commands(readme) == [
        "pipx install .", "stoker serve --origin http://x", "curl -sI http://127.0.0.1:8080/"]


def test_the_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    commands = quickstart_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert any(line.startswith("pipx install") for line in commands), commands
    assert any(LONG_RUNNING.match(line) for line in commands), commands
    checkout = checkout_copy(tmp_path / "stoker")
    pipx_bin = fresh_venv(tmp_path / "pipx-venv")
    succeeded(run([str(pipx_bin / "pip"), "install", "--quiet", "pipx"], user_env(), tmp_path,
                  timeout=INSTALL_TIMEOUT))
    port, admin_port = free_port(), free_port()
    with ExitStack() as running:
        site = running.enter_context(origin(tmp_path))
        shell = user_env(tmp_path / "bin", pipx_bin, PIPX_HOME=str(tmp_path / "pipx"),
                         PIPX_BIN_DIR=str(tmp_path / "bin"), PIPX_MAN_DIR=str(tmp_path / "man"),
                         STOKER_LISTEN=f"127.0.0.1:{port}",
                         STOKER_ADMIN_LISTEN=f"127.0.0.1:{admin_port}")
        for command in mapped(commands, site, port, admin_port):
            if LONG_RUNNING.match(command):
                running.enter_context(background(command, shell, checkout, port,
                                                 tmp_path / "serve.log"))
            else:
                succeeded(run(command, shell, checkout, timeout=INSTALL_TIMEOUT))
        first, second = miss_then_hit(f"http://127.0.0.1:{port}/quickstart-page")
    assert "fwd=uri-miss" in first and "; hit" in second, (first, second)


def mapped(commands: list[str], site: str, port: int, admin_port: int) -> Iterator[str]:
    """``commands`` with the README's example origin and default addresses replaced by
    the test's (see the module docstring)."""
    for command in commands:
        yield (command.replace(EXAMPLE_ORIGIN, site)
               .replace(LISTEN, f"127.0.0.1:{port}")
               .replace(ADMIN_LISTEN, f"127.0.0.1:{admin_port}"))
