"""The live request log's pure parts: filter parsing and matching, records, the bounded
fan-out, and the lines ``stoker log`` prints."""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.admin.client import sse_events
from stoker.admin.request_log import batch_events
from stoker.cache.outcome import Kind
from stoker.cli.log import dropped_line, hello_line, line
from stoker.proxy.log_filter import (
    EVERYTHING,
    OUTCOMES,
    FilterError,
    LogFilter,
    describe,
    matches,
    parse_filter,
)
from stoker.proxy.log_record import LogRecord, from_json, url_parts
from stoker.proxy.request_tap import MAX_WATCHES, RequestTap, Watch

RECORD = LogRecord(at=1_764_504_000.25, client="203.0.113.7", method="GET",
                   host="example.com", target="/blog/a?x=1", status=200, outcome="miss",
                   reason="", duration=0.0123, size=20480)

records = st.builds(
    LogRecord, at=st.floats(0, 2e9), client=st.sampled_from(["203.0.113.7", "::1", "-"]),
    method=st.sampled_from(["GET", "POST"]), host=st.sampled_from(["a.test", "B.test"]),
    target=st.sampled_from(["/", "/blog", "/blog/x", "/shop?q=1"]),
    status=st.integers(100, 599), outcome=st.sampled_from(sorted(OUTCOMES)),
    reason=st.just(""), duration=st.none(), size=st.none())


def test_the_empty_filter_is_everything() -> None:
    assert parse_filter({}) == EVERYTHING
    assert describe(EVERYTHING) == "everything"


@given(records)
def test_everything_matches_every_record(record: LogRecord) -> None:
    assert matches(EVERYTHING, record)


@given(st.lists(st.sampled_from([*sorted(OUTCOMES), "stale", "HIT", " miss "]),
                min_size=1, max_size=4),
       st.lists(st.one_of(st.integers(100, 599).map(str),
                          st.sampled_from(["1xx", "2xx", "3xx", "4xx", "5xx"])), max_size=3))
def test_lists_of_good_words_parse_and_describe_round_trips(outcomes: list[str],
                                                             statuses: list[str]) -> None:
    wanted = parse_filter({"outcome": ",".join(outcomes), "status": ",".join(statuses)})
    assert wanted.outcomes <= OUTCOMES and wanted.outcomes
    again = describe(wanted).split(", ")
    shown = dict(part.split(" ", 1) for part in again)
    assert parse_filter(shown) == wanted


@given(st.text(max_size=12))
def test_a_status_parses_only_as_a_code_or_a_class(text: str) -> None:
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    good = all((len(w) == 3 and w.isdigit() and 100 <= int(w) <= 599) or (
        len(w) == 3 and w[0] in "12345" and w[1:] == "xx") for w in words)
    if good:
        parse_filter({"status": text})
    else:
        with pytest.raises(FilterError) as raised:
            parse_filter({"status": text})
        assert raised.value.field == "status"


@pytest.mark.parametrize(("params", "field"), [
    ({"outcome": "hits"}, "outcome"), ({"status": "5x"}, "status"),
    ({"status": "600"}, "status"), ({"path": "blog"}, "path"),
    ({"client": "not an address"}, "client")])
def test_bad_values_name_their_field(params: dict[str, str], field: str) -> None:
    with pytest.raises(FilterError) as raised:
        parse_filter(params)
    assert raised.value.field == field and str(raised.value).startswith(f"{field}: ")


@given(records, st.sampled_from(sorted(OUTCOMES)), st.integers(100, 599),
       st.sampled_from(["/", "/blog", "/shop"]))
def test_matching_is_each_member_in_turn(record: LogRecord, outcome: str, status: int,
                                         path: str) -> None:
    assert matches(LogFilter(outcomes=frozenset({outcome})), record) == (
        record.outcome == outcome)
    assert matches(parse_filter({"status": str(status)}), record) == (record.status == status)
    klass = f"{record.status // 100}xx"
    assert matches(parse_filter({"status": klass}), record)
    assert matches(parse_filter({"path": path}), record) == record.target.startswith(path)
    assert matches(parse_filter({"host": record.host.upper()}), record)


def test_stale_stands_for_both_stale_kinds_and_clients_match_by_network() -> None:
    stale = parse_filter({"outcome": "stale"})
    assert stale.outcomes == {Kind.STALE_SWR.value, Kind.STALE_ERROR.value}
    assert matches(parse_filter({"client": "203.0.113.0/24"}), RECORD)
    assert not matches(parse_filter({"client": "10.0.0.0/8"}), RECORD)
    assert not matches(LogFilter(client=ipaddress.ip_network("::/0")),
                       replace(RECORD, client="-"))


@given(records)
def test_a_record_survives_its_json(record: LogRecord) -> None:
    assert from_json(record.as_json()) == record


def test_url_parts_splits_an_entrys_url() -> None:
    assert url_parts("http://a.test:8080/p/q?x=1&y") == ("a.test:8080", "/p/q", "x=1&y")
    assert url_parts("https://a.test") == ("a.test", "/", "")


async def test_a_watch_keeps_the_newest_and_counts_the_drops() -> None:
    tap = RequestTap()
    assert not tap.watched
    watch = tap.watch(parse_filter({"status": "5xx"}), capacity=2)
    assert watch is not None and tap.watched
    for status in (500, 200, 501, 502, 503):
        tap.publish(replace(RECORD, status=status))
    batch = watch.take()
    assert [r.status for r in batch.records] == [502, 503]
    assert batch.dropped == 2 and watch.dropped_total == 2
    assert watch.take().dropped == 0
    assert (await watch.next(0.01)).records == ()
    tap.unwatch(watch)
    assert not tap.watched


async def test_a_waiting_reader_wakes_on_a_record() -> None:
    tap = RequestTap()
    watch = tap.watch(EVERYTHING)
    assert watch is not None
    reading = asyncio.ensure_future(watch.next(10))
    await asyncio.sleep(0)
    tap.publish(RECORD)
    assert (await asyncio.wait_for(reading, 1)).records == (RECORD,)


def test_watches_are_bounded() -> None:
    tap = RequestTap()
    watches = [tap.watch(EVERYTHING) for _ in range(MAX_WATCHES)]
    assert all(isinstance(w, Watch) for w in watches)
    assert tap.watch(EVERYTHING) is None


def test_events_and_lines() -> None:
    tap = RequestTap()
    watch = tap.watch(EVERYTHING, capacity=1)
    assert watch is not None
    tap.publish(replace(RECORD, status=404))
    tap.publish(RECORD)
    text = batch_events(watch.take()).decode()
    events = list(sse_events(text.split("\n")))
    assert events == [("dropped", {"dropped": 1}), ("request", RECORD.as_json())]
    assert line(RECORD.as_json()) == (
        "12:00:00.250 203.0.113.7     GET  example.com/blog/a?x=1 200 miss 12.3ms 20480B")
    passed = {**RECORD.as_json(), "outcome": "pass", "reason": "no-store",
              "duration_ms": None, "bytes": None}
    assert line(passed).endswith(" 200 pass (no-store) - -")
    assert dropped_line(1) == "… 1 line dropped (the reader fell behind)"
    assert hello_line({"filter": "everything", "processes": 1, "shown": 1}) == (
        "showing everything, Ctrl-C to stop")
    assert hello_line({"filter": "everything", "processes": 4, "shown": 4}) == (
        "showing everything, Ctrl-C to stop")
    assert hello_line({"filter": "status 5xx", "processes": 4, "shown": 1}).endswith(
        "; only the requests of 1 of the 4 serving processes")

