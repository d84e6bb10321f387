"""Starting on an address another process already listens on fails before serving."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import free_port

from stoker.app.serving import run_service
from stoker.asgi import Message, Receive, Send
from stoker.config.settings import settings_from
from stoker.server.listeners import AddressInUse, run_apps


async def _app(scope: Message, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(params=[False, True], ids=["plain", "reuseport"])
def held(request: pytest.FixtureRequest) -> Iterator[str]:
    """An address a stranger listens on (with SO_REUSEPORT, as granian does, or without)."""
    with socket.socket() as sock:
        if request.param:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("kind", ["granian", "stoker"])
async def test_run_apps_refuses_a_busy_address(kind: str, held: str) -> None:
    with pytest.raises(AddressInUse, match=f"{held} is already in use by another process"):
        await asyncio.wait_for(run_apps(kind, [(_app, held)]), 10)


@pytest.mark.parametrize("setting", ["listen", "admin_listen"])
async def test_service_names_the_setting_and_opens_nothing(setting: str, held: str,
                                                           tmp_path: Path) -> None:
    addresses = {"listen": f"127.0.0.1:{free_port()}",
                 "admin_listen": f"127.0.0.1:{free_port()}", setting: held}
    data = tmp_path / "data"
    settings = settings_from({"origin": "http://127.0.0.1:9", "data_dir": str(data),
                              **addresses})
    with pytest.raises(AddressInUse, match=f"^{setting} {held} is already in use"):
        await asyncio.wait_for(run_service(settings, announce=lambda _: None), 10)
    assert not data.exists()


@pytest.mark.parametrize("server", ["granian", "stoker"])
def test_cli_serve_exits_non_zero_with_the_message(server: str, held: str,
                                                   tmp_path: Path) -> None:
    command = [sys.executable, "-m", "stoker", "serve", "--origin", "http://127.0.0.1:9",
               "--listen", held, "--admin-listen", f"127.0.0.1:{free_port()}",
               "--data-dir", str(tmp_path / "data"), "--server", server]
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert f"listen {held} is already in use by another process" in done.stdout + done.stderr
