"""gzip and br answers from a real origin: decoding for storing is bounded, and a body
too large to keep inline keeps the origin's compressed bytes.

A decompression bomb (a 405-byte br body of 512 MiB, a gzip one of 128 MiB) is never
decoded past ``max_expansion_ratio`` / ``max_decoded_body``: it is stored as the origin
sent it, in its coding, and hits that accept the coding get those bytes.  A real page
whose decoded form goes to a file is stored decoded with the origin's gzip bytes beside
it: a gzip client's hit is the ~150 KB the origin sent, not the decoded MiB.
"""

from __future__ import annotations

import gzip
import random
import string
import zlib
from pathlib import Path

import brotli
import httpx
import pytest
from tests.integration.conftest import Origin, Proxy, running_proxy

HTML = [("cache-control", "public, max-age=600"), ("etag", '"v1"'),
        ("content-type", "text/html; charset=utf-8")]
ZEROS = b"\0" * (1 << 20)


def br_bomb(mib: int) -> bytes:
    compressor = brotli.Compressor(quality=3, lgwin=24)
    return b"".join([*(compressor.process(ZEROS) for _ in range(mib)), compressor.finish()])


def gzip_bomb(mib: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(compressor.compress(ZEROS) for _ in range(mib)), compressor.flush()])


def page(size: int) -> bytes:
    """HTML of ``size`` bytes that compresses as real pages do (~5x)."""
    rng = random.Random(7)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))
                  for _ in range(400)]
    lines, length = [], 0
    while length < size:
        line = (f'<li class="post"><a href="/posts/{rng.randint(1, 99999)}">'
                f'{" ".join(rng.choices(vocabulary, k=6))}</a></li>\n')
        lines.append(line)
        length += len(line)
    return "".join(lines).encode()[:size]


async def raw(proxy: Proxy, path: str, coding: str) -> tuple[httpx.Response, bytes]:
    async with proxy.client.stream("GET", path, headers={"accept-encoding": coding}) as reply:
        return reply, b"".join([chunk async for chunk in reply.aiter_raw()])


def stored_bytes(data_dir: Path) -> int:
    return sum(path.stat().st_size for path in data_dir.rglob("*") if path.is_file())


@pytest.mark.parametrize(("coding", "bomb"), [("br", br_bomb(512)), ("gzip", gzip_bomb(128))],
                         ids=["br-512MiB", "gzip-128MiB"])
async def test_a_bomb_is_stored_as_sent_and_hits_get_its_bytes(
        origin: Origin, tmp_path: Path, coding: str, bomb: bytes) -> None:
    origin.app.set("/bomb", headers=[*HTML, ("content-encoding", coding)], body=bomb)
    data = tmp_path / "data"
    async with running_proxy(origin.url, data) as proxy:
        miss, sent = await raw(proxy, "/bomb", coding)
        hit, again = await raw(proxy, "/bomb", f"{coding}, identity")
        await proxy.stoker.store.flush()
        [entry] = await proxy.stoker.store.get(
            proxy.stoker.pipeline.keying.key_for_url(f"{proxy.url}/bomb"))
        assert stored_bytes(data) < 4 * 1024 * 1024  # not the decoded hundreds of MiB
    assert sent == bomb and miss.headers["content-encoding"] == coding
    assert hit.headers["cache-status"].startswith("stoker; hit")
    assert again == bomb and hit.headers["content-encoding"] == coding
    assert "accept-encoding" in hit.headers["vary"].lower()
    assert entry.body_size == len(bomb) and "accept-encoding" in entry.vary
    assert origin.app.count("/bomb") == 1


async def test_the_decoded_size_bound_applies_without_a_high_ratio(
        origin: Origin, tmp_path: Path) -> None:
    coded = gzip.compress(page(3 * 1024 * 1024))
    origin.app.set("/big", headers=[*HTML, ("content-encoding", "gzip")], body=coded)
    async with running_proxy(origin.url, tmp_path / "data", max_decoded_body="1MiB") as proxy:
        await raw(proxy, "/big", "gzip")
        again, sent = await raw(proxy, "/big", "gzip")  # a hit, or the flight's entry
    assert origin.app.count("/big") == 1
    assert sent == coded and again.headers["content-encoding"] == "gzip"


@pytest.mark.parametrize("server", ["stoker", "granian"])
async def test_a_page_stored_in_a_file_keeps_the_origins_gzip(
        origin: Origin, tmp_path: Path, server: str) -> None:
    body = page(1024 * 1024)
    coded = gzip.compress(body)
    assert 150_000 < len(coded) < 256 * 1024  # decoded goes to a file; the gzip fits inline
    origin.app.set("/page", headers=[*HTML, ("content-encoding", "gzip")], body=coded)
    async with running_proxy(origin.url, tmp_path / "data", kind=server) as proxy:
        await raw(proxy, "/page", "gzip, br")
        gzip_hit, gzip_sent = await raw(proxy, "/page", "gzip, br")
        identity_hit, identity_sent = await raw(proxy, "/page", "identity")
        br_only, br_sent = await raw(proxy, "/page", "br")
    assert gzip_hit.headers["cache-status"].startswith("stoker; hit")
    assert gzip_sent == coded and gzip_hit.headers["content-encoding"] == "gzip"
    assert gzip_hit.headers["content-length"] == str(len(coded))
    assert gzip_hit.headers["vary"] == "accept-encoding"
    assert identity_hit.headers["cache-status"].startswith("stoker; hit")
    assert identity_sent == body and "content-encoding" not in identity_hit.headers
    assert br_only.headers["cache-status"].startswith("stoker; hit") and br_sent == body
    assert origin.app.count("/page") == 1
