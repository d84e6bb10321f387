"""``pip install`` of Stoker without the ``cluster`` extra (issue 39 item 1): no
PostgreSQL or Redis driver is installed, and one node on the embedded SQLite stores still
runs (``--help``, ``stoker check``, ``stoker serve`` proxying a miss then a hit); asking
for PostgreSQL or Redis is one error naming the setting and ``stoker[cluster]``, at
``stoker serve`` and as ``stoker check``'s failed ``drivers`` line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.integration.fresh_install import (
    INSTALL_TIMEOUT,
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

DATABASE = "postgresql://stoker:pw@127.0.0.1:1/stoker"
L2 = "redis://127.0.0.1:1/0"
FIX = "pipx install 'stoker[cluster]' (or pip install 'stoker[cluster]')"


@dataclass(frozen=True)
class Installed:
    """Stoker installed without the extra: the environment's ``bin``, and a shell's
    environment with it first on ``PATH``."""

    bin: Path
    env: dict[str, str]


@pytest.fixture(scope="session")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """One plain install for the session: ``pip install <checkout>``, no extra."""
    root = tmp_path_factory.mktemp("plain-install")
    source = checkout_copy(root / "checkout")
    bin_dir = fresh_venv(root / "venv")
    env = user_env(bin_dir)
    succeeded(run([str(bin_dir / "pip"), "install", "--quiet", str(source)], env, root,
                  timeout=INSTALL_TIMEOUT))
    return Installed(bin_dir, env)


def listeners() -> list[str]:
    return ["--listen", f"127.0.0.1:{free_port()}",
            "--admin-listen", f"127.0.0.1:{free_port()}"]


def test_no_driver_of_the_extra_is_installed(plain: Installed, tmp_path: Path) -> None:
    for module in ("asyncpg", "redis", "hiredis"):
        done = run([str(plain.bin / "python"), "-c", f"import {module}"], plain.env, tmp_path)
        assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr, module
    succeeded(run([str(plain.bin / "python"), "-c", "import stoker, stoker.embed, "
                   "stoker.functions, stoker.app.serving"], plain.env, tmp_path))


def test_help_and_check_run_on_the_embedded_stores(plain: Installed, tmp_path: Path) -> None:
    assert "serve" in succeeded(run(["stoker", "--help"], plain.env, tmp_path))
    out = succeeded(run(["stoker", "check", "--origin", "http://127.0.0.1:1", *listeners()],
                        plain.env, tmp_path))
    assert out.splitlines()[-1].startswith("stoker check: all 11 checks passed"), out
    assert "drivers" not in out
    assert not (tmp_path / ".stoker").exists()  # check creates nothing


def test_serve_proxies_a_miss_then_a_hit(plain: Installed, tmp_path: Path) -> None:
    port = free_port()
    with origin(tmp_path) as site, background(
            ["stoker", "serve", "--origin", site, "--listen", f"127.0.0.1:{port}",
             "--admin-listen", f"127.0.0.1:{free_port()}"],
            plain.env, tmp_path, port, tmp_path / "serve.log"):
        first, second = miss_then_hit(f"http://127.0.0.1:{port}/a-page")
    assert "fwd=uri-miss" in first and "; hit" in second, (first, second)


@pytest.mark.parametrize(("env", "said"), [
    ({"STOKER_DATABASE_URL": DATABASE},
     'database_url = "postgresql://…" needs the PostgreSQL driver (asyncpg)'),
    ({"STOKER_DATABASE_URL": DATABASE, "STOKER_L2_URL": L2},
     'database_url = "postgresql://…" needs the PostgreSQL driver (asyncpg) and '
     'l2_url = "redis://…" needs the Redis driver (redis-py)'),
], ids=["database_url", "database_url and l2_url"])
def test_asking_for_a_server_store_names_the_setting_and_the_extra(
        plain: Installed, tmp_path: Path, env: dict[str, str], said: str) -> None:
    shell = {**plain.env, **env}
    expected = f"{said}, not installed: {FIX}"
    served = run(["stoker", "serve", "--origin", "http://127.0.0.1:1", *listeners()], shell,
                 tmp_path)
    assert (served.returncode, served.stderr.strip()) == (2, f"error: {expected}")
    checked = run(["stoker", "check", "--origin", "http://127.0.0.1:1", *listeners()],
                  shell, tmp_path)
    assert checked.returncode == 1, checked.stdout
    drivers = [line for line in checked.stdout.splitlines() if "  drivers " in line]
    assert len(drivers) == 1 and drivers[0].startswith("FAIL") and drivers[0].endswith(
        expected), checked.stdout
    assert "pw" not in checked.stdout
    assert not (tmp_path / ".stoker").exists()
