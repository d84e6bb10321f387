"""``error_page`` in Stoker's own answers: only origin failures, only for HTML clients."""

from __future__ import annotations

from stoker.cache.outcome import Kind, Outcome
from stoker.proxy.error_page import with_error_page
from stoker.proxy.steps import Synth, synthetic

PAGE = b"<h1>Back soon</h1>"
BROWSER = [(b"accept", b"text/html,*/*;q=0.8")]


def failure(status: int) -> Synth:
    return synthetic(status, "origin down", Outcome(Kind.ERROR, fwd="miss", fwd_status=status,
                                                    detail="origin-down"),
                     extra=((b"retry-after", b"30"),), reason="refused")


def test_an_origin_failure_gets_the_page_with_its_status_and_fields_kept() -> None:
    for status in (502, 503, 504):
        shown = with_error_page(failure(status), PAGE, BROWSER)
        assert (shown.status, shown.body, shown.outcome) == (
            status, PAGE, failure(status).outcome)
        assert shown.headers == [(b"content-type", b"text/html; charset=utf-8"),
                                 (b"content-length", str(len(PAGE)).encode()),
                                 (b"cache-control", b"no-store"), (b"retry-after", b"30")]


def test_the_plain_answer_stays_without_a_page_or_for_a_client_without_html() -> None:
    plain = failure(502)
    assert with_error_page(plain, None, BROWSER) is plain
    assert with_error_page(plain, PAGE, [(b"accept", b"application/json")]) is plain
    assert with_error_page(plain, PAGE, []).body == PAGE  # no Accept: anything goes


def test_stokers_other_answers_keep_their_text() -> None:
    refusal = synthetic(400, "bad request", Outcome(Kind.ERROR, detail="bad-request"))
    not_enabled = synthetic(405, "the PURGE method is not enabled")
    overloaded = synthetic(503, "not an origin failure")  # no outcome: not the synth step's
    for synth in (refusal, not_enabled, overloaded):
        assert with_error_page(synth, PAGE, BROWSER) is synth
