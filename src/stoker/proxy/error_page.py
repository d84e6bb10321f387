"""The site's own page for origin failures (``error_page``) in Stoker's answers.

When the origin fails and no stale copy can stand in, the synth step answers ``502``,
``503`` or ``504`` itself; with an ``error_page`` configured, a client that accepts HTML
gets that page as the body instead of the short plain text.

Invariants: only those origin failures change (a refusal of a bad request, a ``405``
keep their text); the status and every other field stay as they were (``Cache-Control:
no-store``, ``Retry-After``), but for ``Content-Type: text/html; charset=utf-8`` and the
page's ``Content-Length``; a client whose ``Accept`` takes no HTML
(:func:`~stoker.http.accept.accepts`) keeps the plain answer; the page's bytes are given
(read once when the configuration is), never read here.  Pure.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from stoker.cache.outcome import ORIGIN_FAILURES, Kind
from stoker.http.accept import accepts
from stoker.http.headers import HeaderInput, without
from stoker.proxy.steps import Synth

HTML: Final = b"text/html; charset=utf-8"


def with_error_page(synth: Synth, page: bytes | None, request_headers: HeaderInput) -> Synth:
    """``synth`` with ``page`` as its body when it answers an origin failure to a client
    that accepts HTML; else ``synth`` as it is."""
    outcome = synth.outcome
    failure = outcome is not None and outcome.kind is Kind.ERROR and (
        outcome.detail in ORIGIN_FAILURES)
    if page is None or not failure or not accepts(request_headers, "text/html"):
        return synth
    headers = [(b"content-type", HTML), (b"content-length", str(len(page)).encode()),
               *without(synth.headers, (b"content-type", b"content-length"))]
    return replace(synth, headers=headers, body=page)
