"""Codecs: round trips, and a pickle is unpickled only when signed with the secret."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.functions.codecs import SIGNATURE, JsonCodec, MsgpackCodec, PickleCodec, Unreadable

SECRET = b"s" * 32
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text()
                      | st.floats(allow_nan=False, allow_infinity=False),
                      lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(), inner, max_size=4), max_leaves=10)


@given(VALUES)
def test_every_codec_round_trips_json_values(value: Any) -> None:
    for codec in (JsonCodec(), MsgpackCodec(), PickleCodec(SECRET)):
        assert codec.decode(codec.encode(value)) == value


def test_json_refuses_what_it_cannot_store_with_a_way_out() -> None:
    with pytest.raises(TypeError, match="codec="):
        JsonCodec().encode(object())


def test_pickle_keeps_python_objects() -> None:
    codec = PickleCodec(SECRET)
    assert codec.decode(codec.encode({(1, 2): {3}})) == {(1, 2): {3}}


class Boom:
    def __reduce__(self) -> Any:
        return (exec, ("raise SystemExit('unpickled!')",))


@pytest.mark.parametrize("body", [
    pickle.dumps(Boom()),  # unsigned
    b"x" * SIGNATURE + pickle.dumps(Boom()),  # badly signed
    PickleCodec(b"another secret, 32 bytes long!!").encode(1)[:SIGNATURE] + pickle.dumps(
        Boom()),  # another secret's signature on another body
    b"",
])
def test_a_pickle_not_signed_with_the_secret_is_never_unpickled(body: bytes) -> None:
    with pytest.raises(Unreadable):
        PickleCodec(SECRET).decode(body)


def test_a_body_signed_with_another_secret_is_refused() -> None:
    with pytest.raises(Unreadable):
        PickleCodec(SECRET).decode(PickleCodec(b"t" * 32).encode([1]))


def test_pickle_needs_a_real_secret() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        PickleCodec("short")


def test_corrupt_bodies_are_unreadable() -> None:
    with pytest.raises(Unreadable):
        JsonCodec().decode(b"{")
    with pytest.raises(Unreadable):
        MsgpackCodec().decode(b"\xc1")
