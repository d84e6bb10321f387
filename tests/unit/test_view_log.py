"""The Log page, rendered: the filter form holding what was asked (escaped), the stream's
URL with the filter, the empty state, a bad filter said instead of a stream, the note
when not every serving process is shown."""

from __future__ import annotations

from stoker.admin.views.html import ROOT
from stoker.admin.views.log import log_html

EMPTY = dict.fromkeys(("outcome", "status", "path", "client", "host"), "")


def test_the_page_streams_its_filter_and_says_nothing_came_yet() -> None:
    page = log_html({**EMPTY, "status": "5xx", "path": "/blog"}, 1, 1)
    assert 'data-log="/api/log?status=5xx&amp;path=%2Fblog"' in page
    assert "Showing status 5xx, path /blog*." in page
    assert "No requests yet — requests Stoker answers appear here" in page
    assert 'name="status" value="5xx"' in page and 'id="log-pause"' in page
    assert "serving processes" not in page


def test_a_bad_filter_is_said_and_nothing_is_streamed() -> None:
    page = log_html({**EMPTY, "client": '"><script>'}, 1, 1)
    assert 'role="alert">client: expected an address or a network' in page
    assert "<script>" not in page and "data-log" not in page
    assert 'value="&quot;&gt;&lt;script&gt;"' in page


def test_it_says_when_other_processes_are_not_shown_and_keeps_the_mount_path() -> None:
    token = ROOT.set("/stoker")
    try:
        page = log_html(EMPTY, 4, 1)
    finally:
        ROOT.reset(token)
    assert "Only the requests of 1 of the 4 serving processes show here." in page
    assert 'data-log="/stoker/api/log?"' in page and 'action="/stoker/log"' in page
    assert "serving processes" not in log_html(EMPTY, 4, 4)
