"""Stoker installed as a user installs it, away from this checkout's .venv: a copy of the
checkout (what a clone has that an install reads), fresh virtual environments, pip using
the machine's configured index, and the commands run with none of the test run's
environment (no ``STOKER_*``, no ``PYTHONPATH``, no active venv).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 600.0
"""Seconds an install may take (building the wheel, fetching its dependencies)."""
SHIPPED = ("pyproject.toml", "README.md", "src")
"""What installing Stoker reads of a checkout."""


def checkout_copy(into: Path) -> Path:
    """The files an install reads, copied to ``into`` (so a build never writes into this
    checkout, and nothing of its .venv or caches comes along)."""
    into.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, into / name)
    return into


def user_env(*bin_dirs: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: this one without Stoker's settings, the test
    run's venv or import path, with ``bin_dirs`` first on ``PATH``."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("STOKER_") and key not in dropped}
    venv_bin = str(Path(sys.executable).parent)
    path = [part for part in env.get("PATH", "").split(os.pathsep) if part != venv_bin]
    env["PATH"] = os.pathsep.join([*map(str, bin_dirs), *path])
    return {**env, **extra}


def run(command: Sequence[str] | str, env: Mapping[str, str], cwd: Path,
        timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``command`` (a string runs in bash), its output captured, never raising on its
    exit status."""
    shell = isinstance(command, str)
    args = ["bash", "-c", command] if shell else list(command)
    return subprocess.run(args, env=dict(env), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def succeeded(done: subprocess.CompletedProcess[str]) -> str:
    """``done``'s output, once it is known to have exited 0 (else the failure, with it)."""
    assert done.returncode == 0, (f"{done.args} exited {done.returncode}:\n"
                                  f"{done.stdout}\n{done.stderr}")
    return done.stdout


def fresh_venv(at: Path) -> Path:
    """A new virtual environment (this Python's version) at ``at``; its ``bin``."""
    succeeded(run([sys.executable, "-m", "venv", str(at)], user_env(), at.parent))
    return at / "bin"


def miss_then_hit(url: str) -> tuple[str, str]:
    """The ``Cache-Status`` of two GETs of ``url`` in a row (a page the warm run at start
    does not visit: not the home page)."""
    with httpx.Client(timeout=30, trust_env=False) as client:
        first, second = client.get(url), client.get(url)
    assert first.status_code == second.status_code == 200, (first, second)
    return first.headers["cache-status"], second.headers["cache-status"]


ORIGIN = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Page(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<h1>hello from the origin</h1>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Cache-Control", "max-age=60")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Page).serve_forever()
"""
"""A site whose pages may be cached a minute, in a process of its own (the tests that
use it run commands that block)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Return once something accepts connections on ``port``; fail, with ``process``'s
    output, when it exits first or ``timeout`` real seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{process.args} exited {process.returncode}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port} after {timeout:g} s: {process.args}")


@contextmanager
def background(command: Sequence[str] | str, env: Mapping[str, str], cwd: Path,
               port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` (a string runs in bash) running while the block runs, once it listens
    on ``port``; its output in ``log``; terminated (then killed) at the end."""
    args = ["bash", "-c", f"exec {command}"] if isinstance(command, str) else list(command)
    with log.open("wb") as out:
        process = subprocess.Popen(args, env=dict(env), cwd=cwd, stdout=out,
                                   stderr=subprocess.STDOUT)
        try:
            try:
                wait_listening(port, process)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{log.read_text()}") from None
            yield process
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def origin(tmp: Path) -> Iterator[str]:
    """:data:`ORIGIN` running; its URL."""
    port = free_port()
    with background([sys.executable, "-c", ORIGIN, str(port)], user_env(), tmp, port,
                    tmp / "origin.log"):
        yield f"http://127.0.0.1:{port}"
