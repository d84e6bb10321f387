"""Warm what visitors read: the origins visitors arrive on are learned and warmed.

Behind a TLS terminator visitors come in with ``X-Forwarded-Proto: https`` while
``site_url`` says ``http://``; with ``tls_cert`` they come in on https.  A warm run fills
the entries they read either way, ``stoker check`` and the log say when ``site_url``
names other origins, and ``/metrics`` counts the warmed entries visitors then read.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.conftest import free_port, wait_listening
from tests.integration.test_http2 import self_signed
from tests.integration.warm_site import (
    SITE,
    SITE_HOST,
    TOKEN,
    SiteOrigin,
    is_hit,
    page,
    site_origin,
    start_serve,
    stoker_env,
    warm_cli,
    warming,
)

PAGES = 30
VISITED = range(1, 6)
"""Pages visitors read before the warm run (over https): they teach the origin."""
CHECKED = range(6, PAGES + 1)
"""Pages visitors read after the warm run only: hits only if the run warmed https."""
HTTPS = {"host": SITE_HOST, "x-forwarded-proto": "https"}


def metric(text: str, name: str) -> float:
    (value,) = [sample.value for family in text_string_to_metric_families(text)
                for sample in family.samples if sample.name == name]
    return value


async def _misses(client: httpx.AsyncClient, numbers: range,
                  headers: dict[str, str]) -> list[int]:
    responses = [await client.get(page(n), headers=headers) for n in numbers]
    return [n for n, r in zip(numbers, responses, strict=True)
            if r.status_code != 200 or not is_hit(r)]


async def test_behind_a_terminator_a_warm_run_fills_the_https_entries_visitors_read(
        tmp_path: Path) -> None:
    site = SiteOrigin(PAGES)
    port = free_port()
    async with site_origin(site) as origin_url:
        with (tmp_path / "serve.log").open("wb") as log:
            proc, admin_url = await start_serve(origin_url, tmp_path / "data", log, port=port)
            try:
                await wait_listening(port, timeout=30)
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                             timeout=30) as visitor, \
                        httpx.AsyncClient(base_url=admin_url, timeout=30, headers={
                            "authorization": f"Bearer {TOKEN}"}) as admin:
                    for n in [*VISITED] * 4:  # a trusted proxy (loopback) says https
                        assert (await visitor.get(page(n), headers=HTTPS)).status_code == 200
                    code, out = await warm_cli(admin_url, "--wait")
                    assert code == 0, out
                    misses = await _misses(visitor, CHECKED, HTTPS)
                    http_misses = await _misses(visitor, CHECKED, {"host": SITE_HOST})
                    status = (await admin.get("/api/warm")).json()
                    scraped = (await admin.get("/metrics")).text
                    api_status = (await admin.get("/api/status")).json()
            finally:
                proc.send_signal(signal.SIGTERM)
                await proc.wait()
    assert misses == []  # on main: every one a miss (the run warmed http:// only)
    assert http_misses == []  # site_url's own origin is warmed still
    assert status["warmed_origins"] == [SITE, "https://www.example.test"]
    assert status["origin_findings"][0].startswith(
        "visitors arrive on https://www.example.test")
    warmed = len(CHECKED) * 2 + len(VISITED) + 2  # https and http; the home page on both
    assert metric(scraped, "stoker_warm_stored_entries_total") == warmed
    assert metric(scraped, "stoker_warm_entries_read_total") == len(CHECKED) * 2
    assert api_status["warm_reads"] == {"stored": warmed, "read": len(CHECKED) * 2}
    text = (tmp_path / "serve.log").read_text()
    assert ("warmed entries and visitors' entries differ: visitors arrive on "
            "https://www.example.test") in text


async def test_the_warm_page_and_stoker_check_say_visitors_use_another_origin(
        tmp_path: Path) -> None:
    site = SiteOrigin(3)
    port = free_port()
    async with site_origin(site) as origin_url:
        with (tmp_path / "serve.log").open("wb") as log:
            proc, _ = await start_serve(origin_url, tmp_path / "data", log, port=port)
            try:
                await wait_listening(port, timeout=30)
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                             timeout=30) as visitor:
                    for _ in range(10):
                        for n in range(1, 4):
                            await visitor.get(page(n), headers=HTTPS)
            finally:
                proc.send_signal(signal.SIGTERM)  # a graceful stop flushes the counts
                await proc.wait()
        checked = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "stoker", "check", "--origin", origin_url,
                             "--data-dir", str(tmp_path / "data"),
                             "--config", str(tmp_path / "stoker.toml"),
                             "--listen", f"127.0.0.1:{free_port()}",
                             "--admin-listen", f"127.0.0.1:{free_port()}"],
            env=stoker_env(), capture_output=True, text=True, timeout=60, check=False)
    (line,) = [line for line in checked.stdout.splitlines() if "warmed origins" in line]
    assert line.startswith(f"ok    warmed origins {SITE}: warm runs fill {SITE}, "
                           "https://www.example.test; warning: visitors arrive on "
                           "https://www.example.test (30 of 30 visits)"), checked.stdout
    assert checked.returncode == 0, checked.stdout


async def test_with_tls_cert_warm_visits_fill_the_https_entries_by_default(
        tmp_path: Path) -> None:
    tls = self_signed(tmp_path)
    site = SiteOrigin(4)
    port = free_port()
    async with site_origin(site) as origin_url:
        config = tmp_path / "stoker.toml"
        config.write_text(f'tls_cert = "{tls.cert}"\ntls_key = "{tls.key}"\n'
                          'refresh_interval = 0\nwarm_on_start = "never"\n')
        admin_port = free_port()
        with (tmp_path / "serve.log").open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "stoker", "serve", "--origin", origin_url,
                "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin_port}",
                "--data-dir", str(tmp_path / "data"), "--admin-token", TOKEN,
                "--config", str(config), env=stoker_env(), stdout=log,
                stderr=asyncio.subprocess.STDOUT)
            try:
                await wait_listening(admin_port, timeout=30)
                code, out = await warm_cli(f"http://127.0.0.1:{admin_port}", "--wait")
                assert code == 0, out
                async with httpx.AsyncClient(
                        base_url=f"https://127.0.0.1:{port}", timeout=30,
                        verify=ssl.create_default_context(cafile=tls.cert)) as visitor:
                    misses = await _misses(visitor, range(1, 5), {})
            finally:
                proc.send_signal(signal.SIGTERM)
                await proc.wait()
    assert misses == []  # on main: site_url defaulted to http://, every one a miss
    assert site.page_hits() == {page(n): 1 for n in range(1, 5)}


async def test_the_log_warns_once_per_change_of_the_finding(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="stoker.warm")
    async with site_origin(SiteOrigin(3)) as origin_url, \
            warming(origin_url, tmp_path / "data") as warm:
        async def visits(headers: dict[str, str]) -> None:
            for _ in range(10):
                for n in range(1, 4):
                    await warm.proxy.get(page(n), headers=headers)

        def said() -> list[str]:
            return [record.getMessage() for record in caplog.records
                    if "origin" in record.getMessage() or "differ" in record.getMessage()]

        await visits({"x-forwarded-proto": "https"})
        await warm.service.flush_stats()
        await visits({"x-forwarded-proto": "https"})
        await warm.service.flush_stats()  # the same finding, other figures: not again
        first = said()
        await visits({})  # visitors on site_url's origin too: a finding less
        await warm.service.flush_stats()
        later = said()[len(first):]
    assert [line.split(" (")[0] for line in first] == [
        "warmed entries and visitors' entries differ: visitors arrive on "
        "https://www.example.test",
        "warmed entries and visitors' entries differ: warm runs fill http://www.example.test, "
        "which no visitor read in the last 7 days"]
    assert len(later) == 1 and later[0].startswith(
        "warmed entries and visitors' entries differ: visitors arrive on "
        "https://www.example.test (60 of 90 visits)")
