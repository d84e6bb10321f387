"""Compression on demand, through a real origin and real servers.

An identity body of a compressible type is stored identity-only and
compressed once, when a client first accepts a coding (right after a miss
whose client accepts one); hits get the best coding the client accepts, with
its own ETag and Content-Length and ``Vary: Accept-Encoding`` on every form.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import brotli
import httpx
import pytest
from tests.integration.conftest import Origin, Proxy, running_proxy

from stoker.clock import FakeClock
from stoker.http.encoding import Encoded, compress, compressible
from stoker.proxy import codings
from stoker.purge.scope import PurgeScope

PAGE = b"<!doctype html><title>t</title>" + b"<p>Stoker compresses at store time.</p>\n" * 500
HTML = [("cache-control", "public, max-age=600"), ("etag", '"v1"'),
        ("content-type", "text/html; charset=utf-8")]


async def _raw(proxy: Proxy, path: str, **headers: str) -> tuple[httpx.Response, bytes]:
    """The response and its body bytes as sent (not decoded by the client)."""
    async with proxy.client.stream("GET", path, headers=headers) as response:
        body = b"".join([chunk async for chunk in response.aiter_raw()])
    return response, body


async def _stored(origin: Origin, proxy: Proxy, path: str, headers: list[tuple[str, str]],
                  body: bytes = PAGE) -> None:
    origin.app.set(path, headers=headers, body=body)
    miss, sent = await _raw(proxy, path, **{"accept-encoding": "gzip, br"})
    assert miss.status_code == 200 and sent == body
    key = proxy.stoker.pipeline.keying.key_for_url(f"{proxy.url}{path}")
    # the miss's client accepts a coding: the forms follow the response (poll for them)
    coded = proxy.stoker.settings.compress and len(body) <= (
        proxy.stoker.settings.body_file_threshold) and compressible(
        200, [(k.encode(), v.encode()) for k, v in headers], len(body))
    while not [entry for entry in await proxy.stoker.store.get(key)
               if entry.encoded or not coded]:
        await asyncio.sleep(0.005)  # bounded by the test timeout


@pytest.fixture
async def plain(origin: Origin, tmp_path: Path) -> AsyncIterator[Proxy]:
    async with running_proxy(origin.url, tmp_path / "data") as proxy:
        yield proxy


async def test_identity_origin_body_is_served_br_and_gzip(origin: Origin, plain: Proxy) -> None:
    await _stored(origin, plain, "/page", HTML)
    br, br_body = await _raw(plain, "/page", **{"accept-encoding": "gzip, deflate, br"})
    assert br.headers["content-encoding"] == "br"
    assert brotli.decompress(br_body) == PAGE
    assert br.headers["content-length"] == str(len(br_body)) and len(br_body) < len(PAGE) // 5
    assert br.headers["etag"] == '"v1-br"'
    assert br.headers["vary"] == "accept-encoding"
    assert br.headers["cache-status"].startswith("stoker; hit")
    gz, gz_body = await _raw(plain, "/page", **{"accept-encoding": "gzip"})
    assert gz.headers["content-encoding"] == "gzip" and gz.headers["etag"] == '"v1-gzip"'
    assert gzip.decompress(gz_body) == PAGE
    assert origin.app.count("/page") == 1


@pytest.mark.parametrize("accept", ["identity", "", "br;q=0, gzip;q=0", "deflate"])
async def test_identity_when_the_client_accepts_no_stored_coding(
        origin: Origin, plain: Proxy, accept: str) -> None:
    await _stored(origin, plain, "/id", HTML)
    response, body = await _raw(plain, "/id", **{"accept-encoding": accept})
    assert "content-encoding" not in response.headers
    assert body == PAGE and response.headers["content-length"] == str(len(PAGE))
    assert response.headers["etag"] == '"v1"'
    assert response.headers["vary"] == "accept-encoding"  # identity varies too


async def test_q_zero_refuses_br(origin: Origin, plain: Proxy) -> None:
    await _stored(origin, plain, "/q", HTML)
    response, body = await _raw(plain, "/q", **{"accept-encoding": "br;q=0, gzip;q=0.5"})
    assert response.headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == PAGE


async def test_existing_vary_is_merged(origin: Origin, plain: Proxy) -> None:
    await _stored(origin, plain, "/v", [*HTML, ("vary", "Accept-Language")])
    response, _ = await _raw(plain, "/v", **{"accept-encoding": "br"})
    assert response.headers["vary"] == "Accept-Language, accept-encoding"


@pytest.mark.parametrize("headers", [
    [("cache-control", "public, max-age=600, no-transform"), ("content-type", "text/html")],
    [("cache-control", "public, max-age=600"), ("content-type", "image/png")],
])
async def test_no_transform_and_other_types_are_untouched(
        origin: Origin, plain: Proxy, headers: list[tuple[str, str]]) -> None:
    await _stored(origin, plain, "/untouched", headers)
    response, body = await _raw(plain, "/untouched", **{"accept-encoding": "gzip, br"})
    assert response.headers["cache-status"].startswith("stoker; hit")
    assert "content-encoding" not in response.headers and "vary" not in response.headers
    assert body == PAGE


async def test_small_bodies_are_not_compressed(origin: Origin, plain: Proxy) -> None:
    await _stored(origin, plain, "/small", HTML, body=PAGE[:1024])
    response, body = await _raw(plain, "/small", **{"accept-encoding": "br"})
    assert "content-encoding" not in response.headers and body == PAGE[:1024]


async def test_an_origin_gzipped_body_is_stored_decoded(origin: Origin, plain: Proxy) -> None:
    zipped = gzip.compress(PAGE)
    await _stored(origin, plain, "/gz", [*HTML, ("content-encoding", "gzip")], body=zipped)
    identity, body = await _raw(plain, "/gz", **{"accept-encoding": "identity"})
    assert "content-encoding" not in identity.headers and body == PAGE
    assert identity.headers["etag"] == 'W/"v1"'  # not the bytes the origin tagged
    br, br_body = await _raw(plain, "/gz", **{"accept-encoding": "br, gzip"})
    assert br.headers["content-encoding"] == "br" and brotli.decompress(br_body) == PAGE
    assert br.headers["etag"] == 'W/"v1-br"'
    assert origin.app.count("/gz") == 1


async def test_a_corrupt_gzip_body_reaches_its_client_and_is_not_stored(
        origin: Origin, plain: Proxy) -> None:
    broken = gzip.compress(PAGE)[:-20] + b"not the end of a gzip member"
    origin.app.set("/broken", headers=[*HTML, ("content-encoding", "gzip")], body=broken)
    _, body = await _raw(plain, "/broken", **{"accept-encoding": "gzip"})
    assert body == broken  # the client gets what the origin sent
    second, _ = await _raw(plain, "/broken", **{"accept-encoding": "gzip"})
    assert "fwd=uri-miss" in second.headers["cache-status"]
    assert origin.app.count("/broken") == 2


async def test_a_coding_stoker_cannot_decode_is_kept_for_clients_with_the_same_offer(
        origin: Origin, plain: Proxy) -> None:
    origin.app.set("/deflated", headers=[*HTML, ("content-encoding", "deflate"),
                                         ("vary", "Accept-Encoding")], body=b"deflated bytes")
    await _raw(plain, "/deflated", **{"accept-encoding": "gzip, deflate"})
    same, body = await _raw(plain, "/deflated", **{"accept-encoding": "gzip"})  # one offer
    assert same.headers["cache-status"].startswith("stoker; hit") and body == b"deflated bytes"
    assert same.headers["content-encoding"] == "deflate"
    other, _ = await _raw(plain, "/deflated", **{"accept-encoding": "identity"})
    assert "fwd=vary-miss" in other.headers["cache-status"]


async def test_a_decoded_body_over_max_object_bytes_is_not_stored(
        origin: Origin, tmp_path: Path) -> None:
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))  # 8 MiB decoded, 8 KiB sent
    origin.app.set("/bomb", headers=[*HTML, ("content-encoding", "gzip")], body=bomb)
    async with running_proxy(origin.url, tmp_path / "data", max_object_bytes="1MiB",
                             max_expansion_ratio="100000") as proxy:  # (it would stop first)
        _, body = await _raw(proxy, "/bomb", **{"accept-encoding": "gzip"})
        again, _ = await _raw(proxy, "/bomb", **{"accept-encoding": "gzip"})
    assert body == bomb and "fwd=uri-miss" in again.headers["cache-status"]


async def test_etag_and_304_are_per_encoding(origin: Origin, plain: Proxy) -> None:
    await _stored(origin, plain, "/c", HTML)
    br_match = {"accept-encoding": "br", "if-none-match": '"v1-br"'}
    not_modified, _ = await _raw(plain, "/c", **br_match)
    assert not_modified.status_code == 304
    assert not_modified.headers["etag"] == '"v1-br"'
    assert not_modified.headers["vary"] == "accept-encoding"
    gzip_client, body = await _raw(plain, "/c", **{"accept-encoding": "gzip",
                                                   "if-none-match": '"v1-br"'})
    assert gzip_client.status_code == 200 and gzip.decompress(body) == PAGE
    identity_client, body = await _raw(plain, "/c", **{"accept-encoding": "identity",
                                                       "if-none-match": '"v1-br"'})
    assert identity_client.status_code == 200 and body == PAGE
    identity_match, _ = await _raw(plain, "/c", **{"accept-encoding": "identity",
                                                   "if-none-match": '"v1"'})
    assert identity_match.status_code == 304


async def test_range_is_served_from_identity(origin: Origin, plain: Proxy) -> None:
    await _stored(origin, plain, "/r", HTML)
    response, body = await _raw(plain, "/r", **{"accept-encoding": "br", "range": "bytes=0-9"})
    assert response.status_code == 206 and body == PAGE[:10]
    assert "content-encoding" not in response.headers and response.headers["etag"] == '"v1"'


async def test_bodies_in_files_stay_identity(origin: Origin, tmp_path: Path) -> None:
    async with running_proxy(origin.url, tmp_path / "data",
                             body_file_threshold="4096") as proxy:
        await _stored(origin, proxy, "/big", HTML)
        response, body = await _raw(proxy, "/big", **{"accept-encoding": "br"})
        assert response.headers["cache-status"].startswith("stoker; hit")
        assert "content-encoding" not in response.headers and body == PAGE


async def test_compress_setting_off(origin: Origin, tmp_path: Path) -> None:
    async with running_proxy(origin.url, tmp_path / "data", compress="false") as proxy:
        await _stored(origin, proxy, "/off", HTML)
        response, body = await _raw(proxy, "/off", **{"accept-encoding": "br"})
        assert "content-encoding" not in response.headers and body == PAGE


async def test_encodings_survive_a_restart(origin: Origin, tmp_path: Path,
                                           free_tcp_port: int) -> None:
    data = tmp_path / "data"
    async with running_proxy(origin.url, data, port=free_tcp_port) as first:
        await _stored(origin, first, "/l2", HTML)
    async with running_proxy(origin.url, data, port=free_tcp_port) as second:
        response, body = await _raw(second, "/l2", **{"accept-encoding": "br"})
    assert response.headers["content-encoding"] == "br" and brotli.decompress(body) == PAGE
    assert origin.app.count("/l2") == 1


@pytest.mark.parametrize(("not_modified", "coded"), [
    ([("cache-control", "public, max-age=600")], "br"),
    ([("cache-control", "public, max-age=600, no-transform")], None),
])
async def test_revalidation_keeps_codings_unless_no_transform_arrives(
        origin: Origin, tmp_path: Path, not_modified: list[tuple[str, str]],
        coded: str | None) -> None:
    clock = FakeClock(auto_advance=False)
    async with running_proxy(origin.url, tmp_path / "data", clock=clock) as proxy:
        await _stored(origin, proxy, "/reval", HTML)
        origin.app.set("/reval", headers=[*not_modified, ("etag", '"v1"')], body=b"",
                       not_modified_etag='"v1"')
        clock.advance(700)  # stale: the next request revalidates and gets 304
        await _raw(proxy, "/reval", **{"accept-encoding": "identity"})
        response, body = await _raw(proxy, "/reval", **{"accept-encoding": "br"})
    assert origin.app.count("/reval") == 2
    assert response.headers["cache-status"].startswith("stoker; hit")
    assert response.headers.get("content-encoding") == coded
    assert (brotli.decompress(body) if coded else body) == PAGE


async def _entry(proxy: Proxy, path: str) -> list[tuple[bool, tuple[str, ...]]]:
    """(codings due, codings made) of what L1 and, after a flush, L2 hold for ``path``."""
    key = proxy.stoker.pipeline.keying.key_for_url(f"{proxy.url}{path}")
    await proxy.stoker.store.flush()
    return [(entry.codings_due, entry.codings)
            for entry in [*(proxy.stoker.store.get_l1(key) or []),
                          *await proxy.stoker.store.get_l2(key)]]


async def test_an_identity_miss_compresses_nothing_and_the_next_br_request_is_a_br_hit(
        origin: Origin, plain: Proxy) -> None:
    origin.app.set("/lazy", headers=HTML, body=PAGE)
    miss, body = await _raw(plain, "/lazy", **{"accept-encoding": "identity"})
    assert body == PAGE and "content-encoding" not in miss.headers
    await plain.stoker.pipeline.drain()
    assert await _entry(plain, "/lazy") == [(True, ()), (True, ())]  # L1, L2: not made
    br, br_body = await _raw(plain, "/lazy", **{"accept-encoding": "br"})
    assert br.headers["content-encoding"] == "br" and brotli.decompress(br_body) == PAGE
    assert br.headers["cache-status"].startswith("stoker; hit")
    gz, gz_body = await _raw(plain, "/lazy", **{"accept-encoding": "gzip"})
    assert gz.headers["content-encoding"] == "gzip" and gzip.decompress(gz_body) == PAGE
    assert await _entry(plain, "/lazy") == [(False, ("br", "gzip")), (False, ("br", "gzip"))]
    assert origin.app.count("/lazy") == 1


async def test_an_identity_hit_of_an_entry_not_compressed_yet_varies(
        origin: Origin, plain: Proxy) -> None:
    origin.app.set("/idv", headers=HTML, body=PAGE)
    await _raw(plain, "/idv", **{"accept-encoding": "identity"})
    hit, body = await _raw(plain, "/idv", **{"accept-encoding": "identity"})
    assert hit.headers["cache-status"].startswith("stoker; hit") and body == PAGE
    assert hit.headers["vary"] == "accept-encoding" and hit.headers["etag"] == '"v1"'


async def test_concurrent_requests_compress_an_entry_once(
        origin: Origin, plain: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []

    def counting(body: bytes) -> Encoded:
        made.append(len(body))
        return compress(body)

    monkeypatch.setattr(codings, "compress", counting)
    origin.app.set("/once", headers=HTML, body=PAGE)
    await _raw(plain, "/once", **{"accept-encoding": "identity"})
    answers = await asyncio.gather(*[_raw(plain, "/once", **{"accept-encoding": accept})
                                     for accept in ["br", "gzip", "br, gzip"] * 4])
    assert [r.headers["content-encoding"] for r, _ in answers] == ["br", "gzip", "br"] * 4
    assert made == [len(PAGE)]
    assert origin.app.count("/once") == 1


async def test_a_purge_while_compressing_is_not_undone(
        origin: Origin, plain: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()

    def held(body: bytes) -> Encoded:  # fault: a compression that takes until released
        started.set()
        release.wait(30)
        return compress(body)

    monkeypatch.setattr(codings, "compress", held)
    origin.app.set("/purged", headers=HTML, body=PAGE)
    await _raw(plain, "/purged", **{"accept-encoding": "identity"})
    waiting = asyncio.ensure_future(_raw(plain, "/purged", **{"accept-encoding": "br"}))
    await asyncio.to_thread(started.wait, 30)
    await plain.stoker.purger.purge(PurgeScope(urls=(f"{plain.url}/purged",)))
    release.set()
    response, body = await waiting  # asked before the purge: answered as a miss in flight is
    assert response.headers["content-encoding"] == "br" and brotli.decompress(body) == PAGE
    await plain.stoker.pipeline.drain()
    assert await _entry(plain, "/purged") == []
    after, _ = await _raw(plain, "/purged", **{"accept-encoding": "br"})
    assert after.headers["cache-status"].startswith("stoker; fwd=uri-miss")
    assert origin.app.count("/purged") == 2
