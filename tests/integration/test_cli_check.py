"""``stoker check``: every check runs and prints one line; exit 0 when no check failed (an
unreachable origin is a warning), 1 when a check failed, 2 for a configuration error
(naming the setting); it creates nothing (no data_dir, no SQLite file, no table).

The command runs as a child process, as a user runs it, against a real origin, real
SQLite files and real sockets.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from tests.conftest import free_port
from tests.integration.conftest import Origin
from tests.integration.serve_process import Serve
from tests.integration.test_redis_down import listening, own_redis
from tests.integration.warm_site import stoker_env
from tests.job_backends import PG_URL, pg_schema, schema_url

UNREACHABLE = "http://127.0.0.1:1"
REDIS_URL = "redis://127.0.0.1:6379/13"  # a database of this module's own
SUBJECTS = ("configuration", "drivers", "origin", "data_dir", "cache tier", "job queue",
            "audit log", "purge bus", "Redis eviction", "notifier", "last warm run",
            "warmed origins", "error_page", "listen", "admin_listen")


def check(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``stoker check ARGS`` in ``cwd`` with the ``STOKER_*`` variables ``env`` (only)."""
    return subprocess.run([sys.executable, "-m", "stoker", "check", *args], cwd=cwd,
                          env={**stoker_env(), **env}, capture_output=True, text=True,
                          timeout=60, check=False)


