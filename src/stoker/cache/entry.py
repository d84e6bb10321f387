"""One stored response and the pure decision of how usable it is now.

A URL (its *primary key*) may hold several entries, one per *variant*: the
normalised values of the request headers its response's ``Vary`` names
(RFC 9111 §4.1).  An entry whose response has no ``Vary`` has variant ``""``.

Invariants:
- All times are wall-clock epoch seconds.
- ``fresh_until <= stale_until`` and ``fresh_until <= error_until`` and
  ``max(stale_until, error_until) <= keep_until``; a store may drop the entry
  at ``keep_until`` and must never return it after.
- Exactly one of ``body`` / ``body_file`` is set: small bodies live inline,
  large ones in a file under the data directory (``body_file`` is its name).
- ``headers`` are the stored response headers: lower-case names, no
  hop-by-hop fields, no ``Age`` (computed when served).
- ``encoded`` holds the compressed forms of an inline ``body``
  (:mod:`stoker.http.encoding`), best first, made once, when a client first
  accepts a coding; until then ``codings_due`` says they may be made.  A body
  kept in a file is never due; it may hold one form, inline: the origin's own
  coded bytes it was decoded from (:mod:`stoker.proxy.fetch`).  An entry whose forms are made
  or due is served by negotiation: :meth:`CacheEntry.served` is the form sent
  for one coding (its headers, ``Vary: Accept-Encoding`` included, and ETag
  per :func:`~stoker.http.encoding.served_headers`), computed once per entry
  and coding.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from operator import attrgetter

from stoker.http.encoding import IDENTITY, Encoded, coded_etag, served_headers
from stoker.http.wire import http1_head

Header = tuple[bytes, bytes]

ENTRY_COST = 1160
"""Bytes of objects an L1 entry costs besides its payload: the entry, its L1 slot and
index places, its strings' headers (measured, CPython 3.11, 64-bit)."""
HEADER_COST = 116
"""Bytes of objects one stored header costs besides its name and value."""
TAG_COST = 400
"""Bytes one tag costs in L1 (its string and its tag-index set) besides its text."""
FORM_COST = 580
"""Bytes of the copy :meth:`CacheEntry.served` keeps per coding (identity included) of an
entry with compressed forms, besides its headers."""
FORM_HEADER_COST = 74
"""Bytes one header costs in such a copy."""
WIRE_COST = 80
"""Bytes a form's :meth:`CacheEntry.wire_head` costs besides its headers' text and their
separators (the bytes object, the status line)."""


class Freshness(enum.Enum):
    """How a stored entry may be used at a given instant."""

    FRESH = "fresh"
    STALE_SWR = "stale-while-revalidate"
    STALE_SIE = "stale-if-error"
    EXPIRED = "expired"


