"""Decoding a gzip or br body as it arrives, one bounded piece at a time.

A cache fetch may get a compressed body (the origin compresses for the client
that asked); Stoker stores it decoded, so that one stored copy serves every
``Accept-Encoding`` (:mod:`stoker.http.encoding` makes the coded forms).

Invariants:
- Pure: no I/O, no clock.
- Every piece :meth:`Decoder.feed` yields is at most about :data:`STEP` bytes
  (br may overshoot by one internal block), and the next piece is made only when
  the caller asks for it: a small chunk that expands enormously (a bomb) is
  decoded step by step, and a caller that stops (a size limit) stops the work.
- Malformed data raises :class:`CorruptBody` from :meth:`Decoder.feed`; a
  stream that stops inside its last gzip member or br stream raises it from
  :meth:`Decoder.end`.  An empty body is an empty identity body.
- gzip bodies of several members (RFC 1952 §2.2) decode to their concatenation.
- :class:`DecodeBound` is the bound a caller stops at: a size, and an expansion ratio
  (decoded over coded bytes so far) looked at past :data:`RATIO_FLOOR`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import brotli

STEP = 65536
"""Most bytes one decoded piece holds."""
GZIP_WBITS = 16 + zlib.MAX_WBITS


RATIO_FLOOR = 1024 * 1024
"""Decoded bytes below which :meth:`DecodeBound.passed` never looks at the ratio: a
small body's first pieces may expand far more than the whole does."""


@dataclass(frozen=True, slots=True)
class DecodeBound:
    """How far a coded body may be decoded for storing: ``max_size`` decoded bytes, and
    ``max_ratio`` times the coded bytes read so far once past :data:`RATIO_FLOOR`."""

    max_size: int
    max_ratio: int

    def passed(self, decoded: int, coded: int) -> bool:
        """Whether ``decoded`` bytes out of ``coded`` bytes read pass the bound (then the
        body is kept as it came and decoding stops: a bomb costs its bound, no more)."""
        return decoded > self.max_size or (
            decoded > RATIO_FLOOR and decoded > self.max_ratio * max(coded, 1))


class CorruptBody(ValueError):
    """The body is not valid data in its content coding."""


class Decoder:
    """Decodes one body in ``coding`` (``gzip`` or ``br``).  See the module docstring."""

    def __init__(self, coding: str) -> None:
        if coding not in ("gzip", "br"):
            raise ValueError(f"cannot decode content coding {coding!r}")
        self.coding = coding
        """The content coding decoded."""
        self._gzip = zlib.decompressobj(GZIP_WBITS)
        self._br = brotli.Decompressor()
        self._open = False
        """Bytes of the current gzip member or br stream went in, and it has not ended."""

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next ``data`` bytes of the body."""
        try:
            if self.coding == "gzip":
                yield from self._feed_gzip(data)
            else:
                yield from self._feed_br(data)
        except (zlib.error, brotli.error) as error:
            raise CorruptBody(f"invalid {self.coding} data: {error}") from error

    def end(self) -> None:
        """The body has ended: raise :class:`CorruptBody` unless its coding ended too."""
        if self._open:
            raise CorruptBody(f"the {self.coding} data stops before its end")

    def _feed_gzip(self, data: bytes) -> Iterator[bytes]:
        while True:
            self._open = self._open or bool(data)
            piece = self._gzip.decompress(data, STEP)
            if piece:
                yield piece
            if self._gzip.eof:  # a member ended: what follows it is the next member
                data = self._gzip.unused_data
                self._gzip = zlib.decompressobj(GZIP_WBITS)
                self._open = False
                if not data:
                    return
            else:
                data = self._gzip.unconsumed_tail
                if not data and len(piece) < STEP:  # a full piece: more may be pending
                    return

    def _feed_br(self, data: bytes) -> Iterator[bytes]:
        if not data:
            return
        if self._br.is_finished():
            raise CorruptBody("data after the end of the br stream")
        self._open = True
        piece = self._br.process(data, output_buffer_limit=STEP)
        while True:
            if piece:
                yield piece
            if len(piece) < STEP and self._br.can_accept_more_data():
                break  # (a full piece: more may be pending)
            piece = self._br.process(b"", output_buffer_limit=STEP)
        if self._br.is_finished():
            self._open = False
