"""The hit decider: which form of an entry a request gets, and the fast path's reply."""

from __future__ import annotations

import pytest
from tests.entries import make_entry

from stoker.cache.entry import CacheEntry
from stoker.cache.outcome import Kind
from stoker.http.encoding import compress
from stoker.proxy.hit import form_for, hit_reply

NOW = 1_700_000_000.0
PREFIX = b"stoker; hit; ttl="
VIA = (b"via", b"1.1 stoker")
BODY = b"<p>" + b"hello cache " * 200 + b"</p>"


def coding_of(form: CacheEntry) -> str:
    return dict(form.headers).get(b"content-encoding", b"identity").decode()


def plain() -> CacheEntry:
    return make_entry(body=BODY, body_size=len(BODY), now=NOW - 10)


def due() -> CacheEntry:
    entry = plain()
    entry.codings_due = True
    return entry


def coded() -> CacheEntry:
    return plain().with_codings(compress(BODY))


@pytest.mark.parametrize(("entry", "accept", "ranged", "coding"), [
    (plain, "br", False, None),  # no forms: the entry itself
    (coded, "br, gzip", False, "br"),
    (coded, "gzip", False, "gzip"),
    (coded, "gzip;q=0.5, br;q=0.1", False, "gzip"),
    (coded, "br", True, "identity"),  # a range is served from identity
    (coded, None, False, "identity"),
    (coded, "compress", False, "identity"),
    (due, "identity", False, "identity"),  # due, but not wanted
    (due, None, False, "identity"),
    (due, "br", True, "identity"),
])
def test_the_form_a_request_gets(entry: type, accept: str | None, ranged: bool,
                                 coding: str | None) -> None:
    stored = entry()
    form = form_for(stored, accept, ranged)
    assert form is not None
    if coding is None:
        assert form is stored
    else:
        assert coding_of(form) == coding
        assert form is form_for(stored, accept, ranged)  # made once per coding


@pytest.mark.parametrize("accept", ["br", "gzip", "gzip, br", "*"])
def test_a_coding_not_made_yet_is_left_to_the_core(accept: str) -> None:
    assert form_for(due(), accept, False) is None
    assert hit_reply([due()], accept, NOW, PREFIX, VIA) is None


def test_a_fresh_single_entry_is_answered_with_age_and_ttl() -> None:
    entry = coded()
    reply = hit_reply([entry], "gzip", NOW + 0.5, PREFIX, VIA)
    assert reply is not None and reply.outcome.kind is Kind.HIT
    assert reply.entry is not None and coding_of(reply.entry) == "gzip"
    assert reply.body == dict(entry.encoded)["gzip"]
    assert list(reply.extra) == [(b"age", b"10"), (b"cache-status", PREFIX + b"49"), VIA]


@pytest.mark.parametrize("entries", [
    lambda: [],
    lambda: [plain(), plain()],  # variants: the core selects
    lambda: [make_entry(now=NOW - 100)],  # stale
    lambda: [make_entry(now=NOW, vary=("accept-language",))],
    lambda: [make_entry(now=NOW, body=None, body_file="x", body_size=10)],  # in a file
])
def test_anything_else_takes_the_core(entries: type) -> None:
    assert hit_reply(entries(), None, NOW, PREFIX, VIA) is None
