"""The image the Containerfile builds proxies a site (issue 39 item 6): built with podman
(or docker), run with its origin and listeners set by ``STOKER_*`` variables, a page goes
through it a miss, then a hit; it runs as a user, not root.

Runs where an engine can build: skipped, saying why, when neither podman nor docker
answers ``info``, or when the base image (python:3.11-slim) cannot be pulled.  Layers are
the engine's to cache: a second run rebuilds only what changed under src/.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
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

pytestmark = pytest.mark.slow

IMAGE = "localhost/stoker-test:latest"
BUILD_TIMEOUT = 900.0
UNREACHABLE_REGISTRY = ("pinging container registry", "no such host", "failed to resolve",
                        "pull access denied", "i/o timeout",
                        "manifest unknown")
"""What an engine says when it cannot pull the base image (no registry, no network)."""


def engine() -> str:
    """podman, else docker: the first that answers ``info``; skip when none does."""
    tried = []
    for tool in ("podman", "docker"):
        if shutil.which(tool) is None:
            tried.append(f"{tool}: not installed")
            continue
        done = run([tool, "info"], user_env(), ROOT, timeout=60)
        if done.returncode == 0:
            return tool
        tried.append(f"{tool} info: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    pytest.skip(f"no container engine answers ({'; '.join(tried)})")


@pytest.fixture(scope="session")
def image() -> Iterator[tuple[str, str]]:
    """The engine and the image built from this checkout's Containerfile."""
    tool = engine()
    done = run([tool, "build", "-t", IMAGE, "-f", "Containerfile", "."], user_env(), ROOT,
               timeout=BUILD_TIMEOUT)
    said = f"{done.stdout}\n{done.stderr}"
    if done.returncode != 0 and any(words in said.lower() for words in UNREACHABLE_REGISTRY):
        pytest.skip(f"{tool} cannot pull the base image python:3.11-slim: "
                    f"{said.strip().splitlines()[-1]}")
    succeeded(done)
    yield tool, IMAGE
    run([tool, "rmi", "-f", IMAGE], user_env(), ROOT, timeout=120)


def test_the_image_runs_as_a_user_not_root(image: tuple[str, str], tmp_path: Path) -> None:
    tool, name = image
    uid = succeeded(run([tool, "run", "--rm", "--entrypoint", "id", name, "-u"], user_env(),
                        tmp_path)).strip()
    assert uid != "0"


def test_a_page_goes_through_the_container_a_miss_then_a_hit(
        image: tuple[str, str], tmp_path: Path) -> None:
    tool, name = image
    port, admin_port = free_port(), free_port()
    with origin(tmp_path) as site:
        started = succeeded(run(
            [tool, "run", "-d", "--rm", "--network", "host",
             "-e", f"STOKER_ORIGIN={site}", "-e", f"STOKER_LISTEN=127.0.0.1:{port}",
             "-e", f"STOKER_ADMIN_LISTEN=127.0.0.1:{admin_port}", name],
            user_env(), tmp_path)).strip()
        logs = subprocess.Popen([tool, "logs", "-f", started], stdout=subprocess.DEVNULL)
        try:
            wait_listening(port, logs)
            first, second = miss_then_hit(f"http://127.0.0.1:{port}/container-page")
        finally:
            run([tool, "rm", "-f", started], user_env(), tmp_path, timeout=60)
            logs.wait(30)
    assert "fwd=uri-miss" in first and "; hit" in second, (first, second)