@dataclass(slots=True)
class CacheEntry:
    """A stored response.  See the module docstring for invariants."""

    primary_key: str
    variant: str
    url: str
    status: int
    headers: tuple[Header, ...]
    body: bytes | None
    body_file: str | None
    body_size: int
    response_time: float
    initial_age: float
    fresh_until: float
    stale_until: float
    error_until: float
    keep_until: float
    vary: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    etag: str | None = None
    last_modified: str | None = None
    stored_at: float = 0.0
    origin_vouched: bool = False
    """The origin's own headers made it shareable (explicit lifetime or ``public``),
    not a rule or a default: only such entries may answer requests with personal cookies."""
    stale_ok: bool = False
    """The response may be served stale (no must-revalidate, proxy-revalidate, no-cache)."""
    encoded: Encoded = ()
    """Compressed forms of the body, e.g. ``(("br", ...), ("gzip", ...))``, best first
    (always inline, even for a body kept in a file)."""
    codings_due: bool = False
    """``body`` is compressible (and compression on) but ``encoded`` is not made yet."""
    _forms: dict[str, CacheEntry] | None = field(default=None, init=False, repr=False,
                                          compare=False)
    _wire: bytes = field(default=b"", init=False, repr=False, compare=False)
    _identity_wire: bytes = field(default=b"", init=False, repr=False, compare=False)
    """The identity form's :meth:`wire_head`, when it came with the entry (L2 stores it)."""

    @property
    def codings(self) -> tuple[str, ...]:
        """The codings ``encoded`` holds, best first."""
        return tuple(name for name, _ in self.encoded)

    def served(self, coding: str) -> CacheEntry:
        """This entry as sent in ``coding`` (``identity`` or one of :attr:`codings`)."""
        if not self.encoded and not self.codings_due:
            return self
        forms = self._forms
        if forms is None:  # made when first needed: most entries (and soft-purge copies) never
            forms = self._forms = {}
        form = forms.get(coding)
        if form is None:
            body = dict(self.encoded)[coding] if coding != IDENTITY else self.body
            form = CacheEntry(*_FIELDS(self))
            form.body = body
            if coding != IDENTITY:  # a coded form is inline, whatever the identity body is
                form.body_file = None
            form.body_size = len(body) if body is not None else self.body_size
            form.headers = served_headers(self.headers, coding, form.body_size)
            form.etag = coded_etag(self.etag, coding) if self.etag is not None else None
            form.encoded, form.codings_due = (), False
            if coding == IDENTITY:
                form._wire = self._identity_wire
            forms[coding] = form
        return form

    def with_codings(self, encoded: Encoded) -> CacheEntry:
        """A copy holding the compressed forms ``encoded`` (none due any more)."""
        copy = CacheEntry(*_FIELDS(self))
        copy.encoded, copy.codings_due = encoded, False
        return copy

    def same_version(self, other: CacheEntry) -> bool:
        """``other`` is this stored response (same ref, store time and body), maybe
        softened or given its codings since."""
        return (self.primary_key == other.primary_key and self.variant == other.variant
                and self.stored_at == other.stored_at
                and (self.body is other.body or self.body == other.body))

    def identity_head(self) -> bytes | None:
        """The identity form's :meth:`wire_head`, computed without keeping any form (so any
        thread may call it: L2 stores it with the entry)."""
        headers = served_headers(self.headers, IDENTITY, self.body_size) if (
            self.encoded or self.codings_due) else self.headers  # then it says Vary
        return http1_head(self.status, headers)

    def know_identity_head(self, head: bytes | None) -> None:
        """Take ``head``, this entry's :meth:`identity_head` as computed when it was stored,
        for the identity form's :meth:`wire_head` (``None``: not writable, computed anew)."""
        if head is not None:
            if self.encoded or self.codings_due:
                self._identity_wire = head
            else:
                self._wire = head

    def wire_head(self) -> bytes | None:
        """Status line and headers as an HTTP/1.1 server writes them (made once per entry;
        ``None`` when a header is not writable, see :func:`~stoker.http.wire.http1_head`)."""
        head = self._wire
        if not head:
            made = http1_head(self.status, self.headers)
            if made is None:
                return None
            head = self._wire = made
        return head

    def age(self, now: float) -> float:
        """Current age per RFC 9111 §4.2.3: corrected initial age plus resident time."""
        return self.initial_age + max(0.0, now - self.response_time)

    def freshness(self, now: float) -> Freshness:
        """Classify the entry at ``now`` (pure)."""
        if now < self.fresh_until:
            return Freshness.FRESH
        if now < self.stale_until:
            return Freshness.STALE_SWR
        if now < self.error_until:
            return Freshness.STALE_SIE
        return Freshness.EXPIRED

    def ttl(self, now: float) -> float:
        """Seconds of freshness left (negative once stale), as Cache-Status ``ttl``."""
        return self.fresh_until - now

    def softened(self, now: float) -> CacheEntry:
        """A copy made stale at ``now`` (soft purge).

        One that may be served stale (``stale_ok``) keeps its stale windows, which
        reach at least its old expiry: visitors keep getting it, stale-while-
        revalidate, while it is refreshed in the background once.  One that may not
        (must-revalidate, no-cache) loses them: it is revalidated before any reuse.
        """
        copy = CacheEntry(*_FIELDS(self))  # ~6x faster than dataclasses.replace
        copy.fresh_until = min(self.fresh_until, now)
        if not self.stale_ok:
            copy.stale_until = min(self.stale_until, now)
            copy.error_until = min(self.error_until, now)
        return copy

    def meta_size(self) -> int:
        """Bytes this entry costs in memory once stored in L1 (for L1 accounting).

        The payload's lengths plus CPython's per-object costs, measured with
        ``tracemalloc`` on entries stored in a :class:`~stoker.cache.memory.MemoryStore`
        (its slot, indexes and tag sets included): within a few percent of the real
        cost, and above it when tags are shared.  A compressed form also costs the
        served copies :meth:`served` keeps, one per coding; each form may keep its
        :meth:`wire_head`.
        """
        text = sum(len(k) + len(v) for k, v in self.headers)
        head = text + HEADER_COST * len(self.headers)
        inline = len(self.body) if self.body is not None else 0
        inline += sum(len(data) for _, data in self.encoded)
        forms = (len(self.encoded) + 1) * (FORM_COST + FORM_HEADER_COST * len(self.headers)) if (
            self.encoded) else 0
        tags = sum(TAG_COST + len(tag) for tag in self.tags)
        wire = (len(self.encoded) + 1) * (WIRE_COST + text + 4 * len(self.headers))
        return (ENTRY_COST + len(self.primary_key) + len(self.url) + head + inline + forms
                + tags + wire)


_FIELDS = attrgetter(*(each.name for each in fields(CacheEntry) if each.init))
"""Every field of an entry, in constructor order (for copies made without ``replace``)."""