async def check_in_thread(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """:func:`check` off the event loop, which serves the test's origin meanwhile."""
    return await asyncio.to_thread(check, *args, cwd=cwd)


def listeners() -> list[str]:
    """``--listen`` and ``--admin-listen`` on free loopback ports."""
    return ["--listen", f"127.0.0.1:{free_port()}", "--admin-listen", f"127.0.0.1:{free_port()}"]


def lines(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each check's line, its mark's padding dropped, by its subject."""
    found: dict[str, str] = {}
    for line in result.stdout.splitlines()[:-1]:
        mark, rest = line.split(maxsplit=1)
        (subject,) = (name for name in SUBJECTS if rest.startswith(f"{name} "))
        found[subject] = f"{mark} {rest}"
    return found


@pytest.fixture
def held() -> Iterator[str]:
    """An address another process (this test) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"127.0.0.1:{sock.getsockname()[1]}"


async def test_a_usable_configuration_lists_every_check_and_exits_0(
        origin: Origin, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    args = listeners()
    result = await check_in_thread("--origin", origin.url, "--data-dir", str(data_dir), *args,
                                   cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines(result) == {
        "configuration": "ok configuration (defaults, STOKER_* variables, flags): valid; "
                         "0 cache rules",
        "origin": f"ok origin {origin.url}: answered 404 Not Found",  # any answer will do
        "data_dir": f"ok data_dir {data_dir}: not created yet; stoker serve creates it "
                    f"(in {tmp_path}, writable)",
        "cache tier": f"ok cache tier {data_dir}/cache.db: not created yet; stoker serve "
                      "creates it",
        "job queue": f"ok job queue {data_dir}/stoker.db: not created yet; stoker serve "
                     "creates it",
        "audit log": f"ok audit log {data_dir}/stoker.db: not created yet; stoker serve "
                     "creates it",
        "purge bus": f"ok purge bus {data_dir}/cache.db: not created yet; stoker serve "
                     "creates it",
        "last warm run": f"ok last warm run {data_dir}/stoker.db: no warm run recorded (the "
                         "database is not created or migrated yet)",
        "warmed origins": f"ok warmed origins http://{args[1]}: warm runs fill "
                          f"http://{args[1]} (no visitor seen yet)",
        "listen": f"ok listen {args[1]}: can be bound",
        "admin_listen": f"ok admin_listen {args[3]}: can be bound",
    }
    assert result.stdout.splitlines()[-1] == "stoker check: all 11 checks passed"
    assert result.stderr == ""
    for address in (args[1], args[3]):  # nothing was left bound
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", int(address.rpartition(":")[2])))


def tree(root: Path) -> list[tuple[str, bool]]:
    """Every path under ``root`` (and whether it is a directory), sorted."""
    return sorted((str(path.relative_to(root)), path.is_dir()) for path in root.rglob("*"))


def test_an_origin_that_does_not_answer_is_a_warning_and_creates_nothing(
        tmp_path: Path) -> None:
    before = tree(tmp_path)
    result = check("--origin", UNREACHABLE, "--data-dir", str(tmp_path / "data"), *listeners(),
                   cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    found = lines(result)
    assert found["origin"] == (f"warn origin {UNREACHABLE}: no answer (Connection refused) "
                               "(stoker serve starts, and serves stale copies)")
    assert [line.split()[0] for subject, line in found.items() if subject != "origin"] == [
        "ok"] * 10
    assert result.stdout.splitlines()[-1] == "stoker check: all 11 checks passed, 1 with a warning"
    assert tree(tmp_path) == before  # no data_dir, no SQLite file


def test_the_error_page_is_checked_when_set(tmp_path: Path) -> None:
    page = tmp_path / "502.html"
    page.write_text("<h1>down</h1>")
    args = ("--origin", UNREACHABLE, "--data-dir", str(tmp_path / "data"))
    good = check(*args, *listeners(), cwd=tmp_path, STOKER_ERROR_PAGE=str(page))
    missing = check(*args, *listeners(), cwd=tmp_path,
                    STOKER_ERROR_PAGE=str(tmp_path / "gone.html"))
    assert good.returncode == 0, good.stdout + good.stderr
    assert lines(good)["error_page"] == f"ok error_page {page}: readable, 13 bytes"
    assert missing.returncode == 1
    assert lines(missing)["error_page"].startswith(
        f"FAIL error_page {tmp_path / 'gone.html'}: error_page: ")


async def test_check_of_an_existing_data_dir_changes_nothing_in_it(
        origin: Origin, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    before = tree(tmp_path)
    result = await check_in_thread("--origin", origin.url, "--data-dir", str(data_dir),
                                   *listeners(), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines(result)["data_dir"] == f"ok data_dir {data_dir}: a writable directory"
    assert tree(tmp_path) == before


def test_check_creates_no_table_in_a_fresh_postgresql_schema(tmp_path: Path) -> None:
    with pg_schema(migrated=False) as schema:
        result = check("--origin", UNREACHABLE, "--data-dir", str(tmp_path / "data"),
                       *listeners(), cwd=tmp_path, STOKER_DATABASE_URL=schema_url(schema))
        tables = asyncio.run(_tables(schema))
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines(result)["job queue"].endswith(
        ": connected; no tables yet (stoker serve or stoker migrate creates them)")
    assert lines(result)["notifier"].endswith(": subscribed")
    assert tables == set()
    assert not (tmp_path / "data").exists()


async def test_a_listen_address_in_use_fails_naming_it(origin: Origin, tmp_path: Path,
                                                       held: str) -> None:
    admin = f"127.0.0.1:{free_port()}"
    result = await check_in_thread("--origin", origin.url, "--data-dir", str(tmp_path / "data"),
                                   "--listen", held, "--admin-listen", admin, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    found = lines(result)
    assert found["listen"] == f"FAIL listen {held}: in use by another process"
    assert found["admin_listen"] == f"ok admin_listen {admin}: can be bound"


def test_a_data_dir_under_a_file_fails_and_its_databases_are_not_tried(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")  # fails for root too
    data_dir = tmp_path / "file" / "data"
    result = check("--origin", UNREACHABLE, "--data-dir", str(data_dir), *listeners(),
                   cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    found = lines(result)
    assert found["data_dir"] == (f"FAIL data_dir {data_dir}: {data_dir} is under a file, not a "
                                 "directory; point data_dir (or --data-dir) at a directory")
    for subject, file in (("cache tier", "cache.db"), ("job queue", "stoker.db"),
                          ("audit log", "stoker.db"), ("purge bus", "cache.db")):
        assert found[subject] == (f"skip {subject} {data_dir / file}: not tried: data_dir is "
                                  "not usable")
    assert result.stdout.splitlines()[-1] == "stoker check: 1 of 11 checks failed, 6 not tried"
    assert result.stderr == ""


def test_an_unreachable_database_url_fails_naming_its_host_not_its_password(
        tmp_path: Path) -> None:
    result = check("--origin", UNREACHABLE, "--data-dir", str(tmp_path / "data"), *listeners(),
                   cwd=tmp_path, STOKER_DATABASE_URL="postgresql://stoker:s3cret@127.0.0.1:1/x")
    assert result.returncode == 1, result.stderr
    for subject in ("job queue", "audit log", "purge bus"):
        assert lines(result)[subject].startswith(
            f"FAIL {subject} postgresql://stoker@127.0.0.1:1/x: cannot connect to PostgreSQL")
    assert lines(result)["notifier"].startswith(  # auto: LISTEN/NOTIFY on database_url
        "FAIL notifier LISTEN/NOTIFY postgresql://stoker@127.0.0.1:1/x: ")
    assert "s3cret" not in result.stdout + result.stderr


def test_a_notifier_on_redis_subscribes_or_names_the_server(tmp_path: Path) -> None:
    with pg_schema(migrated=False) as schema:
        env = {"STOKER_DATABASE_URL": schema_url(schema), "STOKER_L2_URL": REDIS_URL}
        up = check("--origin", UNREACHABLE, "--data-dir", str(tmp_path / "data"), *listeners(),
                   cwd=tmp_path, **env)
        down = check("--origin", UNREACHABLE, "--data-dir", str(tmp_path / "data"),
                     *listeners(), cwd=tmp_path,
                     **{**env, "STOKER_NOTIFIER": "redis", "STOKER_L2_URL": "redis://127.0.0.1:1/0"})
    assert lines(up)["notifier"] == f"ok notifier Redis pub/sub {REDIS_URL}: subscribed"
    # the notifier pokes through the one Redis client every port shares: opening it fails
    assert lines(down)["notifier"].startswith("FAIL notifier Redis pub/sub redis://127.0.0.1:1/0: "
                                              "Error ")
    assert "connecting to 127.0.0.1:1" in lines(down)["notifier"]


def test_migrate_opens_every_store_once_and_says_so(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with pg_schema(migrated=False) as schema:
        url = schema_url(schema)
        result = subprocess.run(
            [sys.executable, "-m", "stoker", "migrate", "--data-dir", str(data_dir)],
            cwd=tmp_path, env={**stoker_env(), "STOKER_DATABASE_URL": url},
            capture_output=True, text=True, timeout=60, check=False)
        tables = asyncio.run(_tables(schema))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "stoker migrate: all 5 checks passed"
    assert {"jobs", "audit_log", "purge_bus", "purge_members", "fetch_leases"} <= tables
    assert (data_dir / "cache.db").is_file()  # the cache tier stays in data_dir


async def _tables(schema: str) -> set[str]:
    conn = await asyncpg.connect(PG_URL)
    try:
        rows = await conn.fetch("SELECT table_name FROM information_schema.tables "
                                "WHERE table_schema = $1", schema)
    finally:
        await conn.close()
    return {row["table_name"] for row in rows}


@pytest.mark.parametrize(("toml", "env", "error"), [
    (None, {"STOKER_KEEP_STALE": "bogus"},
     "error: bad value for 'keep_stale' in environment variable STOKER_KEEP_STALE: "),
    ('listne = "127.0.0.1:80"\n', {}, "error: unknown setting 'listne' in stoker.toml "),
    ('admin_listen = "0.0.0.0:8081"\n', {}, "error: admin_listen is 0.0.0.0:8081, which is "
                                            "not a loopback address, and no admin_token"),
], ids=["bad-value", "unknown-key", "open-admin"])
def test_a_configuration_error_names_the_setting_and_exits_2(
        tmp_path: Path, toml: str | None, env: dict[str, str], error: str) -> None:
    if toml is not None:
        (tmp_path / "stoker.toml").write_text(toml)
    result = check("--origin", UNREACHABLE, cwd=tmp_path, **env)
    assert result.returncode == 2
    assert result.stderr.startswith(error), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert result.stdout == ""  # nothing was checked


def test_no_origin_is_a_configuration_error(tmp_path: Path) -> None:
    result = check(cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: no origin configured: pass --origin URL")


@pytest.mark.parametrize("flags", [("--maxmemory-policy", "allkeys-lru", "--maxmemory", "64mb"),
                                   ("--maxmemory-policy", "volatile-lru", "--maxmemory", "64mb"),
                                   ("--maxmemory-policy", "noeviction", "--maxmemory", "64mb"),
                                   ("--rename-command", "CONFIG", "")])
async def test_check_and_serve_say_what_redis_may_evict(
        origin: Origin, tmp_path: Path, flags: tuple[str, ...]) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    with own_redis(port, tmp_path, flags), pg_schema(migrated=False) as schema:
        await listening(port)
        found = await asyncio.to_thread(
            check, "--origin", origin.url, "--data-dir", str(tmp_path / "data"), *listeners(),
            cwd=tmp_path, STOKER_L2_URL=url, STOKER_DATABASE_URL=schema_url(schema))
        serve = Serve(origin, tmp_path, "--processes", "1")
        serve.config.write_text(f'warm_on_start = "never"\nl2_url = "{url}"\n'
                                f'database_url = "{schema_url(schema)}"\n')
        async with serve:
            for _ in range(100):
                said = [line for line in serve.lines() if "Redis (l2_url)" in line]
                if said:
                    break
                await asyncio.sleep(0.05)
    line = lines(found)["Redis eviction"]
    policy = flags[1] if flags[0] == "--maxmemory-policy" else None
    if policy == "allkeys-lru":
        assert line.startswith(f"ok Redis eviction {url}: warning: maxmemory-policy allkeys-lru "
                               "at maxmemory 67108864 bytes may evict any of Stoker's keys")
        assert "a purge may then miss entries in Redis" in line and "noeviction is safe" in line
    elif policy == "volatile-lru":
        assert line.startswith(f"ok Redis eviction {url}: warning: maxmemory-policy "
                               "volatile-lru at maxmemory 67108864 bytes may evict the entries")
    elif policy == "noeviction":
        assert line == (f"ok Redis eviction {url}: maxmemory-policy noeviction: Redis never "
                        "evicts Stoker's keys (when full it refuses writes: pages are served, "
                        "not stored in Redis)")
    else:
        assert line.startswith(f"ok Redis eviction {url}: warning: maxmemory-policy could not "
                               "be read")
    assert len(said) == 1 and ("WARNING" in said[0]) == (policy != "noeviction")
    assert line.split(": ", 1)[1].removeprefix("warning: ") in said[0]
