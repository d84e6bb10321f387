"""What ``maxmemory-policy`` may evict of Stoker's Redis keys, in words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.backends.redis.eviction import SAFE, UNSAFE, WARN, read_policy, verdict

POLICIES = ("noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru",
            "volatile-lfu", "volatile-random", "volatile-ttl")


@given(st.sampled_from(POLICIES), st.integers(min_value=1, max_value=1 << 40))
def test_only_noeviction_is_safe_once_a_maxmemory_is_set(policy: str, maxmemory: int) -> None:
    found = verdict(policy, maxmemory)
    assert found.level == (SAFE if policy == "noeviction" else WARN)
    assert policy in found.text


@given(st.sampled_from(POLICIES))
def test_without_maxmemory_nothing_is_evicted(policy: str) -> None:
    assert verdict(policy, 0).level == SAFE


def test_the_words_name_what_is_at_risk_and_what_stays() -> None:
    allkeys = verdict("allkeys-lru", 1 << 20).text
    assert "tag (t:) sets" in allkeys and "indexes (u, x, s)" in allkeys
    assert "noeviction is safe" in allkeys and "cache version" not in allkeys
    volatile = verdict("volatile-ttl", 1 << 20).text
    assert "tag (t:) sets" in volatile and "the indexes (u, x, s) stay" in volatile
    assert "never served by the nodes that heard of it" in volatile
    assert verdict("some-new-policy", 1 << 20).level == UNSAFE
    unread = verdict(None, None)
    assert unread.level == WARN and "could not be read" in unread.text


class Refusing:
    async def config_get(self, pattern: str) -> dict[bytes, bytes]:
        from redis.exceptions import ResponseError

        raise ResponseError("unknown command 'CONFIG'")


class Answering:
    async def config_get(self, pattern: str) -> dict[bytes, bytes]:
        return {b"maxmemory": b"1024", b"maxmemory-policy": b"allkeys-lru",
                b"maxmemory-samples": b"5"}


@pytest.mark.parametrize(("client", "expected"), [(Refusing(), None),
                                                  (Answering(), ("allkeys-lru", 1024))])
async def test_a_server_refusing_config_is_not_read(client: object, expected: object) -> None:
    assert await read_policy(client) == expected  # type: ignore[arg-type]
