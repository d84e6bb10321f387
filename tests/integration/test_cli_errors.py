"""What a new user sees when a setting is wrong: one ``error:`` line, exit 2.

The ``stoker`` command runs as a child process, as a user runs it; its output is read
as the terminal would show it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import free_port
from tests.integration.warm_site import stoker_env


def stoker(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stoker", *args], cwd=cwd, env=stoker_env(),
                          capture_output=True, text=True, timeout=60, check=False)


def serve_args(data_dir: Path) -> list[str]:
    return ["serve", "--origin", "http://127.0.0.1:9", "--data-dir", str(data_dir),
            "--listen", f"127.0.0.1:{free_port()}", "--admin-listen", f"127.0.0.1:{free_port()}"]


@pytest.mark.parametrize(("where", "problem"), [
    ("file", "is a file, not a directory"), ("file/sub", "is under a file, not a directory")])
@pytest.mark.parametrize("command", ["serve", "jobs"])
def test_an_unusable_data_dir_is_one_error_line(tmp_path: Path, where: str, problem: str,
                                                command: str) -> None:
    (tmp_path / "file").write_text("not a directory")
    data_dir = tmp_path / where
    args = serve_args(data_dir) if command == "serve" else [
        "jobs", "counts", "--data-dir", str(data_dir)]
    result = stoker(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: data_dir: {data_dir} {problem}; point "
                                          "data_dir (or --data-dir) at a directory"]


def test_brackets_in_an_error_are_printed_as_they_are(tmp_path: Path) -> None:
    config = tmp_path / "stoker.toml"
    config.write_text('[[rule]]\npath = "/x"\nttl = "bogus"\n')
    result = stoker(*serve_args(tmp_path / "data"), "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {config}: [[rule]] #1: ttl: expected a duration")
    assert len(result.stderr.splitlines()) == 1


def test_help_shows_every_bracket(tmp_path: Path) -> None:
    result = stoker("serve", "--help", cwd=tmp_path)
    assert result.returncode == 0
    help_text = " ".join(result.stdout.split())
    assert "(HTTP/1.1 and HTTP/2) [stoker]" in help_text  # was eaten as markup
