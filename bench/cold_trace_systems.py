"""The cold-trace benchmark's processes: the origin and the three caches in front of it.

Each system gets a fresh origin (``bench/cold_trace_origin.py`` on granian) and its
cache, in its own temporary directory; :func:`running` stops both (their process
groups) on exit and on errors.  How each cache takes an edit's and a deploy's purge:

- **Stoker**: ``PURGE`` of the item's and its list's URLs (``X-Purge-Soft: 1`` unless
  ``soft_header`` is off), a deploy ``POST /api/purge {"all": true, "soft": true}``.
- **Varnish**: grace 1 h, keep 1 h; ``PURGE`` with ``xkey-soft: <keys>`` soft-purges
  those xkey keys (``vmod_xkey`` from Debian's varnish-modules); a deploy soft-purges
  the key ``all`` every page carries.
- **nginx**: ``proxy_cache_use_stale updating``, ``proxy_cache_background_update``,
  ``proxy_cache_lock``, ``proxy_cache_revalidate``; open-source nginx has no purge, so
  edits and deploys reach its visitors only when the page's ``max-age`` runs out.

nginx and Varnish get ``Accept-Encoding`` folded to gzip or nothing (Varnish does it
itself; nginx through a map and its cache key), as a tuned deployment would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import free_port

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
TOKEN = "cold-trace-token"
START_TIMEOUT = 60.0


@dataclass
class Running:
    name: str
    port: int
    origin_port: int
    admin_port: int
    logs: Path
    pids: list[int]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def vcl(origin_port: int) -> str:
    return f"""vcl 4.1;
import xkey;

backend origin {{ .host = "127.0.0.1"; .port = "{origin_port}"; }}

sub vcl_recv {{
    if (req.method == "PURGE") {{
        set req.http.purged = xkey.softpurge(req.http.xkey-soft);
        return (synth(200, "soft-purged " + req.http.purged));
    }}
}}

sub vcl_backend_response {{
    set beresp.grace = 1h;
    set beresp.keep = 1h;
}}
"""


def nginx_conf(home: Path, port: int, origin_port: int) -> str:
    user = "user root root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes 1;
daemon off;
pid {home}/nginx.pid;
error_log {home}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {home}/client_body;
    proxy_temp_path {home}/proxy_temp;
    fastcgi_temp_path {home}/fastcgi_temp;
    uwsgi_temp_path {home}/uwsgi_temp;
    scgi_temp_path {home}/scgi_temp;
    proxy_cache_path {home}/cache levels=1:2 keys_zone=pages:50m max_size=4g
                     inactive=1h use_temp_path=off;
    map $http_accept_encoding $folded_ae {{ ~*gzip gzip; default ""; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{origin_port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Accept-Encoding $folded_ae;
            proxy_cache pages;
            proxy_cache_key $request_uri|$folded_ae;
            proxy_ignore_headers Vary;
            proxy_cache_revalidate on;
            proxy_cache_use_stale updating error timeout http_500 http_502 http_503 http_504;
            proxy_cache_background_update on;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 30s;
            add_header X-Cache-Status $upstream_cache_status;
        }}
    }}
}}
"""


def stoker_toml(settings: dict[str, str]) -> str:
    """``settings`` are TOML values already (``"5s"``, ``8``, ``["127.0.0.1"]``)."""
    return "".join(f"{key} = {value}\n" for key, value in settings.items())


def spawn(argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env=env)  # fmt: skip
    return proc.pid


def get(url: str, timeout: float = 5.0) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        response.read()
        return int(response.status)


def wait_up(url: str, pid: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if get(url) == 200:
                return
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"{url} did not answer 200 within {START_TIMEOUT:.0f} s:\n{tail}")


def stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@contextlib.contextmanager
def running(name: str, origin_env: dict[str, str],
            stoker_settings: dict[str, str], keep_logs: Path) -> Iterator[Running]:
    """The origin and the system ``name`` in front of it, until the block ends."""
    tmp = Path(tempfile.mkdtemp(prefix=f"cold-trace-{name}-"))
    tmp.chmod(0o755)  # nginx's worker and Varnish's child may run as other users
    pids: list[int] = []
    port, origin_port, admin_port = free_port(), free_port(), free_port()
    try:
        env = {**os.environ, **origin_env, "COLD_TRACE_SITE": f"http://127.0.0.1:{port}",
               "PYTHONPATH": f"{REPO}:{REPO / 'src'}"}
        pids.append(spawn([str(VENV_BIN / "granian"), "--interface", "asgi", "--host",
                           "127.0.0.1", "--port", str(origin_port), "--workers", "1",
                           "--no-access-log", "--log-level", "warning",
                           "bench.cold_trace_origin:app"], tmp / "origin.log", env))
        wait_up(f"http://127.0.0.1:{origin_port}/robots.txt", pids[0], tmp / "origin.log")
        argv, child_env = system_argv(name, tmp, port, origin_port, admin_port,
                                      stoker_settings)  # fmt: skip
        pids.append(spawn(argv, tmp / f"{name}.log", child_env))
        wait_up(f"http://127.0.0.1:{port}/robots.txt", pids[1], tmp / f"{name}.log")
        yield Running(name, port, origin_port, admin_port, tmp, pids)
    finally:
        for pid in reversed(pids):
            stop(pid)
        keep_logs.mkdir(parents=True, exist_ok=True)
        for log in tmp.glob("*.log"):
            shutil.copy(log, keep_logs / f"{name}-{log.name}")
        shutil.rmtree(tmp, ignore_errors=True)


def system_argv(name: str, tmp: Path, port: int, origin_port: int, admin_port: int,
                stoker_settings: dict[str, str]) -> tuple[list[str], dict[str, str] | None]:
    if name == "stoker":
        (tmp / "data").mkdir()
        config = tmp / "stoker.toml"
        config.write_text(stoker_toml(stoker_settings))
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "STOKER_ADMIN_TOKEN": TOKEN}
        return [sys.executable, "-m", "stoker", "serve", "--config", str(config),
                "--origin", f"http://127.0.0.1:{origin_port}",
                "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin_port}",
                "--data-dir", str(tmp / "data")], env  # fmt: skip
    if name == "varnish":
        (tmp / "default.vcl").write_text(vcl(origin_port))
        return ["varnishd", "-F", "-a", f"127.0.0.1:{port}", "-f", str(tmp / "default.vcl"),
                "-n", str(tmp / "varnish"), "-s", "malloc,512m",
                "-p", "thread_pools=1", "-p", "thread_pool_min=50"], None  # fmt: skip
    if name == "nginx":
        home = tmp / "nginx"
        home.mkdir()
        home.chmod(0o755)
        (home / "nginx.conf").write_text(nginx_conf(home, port, origin_port))
        return ["nginx", "-p", str(home), "-e", str(home / "nginx-error.log"),
                "-c", str(home / "nginx.conf")], None  # fmt: skip
    raise SystemExit(f"unknown system {name!r} (stoker, varnish, nginx)")


def control(method: str, url: str, headers: dict[str, str] | None = None,
            body: Any = None) -> str:
    """One control call (an edit, a purge): its answer's body; raises on an error."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("content-type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode(errors="replace"))


def purge_edit(system: Running, item: int, list_index: int, soft_header: bool) -> None:
    if system.name == "stoker":
        for path in (f"/item/{item}", f"/list/{list_index}"):
            control("PURGE", system.url + path, {"X-Purge-Soft": "1"} if soft_header else {})
    elif system.name == "varnish":
        control("PURGE", system.url + "/",
                {"xkey-soft": f"page-item-{item} page-list-{list_index}"})


def purge_deploy(system: Running) -> None:
    if system.name == "stoker":
        control("POST", f"http://127.0.0.1:{system.admin_port}/api/purge",
                {"authorization": f"Bearer {TOKEN}"}, {"all": True, "soft": True})
    elif system.name == "varnish":
        control("PURGE", system.url + "/", {"xkey-soft": "all"})
