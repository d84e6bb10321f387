"""Sitemaps and robots.txt, parsed from byte chunks in bounded memory.

Invariants:
- Every parser here raises nothing but :class:`DiscoveryError` (naming the file's URL
  and the reason), whatever bytes it is fed.
- A DOCTYPE is refused before its internal subset is read, so no entity is ever
  declared, expanded or fetched (billion laughs, XXE); an undeclared entity reference is
  a well-formedness error.  No tree is built: each ``<url>`` is handed out when it ends.
- One file yields at most :data:`MAX_ENTRIES` ``<url>``/``<sitemap>`` entries, each
  ``<loc>`` at most :data:`MAX_LOC_CHARS` characters, an ``http``/``https`` URL (a
  relative one is resolved against the file's URL), and at most :data:`MAX_ALTERNATES`
  ``xhtml:link`` alternates per entry (more are ignored).
- At most :data:`MAX_FILE_BYTES` uncompressed bytes are read per file: gzip (detected by
  its magic bytes, several members allowed) is inflated in pieces of at most
  :data:`PIECE_BYTES`, and the cap is checked before a piece is parsed, so a gzip bomb
  costs at most ``MAX_FILE_BYTES`` of CPU and one piece of memory.
- :meth:`SitemapReader.steps` parses at most :data:`STEP_BYTES` uncompressed bytes per
  step, so a caller on the event loop that yields between steps never holds it for more
  than one step's work, however large the chunk it was given (a cached sitemap comes
  whole).
- Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urljoin
from xml.parsers import expat

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Uncompressed bytes per sitemap file (sitemaps.org)."""
MAX_ENTRIES = 50_000
"""URLs (or child sitemaps) per file (sitemaps.org)."""
MAX_LOC_CHARS = 2048
"""Characters per ``<loc>`` (sitemaps.org)."""
MAX_ALTERNATES = 100
"""``xhtml:link`` alternates kept per ``<url>``."""
PIECE_BYTES = 64 * 1024
"""Largest piece of inflated output handed to the XML parser at once."""
STEP_BYTES = 4 * 1024
"""Most uncompressed bytes one :meth:`SitemapReader.steps` step parses (about 50 URLs,
under two milliseconds)."""

_GZIP_MAGIC = b"\x1f\x8b"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_MAX_LASTMOD_CHARS = 64
_YEAR_MONTH = re.compile(r"^(\d{4})(?:-(\d{2}))?$")


class DiscoveryError(Exception):
    """Discovery failed on ``url`` for ``reason`` (hostile or broken input, timeout);
    ``origin``: because the origin did not answer it (no answer, too slow, a ``5xx``),
    so trying again later may succeed."""

    def __init__(self, url: str, reason: str, *, origin: bool = False) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.origin = origin


@dataclass(frozen=True)
class Entry:
    """One ``<url>`` (or ``<sitemap>`` of an index): absolute loc, lastmod, alternates."""

    loc: str
    lastmod: float | None = None
    alternates: tuple[str, ...] = ()


Kind = Literal["urlset", "sitemapindex"]


@dataclass
class Sitemap:
    """A whole parsed file (see :func:`parse_sitemap`)."""

    kind: Kind
    entries: list[Entry] = field(default_factory=list)


