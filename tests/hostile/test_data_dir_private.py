"""``data_dir`` holds the cache, the audit log and warm credentials: Stoker keeps it 0700
and its SQLite files 0600, whatever the umask; ``stoker check`` warns about a looser
directory and changes nothing."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.conftest import Origin, running_proxy
from tests.integration.test_cli_check import check_in_thread, lines, listeners

from stoker.config.settings.checks import open_to_others


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The usual umask (022): what ``mkdir -p`` and a plain ``open`` make is world-readable."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
async def test_serving_tightens_an_open_data_dir_and_makes_its_databases_private(
        origin: Origin, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    older = data_dir / "stoker.db-wal"  # left by a version that made its files 0644
    older.touch(mode=0o644)
    with caplog.at_level(logging.WARNING, logger="stoker"):
        async with running_proxy(origin.url, data_dir) as proxy:
            await proxy.client.get("/")
            files = {path.name: mode(path) for path in data_dir.iterdir()
                     if ".db" in path.name}
            directory = mode(data_dir)
    assert directory == 0o700
    assert {"cache.db", "cache.db-wal", "cache.db-shm", "stoker.db", "stoker.db-wal"} <= set(
        files)
    assert set(files.values()) == {0o600}, files
    assert any("mode 755" in r.getMessage() and "made it 700" in r.getMessage()
               for r in caplog.records)


@pytest.mark.usefixtures("open_umask")
async def test_a_new_data_dir_is_created_private(origin: Origin, tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / "data"
    async with running_proxy(origin.url, data_dir):
        assert mode(data_dir) == 0o700
        assert mode(data_dir / "cache.db") == 0o600


@pytest.mark.usefixtures("open_umask")
async def test_check_warns_about_an_open_data_dir_and_leaves_it_as_it_is(
        origin: Origin, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    result = await check_in_thread("--origin", origin.url, "--data-dir", str(data_dir),
                                   *listeners(), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines(result)["data_dir"].startswith(
        f"ok data_dir {data_dir}: a writable directory; warning: mode 755 lets other users")
    assert mode(data_dir) == 0o755  # check changes nothing
    assert list(data_dir.iterdir()) == []  # and creates nothing in it


@pytest.mark.parametrize(("permissions", "open_"), [
    (0o700, False), (0o600, False), (0o500, False), (0o750, True), (0o701, True),
    (0o644, True), (0o40700, False), (0o40755, True)])
def test_open_to_others(permissions: int, open_: bool) -> None:
    assert open_to_others(permissions) is open_
