"""What a reload applies and what needs a restart (pure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stoker.config.reload import RULES, plan, reloadable
from stoker.config.rules import Rule
from stoker.config.settings import FIELDS, Settings

RUNNING = Settings(origin="http://127.0.0.1:9000")


def changed(name: str) -> Any:
    """A valid value for ``name`` other than ``RUNNING``'s."""
    other: dict[str, Any] = {"preset": "wordpress", "origin": "http://127.0.0.1:9001",
                             "listen": "127.0.0.1:9090", "server": "granian",
                             "warm_on_start": "always", "access_log_format": "json"}
    if name in other:
        return other[name]
    value = getattr(RUNNING, name)
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    return None


@pytest.mark.parametrize("name", [name for name in FIELDS if changed(name) is not None])
def test_each_changed_setting_is_applied_or_needs_a_restart_never_both(name: str) -> None:
    wanted = dataclasses.replace(RUNNING, **{name: changed(name)})
    change = plan(RUNNING, wanted)
    assert name in change.applied + change.restart
    if reloadable(name):
        assert name in change.applied and getattr(change.settings, name) == changed(name)
    else:
        assert name in change.restart and getattr(change.settings, name) == getattr(
            RUNNING, name)  # what needs a restart keeps the value the process runs with


def test_the_rules_reload_and_nothing_else_is_reported() -> None:
    wanted = dataclasses.replace(RUNNING, rules=(Rule(path="/news", ttl=60.0),))
    change = plan(RUNNING, wanted)
    assert (change.applied, change.restart) == ((RULES,), ())
    assert change.settings.rules == wanted.rules
    assert change.describe(RUNNING, wanted) == ["reloaded rules: 0 rules -> 1 rules"]


def test_the_lines_name_each_change_and_hide_secrets() -> None:
    wanted = dataclasses.replace(RUNNING, keep=7200.0, listen="127.0.0.1:9090",
                                 admin_token="s3cret-token-0123456789")
    lines = plan(RUNNING, wanted).describe(RUNNING, wanted)
    assert lines == ["reloaded keep: 3600.0 -> 7200.0",
                     "not reloaded listen (needs a restart): 127.0.0.1:8080 -> 127.0.0.1:9090",
                     "not reloaded admin_token (needs a restart): None -> (hidden)"]
    assert not any("s3cret" in line for line in lines)


def test_nothing_changed_is_an_empty_plan() -> None:
    change = plan(RUNNING, RUNNING)
    assert (change.applied, change.restart, change.settings) == ((), (), RUNNING)