class Inflater:
    """Streams gzip (or zlib) data out in pieces, failing past ``cap`` uncompressed bytes."""

    def __init__(self, url: str, cap: int = MAX_FILE_BYTES, *, gzip: bool = True) -> None:
        self.url = url
        self.cap = cap
        self._wbits = 31 if gzip else 15
        self._inflate = zlib.decompressobj(self._wbits)
        self._in_member = False  # data went into the current stream and it has not ended
        self._total = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The output for ``data``, in pieces of at most :data:`PIECE_BYTES`."""
        while data:
            self._in_member = True
            try:
                piece = self._inflate.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                raise DiscoveryError(self.url, f"corrupt compressed data ({exc})") from None
            yield from self._counted(piece)
            data = self._inflate.unconsumed_tail
            if self._inflate.eof:  # another gzip member may follow
                data = self._inflate.unused_data
                self._inflate = zlib.decompressobj(self._wbits)
                self._in_member = False

    def finish(self) -> Iterator[bytes]:
        """Output still held back; fails if the data ended inside a compressed stream."""
        if not self._in_member:
            return
        try:
            yield from self._counted(self._inflate.flush())
        except zlib.error as exc:
            raise DiscoveryError(self.url, f"corrupt compressed data ({exc})") from None
        if not self._inflate.eof:
            raise DiscoveryError(self.url, "compressed data is truncated")

    def _counted(self, piece: bytes) -> Iterator[bytes]:
        self._total += len(piece)
        if self._total > self.cap:
            raise DiscoveryError(self.url, f"more than {self.cap:,} bytes uncompressed")
        if piece:
            yield piece


def parse_lastmod(text: str) -> float | None:
    """A W3C datetime (``2024``, ``2024-05``, ``2024-05-01``, ``…T12:00:00+02:00``) as epoch
    seconds (no zone means UTC), or None when it is not one."""
    text = text.strip()
    try:
        year_month = _YEAR_MONTH.match(text)
        if year_month:
            when = datetime(int(year_month[1]), int(year_month[2] or 1), 1, tzinfo=UTC)
        else:
            when = datetime.fromisoformat(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError):
        return None


class SitemapReader:
    """Incremental parser of one sitemap or sitemap index (module invariants).

    :meth:`feed` takes the file's bytes as they arrive (gzip or plain) and returns the
    entries completed so far (:meth:`steps` in steps of at most :data:`STEP_BYTES`);
    :meth:`close` returns the rest.  ``kind`` is known once the root element has been
    read.
    """

    _MAX_DEPTH = 32

    def __init__(self, url: str, *, max_bytes: int = MAX_FILE_BYTES) -> None:
        self.url = url
        self.kind: Kind | None = None
        self._max_bytes = max_bytes
        self._head: bytes | None = b""  # the first bytes, until gzip is ruled in or out
        self._inflater: Inflater | None = None
        self._bytes = 0
        self._count = 0
        self._depth = 0
        self._ready: list[Entry] = []
        self._text: list[str] | None = None
        self._text_chars = 0
        self._loc: str | None = None
        self._lastmod: float | None = None
        self._alternates: list[str] = []
        self._parser = self._new_parser()

    def _new_parser(self) -> expat.XMLParserType:
        parser = expat.ParserCreate(namespace_separator=" ")
        parser.StartDoctypeDeclHandler = self._refuse_doctype
        parser.EntityDeclHandler = self._refuse_entity
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        return parser

    def feed(self, chunk: bytes) -> list[Entry]:
        """Parse the next bytes of the file; the entries they completed."""
        return [entry for step in self.steps(chunk) for entry in step]

    def steps(self, chunk: bytes) -> Iterator[list[Entry]]:
        """Parse the next bytes of the file, at most :data:`STEP_BYTES` uncompressed bytes
        per step; after each step, the entries it completed."""
        if self._head is not None:
            self._head += chunk
            if len(self._head) < len(_GZIP_MAGIC):
                return
            chunk, self._head = self._head, None
            if chunk.startswith(_GZIP_MAGIC):
                self._inflater = Inflater(self.url, self._max_bytes)
        for piece in self._inflater.feed(chunk) if self._inflater else (chunk,):
            for start in range(0, len(piece), STEP_BYTES):
                self._parse(piece[start:start + STEP_BYTES])
                yield self._take()

    def close(self) -> list[Entry]:
        """The file has ended: the last entries; fails if it is incomplete or no sitemap."""
        if self._head is not None:
            self._parse(self._head)
        if self._inflater is not None:
            for piece in self._inflater.finish():
                self._parse(piece)
        self._parse(b"", final=True)
        return self._take()

    def _take(self) -> list[Entry]:
        ready, self._ready = self._ready, []
        return ready

    def _parse(self, data: bytes, *, final: bool = False) -> None:
        self._bytes += len(data)
        if self._bytes > self._max_bytes:
            raise DiscoveryError(self.url, f"more than {self._max_bytes:,} bytes")
        try:
            self._parser.Parse(data, final)
        except expat.ExpatError as exc:
            raise DiscoveryError(self.url, f"not well-formed XML ({exc})") from None

    def _refuse_doctype(self, *_: object) -> None:
        raise DiscoveryError(self.url, "a DOCTYPE is refused (entities are never expanded)")

    def _refuse_entity(self, *_: object) -> None:
        raise DiscoveryError(self.url, "entity declarations are refused")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        if self._depth > self._MAX_DEPTH:
            raise DiscoveryError(self.url, f"elements nested deeper than {self._MAX_DEPTH}")
        local = name.rpartition(" ")[2]
        if self._depth == 1:
            if local not in ("urlset", "sitemapindex"):
                raise DiscoveryError(self.url, f"not a sitemap (root element <{local}>)")
            self.kind = "urlset" if local == "urlset" else "sitemapindex"
        elif self._depth == 3 and local in ("loc", "lastmod"):
            self._text, self._text_chars = [], 0
        elif self._depth == 3 and local == "link" and self.kind == "urlset":
            self._alternate(attrs)

    def _alternate(self, attrs: dict[str, str]) -> None:
        href = attrs.get("href", "").strip()
        rel = attrs.get("rel", "").lower().split()
        if href and "alternate" in rel and len(self._alternates) < MAX_ALTERNATES:
            self._alternates.append(self._absolute(href))

    def _chars(self, data: str) -> None:
        if self._text is None:
            return
        self._text_chars += len(data)
        if self._text_chars <= 2 * MAX_LOC_CHARS:
            self._text.append(data)

    def _end(self, name: str) -> None:
        self._depth -= 1
        if self._depth == 2 and self._text is not None:
            text = "".join(self._text).strip()
            self._text = None
            if name.rpartition(" ")[2] == "loc":
                if self._text_chars > 2 * MAX_LOC_CHARS:
                    raise DiscoveryError(self.url, f"a <loc> of {self._text_chars:,} characters")
                self._loc = self._absolute(text) if text else None
            else:
                self._lastmod = parse_lastmod(text[:_MAX_LASTMOD_CHARS])
        elif self._depth == 1:
            self._entry()

    def _entry(self) -> None:
        if self._loc is not None:
            self._count += 1
            if self._count > MAX_ENTRIES:
                raise DiscoveryError(self.url, f"more than {MAX_ENTRIES:,} entries in one file")
            self._ready.append(Entry(self._loc, self._lastmod, tuple(self._alternates)))
        self._loc, self._lastmod, self._alternates = None, None, []

    def _absolute(self, loc: str) -> str:
        if len(loc) > MAX_LOC_CHARS:
            raise DiscoveryError(self.url, f"a URL longer than {MAX_LOC_CHARS:,} characters")
        scheme = _SCHEME.match(loc)
        if scheme and scheme[1].lower() not in ("http", "https"):
            raise DiscoveryError(self.url, f"{loc[:100]!r} is not an http(s) URL")
        try:
            return loc if scheme else urljoin(self.url, loc)
        except ValueError:
            raise DiscoveryError(self.url, f"{loc[:100]!r} is not a valid URL") from None


def parse_sitemap(chunks: Iterable[bytes], url: str) -> Sitemap:
    """A whole sitemap file from its chunks (gzip or plain); see :class:`SitemapReader`."""
    reader = SitemapReader(url)
    entries: list[Entry] = []
    for chunk in chunks:
        entries.extend(reader.feed(chunk))
    entries.extend(reader.close())
    assert reader.kind is not None  # a well-formed document has a root element
    return Sitemap(reader.kind, entries)


def parse_robots(text: str) -> list[str]:
    """The ``Sitemap:`` values of a robots.txt, in order, without duplicates or comments."""
    found: dict[str, None] = {}
    for line in text.lstrip("\ufeff").splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() == "sitemap":
            value = value.split("#", 1)[0].strip()
            if value:
                found.setdefault(value)
    return list(found)
