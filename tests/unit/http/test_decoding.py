"""Decoding gzip and br bodies as they arrive (stoker.http.decoding)."""

from __future__ import annotations

import gzip
import os

import brotli
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.http.decoding import RATIO_FLOOR, STEP, CorruptBody, DecodeBound, Decoder

ENCODERS = {"gzip": lambda data: gzip.compress(data, mtime=0), "br": brotli.compress}


def decode(coding: str, chunks: list[bytes]) -> bytes:
    decoder = Decoder(coding)
    out = b"".join(piece for chunk in chunks for piece in decoder.feed(chunk))
    decoder.end()
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(st.sampled_from(sorted(ENCODERS)), st.binary(max_size=3000),
       st.lists(st.integers(min_value=0), max_size=8))
def test_any_split_of_the_coded_body_decodes_to_the_body(coding: str, body: bytes,
                                                         cuts: list[int]) -> None:
    assert decode(coding, split(ENCODERS[coding](body), cuts)) == body


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_a_bomb_is_decoded_in_bounded_pieces(coding: str) -> None:
    body = b"\0" * (20 * 1024 * 1024)  # 20 MiB of zeros: a few KiB coded
    coded = ENCODERS[coding](body)
    assert len(coded) < 64 * 1024
    pieces = Decoder(coding).feed(coded)
    first = next(pieces)  # one piece is made, not the whole expansion
    assert 0 < len(first) <= 2 * STEP
    assert all(len(piece) <= 2 * STEP for piece in pieces)


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_a_large_varied_body_round_trips(coding: str) -> None:
    body = os.urandom(200_000) + b"stoker " * 300_000
    coded = ENCODERS[coding](body)
    assert decode(coding, split(coded, list(range(0, len(coded), 4099)))) == body


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_a_truncated_body_is_corrupt(coding: str) -> None:
    coded = ENCODERS[coding](os.urandom(5000))
    with pytest.raises(CorruptBody):
        decode(coding, [coded[:-8]])


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_garbage_is_corrupt(coding: str) -> None:
    with pytest.raises(CorruptBody):
        decode(coding, [b"<html>not compressed at all</html>" * 10])


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_data_after_the_end_is_corrupt(coding: str) -> None:
    with pytest.raises(CorruptBody):
        decode(coding, [ENCODERS[coding](b"page"), b"trailing junk"])


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_an_empty_body_is_empty(coding: str) -> None:
    assert decode(coding, []) == b""
    assert decode(coding, [b""]) == b""


def test_gzip_members_are_concatenated() -> None:
    coded = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decode("gzip", split(coded, [3, 25, 30])) == b"first second"


def test_only_gzip_and_br_are_decoded() -> None:
    with pytest.raises(ValueError, match="deflate"):
        Decoder("deflate")


SIZES = st.integers(min_value=0, max_value=1 << 40)


@given(SIZES, SIZES, st.integers(1, 1 << 30), st.integers(1, 10_000))
def test_the_bound_is_a_size_and_a_ratio_past_the_floor(decoded: int, coded: int,
                                                        max_size: int, ratio: int) -> None:
    bound = DecodeBound(max_size, ratio)
    expected = decoded > max_size or (decoded > RATIO_FLOOR and decoded > ratio * max(coded, 1))
    assert bound.passed(decoded, coded) is expected
    if not bound.passed(decoded, coded):  # fewer decoded bytes, or more coded, pass less
        assert not bound.passed(decoded // 2, coded)
        assert not bound.passed(decoded, coded + 1)


def test_a_bomb_is_decoded_only_as_far_as_its_reader_goes() -> None:
    """A 405-byte br body of 512 MiB, read until a bound of ratio 100 passes: a little over
    the ratio floor is decoded, never the 512 MiB."""
    compressor = brotli.Compressor(quality=3, lgwin=24)
    zeros = b"\0" * (1 << 20)
    bomb = b"".join([*(compressor.process(zeros) for _ in range(512)), compressor.finish()])
    bound, decoded = DecodeBound(1 << 30, 100), 0
    for piece in Decoder("br").feed(bomb):
        if bound.passed(decoded + len(piece), len(bomb)):
            break
        decoded += len(piece)
    assert len(bomb) < 1000
    assert RATIO_FLOOR // 2 <= decoded <= RATIO_FLOOR
