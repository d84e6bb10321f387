"""The 20 KB page every system in the hit-path benchmark serves, and its headers.

Shared by the origin (run.py) and the raw ASGI ceiling (raw_app.py) so both send the
same bytes. Stdlib only: this is imported inside granian/uvicorn workers.
"""

from __future__ import annotations

PAGE_SIZE = 20 * 1024
CACHE_CONTROL = b"public, max-age=3600"
CONTENT_TYPE = b"text/html; charset=utf-8"


def build_page(size: int = PAGE_SIZE) -> bytes:
    """A deterministic HTML page of exactly ``size`` bytes."""
    head = b"<!doctype html>\n<html><head><title>hit path</title></head><body>\n"
    tail = b"</body></html>\n"
    line = b"<p>Stoker keeps the page cache hot; this paragraph is filler text.</p>\n"
    filler = (line * (size // len(line) + 1))[: size - len(head) - len(tail)]
    page = head + filler + tail
    assert len(page) == size
    return page


PAGE = build_page()
