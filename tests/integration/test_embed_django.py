"""The examples' one-file Django site (ASGI) behind an embedded Stoker, served by uvicorn:
``@stoker.page`` caches its views, its async edit view purges through ``stoker.purge``,
an ordinary request re-warms the purged page, and the admin side answers at ``/stoker``."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from django.test import override_settings
from tests.conftest import free_port, serving


def django_site(tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("STOKER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("STOKER_SITE_URL", f"http://127.0.0.1:{port}")
    sys.modules.pop("examples.django_site", None)
    return importlib.import_module("examples.django_site")


async def test_the_django_example_caches_purges_and_rewarms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    site = django_site(tmp_path, port, monkeypatch)
    with override_settings(ROOT_URLCONF="examples.django_site", ALLOWED_HOSTS=["*"],
                           MIDDLEWARE=["django.middleware.common.CommonMiddleware"]):
        async with serving(site.application, kind="uvicorn", port=port) as url, \
                httpx.AsyncClient(base_url=url) as browser:
            first = await browser.get("/posts/hello/")
            second = await browser.get("/posts/hello/")
            edited = await browser.post("/posts/hello/edit", data={"text": "Edited."})
            runtime = await site.stoker.runtime()
            for _ in range(3):  # ordinary requests, never for the page: they re-warm it
                await browser.get("/sitemap.xml")
                await runtime.traffic.settle()
            rewarmed = await browser.get("/posts/hello/")
            status = await browser.get("/stoker/api/status")  # loopback, no token set
        await site.stoker.close()
    assert "fwd=uri-miss" in first.headers["cache-status"] and "Hello" in first.text
    assert "hit" in second.headers["cache-status"]
    assert edited.json() == {"purged": 1}
    assert "hit" in rewarmed.headers["cache-status"] and "Edited." in rewarmed.text
    assert status.status_code == 200 and status.json()["requests"]["hit"] >= 2
