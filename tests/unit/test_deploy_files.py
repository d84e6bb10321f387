"""The deployment files say what Stoker understands: every ``STOKER_*`` variable in the
Containerfile and compose.yaml is a declared setting, the ports the image
exposes and compose publishes are those its listeners bind, every flag of the unit's
commands is one of the command's, no token is in the unit's environment, and
docs/deploy.md shows the unit as it is in contrib/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stoker.config.settings import ENV_PREFIX, FIELDS

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "Containerfile"
COMPOSE = ROOT / "compose.yaml"
UNIT = ROOT / "contrib" / "stoker.service"
VARIABLE = re.compile(r"\bSTOKER_[A-Z0-9_]+")


def _code(text: str) -> str:
    """``text`` without its comment lines (``#``)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _env(path: Path) -> dict[str, str]:
    """The ``STOKER_*`` variables ``path`` sets (``NAME=value`` or ``NAME: value``)."""
    found = re.findall(r"\b(STOKER_[A-Z0-9_]+)\s*[=:]\s*([^\s\\]+)", _code(path.read_text()))
    return dict(found)


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


@pytest.mark.parametrize("path", [CONTAINERFILE, COMPOSE], ids=lambda p: p.name)
def test_every_stoker_variable_is_a_setting(path: Path) -> None:
    names = set(VARIABLE.findall(_code(path.read_text())))
    assert names, f"{path.name} sets no STOKER_* variable"
    unknown = {name for name in names if name[len(ENV_PREFIX):].lower() not in FIELDS}
    assert not unknown, f"{path.name} uses {sorted(unknown)}, which no setting declares"


def test_the_image_exposes_the_ports_its_listeners_bind_on_every_interface() -> None:
    env = _env(CONTAINERFILE)
    listen, admin = env["STOKER_LISTEN"], env["STOKER_ADMIN_LISTEN"]
    assert listen.startswith("0.0.0.0:") and admin.startswith("0.0.0.0:")
    exposed = re.search(r"^EXPOSE\s+(.+)$", CONTAINERFILE.read_text(), re.M)
    assert exposed is not None
    assert sorted(map(int, exposed.group(1).split())) == sorted([_port(listen), _port(admin)])
    assert env["STOKER_DATA_DIR"] == "/var/lib/stoker"


def test_the_image_runs_stoker_serve_as_a_user_with_the_cluster_drivers() -> None:
    text = CONTAINERFILE.read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, re.M)
    assert re.findall(r"^FROM (\S+)", text, re.M) == ["${BASE}", "${BASE}"]
    assert "'.[cluster]'" in text
    user = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert user and user[-1] not in ("root", "0")
    assert re.search(r'^VOLUME \["/var/lib/stoker"\]', text, re.M)
    assert re.search(r'^ENTRYPOINT \["stoker"\]$', text, re.M)
    assert re.search(r'^CMD \["serve"\]$', text, re.M)


def test_compose_publishes_the_image_ports_and_keeps_the_token_in_a_secret() -> None:
    image = _env(CONTAINERFILE)
    published = {int(inside) for inside in re.findall(r'- "(?:[\d.]+:)?\d+:(\d+)"',
                                                      COMPOSE.read_text())}
    assert published == {_port(image["STOKER_LISTEN"]), _port(image["STOKER_ADMIN_LISTEN"])}
    env = _env(COMPOSE)
    assert env["STOKER_DATABASE_URL"].startswith("postgresql://")
    assert env["STOKER_L2_URL"].startswith("redis://")
    assert env["STOKER_ADMIN_TOKEN_FILE"].startswith("/run/secrets/")
    assert "STOKER_ADMIN_TOKEN" not in env
    ignored = (ROOT / ".containerignore").read_text().split()
    assert {".git", ".venv", "admin-token"} <= set(ignored)
    assert (ROOT / ".dockerignore").resolve() == (ROOT / ".containerignore").resolve()


def _unit_lines(key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in UNIT.read_text().splitlines()
            if line.startswith(f"{key}=")]


def test_the_unit_reads_the_token_from_a_credential_never_the_environment() -> None:
    assert not any("TOKEN" in line.upper() for line in _unit_lines("Environment"))
    assert _unit_lines("LoadCredential") == ["admin-token:/etc/stoker/admin-token"]
    assert _unit_lines("DynamicUser") == ["yes"]
    assert _unit_lines("StateDirectory") == ["stoker"]
    for command in (*_unit_lines("ExecStartPre"), *_unit_lines("ExecStart")):
        assert "--admin-token-file admin-token" in command
        assert "--admin-token " not in command


@pytest.mark.parametrize("key", ["ExecStartPre", "ExecStart"])
def test_the_unit_commands_take_only_real_flags(key: str) -> None:
    (line,) = _unit_lines(key)
    binary, name, *args = line.split()
    assert binary.endswith("/stoker")
    shown = subprocess.run([sys.executable, "-m", "stoker", name, "--help"],
                           capture_output=True, text=True, timeout=60, env={**os.environ,
                           "COLUMNS": "200"}, check=True).stdout
    flags = [arg for arg in args if arg.startswith("--")]
    unknown = [flag for flag in flags
               if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", shown)]
    assert flags and not unknown, f"{key}: {unknown} are not flags of stoker {name}"


def test_docs_show_the_unit_as_it_is_in_contrib() -> None:
    shown = f"```ini\n{UNIT.read_text().strip()}\n```"
    assert shown in (ROOT / "docs" / "deploy.md").read_text()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (apt-get install systemd)")
def test_systemd_verifies_the_unit(tmp_path: Path) -> None:
    """``systemd-analyze verify`` finds nothing to say of the unit (its binary pointed at
    this environment's ``stoker``, which verify requires to exist)."""
    stoker = str(Path(sys.executable).with_name("stoker"))
    unit = tmp_path / "stoker.service"
    unit.write_text(UNIT.read_text().replace("/usr/local/bin/stoker", stoker))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (0, ""), done.stderr
