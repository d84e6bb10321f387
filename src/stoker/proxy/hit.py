"""Answering from stored entries: which form of an entry a request gets, and the one
decider of a fresh hit answered at once (pure).

:func:`form_for` is content negotiation over a stored entry, for every path that serves
one (the core, the fast path, the front's known heads): the best coding made that the
client accepts, identity for a ``Range`` request, and ``None`` when the client would get
a coding not made yet (:mod:`~stoker.proxy.codings` makes it, then asks again).
:func:`hit_reply` is the fast path's whole decision: a plain ``GET`` whose URL holds one
fresh, Vary-less entry with its form in memory gets the :class:`Reply` the core would
give it; anything else gets ``None`` and takes the core.

Invariants: :func:`hit_reply` answers only what the core would answer the same way
(``Age`` is ``int(entry.age(now))``, ``Cache-Status`` ``hit`` with the entry's remaining
ttl, floored), and reads no clock: ``now`` is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Kind, Outcome
from stoker.http.encoding import IDENTITY, PREFERENCE, choose_encoding
from stoker.proxy.reply import Header, Reply

FAST_HIT: Final = Outcome(Kind.HIT)
"""The outcome of every reply :func:`hit_reply` gives (its ``Cache-Status`` says the ttl)."""


def form_for(entry: CacheEntry, accept_encoding: str | None,
             ranged: bool) -> CacheEntry | None:
    """The form of ``entry`` to send a request that accepts ``accept_encoding`` (and asks
    for a range, if ``ranged``: ranges are served from identity) per RFC 9110 §12.5.3;
    ``None`` when that form is a coding not made yet (the entry's codings are due)."""
    if not entry.encoded and not entry.codings_due:
        return entry
    if ranged or not accept_encoding:
        return entry.served(IDENTITY)
    if entry.codings_due:
        due = choose_encoding(accept_encoding, PREFERENCE) != IDENTITY
        return None if due else entry.served(IDENTITY)
    return entry.served(choose_encoding(accept_encoding, entry.codings))


def hit_reply(entries: Sequence[CacheEntry], accept_encoding: str | None, now: float,
              status_prefix: bytes, via: Header) -> Reply | None:
    """The reply to a plain ``GET`` (no Range, conditionals, credentials, cookies or cache
    directives) that accepts ``accept_encoding``, when ``entries`` is one fresh, Vary-less
    entry whose form for it is made and in memory; else ``None``.  ``status_prefix`` is
    the ``Cache-Status`` value up to the ttl (``<name>; hit; ttl=``)."""
    if len(entries) != 1:
        return None
    entry = entries[0]
    if entry.vary or now >= entry.fresh_until:
        return None
    form = form_for(entry, accept_encoding, False)
    if form is None or form.body is None:
        return None
    return Reply(form.status, form.headers, form.body, FAST_HIT, form, (
        (b"age", b"%d" % form.age(now)),
        (b"cache-status", status_prefix + b"%d" % (form.fresh_until - now)), via))
