"""Which request heads the HTTP/1.1 front may answer again from their bytes alone, and
when it remembers them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.server.front import heads as front_heads
from stoker.server.front.heads import (
    KNOWN_HEAD_BYTES,
    UNREMEMBERED,
    KnownHead,
    KnownHeads,
    rememberable,
)

HEAD = b"GET /a HTTP/1.1\r\nHost: site.test\r\n\r\n"
PLAIN = [(b"host", b"site.test")]
NAMES = st.sampled_from([b"host", b"accept", b"accept-encoding", b"user-agent",
                         *sorted(UNREMEMBERED)])


def test_one_whole_head_is_remembered() -> None:
    assert rememberable(HEAD, PLAIN)


def test_anything_but_exactly_one_head_is_not() -> None:
    assert not rememberable(HEAD + HEAD, PLAIN)  # pipelined
    assert not rememberable(HEAD[:-2], PLAIN)  # incomplete
    assert not rememberable(HEAD + b"body", PLAIN)  # a body in the same read


def test_a_long_head_is_not() -> None:
    padding = b"x" * (KNOWN_HEAD_BYTES - len(HEAD) + 1)
    long = HEAD[:-2] + b"User-Agent: " + padding + b"\r\n\r\n"
    assert not rememberable(long, [*PLAIN, (b"user-agent", padding)])
    assert rememberable(HEAD[:-2] + b"A: b\r\n\r\n", [*PLAIN, (b"a", b"b")])


@given(st.lists(NAMES, max_size=6))
def test_framing_forwarding_and_upgrade_headers_keep_a_head_unremembered(
        names: list[bytes]) -> None:
    headers = [(name, b"v") for name in names]
    assert rememberable(HEAD, headers) == UNREMEMBERED.isdisjoint(names)


def known(data: bytes) -> KnownHead:
    return KnownHead("1", data.decode(), [], close=False)


def remember(heads: KnownHeads, data: bytes) -> None:
    """What the front does after each hit answered from one whole read."""
    if heads.second_time(data):
        heads.keep(data, known(data))


def test_a_head_is_remembered_the_second_time_it_is_answered() -> None:
    heads = KnownHeads()
    remember(heads, HEAD)
    assert HEAD not in heads
    remember(heads, HEAD)
    assert heads[HEAD] == known(HEAD)


def test_a_full_table_is_forgotten_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(front_heads, "KNOWN_HEADS", 3)
    heads = KnownHeads()
    many = [HEAD.replace(b"/a", b"/%d" % i) for i in range(4)]
    for data in many:
        remember(heads, data)
        remember(heads, data)
    assert list(heads) == [many[3]]


@given(st.lists(st.integers(0, 40), max_size=300))
def test_the_table_and_its_sightings_stay_bounded(picks: list[int]) -> None:
    heads = KnownHeads()
    for pick in picks:
        data = b"GET /%d HTTP/1.1\r\n\r\n" % pick
        remember(heads, data)
        assert len(heads) <= front_heads.KNOWN_HEADS
        assert all(heads[key].primary == key.decode() for key in heads)
