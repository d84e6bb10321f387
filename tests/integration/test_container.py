"""The image the Containerfile builds proxies a site (issue 39 item 6): built with podman,
run with its origin and listeners set by ``STOKER_*`` variables, a page goes through it a
miss, then a hit; it runs as a user, not root.

Skipped, saying why, only where podman is not installed.  Podman runs under a
containers.conf of the test's own (``CONTAINERS_CONF``; the user's and /etc's are left
alone): runc when installed (crun fails on some hosts, this CI's among them), the host's
network, no default ulimits.  The base is python:3.11-slim when a registry gives it, else
a stand-in made once with debootstrap and kept in podman's storage as ``STAND_IN``.  Layers
are podman's to cache: a second run rebuilds only what changed under src/.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.integration.fresh_install import (
    ROOT,
    free_port,
    miss_then_hit,
    origin,
    run,
    succeeded,
    user_env,
    wait_listening,
)

IMAGE = "localhost/stoker-test:latest"
UPSTREAM = "docker.io/library/python:3.11-slim"
STAND_IN = "localhost/stoker-test-base:bookworm"
"""Debian bookworm (its python3 is 3.11, as in python:3.11-slim), minbase plus Python and
CA certificates, with ``python`` linked to python3; never removed by the test."""
BUILD_TIMEOUT = 900.0
"""Seconds making the stand-in base, or building the image, may take."""
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3 * BUILD_TIMEOUT)]
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
"""This machine's CA bundle, given to pip in the build (a proxy's CA may be only in it)."""


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment every podman command of the test runs in."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed")
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    runtime = 'runtime = "runc"\n' if shutil.which("runc") else ""
    conf.write_text('[containers]\ndefault_ulimits = []\nnetns = "host"\n'
                    f'[engine]\ncgroup_manager = "cgroupfs"\n{runtime}')
    return user_env(CONTAINERS_CONF=str(conf))


def debian_mirror() -> str:
    """The first Debian archive (a URL ending in /debian, so not the security one nor a
    vendor's) this machine's apt reads."""
    lists = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    text = "\n".join(path.read_text() for path in lists if path.is_file())
    mirrors = [url for url in re.findall(r"^(?:URIs:|deb)\s.*?(https?://\S+)", text, re.M)
               if url.rstrip("/").endswith("/debian")]
    return mirrors[0] if mirrors else "http://deb.debian.org/debian"


def base_image(env: dict[str, str], scratch: Path) -> str:
    """python:3.11-slim when podman has it or can pull it; else ``STAND_IN``, made first
    when podman's storage lacks it (a few minutes; needs debootstrap and root)."""
    for present in (["podman", "image", "exists", UPSTREAM], ["podman", "pull", "-q", UPSTREAM]):
        if run(present, env, ROOT, timeout=600).returncode == 0:
            return UPSTREAM
    if run(["podman", "image", "exists", STAND_IN], env, ROOT).returncode == 0:
        return STAND_IN
    root = scratch / "root"
    succeeded(run(["debootstrap", "--variant=minbase",
                   "--include=python3,python3-venv,ca-certificates", "bookworm", str(root),
                   debian_mirror()], env, scratch, timeout=BUILD_TIMEOUT))
    (root / "usr/bin/python").symlink_to("python3")
    succeeded(run(f"tar -C {root} -c . | podman import - {STAND_IN}", env, scratch,
                  timeout=BUILD_TIMEOUT))
    shutil.rmtree(root)
    return STAND_IN


@pytest.fixture(scope="session")
def image(podman: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The image built from this checkout's Containerfile, kept after the run (its layers
    are the next build's cache)."""
    base = base_image(podman, tmp_path_factory.mktemp("base"))
    ca = ["--volume", f"{CA_BUNDLE}:/run/host-ca.crt:ro",
          "--build-arg", "PIP_CERT=/run/host-ca.crt"] if CA_BUNDLE.is_file() else []
    succeeded(run(["podman", "build", "--network", "host", "--build-arg", f"BASE={base}", *ca,
                   "-t", IMAGE, "-f", "Containerfile", "."], podman, ROOT,
                  timeout=BUILD_TIMEOUT))
    return IMAGE


def test_the_image_runs_as_a_user_not_root(
        podman: dict[str, str], image: str, tmp_path: Path) -> None:
    uid = succeeded(run(["podman", "run", "--rm", "--entrypoint", "id", image, "-u"], podman,
                        tmp_path)).strip()
    assert uid != "0"


def test_a_page_goes_through_the_container_a_miss_then_a_hit(
        podman: dict[str, str], image: str, tmp_path: Path) -> None:
    port, admin_port = free_port(), free_port()
    with origin(tmp_path) as site:
        started = succeeded(run(
            ["podman", "run", "-d", "--rm", "--network", "host",
             "-e", f"STOKER_ORIGIN={site}", "-e", f"STOKER_LISTEN=127.0.0.1:{port}",
             "-e", f"STOKER_ADMIN_LISTEN=127.0.0.1:{admin_port}", image],
            podman, tmp_path)).strip()
        logs = subprocess.Popen(["podman", "logs", "-f", started], env=podman,
                                stdout=subprocess.DEVNULL)
        try:
            wait_listening(port, logs)
            first, second = miss_then_hit(f"http://127.0.0.1:{port}/container-page")
        finally:
            run(["podman", "rm", "-f", started], podman, tmp_path, timeout=60)
            logs.wait(30)
    assert "fwd=uri-miss" in first and "; hit" in second, (first, second)
