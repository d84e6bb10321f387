"""The fresh-hit fast path, driven directly with hand-built ASGI scopes.

Entries are stored through the real pipeline from a real origin; each test
then asks the fast path and checks it answers exactly what the pipeline
would (same key, same headers), or declines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.integration.conftest import Origin

from stoker.adapters.asgi_reply import answer
from stoker.adapters.hot_path import HotPath
from stoker.app.stoker import Stoker
from stoker.asgi import Message
from stoker.clock import FakeClock
from stoker.config.rules import Rule
from stoker.config.settings import settings_from

CACHEABLE = [("cache-control", "max-age=60")]
TRUSTED_PEER = ("127.0.0.1", 50000)
STRANGER = ("203.0.113.9", 50000)


@dataclass
class Stack:
    stoker: Stoker
    hot: HotPath
    clock: FakeClock


@pytest.fixture
async def stack(origin: Origin, tmp_path: Path) -> AsyncIterator[Stack]:
    clock = FakeClock(auto_advance=False)
    rules = (Rule(path="/tracked", ignore_query=("utm_*",)),)
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path)}, rules)
    stoker = await Stoker.open(settings, clock=clock)
    try:
        yield Stack(stoker, HotPath(stoker.pipeline), clock)
    finally:
        await stoker.close()


def scope(path: str, *, query: bytes = b"", scheme: str = "http", raw_path: bool = True,
          headers: tuple[tuple[bytes, bytes], ...] = (), client: tuple[str, int] = TRUSTED_PEER,
          host: bytes = b"site.test") -> Message:
    built: dict[str, Any] = {
        "type": "http", "method": "GET", "scheme": scheme, "path": path, "query_string": query,
        "headers": [(b"host", host), *headers], "client": client, "http_version": "1.1"}
    if raw_path:
        built["raw_path"] = path.encode()
    return built


class Capture:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return list(self.messages[0]["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])


async def no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def through_pipeline(stack: Stack, request: Message) -> Capture:
    sent = Capture()
    await answer(stack.stoker.pipeline, request, no_body, sent)
    return sent


async def through_hot_path(stack: Stack, request: Message) -> Capture | None:
    sent = Capture()
    return sent if await stack.hot.try_serve(request, sent) else None


async def test_without_raw_path_each_path_gets_its_own_page(origin: Origin, stack: Stack) -> None:
    origin.app.set("/a", headers=CACHEABLE, body=b"page a")
    origin.app.set("/b", headers=CACHEABLE, body=b"page b")
    await through_pipeline(stack, scope("/a", raw_path=False))
    await through_pipeline(stack, scope("/b", raw_path=False))
    served_a = await through_hot_path(stack, scope("/a", raw_path=False))
    served_b = await through_hot_path(stack, scope("/b", raw_path=False))
    assert served_a is not None and served_a.body == b"page a"
    assert served_b is not None and served_b.body == b"page b"


async def test_https_never_gets_the_cached_http_redirect(origin: Origin, stack: Stack) -> None:
    origin.app.set("/r", status=301, headers=[*CACHEABLE, ("location", "https://site.test/r")],
                   body=b"")
    first = await through_pipeline(stack, scope("/r", scheme="http"))
    assert first.status == 301
    assert await through_hot_path(stack, scope("/r", scheme="http")) is not None
    assert await through_hot_path(stack, scope("/r", scheme="https")) is None
    forwarded = scope("/r", headers=((b"x-forwarded-proto", b"https"),))
    assert await through_hot_path(stack, forwarded) is None
    rfc7239 = scope("/r", headers=((b"forwarded", b"for=1.2.3.4;proto=https"),))
    assert await through_hot_path(stack, rfc7239) is None


async def test_forwarded_proto_from_a_stranger_is_ignored(origin: Origin, stack: Stack) -> None:
    origin.app.set("/s", headers=CACHEABLE, body=b"plain")
    await through_pipeline(stack, scope("/s", scheme="http", client=STRANGER))
    spoofed = scope("/s", headers=((b"x-forwarded-proto", b"https"),), client=STRANGER)
    served = await through_hot_path(stack, spoofed)
    assert served is not None and served.body == b"plain"  # still the http entry


async def test_trusted_https_entry_is_served_to_trusted_https(origin: Origin,
                                                              stack: Stack) -> None:
    origin.app.set("/t", headers=CACHEABLE, body=b"secure")
    forwarded = scope("/t", headers=((b"x-forwarded-proto", b"https"),))
    await through_pipeline(stack, forwarded)
    assert await through_hot_path(stack, scope("/t", scheme="http")) is None
    served = await through_hot_path(stack, scope("/t", scheme="https"))
    assert served is not None and served.body == b"secure"


async def test_query_string_is_part_of_the_key_in_canonical_order(origin: Origin,
                                                                  stack: Stack) -> None:
    origin.app.set("/q", headers=CACHEABLE, body=b"q")
    await through_pipeline(stack, scope("/q", query=b"a=1&b=2"))
    assert await through_hot_path(stack, scope("/q", query=b"b=2&a=1")) is not None
    assert await through_hot_path(stack, scope("/q", query=b"a=2")) is None
    assert await through_hot_path(stack, scope("/q")) is None


async def test_ignore_query_rule_applies_on_the_fast_path(origin: Origin, stack: Stack) -> None:
    origin.app.set("/tracked", headers=CACHEABLE, body=b"tracked")
    await through_pipeline(stack, scope("/tracked"))
    served = await through_hot_path(stack, scope("/tracked", query=b"utm_source=mail"))
    assert served is not None and served.body == b"tracked"
    assert await through_hot_path(stack, scope("/tracked", query=b"page=2")) is None


async def test_varied_entry_takes_the_pipeline(origin: Origin, stack: Stack) -> None:
    origin.app.set("/v", headers=[*CACHEABLE, ("vary", "accept-language")], body=b"v")
    await through_pipeline(stack, scope("/v", headers=((b"accept-language", b"de"),)))
    assert await through_hot_path(stack, scope("/v", headers=((b"accept-language", b"fr"),))) \
        is None


async def test_fast_path_answer_equals_the_pipeline_answer(origin: Origin, stack: Stack) -> None:
    origin.app.set("/same", headers=[*CACHEABLE, ("age", "7")], body=b"same")
    await through_pipeline(stack, scope("/same"))
    stack.clock.advance(3.5)
    fast = await through_hot_path(stack, scope("/same"))
    slow = await through_pipeline(stack, scope("/same"))
    assert fast is not None
    assert (fast.status, fast.headers, fast.body) == (slow.status, slow.headers, slow.body)
    assert (b"age", b"10") in fast.headers
    assert (b"via", b"1.1 stoker") in fast.headers


async def test_age_is_never_negative_when_the_clock_steps_back(origin: Origin,
                                                               stack: Stack) -> None:
    origin.app.set("/back", headers=CACHEABLE, body=b"back")
    await through_pipeline(stack, scope("/back"))
    stack.clock.advance(-5)
    fast = await through_hot_path(stack, scope("/back"))
    assert fast is not None
    assert (b"age", b"0") in fast.headers


@pytest.mark.parametrize(("accept", "coding"), [
    (b"gzip, deflate, br", b"br"), (b"gzip", b"gzip"), (b"identity", None), (None, None)])
async def test_fast_path_and_pipeline_agree_on_codings(origin: Origin, stack: Stack,
                                                       accept: bytes | None,
                                                       coding: bytes | None) -> None:
    origin.app.set("/enc", headers=[*CACHEABLE, ("content-type", "text/html")],
                   body=b"<p>compressible</p>" * 200)
    headers = () if accept is None else ((b"accept-encoding", accept),)
    await through_pipeline(stack, scope("/enc", headers=headers))
    await stack.stoker.pipeline.drain()  # a miss accepting a coding: its forms follow
    fast = await through_hot_path(stack, scope("/enc", headers=headers))
    slow = await through_pipeline(stack, scope("/enc", headers=headers))
    assert fast is not None
    assert (fast.status, fast.headers, fast.body) == (slow.status, slow.headers, slow.body)
    assert (b"vary", b"accept-encoding") in fast.headers
    assert dict(fast.headers).get(b"content-encoding") == coding


async def test_a_coding_not_made_yet_is_left_to_the_pipeline(origin: Origin,
                                                              stack: Stack) -> None:
    origin.app.set("/due", headers=[*CACHEABLE, ("content-type", "text/html")],
                   body=b"<p>compressible</p>" * 200)
    await through_pipeline(stack, scope("/due"))  # an identity miss: nothing compressed
    br = scope("/due", headers=((b"accept-encoding", b"br"),))
    assert await through_hot_path(stack, br) is None
    slow = await through_pipeline(stack, br)
    fast = await through_hot_path(stack, br)
    assert fast is not None
    assert (fast.status, fast.headers, fast.body) == (slow.status, slow.headers, slow.body)
    assert dict(fast.headers)[b"content-encoding"] == b"br"
    assert origin.app.count("/due") == 1


async def test_an_l2_hit_is_served_by_the_fast_path_as_the_pipeline_would(
        origin: Origin, tmp_path: Path) -> None:
    clock = FakeClock(auto_advance=False)
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path),
                              "l1_max_bytes": 0})  # L1 holds nothing: every hit is from L2
    origin.app.set("/l2", headers=CACHEABLE, body=b"from disk")
    stoker = await Stoker.open(settings, clock=clock)
    try:
        stack = Stack(stoker, HotPath(stoker.pipeline), clock)
        await through_pipeline(stack, scope("/l2"))
        await stoker.store.flush()
        key = stoker.pipeline.keying.key_for_url("http://site.test/l2")
        assert stoker.store.get_l1(key) is None
        fast = await through_hot_path(stack, scope("/l2"))
        slow = await through_pipeline(stack, scope("/l2"))
    finally:
        await stoker.close()
    assert fast is not None and fast.body == b"from disk"
    assert (fast.status, fast.headers, fast.body) == (slow.status, slow.headers, slow.body)
    assert origin.app.count("/l2") == 1


async def test_a_miss_reads_l2_once(origin: Origin, stack: Stack) -> None:
    from stoker.adapters.asgi_proxy import ProxyApp

    origin.app.set("/once", headers=CACHEABLE, body=b"once")
    reads: list[str] = []
    l2 = stack.stoker.l2
    real_get = l2.get

    async def counting_get(primary_key: str) -> list[Any]:
        reads.append(primary_key)
        return await real_get(primary_key)

    l2.get = counting_get  # type: ignore[method-assign]
    sent = Capture()
    await ProxyApp(stack.stoker.pipeline)(scope("/once"), no_body, sent)
    assert sent.status == 200 and sent.body == b"once"
    assert len(reads) == 1  # the fast path's read is handed to the pipeline


async def test_the_memo_keeps_its_share_of_memory_oldest_key_out_first(
        origin: Origin, tmp_path: Path) -> None:
    settings = settings_from({"origin": origin.url, "data_dir": str(tmp_path / "small"),
                              "l1_max_bytes": "4MiB"})
    stoker = await Stoker.open(settings, clock=FakeClock(auto_advance=False))
    try:
        limit = stoker.pipeline.config.memory.memo_keys
        hot = HotPath(stoker.pipeline)
        paths = [f"/m/{i}" for i in range(limit + 20)]
        for path in paths:
            origin.app.set(path, headers=CACHEABLE, body=path.encode())
            await answer(stoker.pipeline, scope(path), no_body, Capture())
            sent = Capture()
            assert await hot.try_serve(scope(path), sent) and sent.body == path.encode()
            assert hot.memoised <= limit
        assert hot.memoised == limit
        again = Capture()  # its key left the memo first; it is computed again, the same
        assert await hot.try_serve(scope(paths[0]), again) and again.body == b"/m/0"
    finally:
        await stoker.close()
