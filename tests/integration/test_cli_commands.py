"""The CLI's small promises: --version, ``stoker settings``, ``stoker jobs`` telling what
it reads.  Run as a user runs them (a child process), on real SQLite files."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from tests.integration.test_cli_errors import stoker

from stoker.backends import open_database
from stoker.clock import SystemClock
from stoker.config.settings import Settings, load_settings, settings_from
from stoker.jobs.model import NewJob
from stoker.version import VERSION


def test_version(tmp_path: Path) -> None:
    result = stoker("--version", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, f"stoker {VERSION}\n")


def test_settings_are_the_defaults_as_a_stoker_toml(tmp_path: Path) -> None:
    result = stoker("settings", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = tmp_path / "shown.toml"
    shown.write_text(result.stdout)
    assert "keep_stale" in tomllib.loads(result.stdout)
    assert "# Host header sent to the origin" in result.stdout
    assert "[STOKER_REFRESH_INTERVAL]\nrefresh_interval = \"1d\"\n" in result.stdout
    assert load_settings(config_path=shown, env={}) == Settings()


def test_settings_with_config_are_the_effective_values(tmp_path: Path) -> None:
    config = tmp_path / "stoker.toml"
    config.write_text('listen = "0.0.0.0:80"\nkeep_stale = "2h"\n')
    result = stoker("settings", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert 'listen = "0.0.0.0:80"  # default: "127.0.0.1:8080"\n' in result.stdout
    assert 'keep_stale = "2h"  # default: "1d"\n' in result.stdout
    assert '\nadmin_listen = "127.0.0.1:8081"\n' in result.stdout


def test_jobs_without_a_database_say_which_data_dir_they_read(tmp_path: Path) -> None:
    result = stoker("jobs", "counts", cwd=tmp_path)
    assert result.returncode == 0  # an empty queue, and said so
    assert result.stderr == ("note: no Stoker has run with data_dir .stoker yet: its queue is "
                             "empty (--data-dir names another)\n")
    assert not (tmp_path / ".stoker").exists()  # nothing made up on the spot
    asyncio.run(_queue_with(tmp_path / ".stoker" / "demo"))  # a demo has run here
    hinted = stoker("jobs", "list", cwd=tmp_path)
    assert "; `stoker demo` keeps its own: add --data-dir .stoker/demo" in hinted.stderr
    demo = stoker("jobs", "list", "--state", "pending", "--data-dir", ".stoker/demo",
                  cwd=tmp_path)
    assert demo.returncode == 0 and demo.stderr == "" and "warm" in demo.stdout


def test_requeue_of_a_job_that_is_not_dead_says_so(tmp_path: Path) -> None:
    pending = asyncio.run(_queue_with(tmp_path / "data"))
    data = ["--data-dir", str(tmp_path / "data")]
    missing = stoker("jobs", "requeue", "--id", "42", *data, cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: --id 42: there is no job 42")
    alive = stoker("jobs", "requeue", "--id", str(pending), *data, cwd=tmp_path)
    assert alive.returncode == 1
    assert f"job {pending} is pending, not dead: nothing to requeue" in alive.stderr


async def _queue_with(data_dir: Path) -> int:
    """A SQLite queue in ``data_dir`` holding one pending job; its id."""
    stores = await open_database(settings_from({"data_dir": str(data_dir)}), SystemClock())
    try:
        await stores.queue.enqueue([NewJob("warm", {"kind": "visit"})])
        (job,) = await stores.queue.list("pending")
        return job.id
    finally:
        await stores.aclose()
