"""HTTP/2 on the public listener: h2c with prior knowledge, and TLS with ALPN."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import httpx
from tests.conftest import serving
from tests.integration.conftest import Origin

from stoker.adapters.asgi_proxy import ProxyApp
from stoker.app.stoker import Stoker
from stoker.config.settings import SettingsError, require_tls_files, settings_from
from stoker.server.listeners import Tls

CACHEABLE = [("cache-control", "max-age=60")]


def self_signed(directory: Path) -> Tls:
    """A throwaway certificate for 127.0.0.1 (openssl from the system)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return Tls(cert, key)


async def test_h2c_with_prior_knowledge(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/p", headers=CACHEABLE, body=b"page")
    stoker = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(tmp_path)}))
    try:
        async with serving(ProxyApp(stoker.pipeline), kind="granian") as url, \
                httpx.AsyncClient(base_url=url, http1=False, http2=True) as client:
            first = await client.get("/p")
            second = await client.get("/p")
    finally:
        await stoker.close()
    assert first.http_version == second.http_version == "HTTP/2"
    assert second.text == "page" and "; hit" in second.headers["cache-status"]


async def test_h2_cookie_crumbs_are_one_line_for_the_origin_and_the_variant(
        origin: Origin, tmp_path: Path) -> None:
    """RFC 9113 §8.2.3: an HTTP/2 client may send each cookie as a field of its own; the
    origin (HTTP/1.1: one Cookie line) gets them joined with "; ", and the variant they
    select is the one the joined line selects."""
    origin.app.set("/c", headers=[*CACHEABLE, ("vary", "cookie")], body=b"crumbs")
    stoker = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(tmp_path)}))
    try:
        async with serving(ProxyApp(stoker.pipeline), kind="granian") as url, \
                httpx.AsyncClient(base_url=url, http1=False, http2=True) as client:
            crumbs = await client.get("/c", headers=[("cookie", "a=1"), ("cookie", "b=2")])
            joined = await client.get("/c", headers={"cookie": "a=1; b=2"})
    finally:
        await stoker.close()
    assert crumbs.http_version == "HTTP/2" and crumbs.text == "crumbs"
    assert [headers["cookie"] for _, _, headers in origin.app.requests] == ["a=1; b=2"]
    assert "; hit" in joined.headers["cache-status"]


async def test_tls_with_alpn_speaks_http2_and_keys_as_https(origin: Origin,
                                                            tmp_path: Path) -> None:
    tls = self_signed(tmp_path)
    origin.app.set("/s", headers=CACHEABLE, body=b"secure")
    stoker = await Stoker.open(settings_from({"origin": origin.url, "data_dir": str(tmp_path)}))
    try:
        async with serving(ProxyApp(stoker.pipeline), kind="granian", tls=tls) as url, \
                httpx.AsyncClient(base_url=url, http2=True,
                                  verify=ssl.create_default_context(cafile=tls.cert)) as client:
            first = await client.get("/s")
            second = await client.get("/s")
        _, _, forwarded = origin.app.requests[-1]
    finally:
        await stoker.close()
    assert url.startswith("https://")
    assert first.http_version == "HTTP/2" and "; hit" in second.headers["cache-status"]
    assert forwarded["x-forwarded-proto"] == "https"


def test_tls_settings_go_together(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    for values in ({"tls_cert": str(cert)}, {"tls_cert": str(cert), "tls_key": "/nope"}):
        try:
            require_tls_files(settings_from(values))
        except SettingsError as error:
            assert "tls_" in str(error)
        else:
            raise AssertionError(f"{values} accepted")
