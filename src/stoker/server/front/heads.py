"""Request heads remembered by their bytes, so the same bytes are answered unparsed.

A load balancer's health check, a bot's or a benchmark's request often arrives as the
very bytes of an earlier one: one dict lookup by those bytes then gives its key and
headers.

Invariants: a head is remembered only when it is exactly one read holding one whole head,
without body or forwarding headers (:func:`rememberable`), that was answered as a hit under
the keying it records, and only the second time its bytes are answered so within
:data:`KNOWN_HEADS` such answers: browsers' heads, each with its own ``User-Agent`` and
``Referer``, rarely come twice, and remembering each would cost more than it saves.  At
most :data:`KNOWN_HEADS` are kept; when full, all are forgotten at once (a dict that
drops its oldest entry one by one is scanned past its removed entries on every
eviction).
"""

from __future__ import annotations

from dataclasses import dataclass

from stoker.adapters.hot_path import FORWARDING_HEADERS

KNOWN_HEADS = 2048
"""Request heads remembered (:class:`KnownHeads`)."""
KNOWN_HEAD_BYTES = 1024
"""The longest head remembered: :data:`KNOWN_HEADS` of them hold at most 2 MiB of bytes."""
UNREMEMBERED = frozenset({b"content-length", b"transfer-encoding", b"upgrade",
                          *FORWARDING_HEADERS})
"""Header names that keep a head from being remembered (:func:`rememberable`)."""


@dataclass(frozen=True, slots=True)
class KnownHead:
    """What parsing one request head gave, for answering the same bytes again unparsed."""

    keying: str
    """What keys depended on when it was parsed (a version bump or a reload makes it
    unknown again: :attr:`~stoker.proxy.keying.Keying.token`)."""
    primary: str
    headers: list[tuple[bytes, bytes]]
    close: bool
    """Whether the connection closes after the response (HTTP/1.0, ``Connection: close``)."""


def rememberable(data: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the request read as ``data`` may be answered from its bytes alone next time:
    ``data`` is exactly one head of at most :data:`KNOWN_HEAD_BYTES` bytes, with no body
    (no framing header) and nothing whose meaning depends on the connection (no
    forwarding headers, whose trust depends on the peer; no upgrade)."""
    return (len(data) <= KNOWN_HEAD_BYTES and data.find(b"\r\n\r\n") == len(data) - 4
            and not any(name in UNREMEMBERED for name, _ in headers))


class KnownHeads(dict[bytes, KnownHead]):
    """The heads one listener remembers, by their bytes."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[int] = set()
        """Hashes of the heads answered once and not remembered yet."""

    def second_time(self, data: bytes) -> bool:
        """Whether the head read as ``data`` was answered as a hit before (since it was
        last remembered or forgotten); counts this answer."""
        seen = hash(data)
        if seen in self._seen:
            self._seen.discard(seen)
            return True
        if len(self._seen) >= KNOWN_HEADS:
            self._seen.clear()
        self._seen.add(seen)
        return False

    def keep(self, data: bytes, head: KnownHead) -> None:
        """Remember ``head`` as what ``data`` means (all are forgotten first when full)."""
        if len(self) >= KNOWN_HEADS:
            self.clear()
        self[data] = head
