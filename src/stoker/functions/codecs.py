"""How a cached function's results are stored: codecs.

A result is stored as bytes in a :class:`~stoker.cache.entry.CacheEntry` body, its codec
named by the entry's ``content-type`` (:attr:`Codec.media_type`).  JSON is the default
(:class:`JsonCodec`: portable, readable by any process, never runs code); msgpack is
there when installed (:class:`MsgpackCodec`); pickle only when asked for, with a secret
(:class:`PickleCodec`).

Invariants:
- An entry is decoded only by the codec named by its ``content-type``: a function's
  codec never reads another's bytes (an entry of another codec is a miss), so a JSON
  function never unpickles anything.
- :class:`PickleCodec` signs every body it writes (HMAC-SHA256 of the pickle, under its
  secret) and unpickles only a body whose signature verifies (constant-time compare);
  an unsigned or badly signed body raises :class:`Unreadable` before any unpickling, so
  whoever can write to a shared L2 (Redis, a shared ``cache.db``) without the secret
  cannot make a process run code.
- A codec's :meth:`~Codec.decode` raises :class:`Unreadable` for bytes it refuses; the
  caller treats the entry as a miss and logs it.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import pickle
from typing import Any, Final, Protocol


class Unreadable(ValueError):
    """A stored result its codec refuses (corrupt, or not signed with its secret)."""


class Codec(Protocol):
    """Turns a function's results into bytes and back."""

    media_type: bytes
    """The stored entry's ``content-type``: which codec wrote it."""

    def encode(self, value: Any) -> bytes:
        """``value`` as bytes (:class:`TypeError` when this codec cannot store it)."""
        ...

    def decode(self, data: bytes) -> Any:
        """The value ``data`` holds (:class:`Unreadable` when it refuses it)."""
        ...


class JsonCodec:
    """JSON (the default): tuples come back as lists, dict keys as strings."""

    media_type = b"application/json"

    def __init__(self) -> None:
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self._decode = json.JSONDecoder().decode

    def encode(self, value: Any) -> bytes:
        try:
            return self._encode(value).encode()
        except TypeError as error:
            raise TypeError(f"@cached stores results as JSON and {error}; return JSON "
                            "values or pass codec=MsgpackCodec() or PickleCodec(secret)"
                            ) from None

    def decode(self, data: bytes) -> Any:
        try:
            return self._decode(data.decode())
        except ValueError as error:
            raise Unreadable(f"not JSON: {error}") from None


class MsgpackCodec:
    """msgpack (``pip install msgpack``): compact, bytes kept as bytes."""

    media_type = b"application/msgpack"

    def __init__(self) -> None:
        try:
            msgpack = importlib.import_module("msgpack")
        except ImportError:
            raise ImportError("MsgpackCodec needs the msgpack package: pip install "
                              "msgpack") from None
        self._packb = msgpack.packb
        self._unpackb = msgpack.unpackb

    def encode(self, value: Any) -> bytes:
        packed: bytes = self._packb(value, use_bin_type=True)
        return packed

    def decode(self, data: bytes) -> Any:
        try:
            return self._unpackb(data, raw=False, strict_map_key=False)
        except Exception as error:
            raise Unreadable(f"not msgpack: {error}") from None


SIGNATURE: Final = hashlib.sha256().digest_size
"""Bytes of the signature that starts every body :class:`PickleCodec` writes."""


class PickleCodec:
    """pickle, signed: any picklable value, for processes that share ``secret``."""

    media_type = b"application/x-stoker-pickle-hmac"

    def __init__(self, secret: bytes | str) -> None:
        key = secret.encode() if isinstance(secret, str) else secret
        if len(key) < 16:
            raise ValueError("PickleCodec needs a secret of at least 16 bytes: bodies it "
                             "unpickles are those signed with it")
        self._key = key

    def encode(self, value: Any) -> bytes:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return self._sign(data) + data

    def decode(self, data: bytes) -> Any:
        signature, payload = data[:SIGNATURE], data[SIGNATURE:]
        if len(data) <= SIGNATURE or not hmac.compare_digest(signature, self._sign(payload)):
            raise Unreadable("a pickled result without a valid signature (not written with "
                             "this secret): not unpickled")
        return pickle.loads(payload)  # signed with our secret: checked above

    def _sign(self, data: bytes) -> bytes:
        return hmac.new(self._key, data, hashlib.sha256).digest()
