"""Which request heads the HTTP/1.1 front may answer again from their bytes alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stoker.front.heads import KNOWN_HEAD_BYTES, UNREMEMBERED, rememberable

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
