"""Stoker's own log lines as JSON: one object a record, the traceback kept."""

from __future__ import annotations

import json
import logging
import sys

from stoker.cli.log_lines import JsonFormatter


def record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("bad\nthing")
        except ValueError:
            info = sys.exc_info()
    made = logging.LogRecord("stoker.cache", logging.WARNING, __file__, 1, message, args, info)
    made.created = 1_796_212_800.5  # 2026-12-02T12:00:00.500Z
    return made


def test_a_record_is_one_line_of_json() -> None:
    line = JsonFormatter().format(record("purged %d entries of %r", 3, 'tag "x"'))
    assert "\n" not in line
    assert json.loads(line) == {"time": "2026-12-02T12:00:00.500Z", "level": "WARNING",
                                "logger": "stoker.cache",
                                "message": "purged 3 entries of 'tag \"x\"'"}


def test_an_exception_goes_into_error_still_one_line() -> None:
    line = JsonFormatter().format(record("failed", exc=True))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == "failed"
    assert parsed["error"].startswith("Traceback") and "ValueError: bad\nthing" in parsed["error"]
