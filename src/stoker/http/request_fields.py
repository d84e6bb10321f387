"""The request fields a cache reads, found in one scan of a request's head.

Answering one request reads its ``Cache-Control``, ``Cookie``, ``Authorization``,
``Accept-Encoding``, ``Range`` and conditionals, several of them more than once; each
:func:`~stoker.http.headers.get_joined` scans every field line again (and lower-cases the
names it passes).  :class:`RequestFields` scans them once, when the request is parsed.

Invariants:
- Field names are lower-case, as ASGI servers and the front give them (RFC 9110 §5.1
  makes names case-insensitive; the lower-casing is theirs, not repeated here).
- For every name in :data:`READ`, :meth:`RequestFields.joined` equals
  :func:`~stoker.http.headers.get_joined` of the same list, and :meth:`RequestFields.has`
  equals ``get_header(...) is not None``.
- Pure: built from the list it is given, which it never changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from stoker.http.cache_control import CacheControl, parse_cache_control

CONDITIONALS = (b"if-none-match", b"if-modified-since", b"if-match", b"if-unmodified-since")
"""The conditional request fields (RFC 9110 §13.1)."""
READ = frozenset({b"accept-encoding", b"authorization", b"cache-control", b"cookie",
                  b"if-range", b"range", *CONDITIONALS})
"""The fields :class:`RequestFields` keeps."""


class RequestFields:
    """The :data:`READ` fields of one request, each field's lines joined with ``", "``."""

    __slots__ = ("_cache_control", "_values")

    def __init__(self, headers: Sequence[tuple[bytes, bytes]]) -> None:
        values: dict[bytes, bytes] = {}
        for name, value in headers:
            if name in READ:
                found = values.get(name)
                values[name] = value if found is None else found + b", " + value
        self._values = values
        self._cache_control: CacheControl | None = None

    def has(self, name: bytes) -> bool:
        """Whether the request has a field line called ``name`` (one of :data:`READ`)."""
        return name in self._values

    def joined(self, name: bytes) -> str | None:
        """Every line of the field ``name`` (one of :data:`READ`) joined, as latin-1 text;
        ``None`` when absent."""
        value = self._values.get(name)
        return None if value is None else value.decode("latin-1")

    @property
    def conditional(self) -> bool:
        """Whether the request has a conditional field (:data:`CONDITIONALS`)."""
        values = self._values
        return any(name in values for name in CONDITIONALS)

    @property
    def cache_control(self) -> CacheControl | None:
        """The request's ``Cache-Control``, parsed once; ``None`` when it has none."""
        if self._cache_control is None and b"cache-control" in self._values:
            self._cache_control = parse_cache_control(self.joined(b"cache-control"))
        return self._cache_control
