"""The pages' HTML helpers: every value escaped, figures formatted as dashboard.js does,
times said relative to now, API buttons carrying what dashboard.js reads."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.views.html import Markup, action, esc, facts, moment, shown, span, table


@given(st.text())
def test_escaped_text_carries_no_markup(text: str) -> None:
    out = esc(text)
    assert "<" not in out and ">" not in out and '"' not in out
    assert isinstance(out, Markup)


def test_markup_passes_through_and_none_is_empty() -> None:
    assert esc(Markup("<b>x</b>")) == "<b>x</b>"
    assert esc(None) == ""
    assert esc(3) == "3"


@pytest.mark.parametrize(("value", "style", "said"), [
    (None, "count", "—"), (0.4567, "percent", "45.7 %"), (2.25, "rate", "2.2 req/s"),
    (0.0123, "ms", "12 ms"), (512, "bytes", "512 B"), (1536, "bytes", "1.5 KiB"),
    (5 * 1024 ** 5, "bytes", "5120.0 TiB"), (1234567, "count", "1 234 567"),
    ("open", "text", "open")])
def test_figures_read_as_the_script_formats_them(value: object, style: str, said: str) -> None:
    assert shown(value, style) == said


@pytest.mark.parametrize(("seconds", "said"), [
    (0, "0 s"), (59.4, "59 s"), (60, "1 min"), (3599, "59 min"), (3600, "1 h"),
    (3 * 3600 + 5 * 60, "3 h 5 min"), (86400 * 3, "3 d"), (-90, "1 min")])
def test_spans_read_as_a_person_says_them(seconds: float, said: str) -> None:
    assert span(seconds) == said


def test_moments_are_relative_with_the_utc_time_in_the_tooltip() -> None:
    assert moment(None, 100.0) == "—"
    later = moment(1_800_000_180.0, 1_800_000_000.0)
    assert ">in 3 min<" in later and 'title="2027-01-15 08:03:00 UTC"' in later
    assert ">42 s ago<" in moment(958.0, 1000.0)


def test_tables_escape_cells_right_align_numbers_and_say_when_empty() -> None:
    out = table(("URL", "Count"), [("<script>", "3"), (Markup("<b>x</b>"), "4")],
                empty="none", numeric=(1,), label='a "b"')
    assert "&lt;script&gt;" in out and "<script>" not in out and "<b>x</b>" in out
    assert '<td class="num" data-label="Count">3</td>' in out
    assert '<th class="num">Count</th>' in out
    assert 'aria-label="a &quot;b&quot;"' in out
    assert 'class="data"' in out  # two columns: a table on a phone too
    empty = table(("A", "B", "C"), [], empty="nothing <here>")
    assert '<td colspan="3" class="empty">nothing &lt;here&gt;</td>' in empty


def test_facts_escape_terms_and_values() -> None:
    assert facts([("<t>", "<v>")]) == "<dl><dt>&lt;t&gt;</dt><dd>&lt;v&gt;</dd></dl>"


def test_actions_carry_the_api_the_body_and_the_dialog() -> None:
    out = action("Requeue all", "/api/jobs/requeue", body={"all": True, "count": 7},
                 confirm="Requeue 7 <jobs>?", typed="7", confirm_label="Requeue",
                 done="Requeued.", danger=True)
    body = re.search(r'data-body="([^"]*)"', out)
    assert body is not None
    assert json.loads(body.group(1).replace("&quot;", '"')) == {"all": True, "count": 7}
    assert 'data-confirm="Requeue 7 &lt;jobs&gt;?"' in out and 'data-typed="7"' in out
    assert 'data-confirm-label="Requeue"' in out and 'class="danger"' in out
    assert " data-replace" in action("Warm", "/api/warm", replace=True)
    assert "data-body" not in action("Cancel", "/api/warm/1/cancel")


def test_an_unknown_action_option_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="confirmm"):
        action("x", "/api/x", confirmm="typo")
